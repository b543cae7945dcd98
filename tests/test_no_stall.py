"""No crash, no stall: inputs that used to end in an internal error (exit 70) or cost time and
memory out of proportion to their size, through the real CLI. Each ends in exit 2 naming the
file, the line and the limit or field, or in a normal run; the costs themselves are measured in
benchmarks/bench_hostile.py (docs/robustness.md), here only what decides them is asserted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostile_support import EXAMPLE, cli

from dgdgen.analysis import gates
from dgdgen.spec import MAX_STEPS

ROLLOUT = (EXAMPLE / "rollout.yaml").read_text()
DGD = (EXAMPLE / "dgd.yaml").read_text()
STEPS = ROLLOUT[ROLLOUT.index("  steps:\n"):ROLLOUT.index("  traffic:\n")]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "rollout.yaml").write_text(ROLLOUT)
    (tmp_path / "dgd.yaml").write_text(DGD)
    return tmp_path


def _clean_exit_2(r: object) -> str:
    code, err = r.code, r.err  # type: ignore[attr-defined]
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    return str(err)


def _gated_steps(work: Path, n: int) -> Path:
    """A spec of ``n`` steps, every one but the last gated, weights rising to 100."""
    steps = "".join(f"    - weight: {max(1, i * 99 // n)}\n      pause: 1m\n      gate: slo\n"
                    for i in range(1, n)) + "    - weight: 100\n"
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.replace(STEPS, "  steps:\n" + steps))
    return path


DECODE_MODEL = "            - --model\n            - Qwen/Qwen3-0.6B\n            - --disaggregation-mode\n" \
    "            - decode\n"


def _located(err: str, file: str, line: int) -> None:
    assert f"{file}:{line}:" in err, err


def _dgd(work: Path, old: str, new: str) -> int:
    """Edit the stable DGD; the line of the edit."""
    assert old in DGD, old
    (work / "dgd.yaml").write_text(DGD.replace(old, new, 1))
    return DGD[:DGD.index(old)].count("\n") + 1


# --------------------------------------------------------------------------- steps


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_gated_steps_cost_linear_work(work: Path, command: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Every state's AnalysisTemplates are sized from all the steps of their gate: once per plan,
    not once per state (1,000 gated steps took `validate` 48 s, 2,000 took 198 s)."""
    calls = 0
    real = gates.step_gate

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gates, "step_gate", counted)
    n = 150
    r = cli(command, str(_gated_steps(work, n)))
    assert r.code == 0, r.err
    assert 0 < calls <= 10 * n, calls  # quadratic was n * n


@pytest.mark.parametrize("command", ["validate", "plan", "render"])
def test_steps_over_the_maximum_are_refused(work: Path, command: str) -> None:
    path = _gated_steps(work, MAX_STEPS + 1)
    extra = ["-o", str(work / "out")] if command == "render" else []
    err = _clean_exit_2(cli(command, str(path), *extra))
    line = ROLLOUT[:ROLLOUT.index("  steps:\n")].count("\n") + 1
    assert f"rollout.yaml:{line}:3: spec.steps: 1,001 items, more than the maximum of 1,000" \
        in err, err
    assert len(err.splitlines()) == 1, err
    assert not (work / "out").exists()


def test_the_maximum_number_of_steps_plans(work: Path) -> None:
    r = cli("plan", str(_gated_steps(work, MAX_STEPS)), "--format", "json")
    assert r.code == 0, r.err

# --------------------------------------------------------------------------- errors per field


def test_a_fields_errors_are_capped_in_a_spec(work: Path) -> None:
    from dgdgen.errors import MAX_PER_FIELD

    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.replace("            --block-size: 32\n      VllmPrefillWorker",
                                    "            --block-size: 32\n          remove:\n"
                                    + "            - {a: 1}\n" * 500 + "      VllmPrefillWorker", 1))
    err = _clean_exit_2(cli("validate", str(path)))
    lines = err.splitlines()
    assert len(lines) == MAX_PER_FIELD + 1, err
    assert all(".args.remove[" in ln for ln in lines[:-1]), err
    assert lines[-1].endswith(".args.remove: and 490 more problem(s) in this field (10 shown)")
    assert "rollout.yaml:" in lines[-1], err


def test_a_spec_list_longer_than_any_spec_needs_is_refused_before_its_items(work: Path) -> None:
    from dgdgen.spec import MAX_ENTRIES

    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.replace("            --block-size: 32\n",
                                    "            --block-size: 32\n          remove:\n"
                                    + "            - {a: 1}\n" * (MAX_ENTRIES + 1), 1))
    err = _clean_exit_2(cli("validate", str(path)))
    line = ROLLOUT[:ROLLOUT.index("            --block-size: 32\n")].count("\n") + 2
    assert err.splitlines() == [
        f"dgdgen validate: error: {path}:{line}:11: spec.candidate.components.VllmDecodeWorker"
        ".args.remove: 10,001 entries, more than the 10,000 a rollout spec's lists and mappings "
        "may hold"], err


