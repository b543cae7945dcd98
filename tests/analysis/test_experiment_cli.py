"""`dgdgen experiment`: the A/B decision from a samples file, recorded in the rendered Git tree,
carried by the promote / rollback commit (Dgdgen-Experiment trailer) and shown by `status`."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from analysis_support import EXAMPLE
from gen_support import run_cli

from dgdgen.analysis.experiment import experiment_samples

EXPERIMENT = """    experiment:
      metric: user rating 1-5
      minimumDetectableEffect: 0.1
      better: higher
"""


def _spec(tmp: Path, text: str | None = None) -> Path:
    if text is None:
        text = EXAMPLE.read_text()
        head, _, _ = text.partition("  steps:\n")
        rest = text[text.index("  traffic:\n"):]
        text = (head + "  steps:\n    - weight: 50\n      gate: experiment\n    - weight: 100\n"
                + rest + EXPERIMENT)
    shutil.copy(EXAMPLE.parent / "dgd.yaml", tmp / "dgd.yaml")
    path = tmp / "rollout.yaml"
    path.write_text(text)
    return path


def _samples(tmp: Path, shift: int, *, short: int = 0, seed: int = 5) -> Path:
    """Ratings 1..5; the candidate's shifted by `shift` (clipped), both at the planned size."""
    n_s, n_c = experiment_samples(0.1, 0.5)
    rng = random.Random(seed)
    assert n_s == n_c
    stable = [rng.randint(1, 4) for _ in range(n_s)]
    # the candidate's ratings: the stable's, shifted (shift 0: the very same distribution)
    candidate = [min(5, max(1, v + shift)) for v in stable]
    rng.shuffle(candidate)
    lines = [json.dumps({"generation": "v060", "value": v}) for v in stable]
    lines += [json.dumps({"generation": "candidate", "value": v})
              for v in candidate[:n_c - short]]
    path = tmp / "samples.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize(("shift", "short", "decision", "code"), [
    (1, 0, "candidate-better", 0),
    (-1, 0, "stable-better", 1),
    (0, 0, "no-difference", 0),
    (1, 1, "undecided", 3),
])
def test_decision_and_exit_code(tmp_path: Path, shift: int, short: int, decision: str,
                                code: int) -> None:
    r = run_cli("experiment", str(_spec(tmp_path)), "--samples",
                str(_samples(tmp_path, shift, short=short)), "--format", "json")
    assert r.returncode == code, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["decision"] == decision
    assert (out["stable"]["needed"], out["candidate"]["needed"]) == experiment_samples(0.1, 0.5)
    if decision == "candidate-better":
        assert out["winRate"] > 0.6 and out["pValue"] < 0.05


