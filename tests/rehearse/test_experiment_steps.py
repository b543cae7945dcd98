"""An A/B experiment step rehearsed against the real Dynamo frontend + mocker: the rehearsal
cannot measure a metric only users give (a rating), so it decides the step with
`dgdgen experiment --record` on the samples passed with --experiment-samples, and without them
warns before the run and stops at the step with no decision, neither promoted nor rolled back
(docs/rehearse.md, "A/B experiment steps").

Long: each test rehearses a rollout (or its first gated step) on scaled clocks with real processes
starting, baking and draining — 30–70 s each on two CPUs, more beside other tests — so the
module is marked `long` (tests/suite_support.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rehearse_support import REPO, rehearse, require_runtime
from rehearse_support import EXPERIMENT_MDE as MDE
from rehearse_support import experiment_spec as _spec

from dgdgen.analysis.experiment import experiment_samples

NS = "{http://www.w3.org/2000/svg}"

pytestmark = [pytest.mark.slow, pytest.mark.rehearse, pytest.mark.long(minutes=2)]

FAST = ("--time-scale", "0.02", "--rate", "10")


def _samples(tmp: Path, candidate: list[int]) -> Path:
    n_s, n_c = experiment_samples(MDE, 0.5)
    stable = [1 + i % 5 for i in range(n_s)]  # 1..5 evenly
    lines = [json.dumps({"generation": "bs16", "value": v}) for v in stable]
    lines += [json.dumps({"generation": "bs32", "value": candidate[i % len(candidate)]})
              for i in range(n_c)]
    path = tmp / "ratings.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _trailer(tmp: Path) -> str:
    repo = tmp / "work" / "repo"
    return subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%s%n%b"],
                          capture_output=True, text=True, check=True).stdout


def _experiment_state(data: dict) -> dict:
    states = [s for s in data["states"] if s["gate"] == "experiment"]
    assert len(states) == 1, data["states"]
    return states[0]


def test_better_candidate_is_promoted(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, str(_spec(tmp_path)), *FAST, "--experiment-samples",
                               str(_samples(tmp_path, [4, 5])))
    assert code == 0, log
    assert data["result"] == "completed"
    assert _experiment_state(data)["verdict"] == "Successful"
    assert "A/B experiment on" not in log  # no warning: the samples were given
    report = (tmp_path / "report" / "report.md").read_text()
    assert "candidate-better: win rate" in report, report
    # the promotion that left the experiment step carries the decision
    repo = tmp_path / "work" / "repo"
    body = subprocess.run(["git", "-C", str(repo), "log", "--format=%B"], capture_output=True,
                          text=True, check=True).stdout
    assert "Dgdgen-Experiment: experiment candidate-better:" in body, body


def test_worse_candidate_is_rolled_back(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, str(_spec(tmp_path)), *FAST, "--experiment-samples",
                               str(_samples(tmp_path, [1, 2])))
    assert code == 1, log
    assert data["result"] == "rolled-back"
    assert _experiment_state(data)["verdict"] == "Failed"
    assert data["states"][-1]["state"] == "rollback"
    assert "Dgdgen-Experiment: experiment stable-better:" in _trailer(tmp_path)


def test_no_samples_warns_before_the_run_and_ends_with_no_decision(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, str(_spec(tmp_path)), *FAST)
    assert code == 3, log
    warning = log.index("warning: step 1 is an A/B experiment on 'user rating 1-5'")
    assert warning < log.index("load: "), log  # before the load starts
    assert data["result"] == "no decision"
    assert _experiment_state(data)["verdict"] == "No decision"
    # the last state is the experiment step itself: no promotion, no rollback
    assert data["states"][-1]["gate"] == "experiment"
    assert not any(s["state"] in ("rollback", "cleanup") for s in data["states"])
    report = (tmp_path / "report" / "report.md").read_text()
    assert "no --experiment-samples FILE" in report, report
    assert "Dgdgen-Experiment" not in _trailer(tmp_path)
    # the chart draws the step as no decision, not as a gate that failed
    svg = ET.parse(tmp_path / "report" / "chart.svg").getroot()
    dots = {c.get("data-state"): c.get("fill") for c in svg.iter(f"{NS}circle")
            if c.get("class") == "gate"}
    legend = {t.text for t in svg.iter(f"{NS}text") if t.get("class") == "legend-label"}
    state = _experiment_state(data)["state"]
    assert dots[state] == "#ff7f0e", dots
    assert "no decision (an A/B experiment without samples)" in legend, legend


def test_fewer_samples_than_planned_end_with_no_decision(tmp_path: Path) -> None:
    samples = _samples(tmp_path, [4, 5])
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(lines[:-1]) + "\n")  # one candidate rating short
    code, data, log = rehearse(tmp_path, str(_spec(tmp_path)), *FAST, "--experiment-samples",
                               str(samples))
    assert code == 3, log
    assert data["result"] == "no decision"
    assert _experiment_state(data)["verdict"] == "No decision"
    assert not any(s["state"] in ("rollback", "cleanup") for s in data["states"])
    report = (tmp_path / "report" / "report.md").read_text()
    _, n_c = experiment_samples(MDE, 0.5)
    assert "undecided: win rate" in report and f"candidate {n_c - 1}/{n_c}" in report, report


def test_a_bad_samples_file_is_refused_before_anything_starts(tmp_path: Path) -> None:
    require_runtime()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"generation": "bs16", "value": 3}\n{"generation": "x", "value": 1}\n')
    for spec, words in (
            (_spec(tmp_path), f"{bad}:2: generation: expected 'bs16', 'bs32'"),
            (REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml",
             "--experiment-samples: the rollout has no experiment step")):
        r = subprocess.run([sys.executable, "-m", "dgdgen", "rehearse", str(spec),
                            "--experiment-samples", str(bad), "--workdir", str(tmp_path / "w")],
                           capture_output=True, text=True, check=False, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert words in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not (tmp_path / "w").exists()  # refused before anything started
