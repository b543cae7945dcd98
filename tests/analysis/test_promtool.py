"""Every rendered query evaluated by Prometheus' own engine (`promtool test rules`) over synthetic
Dynamo histograms and counters; the rendered conditions, evaluated on promtool's values, must give
Successful / Failed / Inconclusive for a healthy candidate, one with TTFT 50 % worse than the
stable, and one without traffic."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from analysis_support import gate_metrics
from analysis.synth import (
    MINUTES,
    STABLE_TTFT_MEDIAN,
    TTFT_BUCKETS,
    histogram_quantile,
    lognormal_cumulative,
    scenario,
)

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian prometheus) missing")
STEP = 2  # 50/50: absolute and relative metrics both apply
EVAL = f"{MINUTES}m"
_GOT = re.compile(r'^\s*expr: (".*"), time: .*?,\s*\n\s*exp: .*\n\s*got: (.*)$', re.MULTILINE)
_SAMPLE = re.compile(r"\{[^}]*\} (\S+)")


def _test_file(path: Path, series: dict[str, list[float]],
               expected: dict[str, list[float]] | None, queries: list[str]) -> None:
    tests = []
    for q in queries:
        samples: list[dict[str, Any]] = []
        if expected is not None:
            samples = [{"labels": "{}", "value": v} for v in expected[q]]
        tests.append({"expr": q, "eval_time": EVAL, "exp_samples": samples})
    doc = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": k, "values": " ".join(repr(float(v)) for v in vs)}
                for k, vs in series.items()
            ],
            "promql_expr_test": tests,
        }],
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=10_000))


def promtool_values(tmp: Path, series: dict[str, list[float]],
                    queries: list[str]) -> dict[str, list[float]]:
    """Each query's instant-vector values at EVAL, as Prometheus computes them: a first run
    expecting nothing makes promtool print every non-empty result; a second run expecting
    exactly those values must pass."""
    probe = tmp / "probe.yml"
    _test_file(probe, series, None, queries)
    r = subprocess.run([PROMTOOL, "test", "rules", str(probe)], capture_output=True, text=True,
                       timeout=60, check=False)
    out = r.stdout + r.stderr
    values: dict[str, list[float]] = {q: [] for q in queries}
    for m in _GOT.finditer(out):
        expr_text = json.loads(m.group(1))
        assert expr_text in values, out
        values[expr_text] = [float(v) for v in _SAMPLE.findall(m.group(2))]
    assert "FAILED" in out or r.returncode == 0, out
    assert not re.search(r"parse error|could not", out), out
    check = tmp / "check.yml"
    _test_file(check, series, values, queries)
    r = subprocess.run([PROMTOOL, "test", "rules", str(check)], capture_output=True, text=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    return values


@pytest.fixture(scope="module")
def metrics(prepared):  # type: ignore[no-untyped-def]
    return gate_metrics(prepared, STEP)


def _series(prepared, name: str) -> dict[str, list[float]]:  # type: ignore[no-untyped-def]
    st = prepared.plan.state(STEP)
    return scenario(name, prepared.loaded.spec.metadata.namespace,
                    prepared.loaded.spec.metadata.name, st.stable.revision,
                    st.candidate.revision)


@pytest.mark.parametrize(("name", "verdict"), [
    ("healthy", "Successful"),
    ("ttft-50pct-worse", "Failed"),
    ("no-traffic", "Inconclusive"),
])
def test_rendered_gate_on_promtool_values(prepared, metrics, tmp_path: Path, name: str,
                                          verdict: str) -> None:  # type: ignore[no-untyped-def]
    from dgdgen.analysis.expr import measurement_phase, run_phase

    queries = [m["provider"]["prometheus"]["query"] for m in metrics]
    values = promtool_values(tmp_path, _series(prepared, name), queries)
    phases = {}
    for m in metrics:
        result = values[m["provider"]["prometheus"]["query"]]
        phases[m["name"]], why = measurement_phase(
            result, m["successCondition"], m["failureCondition"])
        assert why is None, (m["name"], why)
    assert run_phase(list(phases.values())) == verdict, (phases, values)
    by_name = {m["name"]: values[m["provider"]["prometheus"]["query"]] for m in metrics}
    if name == "healthy":
        assert set(phases.values()) == {"Successful"}
        assert by_name["ttft-p95-vs-stable"] == [1.0]
        assert by_name["error-rate"][0] == pytest.approx(0.002)
    if name == "ttft-50pct-worse":
        assert phases["ttft-p95-vs-stable"] == "Failed"
        assert phases["ttft-p95"] == "Successful"  # still inside the absolute SLO
        # Prometheus' interpolation agrees with an independent reference on the same buckets.
        ref = [histogram_quantile(0.95, TTFT_BUCKETS,
                                  lognormal_cumulative(TTFT_BUCKETS, STABLE_TTFT_MEDIAN * f, 0.5,
                                                       1000)) for f in (1.5, 1.0)]
        assert by_name["ttft-p95-vs-stable"][0] == pytest.approx(ref[0] / ref[1], rel=1e-9)
        assert by_name["ttft-p95-vs-stable"][0] > 1.2
    if name == "no-traffic":
        assert by_name["requests"] == [0.0]
        assert phases["requests"] == "Inconclusive"
        assert all(v == [] for k, v in by_name.items() if k != "requests")
        assert not any(math.isnan(x) for v in by_name.values() for x in v)


def test_a_wrong_query_changes_the_verdict(prepared, metrics, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The proof can fail: a query with a misspelt metric name returns nothing, and the healthy
    scenario is no longer Successful."""
    from dgdgen.analysis.expr import measurement_phase, run_phase

    broken = [dict(m, provider={"prometheus": dict(
        m["provider"]["prometheus"],
        query=m["provider"]["prometheus"]["query"].replace("time_to_first_token", "ttft"))})
        for m in metrics]
    queries = [m["provider"]["prometheus"]["query"] for m in broken]
    values = promtool_values(tmp_path, _series(prepared, "healthy"), queries)
    phases = [measurement_phase(values[q], m["successCondition"], m["failureCondition"])[0]
              for q, m in zip(queries, broken)]
    assert run_phase(phases) == "Inconclusive"
