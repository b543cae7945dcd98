"""Hostile and unlucky input (issue: resource exhaustion, coerced types, custom tags, odd shapes):
every input listed there, through the real CLI. Each ends in exit 2 with the file and line, or in
a normal run — never a traceback, never exit 1 or 70, and in bounded time (a subprocess timeout
guards the FIFO case; timings are measured in benchmarks/bench_hostile.py, not asserted)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_support import EXAMPLE, cli

from dgdgen import yamlio
from dgdgen.yamlio import doc as yamldoc
from dgdgen.yamlio import limits as yamllimits
from dgdgen.errors import InputError

ROLLOUT = (EXAMPLE / "rollout.yaml").read_text()
DGD = (EXAMPLE / "dgd.yaml").read_text()


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The classic billion-laughs: ``width ** levels`` leaves from a few hundred bytes."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "rollout.yaml").write_text(ROLLOUT)
    (tmp_path / "dgd.yaml").write_text(DGD)
    return tmp_path


def _spec(work: Path, old: str, new: str) -> str:
    assert old in ROLLOUT, old
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.replace(old, new, 1))
    return str(path)


def _dgd(work: Path, old: str, new: str) -> None:
    assert old in DGD, old
    (work / "dgd.yaml").write_text(DGD.replace(old, new, 1))


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def _clean_exit_2(r: object) -> None:
    code, err = r.code, r.err  # type: ignore[attr-defined]
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err


# --------------------------------------------------------------------------- resource exhaustion


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_alias_bomb_spec_is_refused_before_expansion(work: Path, command: str) -> None:
    bomb = alias_bomb()
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT.rstrip("\n") + "\nx-bomb:\n" + "".join("  " + ln + "\n"
                                                                      for ln in bomb.splitlines()))
    r = cli(command, str(path))
    _clean_exit_2(r)
    assert re.search(r"rollout\.yaml:\d+:\d+: aliases expand to more than 100000 nodes", r.err)


def test_alias_bomb_as_sibling_does_not_stall_check(work: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Cross-file rules read every YAML file beside a checked one: a bomb there is skipped."""
    (work / "bomb.yaml").write_text("kind: Service\n" + alias_bomb(levels=12))
    (work / "svc.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    monkeypatch.setenv("DGDGEN_CACHE_DIR", "")  # parsed in this run, not known from another
    from dgdgen.check import sources

    loaded = sources.sibling_loader([str(work / "dgd.yaml")])(str(work / "dgd.yaml"))
    assert [(d.file.rsplit("/", 1)[-1], d.kind, d.name) for d in loaded] == [
        ("svc.yaml", "Service", "s")]
    r = cli("check", str(work / "dgd.yaml"))
    assert r.code == 0, r.err


def test_alias_bomb_checked_file_is_refused(work: Path) -> None:
    (work / "bomb.yaml").write_text(alias_bomb(levels=12))
    r = cli("check", str(work / "bomb.yaml"))
    _clean_exit_2(r)
    assert "bomb.yaml:" in r.err and "alias bomb" in r.err


@pytest.mark.parametrize("shape", ["flow", "flow-lines", "block"])
@pytest.mark.parametrize("where", ["spec", "dgd", "check"])
def test_deep_nesting_is_refused(work: Path, shape: str, where: str) -> None:
    # flow-lines: 1,500 levels, one per line: the cheap pre-scan lets it through to libyaml,
    # whose own bound (1,000 flow levels since the libyaml in PyYAML 6.0.4) is met first
    if shape == "flow":
        deep = "[" * 100_000 + "]" * 100_000
    elif shape == "flow-lines":
        deep = "[\n" * 1500 + "]" * 1500
    else:
        deep = "\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(400)) + "  " * 401 + "v: 1"
    if where == "spec":
        path = _spec(work, "  steps:\n", f"  x-deep: {deep}\n  steps:\n")
        r = cli("validate", path)
    elif where == "dgd":
        _dgd(work, "spec:\n", f"x-deep: {deep}\nspec:\n")
        r = cli("validate", str(work / "rollout.yaml"))
    else:
        (work / "deep.yaml").write_text(f"x: {deep}\n")
        r = cli("check", str(work / "deep.yaml"))
    _clean_exit_2(r)
    assert re.search(r"\.yaml:\d+:\d+: nested more than 64 levels deep", r.err), r.err


@pytest.mark.parametrize("command", ["validate", "check"])
def test_recursive_alias(work: Path, command: str) -> None:
    if command == "validate":
        path = _spec(work, "  steps:\n", "  x-loop: &loop [a, *loop]\n  steps:\n")
    else:
        path = str(work / "loop.yaml")
        Path(path).write_text("a: &loop\n  b: *loop\n")
    r = cli(command, path)
    _clean_exit_2(r)
    assert "recursive alias *loop" in r.err and r.located


def test_dev_zero_and_fifo_are_never_read(work: Path) -> None:
    r = cli("validate", "/dev/zero")
    _clean_exit_2(r)
    assert "/dev/zero: not a regular file" in r.err
    path = _spec(work, "dgd: dgd.yaml", "dgd: /dev/zero")
    r = cli("validate", path, "--allow-outside-paths")
    _clean_exit_2(r)
    assert "spec.stable.dgd" in r.err and "/dev/zero: not a regular file" in r.err
    fifo = work / "fifo.yaml"
    os.mkfifo(fifo)
    # in a subprocess: a read that blocked would hang this test run, the timeout fails it
    for args in (["validate", str(fifo)], ["check", str(fifo)]):
        p = subprocess.run([sys.executable, "-m", "dgdgen", *args], capture_output=True,
                           text=True, timeout=60, check=False)
        assert p.returncode == 2 and "not a regular file" in p.stderr, p.stderr


def test_size_cap_and_the_flag_that_raises_it(work: Path) -> None:
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT + "# " + "x" * 20_000 + "\n")
    size = path.stat().st_size
    r = cli("validate", str(path), "--max-input-size", "16k")
    _clean_exit_2(r)
    assert f"input is {size} bytes, over the limit of 16384 bytes" in r.err
    assert "--max-input-size" in r.err
    assert cli("validate", str(path), "--max-input-size", "1M").code == 0
    # the next run starts from the default again (the flag does not leak between runs)
    assert yamllimits.get_limits().max_bytes == 1024 * 1024
    assert cli("validate", str(path)).code == 0
    assert yamllimits.get_limits() == yamllimits.Limits()
    r = cli("validate", str(path), "--max-input-size", "lots")
    assert r.code == 2 and "--max-input-size: not a size" in r.err


