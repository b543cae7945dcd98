"""Commands take only options that act there: `schema` reads no file, `verify` reads YAML files
but no spec (so `--max-input-size` applies and `--allow-outside-paths` would do nothing)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gen_support import run_cli

REPO = Path(__file__).resolve().parents[1]


def _dgdgen(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)


def test_schema_refuses_options_that_do_nothing() -> None:
    for opt in (["--allow-outside-paths"], ["--max-input-size", "1K"]):
        r = _dgdgen("schema", *opt)
        assert r.returncode == 2 and "unrecognized arguments" in r.stderr, (opt, r.stderr)
    assert _dgdgen("schema").returncode == 0


def test_verify_honours_max_input_size_and_refuses_allow_outside_paths(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 3000 + "\n", encoding="utf-8")
    r = _dgdgen("verify", "--max-input-size", "1K", str(big))
    assert r.returncode == 2 and "over the limit of 1024 bytes" in r.stderr, r.stderr
    r = _dgdgen("verify", "--allow-outside-paths", str(big))
    assert r.returncode == 2 and "unrecognized arguments: --allow-outside-paths" in r.stderr


def test_gate_help_says_what_promote_does_with_each_gate_record(tmp_path: Path) -> None:
    """`gate --help` says a gated step is left only once its gate is recorded as passed: a gate
    not recorded, failed or inconclusive refuses promote (exit 1); a rollback is never blocked."""
    shown = " ".join(_dgdgen("gate", "--help").stdout.split())
    assert "leave a gated step only once its gate is recorded as passed" in shown
    assert "a gate not recorded yet, failed or inconclusive refuses them (exit 1)" in shown
    assert "`dgdgen rollback` is never blocked by a gate" in shown
    example = REPO / "examples" / "vllm-disagg-block-size"
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    for name in ("rollout.yaml", "dgd.yaml"):
        (spec_dir / name).write_text((example / name).read_text(encoding="utf-8"))
    spec, into = str(spec_dir / "rollout.yaml"), str(tmp_path / "deploy")
    assert _dgdgen("render", spec, "--into", into, "--init").returncode == 0
    assert _dgdgen("promote", spec, "--into", into).returncode == 0  # leave the ungated baseline
    r = _dgdgen("promote", spec, "--into", into)
    assert r.returncode == 1 and "is not recorded" in r.stderr, r.stderr
    for result in ("failed", "inconclusive"):
        assert _dgdgen("gate", spec, "--into", into, "--result", result).returncode == 0
        r = _dgdgen("promote", spec, "--into", into)
        assert r.returncode == 1 and f"recorded as {result}" in r.stderr, r.stderr
    assert _dgdgen("gate", spec, "--into", into, "--result", "passed").returncode == 0
    assert _dgdgen("promote", spec, "--into", into).returncode == 0
    assert _dgdgen("rollback", spec, "--into", into).returncode == 0  # step 2, gate not recorded


def test_rehearse_refuses_numbers_it_cannot_run_with(tmp_path: Path) -> None:
    """An infinite rate or clock, or a pod start longer than the roll waits for a pod, is a usage
    error (exit 2, one line, nothing written): `--rate inf` was an internal error (exit 70) and
    `--pod-startup inf` waited 180 s before it failed (exit 3)."""
    spec = str(REPO / "examples" / "vllm-agg-auto" / "rollout.yaml")
    report = tmp_path / "report"
    for option, value, said in (
            ("--rate", "inf", "must be a finite number greater than 0, got 'inf'"),
            ("--rate", "nan", "must be a finite number greater than 0, got 'nan'"),
            ("--time-scale", "inf", "must be a finite number greater than 0, got 'inf'"),
            ("--candidate-slowdown", "inf", "must be a finite number greater than 0"),
            ("--pod-startup", "inf", "--pod-startup must be 0 or more and under 180 s"),
            ("--pod-startup", "nan", "--pod-startup must be 0 or more and under 180 s"),
            ("--pod-startup", "180", "--pod-startup must be 0 or more and under 180 s"),
            ("--pod-startup", "-1", "--pod-startup must be 0 or more and under 180 s")):
        r = _dgdgen("rehearse", spec, option, value, "--report", str(report))
        assert r.returncode == 2, (option, value, r.returncode, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert said in lines[-1] and "Traceback" not in r.stderr, (option, value, r.stderr)
        assert not report.exists()