@pytest.mark.parametrize("command", ["validate", "verify"])
def test_a_fields_errors_are_capped_in_a_dgd(work: Path, command: str) -> None:
    _dgd(work, DECODE_MODEL, DECODE_MODEL + "            - 1\n" * 500)
    r = cli(command, str(work / ("rollout.yaml" if command == "validate" else "dgd.yaml")))
    if command == "validate":
        lines = _clean_exit_2(r).splitlines()
    else:
        assert r.code == 1, r.err
        lines = [ln for ln in r.out.splitlines() if ".args" in ln]
        assert "501 violation(s)" in r.err, r.err  # and "CEL was not checked"
    args = [ln for ln in lines if "mainContainer.args" in ln]
    assert len(args) == 11, lines
    assert "and 490 more problem(s) in this field" in args[-1], args[-1]

# --------------------------------------------------------------------------- crashes (exit 70): model names


@pytest.mark.parametrize("value", ["'   '", '"\\t"', '" \\n "'])
@pytest.mark.parametrize("command", ["validate", "plan", "render", "check", "diff"])
def test_blank_model_names_are_refused_at_their_field(work: Path, value: str,
                                                      command: str) -> None:
    line = _dgd(work, DECODE_MODEL, DECODE_MODEL.replace("- Qwen/Qwen3-0.6B", f"- {value}"))
    shutil.copy(EXAMPLE / "dgd.yaml", work / "base.yaml")
    args = {"validate": [str(work / "rollout.yaml")], "plan": [str(work / "rollout.yaml")],
            "render": [str(work / "rollout.yaml"), "-o", str(work / "out")],
            "check": [str(work / "dgd.yaml")],
            "diff": [str(work / "base.yaml"), str(work / "dgd.yaml")]}[command]
    err = _clean_exit_2(cli(command, *args))
    _located(err, "dgd.yaml", line + 1)
    assert ".mainContainer.args[1]: --model " in err and "blank" in err, err
    assert not (work / "out").exists()


def test_blank_served_names_are_refused_where_the_spec_sets_them(work: Path) -> None:
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.replace("            --block-size: 32\n",
                                    "            --block-size: 32\n"
                                    "            --served-model-name: ' '\n", 1))
    err = _clean_exit_2(cli("validate", str(path)))
    assert "rollout.yaml:" in err and ".args.set: --served-model-name ' '" in err, err

# --------------------------------------------------------------------------- crashes (exit 70): YAML

WIDE = "9" * 5000  # past Python's 4,300-digit limit of int <-> str
INTEGERS = {
    # where, the edit, the field the error names
    "decimal": (WIDE, "replicas"),
    "negative": ("-" + WIDE, "replicas"),
    "hex": ("0x" + "f" * 5000, "replicas"),  # Python reads it, but str() of it fails
    "underscores": ("1_" * 2500 + "1", "replicas"),
    "tagged": ("!!int " + WIDE, "replicas"),
    "20 digits": ("99999999999999999999", "replicas"),
}


@pytest.mark.parametrize("case", sorted(INTEGERS))
@pytest.mark.parametrize("command", ["validate", "check", "verify", "diff"])
def test_wide_integers_are_refused_at_their_field(work: Path, case: str, command: str) -> None:
    value, _ = INTEGERS[case]
    line = _dgd(work, "      replicas: 1\n", f"      replicas: {value}\n")
    shutil.copy(EXAMPLE / "dgd.yaml", work / "base.yaml")
    args = {"validate": [str(work / "rollout.yaml")], "check": [str(work / "dgd.yaml")],
            "verify": [str(work / "dgd.yaml")],
            "diff": [str(work / "base.yaml"), str(work / "dgd.yaml")]}[command]
    err = _clean_exit_2(cli(command, *args))
    _located(err, "dgd.yaml", line)
    assert "spec.services.Frontend.replicas: " in err and "64-bit integer" in err, err


@pytest.mark.parametrize("text", [
    f"  x-wide: {WIDE}\n",  # libyaml reads the spec
    f"  x-wide: 0o{'7' * 5000}\n",  # YAML 1.2 octal: ruamel.yaml reads the spec
    f"  x-alias: &a 1\n  x-again: *a\n  x-wide: {WIDE}\n",  # an alias: ruamel.yaml again
    f"  ? {WIDE}\n  : 1\n",  # a key (explicit: an implicit key is at most 1,024 characters)
])
def test_wide_integers_in_a_spec(work: Path, text: str) -> None:
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.replace("  capacity:\n", text + "  capacity:\n", 1))
    err = _clean_exit_2(cli("validate", str(path)))
    written = path.read_text()
    _located(err, "rollout.yaml", written[:written.index("7777" if "0o" in text else WIDE)]
             .count("\n") + 1)
    assert "does not fit in a 64-bit integer" in err and "spec" in err, err


