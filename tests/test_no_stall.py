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
