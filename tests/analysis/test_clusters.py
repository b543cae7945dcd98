"""A rollout fanned out to several clusters (``spec.gitops.clusters``) gates each cluster on its
own series. Prometheus' own engine (`promtool test rules`) evaluates the rendered runs over two
clusters' synthetic Dynamo metrics in one Prometheus: cluster A's candidate is healthy, cluster B's
is 50 % slower. A's run passes and B's fails; without the cluster matcher both runs read the sum
of the two clusters and give one verdict, so one cluster would be promoted on the other's data.
Combinations that cannot be scoped to one cluster are refused with the field path."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from analysis.synth import STABLE_TTFT_MEDIAN, generation_series
from analysis.test_promtool import promtool_values
from analysis_support import EXAMPLE
from gen_support import run_cli

PROMTOOL = shutil.which("promtool")
STEP = 2  # 50/50: absolute and relative metrics both apply

CLUSTERS = """  gitops:
    repoUrl: https://git.example.com/deploy.git
    clusters:
      - {name: us-east, server: https://10.0.0.1:6443}
      - {name: eu-west}
"""


def _spec(tmp: Path, *, hooks: bool = False, extra: str = "", gitops: str = CLUSTERS) -> Path:
    d = tmp / "spec"
    d.mkdir(exist_ok=True)
    shutil.copy(EXAMPLE.parent / "dgd.yaml", d / "dgd.yaml")
    text = EXAMPLE.read_text()
    if not hooks:
        text = text.replace("    hooks:\n      enabled: true\n", "")
    (d / "rollout.yaml").write_text(text.replace("  analysis:\n", "  analysis:\n" + extra, 1)
                                    + gitops)
    return d / "rollout.yaml"


def _prepare(path: Path) -> Any:
    from dgdgen.pipeline.prepare import prepare

    return prepare(str(path))


def _run_metrics(run: dict[str, Any]) -> list[dict[str, Any]]:
    from dgdgen.analysis import gates

    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    return [gates.resolve_args(m, args) for m in run["spec"]["metrics"]]


def _verdict(values: dict[str, list[float]], metrics: list[dict[str, Any]]) -> str:
    from dgdgen.analysis.expr import measurement_phase, run_phase

    phases = []
    for m in metrics:
        phase, why = measurement_phase(values[m["provider"]["prometheus"]["query"]],
                                       m["successCondition"], m["failureCondition"])
        assert why is None, (m["name"], why)
        phases.append(phase)
    return run_phase(phases)


def _in_cluster(series: dict[str, list[float]], label: str, cluster: str
                ) -> dict[str, list[float]]:
    """The same series as one cluster's Prometheus exposes them to a global view (an external
    label, as Thanos or Mimir show it)."""
    return {k.replace("{", f'{{{label}="{cluster}",', 1): v for k, v in series.items()}


def _two_clusters(prepared: Any, label: str = "cluster") -> dict[str, list[float]]:
    st = prepared.plan.state(STEP)
    ns, rollout = prepared.loaded.spec.metadata.namespace, prepared.loaded.spec.metadata.name
    series: dict[str, list[float]] = {}
    for cluster, factor in (("us-east", 1.0), ("eu-west", 1.5)):
        for rev, median in ((st.stable.revision, STABLE_TTFT_MEDIAN),
                            (st.candidate.revision, STABLE_TTFT_MEDIAN * factor)):
            series.update(_in_cluster(
                generation_series(ns, rollout, rev, ttft_median=median, traffic=True),
                label, cluster))
    return series


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian prometheus) missing")
@pytest.mark.parametrize("label", ["cluster", "k8s_cluster"])
def test_each_cluster_is_gated_on_its_own_series(tmp_path: Path, label: str) -> None:
    from dgdgen.render.analysis import analysis_runs

    extra = f"    clusterLabel: {label}\n" if label != "cluster" else ""
    p = _prepare(_spec(tmp_path, extra=extra))
    runs = analysis_runs(p, STEP, hook=False)
    assert [r["metadata"]["labels"]["dgdgen.dev/cluster"] for r in runs] == ["us-east",
                                                                               "eu-west"]
    by_cluster = {r["metadata"]["labels"]["dgdgen.dev/cluster"]: _run_metrics(r) for r in runs}
    series = _two_clusters(p, label)
    queries = [m["provider"]["prometheus"]["query"] for ms in by_cluster.values() for m in ms]
    values = promtool_values(tmp_path, series, queries)
    verdicts = {c: _verdict(values, ms) for c, ms in by_cluster.items()}
    assert verdicts == {"us-east": "Successful", "eu-west": "Failed"}, verdicts
    ratio = {c: values[next(m for m in ms if m["name"] == "ttft-p95-vs-stable")
                       ["provider"]["prometheus"]["query"]]
             for c, ms in by_cluster.items()}
    assert ratio["us-east"] == [1.0] and ratio["eu-west"][0] > 1.2

    # The same runs without the matcher read both clusters' sums: one value, one verdict for
    # both, so the healthy cluster fails on the slow one's data or the slow one passes on the
    # healthy one's.
    unscoped = {c: [dict(m, provider={"prometheus": dict(
        m["provider"]["prometheus"],
        query=m["provider"]["prometheus"]["query"].replace(f'{label}="{c}",', ""))})
        for m in ms] for c, ms in by_cluster.items()}
    qs = [m["provider"]["prometheus"]["query"] for ms in unscoped.values() for m in ms]
    assert all(f'{label}="' not in q for q in qs)
    mixed = promtool_values(tmp_path, series, qs)
    both = {c: _verdict(mixed, ms) for c, ms in unscoped.items()}
    assert both["us-east"] == both["eu-west"], both
    assert both != verdicts


def test_every_selector_of_every_query_matches_the_cluster(tmp_path: Path) -> None:
    """Built-in and custom metrics, runs and templates: each selector that names a generation
    names the cluster too."""
    from dgdgen.render import render_state
    from dgdgen.render.analysis import analysis_runs

    custom = """    customMetrics:
      - name: thumbs-down
        query: >-
          sum(increase(fb_total{verdict="down",${generation}}[${window}]))
          / sum(increase(fb_total{${generation}}[${window}]))
        samples: 'sum(increase(fb_total{${generation}}[${window}]))'
        minSamples: 200
        threshold: 0.1
        maxDifference: 0.02