def test_a_wide_integer_in_a_yaml_1_1_stream(work: Path) -> None:
    """`%YAML 1.1` leaves the stream to ruamel.yaml's YAML 1.1 types: sexagesimal integers too."""
    path = work / "rollout.yaml"
    path.write_text("%YAML 1.1\n---\n" + ROLLOUT.replace(
        "  capacity:\n", "  x-wide: " + "59:" * 3000 + "1\n  capacity:\n", 1))
    err = _clean_exit_2(cli("validate", str(path)))
    assert "rollout.yaml:" in err and "does not fit in a 64-bit integer" in err, err


def test_policy_test_with_an_integer_cel_cannot_hold(work: Path) -> None:
    """CEL integers are 64-bit: one wider failed converting (`celtypes` overflow), exit 70."""
    shutil.copy(work / "dgd.yaml", work / "old.yaml")
    line = _dgd(work, "      replicas: 1\n", "      replicas: 1\n      x-count: "
                "99999999999999999999\n") + 1
    err = _clean_exit_2(cli("policy", "test", str(work / "old.yaml"), str(work / "dgd.yaml")))
    _located(err, "dgd.yaml", line)
    assert "spec.services.Frontend.x-count: " in err and "64-bit integer" in err, err


@pytest.mark.parametrize("version", ["1.0", "1.3", "2.0"])
@pytest.mark.parametrize("where", ["spec", "stable", "verify", "check", "policy"])
def test_yaml_versions_other_than_1_1_and_1_2_are_refused(work: Path, version: str,
                                                          where: str) -> None:
    directive = f"%YAML {version}\n---\n"
    if where == "spec":
        (work / "rollout.yaml").write_text(directive + ROLLOUT)
        r, file = cli("validate", str(work / "rollout.yaml")), "rollout.yaml"
    else:
        (work / "new.yaml").write_text(directive + DGD)
        file = "new.yaml"
        if where == "stable":
            (work / "rollout.yaml").write_text(ROLLOUT.replace("dgd: dgd.yaml", "dgd: new.yaml"))
            r = cli("validate", str(work / "rollout.yaml"))
        elif where == "policy":
            r = cli("policy", "test", str(work / "dgd.yaml"), str(work / "new.yaml"))
        else:
            r = cli(where, str(work / "new.yaml"))
    err = _clean_exit_2(r)
    _located(err, file, 1)
    assert f"unsupported YAML version '{version}'" in err and "1.1 and 1.2" in err, err


@pytest.mark.parametrize("escape", ["\\uD800", "\\udfff", "\\ud83d\\ude00", "\\U00110000"])
@pytest.mark.parametrize("command", ["validate", "render", "verify", "check"])
def test_strings_that_are_not_text_are_refused_at_their_field(work: Path, escape: str,
                                                              command: str) -> None:
    line = _dgd(work, DECODE_MODEL, "            - --served-model-name\n"
                f'            - "{escape}"\n' + DECODE_MODEL)
    args = {"validate": [str(work / "rollout.yaml")],
            "render": [str(work / "rollout.yaml"), "-o", str(work / "out")],
            "verify": [str(work / "dgd.yaml")], "check": [str(work / "dgd.yaml")]}[command]
    err = _clean_exit_2(cli(command, *args))
    _located(err, "dgd.yaml", line + 1)
    assert ".mainContainer.args[1]: " in err and escape[:6].lower() in err.lower(), err
    assert ("surrogate" if escape != "\\U00110000" else "not a Unicode character") in err, err
    assert not (work / "out").exists()


@pytest.mark.parametrize("text", [
    'x: &a 1\ny: *a\nz: "\\ud800"\n',  # an alias: ruamel.yaml reads it, libyaml never does
    'x: "\\ud800"\ny: 0o17\n',
])
def test_not_text_on_every_reader(text: str) -> None:
    """Whichever parser reads the stream, the same refusal at the same field."""
    from dgdgen import yamlio
    from dgdgen.errors import InputError

    with pytest.raises(InputError, match="surrogate") as err:
        yamlio.load_documents(text, "f.yaml")
    assert err.value.field in (("z",), ("x",)) and err.value.location is not None
    assert err.value.location.line in (1, 3)

# --------------------------------------------------------------------------- reading cost