def test_parse_size() -> None:
    assert yamllimits.parse_size("8M") == 8 * 1024 * 1024
    assert yamllimits.parse_size("512k") == 512 * 1024
    assert yamllimits.parse_size("2GiB") == 2 * 1024**3
    assert yamllimits.parse_size("1000") == 1000
    with pytest.raises(ValueError, match="not a size"):
        yamllimits.parse_size("-1")


def test_size_cap_applies_to_text_from_git_too() -> None:
    limits = yamllimits.get_limits()
    try:
        yamllimits.set_limits(yamllimits.Limits(max_bytes=100))
        with pytest.raises(InputError, match="over the limit of 100 bytes"):
            yamlio.load_documents_fast("a: " + "b" * 200, "blob.yaml")
    finally:
        yamllimits.set_limits(limits)


# --------------------------------------------------------------------------- types and tags


@pytest.mark.parametrize(("value", "message"), [
    ("two", 'must be of type integer, got string "two"'),
    ("true", "must be of type integer, got boolean true"),
    ("-2", "-2 must be greater than or equal to 0"),
    ("99999999999999999999", "does not fit in a 64-bit integer"),
    ("0", "Frontend has 0 replicas"),
])
@pytest.mark.parametrize("command", ["validate", "plan", "render"])
def test_stable_dgd_replicas_blamed_at_the_dgd_line(work: Path, value: str, message: str,
                                                    command: str) -> None:
    _dgd(work, "      replicas: 1\n", f"      replicas: {value}\n")
    line = _line_of(DGD, "      replicas: 1\n")
    extra = ["-o", str(work / "out")] if command == "render" else []
    r = cli(command, str(work / "rollout.yaml"), *extra)
    _clean_exit_2(r)
    assert f"dgd.yaml:{line}:7: spec.services.Frontend.replicas" in r.err, r.err
    assert message in r.err
    assert "spec.candidate" not in r.err and "weight" not in r.err
    assert not (work / "out").exists()