def test_recorded_decision_lands_in_the_promote_commit_and_status(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    into = tmp_path / "deploy"
    assert run_cli("render", str(spec), "--into", str(into), "--init").returncode == 0
    assert run_cli("promote", str(spec), "--into", str(into)).returncode == 0
    r = run_cli("experiment", str(spec), "--samples", str(_samples(tmp_path, 1)), "--record",
                str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    st = run_cli("status", str(spec), "--into", str(into))
    assert "gate       experiment: passed (experiment candidate-better: win rate" in st.stdout, \
        st.stdout
    assert run_cli("promote", str(spec), "--into", str(into)).returncode == 0
    body = _git(into, "log", "-1", "--format=%B")
    trailers = _git(into, "log", "-1", "--format=%(trailers:key=Dgdgen-Experiment,valueonly)")
    assert "promote to step 2" in body
    assert trailers.startswith("experiment candidate-better: win rate"), body
    assert "Mann-Whitney U" in trailers


def test_stable_better_is_carried_by_the_rollback(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    into = tmp_path / "deploy"
    assert run_cli("render", str(spec), "--into", str(into), "--init").returncode == 0
    assert run_cli("promote", str(spec), "--into", str(into)).returncode == 0
    r = run_cli("experiment", str(spec), "--samples", str(_samples(tmp_path, -1)), "--record",
                str(into))
    assert r.returncode == 1
    assert run_cli("promote", str(spec), "--into", str(into)).returncode == 1  # gate failed
    assert run_cli("rollback", str(spec), "--into", str(into)).returncode == 0
    trailers = _git(into, "log", "-1", "--format=%(trailers:key=Dgdgen-Experiment,valueonly)")
    assert trailers.startswith("experiment stable-better:"), trailers


def test_bad_samples_line_is_named(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"generation": "v060", "value": 3}\n{"generation": "v999", "value": 3}\n')
    r = run_cli("experiment", str(spec), "--samples", str(bad))
    assert r.returncode == 2 and f"{bad}:2" in r.stderr and "v999" in r.stderr
    assert "Traceback" not in r.stderr


# A samples line a hostile or broken exporter could write: (line, what the error says).
HOSTILE_LINES = {
    "deep": ('{"generation": "stable", "value": ' + "[" * 100_000 + "]" * 100_000 + "}",
             "nested too deeply"),
    "generation-list": ('{"generation": ["stable"], "value": 1}', "generation: expected"),
    "generation-object": ('{"generation": {"a": 1}, "value": 1}', "generation: expected"),
    "digits-5000": ('{"generation": "stable", "value": ' + "9" * 5000 + "}",
                    "not JSON dgdgen reads"),
    "digits-400": ('{"generation": "stable", "value": ' + "9" * 400 + "}",
                   "value: expected a finite number, got 9999"),
    "value-list": ('{"generation": "stable", "value": [1]}', "value: expected a finite number"),
    "not-object": ("[1, 2]", "expected a JSON object"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_LINES))
def test_hostile_samples_line_is_one_located_error(tmp_path: Path, case: str) -> None:
    line, says = HOSTILE_LINES[case]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"generation": "v060", "value": 3}\n' + line + "\n")
    r = run_cli("experiment", str(_spec(tmp_path)), "--samples", str(bad))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert f"{bad}:2" in r.stderr and says in r.stderr, r.stderr
    assert len(r.stderr) < 1000  # the line is not echoed whole


def test_samples_are_read_as_every_input_is(tmp_path: Path) -> None:
    """Only a regular file, only up to the input size limit (--max-input-size raises it):
    /dev/zero would never end, a FIFO would block."""
    spec = str(_spec(tmp_path))
    r = run_cli("experiment", spec, "--samples", "/dev/zero")
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    r = run_cli("experiment", spec, "--samples", str(fifo))
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    r = run_cli("experiment", spec, "--samples", str(tmp_path))
    assert r.returncode == 2 and "is a directory" in r.stderr, r.stderr
    samples = _samples(tmp_path, 1)
    with samples.open("a") as fh:
        fh.write("\n" * 64 * 1024)  # blank lines: read, then skipped
    r = run_cli("experiment", spec, "--samples", str(samples), "--max-input-size", "64k")
    assert r.returncode == 2 and "over the limit of 65536 bytes" in r.stderr, r.stderr
    assert "--samples" in r.stderr
    r = run_cli("experiment", spec, "--samples", str(samples), "--max-input-size", "128k")
    assert r.returncode == 0, r.stderr


def test_haproxy_experiment_needs_stickiness(tmp_path: Path) -> None:
    text = _spec(tmp_path).read_text()
    head = text[:text.index("  traffic:\n")]
    rest = text[text.index("  analysis:\n"):]
    path = _spec(tmp_path, head + "  traffic:\n    provider: haproxy\n" + rest)
    r = run_cli("plan", str(path))
    assert r.returncode == 2 and "needs spec.traffic.sticky" in r.stderr, r.stderr
    sticky = head + "  traffic:\n    provider: haproxy\n    sticky:\n      cookie: SESSION\n" + rest
    r = run_cli("plan", str(_spec(tmp_path, sticky)))
    assert r.returncode == 0, r.stderr


def test_an_experiment_needs_a_split(tmp_path: Path) -> None:
    text = _spec(tmp_path).read_text().replace("    - weight: 50\n      gate: experiment\n",
                                               "    - weight: 100\n      gate: experiment\n")
    r = run_cli("plan", str(_spec(tmp_path, text)))
    assert r.returncode == 2 and "holds both generations at a split" in r.stderr, r.stderr


def test_plan_shows_the_planned_sample_and_stickiness(tmp_path: Path) -> None:
    text = _spec(tmp_path).read_text().replace("    - weight: 50\n      gate: experiment\n",
                                               "    - weight: 20\n      gate: experiment\n")
    spec = _spec(tmp_path, text)
    n_s, n_c = experiment_samples(0.1, 0.2)
    r = run_cli("plan", str(spec))
    assert r.returncode == 0, r.stderr
    assert (f"note: step 1: A/B experiment on user rating 1-5: both generations held at 80/20 "
            f"until {n_s} stable and {n_c} candidate samples") in r.stdout, r.stdout
    assert "Gateway API v1 HTTPRoute has no session persistence" in r.stdout
    data = json.loads(run_cli("plan", str(spec), "--format", "json").stdout)
    assert data["experiments"][0]["stableSamples"] == n_s
    # no AnalysisTemplate for the experiment gate: dgdgen experiment decides
    out = tmp_path / "out"
    assert run_cli("render", str(spec), "-o", str(out)).returncode == 0
    v = run_cli("verify", str(out))
    assert v.returncode == 0, v.stdout + v.stderr
    assert not [p for p in out.rglob("*.yaml") if "experiment" in p.read_text()
                and "AnalysisTemplate" in p.read_text()]
