"""A new generation's cold KV cache is not read as a TTFT regression: at the candidate's first
step with traffic the rendered AnalysisRun's TTFT metrics start ``spec.analysis.warmUp`` after
the others (dgdgen.analysis.timing); later steps, the error and ITL metrics are unchanged; ``0s``
turns it off; the plan says so."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from analysis_support import EXAMPLE
from gen_support import run_cli

from dgdgen.spec import parse_duration


def _spec(tmp: Path, warm_up: str | None) -> Path:
    shutil.copy(EXAMPLE.parent / "dgd.yaml", tmp / "dgd.yaml")
    text = EXAMPLE.read_text()
    if warm_up is not None:
        text = text.replace("  analysis:\n    enabled: true\n",
                            f"  analysis:\n    enabled: true\n    warmUp: {warm_up}\n", 1)
        assert f"warmUp: {warm_up}" in text
    (tmp / "rollout.yaml").write_text(text)
    return tmp / "rollout.yaml"


def _metrics(spec: Path, step: int) -> dict[str, dict[str, Any]]:
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render.analysis import analysis_run

    run = analysis_run(prepare(str(spec)), step, hook=True)
    assert run is not None
    return {m["name"]: m for m in run["spec"]["metrics"]}


def test_first_traffic_step_delays_only_the_ttft_metrics(tmp_path: Path) -> None:
    first, later = _metrics(_spec(tmp_path, None), 1), _metrics(_spec(tmp_path, None), 2)
    window = parse_duration(first["error-rate"]["initialDelay"])
    for name in ("ttft-p95", "ttft-p99", "ttft-p95-vs-stable"):
        # the default warm-up, 2m, on top of the step's window
        assert parse_duration(first[name]["initialDelay"]) == window + 120, first[name]
        # as many fewer measurements as the warm-up takes, within the step's pause
        assert first[name]["count"] == max(1, first["error-rate"]["count"] - 2)
        assert first[name]["inconclusiveLimit"] <= first[name]["count"] - 1
    for name in ("error-rate", "itl-p95", "requests"):
        assert parse_duration(first[name]["initialDelay"]) == window, name
    # a later step meets a warm cache: every metric waits its window only
    later_window = parse_duration(later["error-rate"]["initialDelay"])
    assert parse_duration(later["ttft-p95"]["initialDelay"]) == later_window
    assert later["ttft-p95"]["count"] == later["error-rate"]["count"]


def test_warm_up_zero_turns_it_off(tmp_path: Path) -> None:
    first = _metrics(_spec(tmp_path, "0s"), 1)
    assert first["ttft-p95"]["initialDelay"] == first["error-rate"]["initialDelay"]
    assert first["ttft-p95"]["count"] == first["error-rate"]["count"]


def test_the_plan_says_so(tmp_path: Path) -> None:
    r = run_cli("plan", str(_spec(tmp_path, "3m")))
    assert r.returncode == 0, r.stderr
    assert ("note: step 1: the candidate's first traffic meets an empty KV cache" in r.stdout
            and "its TTFT metrics start 3m after the others" in r.stdout), r.stdout
    assert "note: step 2: the candidate's first traffic" not in r.stdout
    r = run_cli("plan", str(_spec(tmp_path, "3m")), "--format", "json")
    gates = {g["step"]: g for g in json.loads(r.stdout)["gates"]}
    assert gates[1]["warmUpSeconds"] == 180 and gates[2]["warmUpSeconds"] == 0
