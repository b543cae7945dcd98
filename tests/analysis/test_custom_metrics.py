"""Custom metric gates: the user's PromQL rendered per generation, evaluated by Prometheus' own
engine (`promtool test rules`) over synthetic feedback counters, then by `dgdgen analyze` against
a real Prometheus server. A candidate with a higher thumbs-down rate fails, an equal one passes,
too few feedback events are Inconclusive; a query that could read the other generation's series
is refused before anything is rendered."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from analysis.test_promtool import promtool_values
from analysis_support import EXAMPLE
from gen_support import run_cli

PROMTOOL = shutil.which("promtool")
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian prometheus) missing")

MINUTES = 30
FEEDBACK = "app_feedback_total"
THUMBS_DOWN = (
    f'sum(increase({FEEDBACK}{{verdict="down",${{generation}}}}[${{window}}]))'
    f" / sum(increase({FEEDBACK}{{${{generation}}}}[${{window}}]))"
)
SAMPLES = f"sum(increase({FEEDBACK}{{${{generation}}}}[${{window}}]))"
# KPI where higher is better: completed checkouts per feedback event
KPI = (f'sum(increase(app_checkout_total{{${{generation}}}}[${{window}}]))'
       f" / sum(increase({FEEDBACK}{{${{generation}}}}[${{window}}]))")

CUSTOM = f"""    customMetrics:
      - name: thumbs-down
        query: '{THUMBS_DOWN}'
        samples: '{SAMPLES}'
        minSamples: 200
        threshold: 0.1
        maxDifference: 0.02
      - name: checkout
        query: '{KPI}'
        samples: '{SAMPLES}'
        minSamples: 200
        better: higher
        threshold: 0.2
        maxRatio: 1.25
