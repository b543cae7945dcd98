"""A quiet minute does not end a gate; a gate that never sees data still does not pass.

The step's AnalysisRun metrics as rendered, their queries evaluated by Prometheus' own engine
(`promtool test rules`) at each measurement's time over synthetic Dynamo counters, each
measurement's phase from the rendered conditions (`dgdgen.analysis.expr`), and each metric's phase
from the measurements as Argo Rollouts assesses them (`assess_metric`). Step 1 of the image-bump
example sends the candidate 10 % of 25 req/s: its 13-minute window holds 1,950 requests against a
minimum of 1,826, so every window that contains one minute without traffic is short of it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from analysis.synth import MINUTES, STABLE_TTFT_MEDIAN, generation_series
from analysis_support import gate_metrics

from dgdgen.analysis.expr import measurement_phase, run_phase

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian prometheus) missing")
STEP = 1
RATE = 25 * 60  # requests per minute over both generations (spec: expectedRequestRate 25)
_GOT = re.compile(r'^\s*expr: (".*"), time: (\S+?),\s*\n\s*exp: .*\n\s*got: (.*)$', re.MULTILINE)
_SAMPLE = re.compile(r"\{[^}]*\} (\S+)")


def assess_metric(metric: dict[str, Any], phases: list[str]) -> str:
    """A metric's phase after its measurements, as Argo Rollouts' ``assessMetricStatus``
    (analysis/analysis.go) gives it after each one: Failed once failed > failureLimit,
    Inconclusive once inconclusive > inconclusiveLimit (both default 0), Error once consecutive
    errors > consecutiveErrorLimit, Successful when ``count`` measurements are in, else Running."""
    failed = inconclusive = errors = 0
    for n, phase in enumerate(phases, 1):
        failed += phase == "Failed"
        inconclusive += phase == "Inconclusive"
        errors = errors + 1 if phase == "Error" else 0
        if failed > int(metric.get("failureLimit", 0)):
            return "Failed"
        if inconclusive > int(metric.get("inconclusiveLimit", 0)):
            return "Inconclusive"
        if errors > int(metric.get("consecutiveErrorLimit", 4)):
            return "Error"
        if n >= int(metric.get("count", 1)):
            return "Successful"
    return "Running"


def _minutes(duration: str) -> int:
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", duration)
    assert m, duration
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def _promtool(path: Path, series: dict[str, list[float]],
              expected: dict[tuple[str, int], list[float]] | None,
              asks: list[tuple[str, int]]) -> str:
    doc = {"rule_files": [], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": k, "values": " ".join(repr(float(v)) for v in vs)}
                         for k, vs in series.items()],
        "promql_expr_test": [
            {"expr": q, "eval_time": f"{t}m",
             "exp_samples": [{"labels": "{}", "value": v} for v in (expected or {}).get((q, t), [])]}
            for q, t in asks],
    }]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=10_000))
    assert PROMTOOL is not None
    r = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True,
                       timeout=60, check=False)
    if expected is not None:
        assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def values_at(tmp: Path, series: dict[str, list[float]], asks: list[tuple[str, int]]
              ) -> dict[tuple[str, int], list[float]]:
    """Each (query, minute)'s instant-vector values as Prometheus computes them: a run expecting
    nothing prints every non-empty result, a second run expecting exactly those must pass."""
    out = _promtool(tmp / "probe.yml", series, None, asks)
    got: dict[tuple[str, int], list[float]] = {a: [] for a in asks}
    for m in _GOT.finditer(out):
        key = (json.loads(m.group(1)), _minutes(m.group(2).removesuffix("0s")))
        assert key in got, (key, out[-2000:])
        got[key] = [float(v) for v in _SAMPLE.findall(m.group(3))]
    assert not re.search(r"parse error|could not", out), out
    _promtool(tmp / "check.yml", series, got, asks)
    return got


def _run(prepared: Any, tmp: Path, quiet: set[int], *, limit: int | None = None
         ) -> tuple[str, dict[str, list[str]]]:
    """The run's phase and each metric's measurement phases, the candidate silent in the
    minutes ``quiet`` (minute 0 is the step's first); ``limit`` overrides the rendered
    inconclusiveLimit (0: what Argo Rollouts does without one)."""
    st = prepared.plan.state(STEP)
    ns, rollout = prepared.loaded.spec.metadata.namespace, prepared.loaded.spec.metadata.name
    share = st.candidate.weight / 100
    series = generation_series(ns, rollout, st.stable.revision, ttft_median=STABLE_TTFT_MEDIAN,
                               traffic=True, profile=[RATE * (1 - share)] * MINUTES)
    series.update(generation_series(
        ns, rollout, st.candidate.revision, ttft_median=STABLE_TTFT_MEDIAN, traffic=True,
        profile=[0.0 if t in quiet else RATE * share for t in range(MINUTES)]))
    metrics = gate_metrics(prepared, STEP)
    if limit is not None:
        metrics = [dict(m, inconclusiveLimit=limit) for m in metrics]
    times = {m["name"]: [_minutes(m["initialDelay"]) + k * _minutes(m["interval"])
                         for k in range(m["count"])] for m in metrics}
    asks = sorted({(m["provider"]["prometheus"]["query"], t)
                   for m in metrics for t in times[m["name"]]})
    got = values_at(tmp, series, asks)
    phases: dict[str, list[str]] = {}
    verdicts = []
    for m in metrics:
        q = m["provider"]["prometheus"]["query"]
        phases[m["name"]] = [measurement_phase(got[q, t], m["successCondition"],
                                               m["failureCondition"])[0]
                             for t in times[m["name"]]]
        verdicts.append(assess_metric(m, phases[m["name"]]))
    return run_phase(verdicts), phases


def test_the_step_is_sized_so_one_quiet_minute_leaves_a_window_short(prepared) -> None:  # type: ignore[no-untyped-def]
    [requests] = [m for m in gate_metrics(prepared, STEP) if m["name"] == "requests"]
    assert requests["count"] == 3 and requests["initialDelay"] == "13m"
    assert requests["inconclusiveLimit"] == 2  # all but one of the three
    need = int(requests["successCondition"].rsplit(">= ", 1)[1])
    assert 12 * RATE * 0.1 < need <= 13 * RATE * 0.1


@needs_promtool
def test_one_quiet_minute_passes_all_quiet_does_not(prepared, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    verdict, phases = _run(prepared, tmp_path, set())
    assert verdict == "Successful", phases
    # the candidate's first minute without traffic: the first window (minutes 0-13) is short of
    # the minimum, the later ones are not
    verdict, phases = _run(prepared, tmp_path, {0})
    assert phases["requests"] == ["Inconclusive", "Successful", "Successful"], phases
    assert verdict == "Successful", phases
    verdict, phases = _run(prepared, tmp_path, {0}, limit=0)
    assert verdict == "Inconclusive", phases  # what inconclusiveLimit 0 did: the step ended
    verdict, phases = _run(prepared, tmp_path, set(range(MINUTES)))
    assert set(phases["requests"]) == {"Inconclusive"}, phases
    assert verdict == "Inconclusive", phases  # a gate that never sees data never passes


def test_assess_metric_follows_argo_rollouts() -> None:
    m = {"count": 3, "failureLimit": 0, "inconclusiveLimit": 2, "consecutiveErrorLimit": 2}
    assert assess_metric(m, ["Inconclusive", "Inconclusive"]) == "Running"
    assert assess_metric(m, ["Inconclusive", "Inconclusive", "Successful"]) == "Successful"
    assert assess_metric(m, ["Inconclusive"] * 3) == "Inconclusive"
    assert assess_metric(m, ["Successful", "Failed"]) == "Failed"
    assert assess_metric(dict(m, inconclusiveLimit=0), ["Inconclusive"]) == "Inconclusive"
    assert assess_metric(m, ["Error"] * 3) == "Error"


@pytest.mark.parametrize(("given", "count", "rendered"), [
    (None, 3, 2), (None, 1, 0), (0, 3, 0), (1, 3, 1), (5, 3, 2), (5, 1, 0),
])
def test_the_limit_is_the_spec_field_capped_below_count(given: int | None, count: int,
                                                       rendered: int) -> None:
    from dgdgen.analysis.gates import inconclusive_limit
    from dgdgen.spec import Analysis

    analysis = Analysis.model_validate({} if given is None else {"inconclusiveLimit": given})
    assert inconclusive_limit(analysis, count) == rendered
