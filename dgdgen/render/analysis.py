"""Analysis objects of one plan state (docs/analysis.md):

* a PodMonitor per generation whose frontend pods are running: Prometheus scrapes the frontend's
  ``/metrics`` and adds ``dgdgen_rollout`` / ``dgdgen_generation`` at scrape time, because Dynamo
  frontend metrics carry only ``model`` (docs/analysis.md, Prometheus setup);
* an AnalysisTemplate per gate the rollout uses (for ``kubectl argo rollouts create analysisrun
  --from``, Kargo verification, or your own runs);
* at a gated step, an AnalysisRun with the gate's metrics inlined and args filled — an
  AnalysisRun never references a template (schemas/crds/argo-rollouts) — optionally annotated as an
  Argo CD PostSync hook (Argo CD v3.5.1 docs/user-guide/sync-waves.md). With
  ``gitops.clusters`` one run per cluster, each query matching that cluster's label
  (docs/gitops.md, "Several clusters").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dgdgen.analysis import gates, queries
from dgdgen.model.generation import LABEL_GENERATION, LABEL_ROLLOUT
from dgdgen.render.manifest import Manifest
from dgdgen.traffic import preview

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared

MANAGED_BY = {"app.kubernetes.io/managed-by": "dgdgen"}
LABEL_STEP = "dgdgen.dev/step"
LABEL_GATE = "dgdgen.dev/gate"
LABEL_CLUSTER = "dgdgen.dev/cluster"
HOOK = "argocd.argoproj.io/hook"
HOOK_DELETE = "argocd.argoproj.io/hook-delete-policy"
SCRAPE_INTERVAL = "15s"


def _analysis(prepared: Prepared) -> Any:
    return prepared.loaded.spec.spec.analysis


def _labels(prepared: Prepared, **extra: str) -> dict[str, str]:
    labels = dict(MANAGED_BY)
    labels[LABEL_ROLLOUT] = prepared.loaded.spec.metadata.name
    labels.update(extra)
    return labels


def pod_monitor(prepared: Prepared, revision: str | None) -> dict[str, Any]:
    """Scrape one generation's frontend pods (``revision`` None: the shared frontend)."""
    rollout = prepared.loaded.spec.metadata.name
    gen_value = revision or gates.SHARED_GENERATION
    from dgdgen.render.services import frontend_selector

    selector = frontend_selector(prepared, revision)
    labels = _labels(prepared)
    if revision is not None:
        labels[LABEL_GENERATION] = revision
    labels.update(_analysis(prepared).monitor_labels)
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": f"{rollout}-{gen_value}",
            "namespace": prepared.loaded.spec.metadata.namespace,
            "labels": labels,
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "podMetricsEndpoints": [
                {
                    "port": "http",  # the frontend's HTTP port serves /metrics (docs/analysis.md)
                    "path": "/metrics",
                    "interval": SCRAPE_INTERVAL,
                    "relabelings": [
                        {"action": "replace", "targetLabel": queries.LABEL_ROLLOUT,
                         "replacement": rollout},
                        {"action": "replace", "targetLabel": queries.LABEL_GENERATION,
                         "replacement": gen_value},
                    ],
                }
            ],
        },
    }


def warnings(prepared: Prepared) -> list[str]:
    """What ``validate`` should point out although the spec is valid (``file:line: field: …``)."""
    analysis = _analysis(prepared)
    out = []
    if analysis.enabled and "monitor_labels" not in analysis.model_fields_set:
        field = ("spec", "analysis")
        labels = ", ".join(f"{k}: {v}" for k, v in sorted(analysis.monitor_labels.items()))
        out.append(
            f"{prepared.loaded.location(field)}: spec.analysis.monitorLabels: not set, so the "
            f"PodMonitors carry the default {{{labels}}}; if your Prometheus' podMonitorSelector "
            "matches other labels, nothing is scraped and every gate ends Inconclusive (set "
            "monitorLabels to what it selects, or {} when it selects every PodMonitor)"
        )
    return out