@pytest.mark.parametrize(("old", "new", "message"), [
    ("    - weight: 25", "    - weight: true",
     "spec.steps[0].weight: expected an integer, got true"),
    ("    - weight: 25", "    - weight: '25'", "expected an integer, got the string '25'"),
    ("    - weight: 25", "    - weight: 25.0", "expected an integer, got 25.0"),
    ("maxSurge: 1", "maxSurge: true", "spec.capacity.maxSurge: expected an integer, got true"),
    ("    enabled: true", "    enabled: 'yes'", "expected true or false, got the string 'yes'"),
])
def test_spec_numbers_are_not_coerced(work: Path, old: str, new: str, message: str) -> None:
    r = cli("validate", _spec(work, old, new))
    _clean_exit_2(r)
    assert message in r.err and r.located


@pytest.mark.parametrize(("old", "new", "message"), [
    ("      replicas: 1\n", "      replicas: !custom 5\n", "unsupported YAML tag !custom"),
    ("image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag\n      envs",
     "image: !!int x\n      envs", "'x' is not a valid !!int"),
    ("image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag\n      envs",
     "image: !!binary aGVsbG8=\n      envs", "unsupported YAML tag !!binary"),
    ("      replicas: 1\n", "      replicas: !!bool maybe\n", "'maybe' is not a valid !!bool"),
    ("image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag\n      envs",
     "image: &i !!binary aGVsbG8=\n      envs", "unsupported YAML tag !!binary"),
    ("      replicas: 1\n", "      replicas: !!python/object:os.system x\n",
     "unsupported YAML tag !!python/object:os.system"),
])
@pytest.mark.parametrize("command", ["validate", "check", "check-json"])
def test_tags_reported_at_the_input_line(work: Path, old: str, new: str, message: str,
                                         command: str) -> None:
    _dgd(work, old, new)
    line = _line_of(DGD, old.split("\n")[0] if old.startswith(" ") else "image:")
    if command == "validate":
        r = cli("validate", str(work / "rollout.yaml"))
    else:
        fmt = ["--format", "json"] if command == "check-json" else []
        r = cli("check", *fmt, str(work / "dgd.yaml"))
    _clean_exit_2(r)
    assert re.search(rf"dgd\.yaml:{line}:\d+: {re.escape(message)}", r.err), r.err
    assert "step-00/" not in r.err  # the input file, never a rendered one


@pytest.mark.parametrize(("text", "where", "tag"), [
    ("k: &a !!binary aGVsbG8=\n", "1:4", "!!binary"),
    ("k: &a !!set {x, y}\n", "1:4", "!!set"),
    ("- &a !!binary aGVsbG8=\n", "1:3", "!!binary"),
    ("[&a !!binary aGVsbG8=]\n", "1:2", "!!binary"),
    ("{k: &a \t!foo x}\n", "1:5", "!foo"),
    ("k:\n  &a\n  !!binary aGVsbG8=\n", "2:3", "!!binary"),
])
def test_a_tag_after_an_anchor_is_refused_by_both_loaders(text: str, where: str,
                                                          tag: str) -> None:
    # a node's anchor may come before its tag: the bulk loader's cheap scan must still see it
    for loader in (yamlio.load_documents, yamlio.load_documents_fast):
        with pytest.raises(InputError, match=f"^t.yaml:{where}: unsupported YAML tag {tag} "):
            loader(text, "t.yaml")