"""

# scenario -> per generation (feedback events per minute, thumbs-down share, checkouts per event)
SCENARIOS: dict[str, tuple[tuple[int, float, float], tuple[int, float, float], str]] = {
    "equal": ((100, 0.03, 0.5), (100, 0.03, 0.5), "Successful"),
    "more-thumbs-down": ((100, 0.03, 0.5), (100, 0.09, 0.5), "Failed"),
    "fewer-checkouts": ((100, 0.03, 0.5), (100, 0.03, 0.3), "Failed"),
    "too-little-feedback": ((100, 0.03, 0.5), (1, 0.9, 0.0), "Inconclusive"),
}


def spec_text(*, name: str = "qwen-vllm", custom: str = CUSTOM) -> str:
    text = EXAMPLE.read_text().replace("name: qwen-vllm", f"name: {name}", 1)
    text = text.replace("      gate: slo\n    - weight: 100", "      gate: custom\n    - weight: 100")
    assert "gate: custom" in text
    return text + custom


def write_spec(tmp: Path, text: str, stem: str = "rollout") -> Path:
    shutil.copy(EXAMPLE.parent / "dgd.yaml", tmp / "dgd.yaml")
    path = tmp / f"{stem}.yaml"
    path.write_text(text)
    return path


def series(ns: str, rollout: str, stable: str, candidate: str,
           scenario: str) -> dict[str, list[float]]:
    s, c, _ = SCENARIOS[scenario]
    out: dict[str, list[float]] = {}
    for gen, (per_min, down, checkout) in ((stable, s), (candidate, c)):
        lab = f'namespace="{ns}",dgdgen_rollout="{rollout}",dgdgen_generation="{gen}"'
        for verdict, share in (("down", down), ("up", 1 - down)):
            out[f'{FEEDBACK}{{{lab},verdict="{verdict}"}}'] = [
                round(per_min * share * t, 6) for t in range(MINUTES + 1)]
        out[f"app_checkout_total{{{lab}}}"] = [round(per_min * checkout * t, 6)
                                               for t in range(MINUTES + 1)]
    return out


@pytest.fixture(scope="module")
def custom_prepared(tmp_path_factory):  # type: ignore[no-untyped-def]
    from dgdgen.pipeline.prepare import prepare

    return prepare(str(write_spec(tmp_path_factory.mktemp("spec"), spec_text())))


def run_metrics(prepared: Any) -> list[dict[str, Any]]:
    from dgdgen.analysis import gates
    from dgdgen.render.analysis import analysis_run

    run = analysis_run(prepared, 2, hook=False)
    assert run is not None
    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    return [gates.resolve_args(m, args) for m in run["spec"]["metrics"]]


def test_the_custom_gate_renders_four_metrics(custom_prepared) -> None:  # type: ignore[no-untyped-def]
    names = [m["name"] for m in run_metrics(custom_prepared)]
    assert names == ["custom-thumbs-down", "custom-thumbs-down-vs-stable", "custom-checkout",
                     "custom-checkout-vs-stable"]
    by = {m["name"]: m for m in run_metrics(custom_prepared)}
    assert by["custom-checkout"]["successCondition"].endswith("result[0] >= 0.2")
    assert by["custom-checkout"]["failureCondition"].endswith("result[0] < 0.2")
    # every selector of the candidate's value names the candidate only
    q = by["custom-thumbs-down"]["provider"]["prometheus"]["query"]
    assert 'dgdgen_generation="v070"' in q and 'dgdgen_generation="v060"' not in q


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_custom_gate_on_promtool_values(custom_prepared, tmp_path: Path, scenario: str) -> None:  # type: ignore[no-untyped-def]
    from dgdgen.analysis.expr import measurement_phase, run_phase

    metrics = run_metrics(custom_prepared)
    st = custom_prepared.plan.state(2)
    data = series("inference", "qwen-vllm", st.stable.revision, st.candidate.revision, scenario)
    queries = [m["provider"]["prometheus"]["query"] for m in metrics]
    values = promtool_values(tmp_path, data, queries)
    phases = {}
    for m in metrics:
        phases[m["name"]], why = measurement_phase(
            values[m["provider"]["prometheus"]["query"]], m["successCondition"],
            m["failureCondition"])
        assert why is None, (m["name"], why)
    by = {m["name"]: values[m["provider"]["prometheus"]["query"]] for m in metrics}
    assert run_phase(list(phases.values())) == SCENARIOS[scenario][2], (phases, by)
    if scenario == "equal":
        assert by["custom-thumbs-down"] == [pytest.approx(0.03)]
        assert by["custom-thumbs-down-vs-stable"] == [pytest.approx(0.0, abs=1e-12)]
        assert by["custom-checkout-vs-stable"] == [pytest.approx(1.0)]
    if scenario == "more-thumbs-down":
        assert phases["custom-thumbs-down"] == "Successful"  # 0.09 is inside the 0.1 threshold
        assert phases["custom-thumbs-down-vs-stable"] == "Failed"
        assert by["custom-thumbs-down-vs-stable"] == [pytest.approx(0.06)]
    if scenario == "fewer-checkouts":
        assert phases["custom-checkout"] == "Successful"  # 0.3 ≥ 0.2
        assert phases["custom-checkout-vs-stable"] == "Failed"  # stable/candidate 1.67 > 1.25
        assert by["custom-checkout-vs-stable"] == [pytest.approx(0.5 / 0.3)]
    if scenario == "too-little-feedback":
        # a 90 % thumbs-down rate on 5 events per window is no evidence: nothing is returned
        assert set(phases.values()) == {"Inconclusive"}
        assert all(v == [] for v in by.values())


CROSS = {
    "unscoped selector": (
        (f'sum(increase({FEEDBACK}{{verdict="down",${{generation}}}}[${{window}}]))'
        f' / sum(increase({FEEDBACK}[${{window}}]))'), "selector 'app_feedback_total' has no"),
    "unscoped braces": (
        (f'sum(increase({FEEDBACK}{{verdict="down",${{generation}}}}[${{window}}]))'
        f' / sum(increase({FEEDBACK}{{verdict="up"}}[${{window}}]))'), "has no ${generation}"),
    "hard-coded stable": (
        f'sum(increase({FEEDBACK}{{dgdgen_generation="v060",${{generation}}}}[${{window}}]))',
        "names 'dgdgen_generation'"),
    "no placeholder": (f'sum(increase({FEEDBACK}[5m]))', "has no ${generation}"),
}


@pytest.mark.parametrize("case", list(CROSS))
def test_a_query_reading_the_other_generation_is_refused(tmp_path: Path, case: str) -> None:
    query, message = CROSS[case]
    custom = CUSTOM.replace(f"'{THUMBS_DOWN}'", f"'{query}'", 1)
    assert custom != CUSTOM
    path = write_spec(tmp_path, spec_text(custom=custom))
    r = run_cli("plan", str(path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if query in t)
    assert f"{path}:{line}" in r.stderr, r.stderr
    assert "spec.analysis.customMetrics[0].query" in r.stderr, r.stderr
    assert message in r.stderr, r.stderr


def test_the_refused_query_would_have_passed_a_bad_candidate(tmp_path: Path) -> None:
    """Why the refusal matters: the unscoped query, rendered anyway, divides the candidate's
    thumbs-down count by both generations' feedback, and Prometheus passes a candidate whose
    own rate (0.09) breaks the 0.06 threshold."""
    from dgdgen.analysis import custom, queries

    query = CROSS["unscoped selector"][0]
    rendered = custom.expand(query, queries.CANDIDATE)
    args = {"namespace": "inference", "rollout": "qwen-vllm", "candidate": "v070",
            "window": "5m"}
    from dgdgen.analysis.gates import resolve_args

    q = resolve_args({"q": rendered}, args)["q"]
    data = series("inference", "qwen-vllm", "v060", "v070", "more-thumbs-down")
    value = promtool_values(tmp_path, data, [q])[q]
    assert value[0] == pytest.approx(0.045)  # 0.09 diluted by the stable's events
    assert value[0] <= 0.06
    with pytest.raises(custom.QueryError):
        custom.check_query(query)


def test_every_selector_form_is_found() -> None:
    from dgdgen.analysis.custom import QueryError, check_query

    ok = [
        "sum by (verdict) (rate(x{${generation}}[${window}]))",
        "histogram_quantile(0.9, sum by (le) (rate(h_bucket{${generation},a=\"b\"}[5m])))",
        "sum(x{${generation}}) / on() group_left sum(y{${generation}} offset 5m)",
        "max_over_time(x{${generation}}[${window}:1m])",
        "{__name__=\"x\",${generation}} > bool 0.5",
    ]
    for q in ok:
        check_query(q)
    bad = [
        "sum by (verdict) (rate(x{${generation}}[5m])) / sum(y)",
        "sum(x{${generation}}) or vector(0) + z",
        "sum(x{${generation}}) + {__name__=\"y\"}",
        "sum(x{${generation}}[${window}]) + x{a=\"${generation}\"}",
        "x{${generation}} + ${generations}",
    ]
    for q in bad:
        with pytest.raises(QueryError):
            check_query(q)


def test_custom_gate_needs_custom_metrics(tmp_path: Path) -> None:
    path = write_spec(tmp_path, spec_text(custom=""))
    r = run_cli("plan", str(path))
    assert r.returncode == 2
    assert "gate 'custom' needs spec.analysis.customMetrics" in r.stderr



T0 = 1_767_225_600  # 2026-01-01T00:00:00Z; fixed so the blocks are the same on every run
ANALYZE = {"equal": 0, "more-thumbs-down": 1, "too-little-feedback": 3}


@pytest.fixture(scope="module")
def prometheus(custom_prepared, tmp_path_factory):  # type: ignore[no-untyped-def]
    """A real Prometheus over TSDB blocks of the scenarios (one rollout name per scenario)."""
    from analysis.test_analyze_prometheus import PROMETHEUS, _free_port

    if PROMETHEUS is None:
        pytest.skip("prometheus missing")
    import time
    import urllib.request

    st = custom_prepared.plan.state(2)
    tmp = tmp_path_factory.mktemp("prom")
    lines = []
    for case in ANALYZE:
        data = series("inference", f"r-{case}", st.stable.revision, st.candidate.revision, case)
        for key, values in sorted(data.items()):
            lines += [f"{key} {v} {T0 + 60 * m}" for m, v in enumerate(values)]
    (tmp / "data.om").write_text("\n".join(lines) + "\n# EOF\n")
    assert PROMTOOL is not None
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(tmp / "data.om"),
                    str(tmp / "tsdb")], check=True, capture_output=True, timeout=60)
    (tmp / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
         "--storage.tsdb.retention.time=100y"],
        stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("w"))
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("prometheus did not become ready:\n"
                            + (tmp / "prometheus.log").read_text()[-2000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("case", list(ANALYZE))
def test_analyze_evaluates_custom_metrics(prometheus: str, tmp_path: Path, case: str) -> None:
    import json

    path = write_spec(tmp_path, spec_text(name=f"r-{case}"))
    at = str(T0 + 60 * MINUTES)
    r = run_cli("analyze", str(path), "--step", "2", "--prometheus", prometheus, "--time", at,
                "--format", "json")
    assert r.returncode == ANALYZE[case], r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["phase"] == SCENARIOS[case][2]
    phases = {m["metric"]: m["phase"] for m in out["metrics"]}
    assert set(phases) == {"custom-thumbs-down", "custom-thumbs-down-vs-stable",
                           "custom-checkout", "custom-checkout-vs-stable"}
    if case == "more-thumbs-down":
        assert phases["custom-thumbs-down-vs-stable"] == "Failed"
        assert phases["custom-thumbs-down"] == "Successful"
    table = run_cli("analyze", str(path), "--step", "2", "--prometheus", prometheus, "--time", at)
    assert "custom-thumbs-down-vs-stable" in table.stdout
    assert f"verdict: {SCENARIOS[case][2]}" in table.stdout


def test_plan_names_the_minimum_sample(tmp_path: Path) -> None:
    """Each custom metric's bounds and minimum sample, and the minimum per gated step."""
    r = run_cli("plan", str(write_spec(tmp_path, spec_text())))
    assert r.returncode == 0, r.stderr
    assert ("custom metric thumbs-down (step 1, 2, lower is better): passes while candidate ≤ "
            "0.1 and candidate − stable ≤ 0.02; Inconclusive below 200 events per generation "
            "in the window") in r.stdout, r.stdout
    assert ("custom metric checkout (step 1, 2, higher is better): passes while candidate ≥ "
            "0.2 and stable/candidate ≤ 1.25; Inconclusive below 200") in r.stdout, r.stdout
    rows = {t.split()[0]: t for t in r.stdout.splitlines() if t[:1].isdigit()}
    assert rows["1"].endswith("custom 200 events") and rows["2"].endswith("custom 200 events")
    assert rows["3"].endswith(" -")


def test_rendered_tree_verifies_against_the_crds(tmp_path: Path) -> None:
    """Every manifest of every state validates against the upstream CRDs (`dgdgen verify`), and
    the custom metrics' rendered queries parse as PromQL."""
    from dgdgen.analysis import gates

    spec = write_spec(tmp_path, spec_text())
    out = tmp_path / "out"
    r = run_cli("render", str(spec), "-o", str(out))
    assert r.returncode == 0, r.stderr
    v = run_cli("verify", str(out))
    assert v.returncode == 0, v.stdout + v.stderr
    import yaml

    templates = [d for p in sorted(out.rglob("*.yaml")) for d in yaml.safe_load_all(p.read_text())
                 if d and d.get("kind") == "AnalysisTemplate"]
    custom = [m for t in templates for m in t["spec"]["metrics"] if m["name"].startswith("custom-")]
    assert len(custom) >= 4
    promql_parser = pytest.importorskip("promql_parser")
    for t in templates:
        args = {a["name"]: a.get("value", "x") for a in t["spec"]["args"]}
        for m in gates.resolve_args(t["spec"]["metrics"], args):
            if m["name"].startswith("custom-"):
                promql_parser.parse(m["provider"]["prometheus"]["query"])