def used_gates(prepared: Prepared) -> list[str]:
    return sorted(_widest_runs(prepared))


# render() runs once per plan state, and every state holds the same AnalysisTemplates, each sized
# from all the steps that use its gate: one pass over the steps per plan, kept for the plan last
# rendered (a pass per state made a spec of 1,000 gated steps cost a million step gates, 30 s).
_widest: tuple[Prepared, dict[str, gates.StepGate | None]] | None = None


def _widest_runs(prepared: Prepared) -> dict[str, gates.StepGate | None]:
    """Every gate the plan's steps use → the run of it with the widest window (then the most
    measurements; the first such step), None when analysis is off."""
    global _widest
    if _widest is not None and _widest[0] is prepared:
        return _widest[1]
    out: dict[str, gates.StepGate | None] = {}
    for st in prepared.plan.steps:
        if not st.gate or st.kind != "step" or st.gate == gates.EXPERIMENT:
            continue
        sg = gates.step_gate(prepared, st)
        best = out.get(st.gate)
        if best is None or sg is not None and (
                (sg.window_seconds, sg.timing.count) > (best.window_seconds, best.timing.count)):
            out[st.gate] = sg
    _widest = (prepared, out)
    return out


def analysis_template(prepared: Prepared, gate: str) -> dict[str, Any]:
    """A reusable template of one gate: generation-specific args left for the caller."""
    from dgdgen.spec import parse_duration

    analysis = _analysis(prepared)
    metrics = gates.gate_metrics(analysis, gate)
    base_window = parse_duration(analysis.window)
    timing = gates.Timing(base_window, parse_duration(analysis.interval), analysis.count or 1)
    # Sized like the plan's runs of this gate: the window of the step with the smallest share
    # (the longest min-bake), so a run from this template can reach its minimum request count
    # at every step that uses it; a 5m window at 10 % of 25 req/s never sees 1,826 requests.
    widest = _widest_runs(prepared).get(gate)
    if widest is not None:
        base_window = widest.window_seconds
        timing = widest.timing
    samples = max([gates.required_samples(analysis, n) for n in metrics] + [1])
    args: list[dict[str, str]] = [
        {"name": "namespace", "value": prepared.loaded.spec.metadata.namespace},
        {"name": "rollout", "value": prepared.loaded.spec.metadata.name},
        {"name": "candidate"},
    ]
    defs = gates.metric_defs(analysis)
    if any(defs[n].relative for n in metrics):
        args.append({"name": "stable"})
    if any(defs[n].family != "probe" for n in metrics):
        args.append({"name": "window", "value": gates.duration(base_window)})
        args.append({"name": "min-requests", "value": str(analysis.min_requests or samples)})
    args += [{"name": k, "value": v} for k, v in gates.threshold_args(analysis, metrics).items()]
    cluster_label = gates.cluster_label(prepared)
    if cluster_label is not None:
        args.append({"name": "cluster"})  # one cluster's series: the caller names it
    if "probe" in metrics or "quality" in metrics:
        args.append({"name": "candidate-url"})
    if "quality" in metrics:
        args.append({"name": "stable-url"})
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {
            "name": f"{prepared.loaded.spec.metadata.name}-{gate}",
            "namespace": prepared.loaded.spec.metadata.namespace,
            "labels": _labels(prepared, **{LABEL_GATE: gate}),
        },
        "spec": {
            "args": args,
            "metrics": [gates.argo_metric(analysis, n, timing,
                                          rollout=prepared.loaded.spec.metadata.name,
                                          cluster_label=cluster_label,
                                          headers=preview.gate_headers(prepared))
                        for n in metrics],
        },
    }