def test_the_event_pass_is_still_skipped_where_it_cannot_find_anything() -> None:
    # the scan for a tag after an anchor must not send every `a && !b` expression (rendered
    # AnalysisTemplates) or licence header through the event pass of the bulk loader
    for text in ("# NVIDIA CORPORATION & AFFILIATES\nspec:\n  successCondition: "
                 "len(result) > 0 && !isNaN(result[0])\n",
                 "cmd: a &&! b\nx: &y 1\n"):
        assert yamllimits.check_limits(text, "t.yaml", always=False) is False
    assert yamllimits.check_limits("k: &a !!str x\n", "t.yaml", always=False) is True


@pytest.mark.parametrize("text", ["true: 1\nx:\n  false: 2\n", "8000: a\n1.5: b\n~: c\n",
                                  "? [a, b]\n: 1\n", "%YAML 1.1\n---\nyes: 1\n"])
def test_every_key_has_its_position_under_the_key_it_is_read_as(text: str) -> None:
    # a key that is not a string is read as its text (`true:` as "true"): its position must be
    # kept under that same text, or a finding about it falls back to the document's first line
    for loader in (yamlio.load_documents, yamlio.load_documents_fast):
        (doc,) = loader(text, "t.yaml")
        paths = [p for p, _ in yamldoc.iter_paths(doc.data) if p]
        assert paths and all(p in doc.positions for p in paths), (loader, doc.data, doc.positions)
        assert set(doc.positions) == set(paths)


@pytest.mark.parametrize("key", ["? {a: {b: 1}}\n: c\n", "? [[a]]\n: c\n", "? {a: [1]}\n: c\n"])
def test_a_key_holding_a_collection_is_a_located_error(work: Path, key: str) -> None:
    # valid YAML that ruamel.yaml cannot hash (it raised a TypeError: exit 70, no position)
    path = work / "rollout.yaml"
    path.write_text(ROLLOUT + key)
    line = ROLLOUT.count("\n") + 1
    r = cli("validate", str(path))
    _clean_exit_2(r)
    assert re.search(rf"rollout\.yaml:{line}:3: unsupported mapping key: a mapping or a "
                     "list holding another one", r.err), r.err


def test_explicit_plain_tags_still_load() -> None:
    for loader in (yamlio.load_documents, yamlio.load_documents_fast):
        (doc,) = loader("a: !!str 5\nb: !!float 3\nc: &x {k: 1}\nd: *x\ne: !!int '7'\n", "t.yaml")
        assert doc.data == {"a": "5", "b": 3.0, "c": {"k": 1}, "d": {"k": 1}, "e": 7}


# --------------------------------------------------------------------------- odd shapes