"""
    p = _prepare(_spec(tmp_path, extra=custom))
    templates = [m.obj for m in render_state(p, p.plan.state(STEP))
                 if m.kind == "AnalysisTemplate"]
    assert templates and all({"name": "cluster"} in t["spec"]["args"] for t in templates)
    runs = analysis_runs(p, STEP, hook=False)
    names = set()
    for obj in templates + runs:
        for m in obj["spec"]["metrics"]:
            names.add(m["name"])
            q = m["provider"]["prometheus"]["query"]
            assert q.count("dgdgen_generation=") == q.count('cluster="{{args.cluster}}"') > 0, q
    assert {"custom-thumbs-down", "custom-thumbs-down-vs-stable", "ttft-p95"} <= names


def test_one_cluster_keeps_unscoped_queries(tmp_path: Path) -> None:
    from dgdgen.render.analysis import analysis_runs

    p = _prepare(_spec(tmp_path, gitops=""))
    (run,) = analysis_runs(p, STEP, hook=False)
    assert "dgdgen.dev/cluster" not in run["metadata"]["labels"]
    assert all("cluster" not in m["provider"]["prometheus"]["query"]
               for m in run["spec"]["metrics"])


PROBE = """    probe:
      prompts:
        - {prompt: "Reply with the single word: ready", expected: ready}
"""


@pytest.mark.parametrize(("hooks", "extra", "field", "words"), [
    (True, "", "spec.analysis.hooks.enabled", "one manifest that every cluster's Application"),
    (False, PROBE, "spec.steps[0].gate", "the probe metric, a Job in the cluster"),
    (False, "    clusterLabel: __name__\n", "spec.analysis.clusterLabel", "label name"),
    (False, "    clusterLabel: namespace\n", "spec.analysis.clusterLabel",
     "already scopes"),
])
def test_what_cannot_be_scoped_to_a_cluster_is_refused(tmp_path: Path, hooks: bool, extra: str,
                                                       field: str, words: str) -> None:
    spec = _spec(tmp_path, hooks=hooks, extra=extra)
    for command in ("validate", "render"):
        args = [command, str(spec)] + (["-o", str(tmp_path / "out")] if command == "render"
                                       else [])
        r = run_cli(*args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert field in r.stderr and words in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "rollout.yaml:" in r.stderr
        assert not (tmp_path / "out").exists()


def test_analyze_names_the_cluster(tmp_path: Path) -> None:
    from dgdgen import yamlio

    spec = str(_spec(tmp_path))
    r = run_cli("analyze", spec, "--step", "1", "--print-run")
    assert r.returncode == 0, r.stderr
    docs = [d.data for d in yamlio.load_documents(r.stdout, "stdout")]
    assert [{a["name"]: a["value"] for a in d["spec"]["args"]}["cluster"] for d in docs] == [
        "us-east", "eu-west"]
    r = run_cli("analyze", spec, "--step", "1", "--print-run", "--cluster", "eu-west")
    assert r.returncode == 0 and r.stdout.count("kind: AnalysisRun") == 1, r.stderr
    r = run_cli("analyze", spec, "--step", "1", "--prometheus", "http://127.0.0.1:9")
    assert r.returncode == 2 and "--cluster" in r.stderr and "us-east, eu-west" in r.stderr
    r = run_cli("analyze", spec, "--step", "1", "--cluster", "nowhere")
    assert r.returncode == 2 and "'nowhere' is not in spec.gitops.clusters" in r.stderr
