"""Whole rollouts rehearsed against the real Dynamo frontend + mocker, HAProxy and Prometheus.

Each scenario runs `dgdgen rehearse` exactly as a user would and reads its JSON report; the
report's figures are computed from what the load generator saw per request (the generation named
by the proxy's response header, status, truncation) and from the gate verdicts that
`dgdgen analyze --record` committed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rehearse_support import rehearse

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

FAST = ("--time-scale", "0.02", "--rate", "20")


def _moving_states(data: dict) -> list[dict]:
    return [s for s in data["states"] if s["splitErrorPoints"] is not None]


def test_healthy_candidate_reaches_cleanup(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-block-size/rollout.yaml",
                               *FAST, "--min-requests", "30")
    assert code == 0, log
    assert data["result"] == "completed"
    assert data["states"][-1]["state"] == "cleanup"
    assert data["requests"] > 500 and data["streams"] > 0
    assert data["failed"] == 0 and data["truncated"] == 0, log
    for s in _moving_states(data):
        assert s["splitErrorPoints"] <= 3.0, s
    gated = [s for s in data["states"] if s["gate"]]
    assert gated and all(s["verdict"] == "Successful" for s in gated), gated
    # every planned generation with weight got traffic; none without weight did
    for s in _moving_states(data):
        for gen, w in s["planned"].items():
            assert (s["observed"][gen] > 0) == (w > 0), s
    svg = ET.parse(tmp_path / "report" / "chart.svg").getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.findall(f".//{ns}path[@class='observed']")
    assert len(svg.findall(f".//{ns}circle[@class='gate']")) == len(gated)
    assert "| step-01 |" in (tmp_path / "report" / "report.md").read_text()


def test_slow_candidate_is_rolled_back(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-block-size/rollout.yaml",
                               *FAST, "--min-requests", "30", "--candidate-slowdown", "4")
    assert code == 1, log
    assert data["result"] == "rolled-back"
    first_gate = next(s for s in data["states"] if s["gate"])
    assert first_gate["verdict"] == "Failed", first_gate
    assert data["states"][-1]["state"] == "rollback"
    assert data["failed"] == 0 and data["truncated"] == 0, log
    back = data["states"][-1]
    stable = next(g for g, w in back["planned"].items() if w == 100)
    assert back["observed"][stable] == 100.0, back


def test_gate_that_cannot_collect_its_sample_is_inconclusive(tmp_path: Path) -> None:
    # 5 % of 20 requests/s for a scaled 12 s bake cannot reach the spec's derived minimum sample
    # (the plan's "min requests"): the gate must say Inconclusive, and Inconclusive never passes.
    code, data, log = rehearse(tmp_path, "examples/sglang-disagg-transfer-backend/rollout.yaml",
                               *FAST)
    assert code == 1, log
    first_gate = next(s for s in data["states"] if s["gate"])
    assert first_gate["verdict"] == "Inconclusive", first_gate
    assert data["result"] == "rolled-back"
    assert data["failed"] == 0 and data["truncated"] == 0, log