SHAPES = {
    "resources: 1": ("      resources:\n        limits:\n          gpu: \"1\"\n",
                     "      resources: 1\n      x-was:\n        limits:\n          gpu: \"1\"\n",
                     "resources: must be a mapping"),
    "extraPodSpec: x": (("      extraPodSpec:\n        mainContainer:\n          image: nvcr.io/nvidia/"
                        "ai-dynamo/vllm-runtime:my-tag\n      envs"),
                        "      extraPodSpec: x\n      envs", "extraPodSpec: must be a mapping"),
    "mainContainer: []": (("        mainContainer:\n          image: nvcr.io/nvidia/ai-dynamo/"
                          "vllm-runtime:my-tag\n      envs"),
                          "        mainContainer: []\n      envs",
                          "mainContainer: must be a mapping"),
    "subComponentType: [prefill]": ("    VllmDecodeWorker:\n",
                                    "    VllmDecodeWorker:\n      subComponentType: [prefill]\n",
                                    "subComponentType: must be a string"),
    "replicas: ²": ("      replicas: 2\n", "      replicas: \"²\"\n", "replicas: must be a whole"),
    "command: mapping": (("          command:\n          - python3\n          - -m\n"
                         "          - dynamo.vllm\n"), "          command: {a: 1}\n",
                         "command: must be a list"),
    "extraPodMetadata: x": ("    VllmDecodeWorker:\n",
                            "    VllmDecodeWorker:\n      extraPodMetadata: x\n",
                            "extraPodMetadata: must be a mapping"),
    "namespace: 5": ("  name: vllm-v1-disagg-router\n",
                     "  name: vllm-v1-disagg-router\n  namespace: 5\n",
                     "metadata.namespace: must be a string"),
    "replicas: 10^20": ("      replicas: 1\n", "      replicas: 99999999999999999999\n",
                        "out of range"),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
@pytest.mark.parametrize("command", ["check", "diff-new", "diff-old"])
def test_dgd_model_odd_shapes(work: Path, case: str, command: str) -> None:
    old, new, message = SHAPES[case]
    shutil.copy(work / "dgd.yaml", work / "base.yaml")
    _dgd(work, old, new)
    if command == "check":
        r = cli("check", str(work / "dgd.yaml"))
    elif command == "diff-new":
        r = cli("diff", str(work / "base.yaml"), str(work / "dgd.yaml"))
    else:
        r = cli("diff", str(work / "dgd.yaml"), str(work / "base.yaml"))
    _clean_exit_2(r)
    assert message in r.err and r.located, r.err


OBJECTS = {
    "configmap metadata list": ("apiVersion: v1\nkind: ConfigMap\nmetadata: [1]\ndata: {a: b}\n",
                                "o.yaml:3:1: metadata: must be a mapping"),
    "integer namespace": ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: 5}\n",
                          "metadata.namespace: must be a string"),
    "route spec string": (("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n"
                          "metadata: {name: r}\nspec: x\n"), "o.yaml:4:1: spec: must be a mapping"),
}


@pytest.mark.parametrize("case", sorted(OBJECTS))
def test_other_objects_odd_shapes(work: Path, case: str) -> None:
    text, message = OBJECTS[case]
    (work / "o.yaml").write_text(text)
    r = cli("check", str(work / "o.yaml"), str(work / "dgd.yaml"))
    _clean_exit_2(r)
    assert message in r.err
    # as a sibling of a checked file, the same object is skipped, not a crash
    assert cli("check", str(work / "dgd.yaml")).code == 0


def test_analysis_provider_that_is_not_a_mapping(work: Path) -> None:
    (work / "a.yaml").write_text(
        "apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: a}\n"
        "spec:\n  metrics:\n  - name: m\n    provider: x\n    successCondition: result[0] < 1\n"
    )
    r = cli("check", str(work / "a.yaml"))
    assert r.code in (0, 1) and "Traceback" not in r.err, r.err


def test_engine_args_file_in_a_configmap_with_a_bomb(work: Path) -> None:
    """The engine-args YAML embedded in a ConfigMap goes through the same loader: a bomb, a
    recursive alias or a bad tag there is ignored (the file is unresolved), never a crash."""
    from dgdgen.check import trtllm

    for text in (alias_bomb(levels=12), "a: &x [*x]\n", "a: !custom 1\n", "[" * 50_000):
        data = trtllm.engine_file_data(text, "engine.yaml")
        assert data is None


# --------------------------------------------------------------------------- the last line


def test_unexpected_exception_exits_70_with_a_report_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from dgdgen.commands import schema

    def broken(args: object) -> int:
        raise KeyError("boom")

    monkeypatch.setattr(schema, "run", broken)
    r = cli("schema")
    assert r.code == 70
    assert "internal error: KeyError: 'boom' (at " in r.err
    assert "please report it" in r.err and "Traceback" not in r.err