def _run(prepared: Prepared, state: PlanStep, *, hook: bool, standalone: bool,
         cluster: str | None = None) -> dict[str, Any] | None:
    sg = gates.step_gate(prepared, state)
    if sg is None:
        return None
    analysis = _analysis(prepared)
    rollout = prepared.loaded.spec.metadata.name
    metadata: dict[str, Any] = {}
    base = f"{rollout}-{state.label}-{sg.gate}" + (f"-{cluster}" if cluster else "")
    if standalone:
        metadata["generateName"] = f"{base}-"
    else:
        metadata["name"] = base
    metadata["namespace"] = prepared.loaded.spec.metadata.namespace
    extra = {LABEL_GENERATION: state.candidate.revision, LABEL_STEP: str(state.index),
             LABEL_GATE: sg.gate}
    args = list(sg.args)
    cluster_label = gates.cluster_label(prepared)
    if cluster_label is not None:
        if cluster is None:
            raise AssertionError("a rollout over several clusters has one run per cluster")
        extra[LABEL_CLUSTER] = cluster
        args.append(("cluster", cluster))
    metadata["labels"] = _labels(prepared, **extra)
    if hook:
        metadata["annotations"] = {HOOK: "PostSync", HOOK_DELETE: analysis.hooks.delete_policy}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": metadata,
        "spec": {
            "args": [{"name": k, "value": v} for k, v in args],
            "metrics": [gates.argo_metric(analysis, n, sg.timing, rollout=rollout,
                                          cluster_label=cluster_label,
                                          headers=preview.gate_headers(prepared))
                        for n in sg.metrics],
        },
    }


def _clusters(prepared: Prepared) -> list[str | None]:
    """Whose data each run of a step reads: every ``gitops.clusters`` entry, in spec order
    (each cluster's promotion waits on its own run), or the one cluster (None)."""
    clusters = prepared.loaded.spec.spec.gitops.clusters
    return [c.name for c in clusters] if clusters else [None]


def analysis_runs(prepared: Prepared, step_index: int, *, hook: bool) -> list[dict[str, Any]]:
    """The standalone AnalysisRuns of step ``step_index`` (``metadata.generateName``, for
    ``kubectl create -f -`` from a workflow): one, or one per ``gitops.clusters`` entry; none
    when the step has no gate."""
    state = prepared.plan.state(step_index)
    runs = [_run(prepared, state, hook=hook, standalone=True, cluster=c)
            for c in _clusters(prepared)]
    return [r for r in runs if r is not None]


def analysis_run(prepared: Prepared, step_index: int, *, hook: bool,
                 cluster: str | None = None) -> dict[str, Any] | None:
    """The standalone AnalysisRun of step ``step_index`` (for ``cluster`` when the rollout fans
    out to several), or None when the step has no gate."""
    return _run(prepared, prepared.plan.state(step_index), hook=hook, standalone=True,
                cluster=cluster)


def quality_job_rendered(prepared: Prepared) -> bool:
    """Whether a gate the plan uses runs the quality Job (its ConfigMap is in every state)."""
    analysis = _analysis(prepared)
    return analysis.enabled and analysis.quality is not None and any(
        "quality" in gates.gate_metrics(analysis, g) for g in used_gates(prepared))


def render(prepared: Prepared, state: PlanStep) -> Sequence[Manifest]:
    analysis = _analysis(prepared)
    if not analysis.enabled:
        return []
    out: list[Manifest] = []
    if prepared.mode in gates.SHARED_FRONTEND_MODES:
        out.append(Manifest(pod_monitor(prepared, None)))
    else:
        for gen in (state.stable, state.candidate):
            if gen.present:
                out.append(Manifest(pod_monitor(prepared, gen.revision)))
    if quality_job_rendered(prepared):
        from dgdgen.analysis import quality_job

        rollout = prepared.loaded.spec.metadata.name
        out.append(Manifest({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": quality_job.config_map_name(rollout),
                         "namespace": prepared.loaded.spec.metadata.namespace,
                         "labels": _labels(prepared)},
            "data": quality_job.config_map_data(prepared.loaded),
        }))
    out += [Manifest(analysis_template(prepared, g)) for g in used_gates(prepared)]
    for cluster in _clusters(prepared):
        run = _run(prepared, state, hook=analysis.hooks.enabled, standalone=False,
                   cluster=cluster)
        if run is not None:
            out.append(Manifest(run))
    return out