@pytest.mark.parametrize("where", ["top", "end", "after an alias"])
def test_malformed_yaml_is_libyamls_to_report(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """ruamel.yaml took 20 s and 200 MB per MB of malformed text to say what libyaml says in
    a linear pass: it never reads a malformed stream."""
    from dgdgen import yamlio
    from dgdgen.yamlio import ruamel as yamlruamel
    from dgdgen.errors import InputError

    def no_ruamel(text: str, file: str) -> object:
        raise AssertionError("ruamel.yaml read a malformed stream")

    monkeypatch.setattr(yamlruamel, "ruamel_documents", no_ruamel)
    body = "".join(f"k{i}:\n  - name: v{i}\n    value: '{i}'\n" for i in range(20_000))
    text = {"top": "a: [1\n" + body, "end": body + "z: [1\n",
            "after an alias": "a: &x 1\nb: *x\n" + body + "z: [1\n"}[where]
    with pytest.raises(InputError, match="malformed YAML") as err:
        yamlio.load_documents(text, "f.yaml")
    assert err.value.location is not None
    assert err.value.location.line == (2 if where == "top" else text.count("\n") + 1)


def test_ruamel_reads_only_small_streams() -> None:
    """What only ruamel.yaml reads (an alias here) is read up to max_ruamel_bytes, and refused
    past it with what needs it, where, and the limit."""
    from dgdgen import yamlio
    from dgdgen.yamlio import limits as yamllimits
    from dgdgen.errors import InputError

    small = "a: &x 1\nb: *x\n" + "".join(f"k{i}: v\n" for i in range(100))
    assert yamlio.load_documents(small, "f.yaml")[0].data["b"] == 1
    cap = yamllimits.get_limits().max_ruamel_bytes
    large = "a: &x 1\nb: *x\n" + "".join(f"k{i}: v\n" for i in range(cap // 8))
    assert len(large) > cap
    with pytest.raises(InputError) as err:
        yamlio.load_documents(large, "f.yaml")
    assert str(err.value).startswith(f"f.yaml:2:4: an alias is read only by dgdgen's complete "
                                     f"YAML 1.2 reader, which takes files of at most {cap:,} "
                                     f"bytes; this one is {len(large):,}"), err.value

@pytest.mark.parametrize("shape", ["[[], [], ...] on one line", "- [a, b] per line",
                                   "- {a: 1} per line"])
@pytest.mark.parametrize("reader", ["load_documents", "load_documents_fast"])
def test_libyaml_parses_a_long_file_of_flow_collections_once(
        shape: str, reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A DGD made of short flow lists (8 MB: 16 s of `verify`) was parsed twice: its flow
    brackets could not rule out deep nesting, so the event pass parsed it before the reader
    did, though the readers check the depth as they go. Once now; deeper than the limit is
    still refused where it is (test_hostile_input.test_deep_nesting_is_refused)."""
    import yaml

    from dgdgen import yamlio
    from dgdgen.yamlio import yaml11, yaml12

    yaml12._yaml12_loader()  # the readers' own parsers, made first
    yaml11._packed_setup()

    class SecondParse(yaml.CSafeLoader):  # type: ignore[misc]
        def __init__(self, stream: object) -> None:
            raise AssertionError("libyaml parsed the text a second time (the event pass)")

    monkeypatch.setattr(yaml, "CSafeLoader", SecondParse)
    item = {"[[], [], ...] on one line": None, "- [a, b] per line": "  - [a, b]\n",
            "- {a: 1} per line": "  - {a: 1}\n"}[shape]
    body = ("  x: [" + ", ".join(["[]"] * 20_000) + "]\n" if item is None
            else "  x:\n" + item * 10_000)
    text = DGD.replace("spec:\n", "spec:\n" + body, 1)
    docs = getattr(yamlio, reader)(text, "dgd.yaml")
    assert len(docs[0].data["spec"]["x"]) in (10_000, 20_000)


# --------------------------------------------------------------------------- object size


@pytest.mark.parametrize("command", ["validate", "verify"])
def test_a_dgd_larger_than_kubernetes_stores_is_refused(work: Path, command: str) -> None:
    """etcd stores at most 1.5 MiB per object: a larger DGD can never be applied, and each state
    of a render would copy and validate it (an 8 MB DGD: 14 s of `validate`)."""
    pad = "".join(f"        - name: X_{i:07d}\n          value: 'v{i:08d}xxxxxxxx'\n"
                  for i in range(40_000))
    _dgd(work, "      envs:\n", "      envs:\n" + pad)
    r = cli(command, str(work / ("rollout.yaml" if command == "validate" else "dgd.yaml")))
    if command == "validate":
        err = _clean_exit_2(r)
    else:
        assert r.code == 1, r.err
        err = r.out
    assert "bytes as JSON, over the 1,572,864 bytes (1.5 MiB) Kubernetes stores" in err, err
    assert "dgd.yaml:" in err, err