def test_steps_empty_with_analysis_warns(work: Path) -> None:
    a, b = ROLLOUT.index("  steps:\n"), ROLLOUT.index("  traffic:\n")
    (work / "rollout.yaml").write_text(ROLLOUT[:a] + "  steps: []\n" + ROLLOUT[b:])
    r = cli("validate", str(work / "rollout.yaml"))
    assert r.code == 0, r.err
    line = _line_of(ROLLOUT, "  steps:\n")
    assert f"warning: {work / 'rollout.yaml'}:{line}:3: spec.steps: no steps given" in r.err
    assert "gates nothing" in r.err
    (work / "rollout.yaml").write_text(ROLLOUT)
    r = cli("validate", str(work / "rollout.yaml"))
    assert r.code == 0 and "no steps given" not in r.err  # with its gated steps: silent


@pytest.mark.parametrize("command", ["diff", "check"])
def test_pod_volume_configmap_that_is_a_list_is_exit_2_at_its_line(work: Path,
                                                                    command: str) -> None:
    """A pod volume whose `configMap` is a list, not a mapping: one error at its line."""
    text = (EXAMPLE / "dgd.yaml").read_text().replace(
        "      extraPodSpec:\n        mainContainer:\n          image: nvcr.io/nvidia/ai-dynamo/"
        "vllm-runtime:my-tag\n          workingDir: /workspace/examples/backends/vllm\n",
        "      extraPodSpec:\n        volumes:\n          - name: tmpl\n            configMap:\n"
        "              - name: cfg\n        mainContainer:\n          image: nvcr.io/nvidia/"
        "ai-dynamo/vllm-runtime:my-tag\n          workingDir: /workspace/examples/backends/vllm\n"
        "          volumeMounts:\n            - {name: tmpl, mountPath: /etc/t}\n", 1)
    assert "configMap:\n              - name: cfg" in text
    (work / "head.yaml").write_text(text)
    line = text.splitlines().index("            configMap:") + 1
    args = [str(EXAMPLE / "dgd.yaml")] if command == "diff" else []
    r = cli(command, *args, str(work / "head.yaml"))
    assert r.code == 2, r.err
    assert f"head.yaml:{line}:" in r.err
    assert "extraPodSpec.volumes[0].configMap: must be a mapping, got a list" in r.err


@pytest.mark.parametrize(("volume", "field", "said"), [
    ("projected: [1, 2]", "volumes[0].projected", "must be a mapping, got a list"),
    ("projected: {sources: x}", "volumes[0].projected.sources", "must be a list, got a string"),
    ("projected: {sources: [{configMap: [a]}]}", "volumes[0].projected.sources[0].configMap",
     "must be a mapping, got a list"),
    ("projected: {sources: [{configMap: {name: c, items: [{key: k, path: [1]}]}}]}",
     "volumes[0].projected.sources[0].configMap.items[0].path", "must be a string, got a list"),
])
def test_projected_volume_of_a_wrong_shape_is_exit_2_at_its_line(work: Path, volume: str,
                                                                 field: str, said: str) -> None:
    """The checker reads a projected volume's ConfigMap sources (a flag may name one of their
    files): a wrong shape there is one error at its line, not an internal error."""
    text = (EXAMPLE / "dgd.yaml").read_text().replace(
        "      extraPodSpec:\n        mainContainer:\n",
        f"      extraPodSpec:\n        volumes:\n          - name: tmpl\n            {volume}\n"
        "        mainContainer:\n", 1)
    assert volume in text
    (work / "head.yaml").write_text(text)
    line = text.splitlines().index(f"            {volume}") + 1
    r = cli("diff", str(EXAMPLE / "dgd.yaml"), str(work / "head.yaml"))
    assert r.code == 2, r.err
    assert f"head.yaml:{line}:" in r.err
    assert f"extraPodSpec.{field}: {said}" in r.err
