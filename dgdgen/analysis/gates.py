"""Gates: which metrics a step's ``gate:`` name stands for, and everything one gated step needs
(metrics, args, timing, minimum sample, minimum bake time). Pure: spec + plan in, data out.

Built-in gates (docs/analysis.md):

=========  ==================================================================================
slo        every latency and error metric, absolute and relative to the stable (+ probe, if
           configured)
latency    TTFT p95/p99 and ITL p95, absolute and relative
errors     error rate, absolute and relative
absolute   the absolute SLOs only (no comparison with the stable generation)
probe      the canary probe only
custom     every custom metric (``analysis.customMetrics``; ``slo`` includes them too)
experiment the A/B experiment (``analysis.experiment``): no AnalysisRun; ``dgdgen experiment``
           decides from the samples (:mod:`dgdgen.analysis.experiment`)
=========  ==================================================================================

``analysis.gates`` adds named gates as lists of metric names. Every traffic gate also gets the
``requests`` metric, which is Inconclusive while the candidate has served fewer than the minimum.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dgdgen.analysis import queries, stats
from dgdgen.errors import InputError, did_you_mean
from dgdgen.traffic import preview

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.load import LoadedSpec
    from dgdgen.plan.prepared import Prepared


@dataclass(frozen=True)
class MetricDef:
    name: str
    family: str  # requests | latency | errors | probe
    relative: bool
    query: Callable[[], str] | None
    bound_arg: str | None  # the arg the value is compared with
    slo_field: str | None  # Slos attribute that switches an absolute metric off when null
    quantile: float | None = None
    lower_bound: bool = False  # the value must reach the bound (requests) instead of stay below
    fail_below: bool = False  # a custom metric where higher is better: fails below its bound
    args: tuple[tuple[str, str], ...] = ()  # a custom metric's own bound and minimum sample


def _lat(name: str, q: float, hist: str, slo: str) -> list[MetricDef]:
    return [
        MetricDef(name, "latency", False, lambda: queries.absolute_quantile(q, hist),
                  f"{name}-max", slo, q),
        MetricDef(f"{name}-vs-stable", "latency", True, lambda: queries.relative_quantile(q, hist),
                  "max-regression", None, q),
    ]


METRICS: dict[str, MetricDef] = {
    m.name: m
    for m in [
        MetricDef("requests", "requests", False, queries.candidate_requests, "min-requests",
                  None, lower_bound=True),
        *_lat("ttft-p95", 0.95, queries.TTFT, "ttft_p95_seconds"),
        *_lat("ttft-p99", 0.99, queries.TTFT, "ttft_p99_seconds"),
        *_lat("itl-p95", 0.95, queries.ITL, "itl_p95_seconds"),
        MetricDef("error-rate", "errors", False, queries.absolute_error_rate, "error-rate-max",
                  "error_rate"),
        MetricDef("error-rate-vs-stable", "errors", True, queries.relative_error_rate,
                  "max-error-rate-increase", None),
        MetricDef("probe", "probe", False, None, None, None),
        # Family "probe": a Job metric that sends its own requests, so it needs no live traffic.
        MetricDef("quality", "probe", False, None, None, None),
    ]
}

_TRAFFIC = [n for n in METRICS if n not in ("requests", "probe", "quality")]
BUILTIN_GATES: dict[str, tuple[str, ...]] = {
    "slo": tuple(_TRAFFIC) + ("probe", "quality"),
    "latency": tuple(n for n in _TRAFFIC if METRICS[n].family == "latency"),
    "errors": tuple(n for n in _TRAFFIC if METRICS[n].family == "errors"),
    "absolute": tuple(n for n in _TRAFFIC if not METRICS[n].relative),
    "probe": ("probe",),
    "custom": (),
    "experiment": (),
    "quality": ("quality",),
}
EXPERIMENT = "experiment"


def _custom_defs(cm: Any) -> list[MetricDef]:
    from dgdgen.analysis import custom

    names = custom.arg_names(cm.name)
    base = custom.PREFIX + cm.name
    floor = (names["min_samples"], str(cm.min_samples))
    out = []
    if cm.threshold is not None:
        out.append(MetricDef(base, "custom", False, lambda: custom.absolute_query(cm),
                             names["threshold"], None, fail_below=cm.better == "higher",
                             args=((names["threshold"], number(cm.threshold)), floor)))
    rel = "max_ratio" if cm.max_ratio is not None else "max_difference"
    bound = getattr(cm, rel)
    if bound is not None:
        out.append(MetricDef(base + custom.RELATIVE_SUFFIX, "custom", True,
                             lambda: custom.relative_query(cm), names[rel], None,
                             args=((names[rel], number(bound)), floor)))
    return out


def metric_defs(analysis: Any) -> dict[str, MetricDef]:
    """The built-in metrics and the spec's custom ones, by name."""
    out = dict(METRICS)
    for cm in analysis.custom_metrics:
        out.update((m.name, m) for m in _custom_defs(cm))
    return out


def _custom_names(analysis: Any) -> tuple[str, ...]:
    return tuple(n for n, m in metric_defs(analysis).items() if m.family == "custom")

# Modes where one frontend serves both revisions: frontend metrics cannot tell them apart.
SHARED_FRONTEND_MODES = ("partition", "in-place")
SHARED_GENERATION = "shared"


def gate_names(analysis: Any) -> list[str]:
    return sorted(set(BUILTIN_GATES) | set(analysis.gates))


def check_gates(loaded: LoadedSpec) -> None:
    """Refuse unknown gate and metric names (with a did-you-mean), at their file:line."""
    from dgdgen.analysis import custom

    body = loaded.spec.spec
    analysis = body.analysis
    defs = metric_defs(analysis)
    seen: set[str] = set()
    for i, cm in enumerate(analysis.custom_metrics):
        field: tuple[str | int, ...] = ("spec", "analysis", "customMetrics", i)
        if cm.name in seen:
            raise InputError(f"custom metric {cm.name!r} is defined twice",
                             location=loaded.location(field + ("name",)), field=field + ("name",))
        seen.add(cm.name)
        for key, text in (("query", cm.query), ("samples", cm.samples)):
            try:
                custom.check_query(text)
            except custom.QueryError as exc:
                raise InputError(
                    f"{key} {exc}", location=loaded.location(field + (key,)), field=field + (key,),
                    hint=f"scope every selector to one generation: metric{{{custom.GENERATION}}}",
                ) from None
    for name, metrics in analysis.gates.items():
        field = ("spec", "analysis", "gates", name)
        if name in BUILTIN_GATES:
            raise InputError(
                f"gate {name!r} is built in; choose another name for a custom gate",
                location=loaded.location(field), field=field,
            )
        for j, metric in enumerate(metrics):
            if metric not in defs:
                guess = did_you_mean(metric, defs)
                raise InputError(
                    f"unknown metric {metric!r}", location=loaded.location(field + (j,)),
                    field=field + (j,),
                    hint=f"did you mean {guess!r}?" if guess
                    else f"expected one of: {', '.join(defs)}",
                )
            if metric == "probe" and analysis.probe is None:
                raise InputError(
                    "the probe metric needs spec.analysis.probe", location=loaded.location(
                        field + (j,)), field=field + (j,),
                )
            if metric == "quality" and analysis.quality is None:
                raise InputError(
                    "the quality metric needs spec.analysis.quality", location=loaded.location(
                        field + (j,)), field=field + (j,),
                )
    known = gate_names(analysis)
    for i, step in enumerate(body.steps):
        if step.gate is None:
            continue
        field = ("spec", "steps", i, "gate")
        if step.gate not in known:
            guess = did_you_mean(step.gate, known)
            raise InputError(
                f"unknown gate {step.gate!r}", location=loaded.location(field), field=field,
                hint=f"did you mean {guess!r}?" if guess else f"expected one of: {', '.join(known)}",
            )
        if step.gate == EXPERIMENT:
            check_experiment(loaded, i)
        if step.gate == "custom" and not analysis.custom_metrics:
            raise InputError(
                "gate 'custom' needs spec.analysis.customMetrics",
                location=loaded.location(field), field=field,
            )
        if step.gate == "probe" and analysis.probe is None:
            raise InputError(
                "gate 'probe' needs spec.analysis.probe (prompts and expected replies)",
                location=loaded.location(field), field=field,
            )
        if step.gate == "quality" and analysis.quality is None:
            raise InputError(
                "gate 'quality' needs spec.analysis.quality (prompt set, scorer, image)",
                location=loaded.location(field), field=field,
            )
    if analysis.quality is not None:
        from dgdgen.analysis.quality_job import load_calibration_set, load_prompt_set

        load_prompt_set(loaded)  # the prompt file is checked at validate time, at its line
        load_calibration_set(loaded)  # and the judge's calibration set


def check_experiment(loaded: LoadedSpec, i: int) -> None:
    """An experiment step needs its settings, both generations at a split, and stickiness
    where the traffic provider has it (HAProxy); Gateway API v1 has none (docs/traffic.md)."""
    body = loaded.spec.spec
    field: tuple[str | int, ...] = ("spec", "steps", i, "gate")
    if body.analysis.experiment is None:
        raise InputError("gate 'experiment' needs spec.analysis.experiment",
                         location=loaded.location(field), field=field)
    w = body.steps[i].weight
    if body.analysis.experiment.cohorts == "preview":
        preview.check_cohorts(loaded, i)
        return
    if not 0 < w < 100:
        f = ("spec", "steps", i, "weight")
        raise InputError(f"an experiment holds both generations at a split; weight {w} gives "
                         "one generation nothing", location=loaded.location(f), field=f)
    if body.traffic.provider.value == "haproxy" and body.traffic.sticky is None:
        sf = ("spec", "traffic", "sticky")
        raise InputError(
            "an experiment over HAProxy needs spec.traffic.sticky: without it one user's "
            "requests land on both generations and the samples are not independent",
            location=loaded.location(("spec", "traffic")), field=sf,
            hint="sticky: {cookie: SESSION} or {header: X-User-Id}")


def cluster_label(prepared: Prepared) -> str | None:
    """The label that scopes every gate query to one cluster, or None without a fan-out."""
    body = prepared.loaded.spec.spec
    return str(body.analysis.cluster_label) if body.gitops.clusters else None


# Metrics that are a Job in the cluster running the AnalysisRun, reaching the frontends by their
# in-cluster Service names: they measure that cluster only.
IN_CLUSTER_JOBS = ("probe", "quality")


def check_clusters(prepared: Prepared) -> None:
    """With ``gitops.clusters`` every gate must measure each cluster on its own data
    (docs/gitops.md, "Several clusters"). Refuse what cannot be scoped to one cluster."""
    body = prepared.loaded.spec.spec
    analysis = body.analysis
    if not body.gitops.clusters or not analysis.enabled:
        return
    loaded = prepared.loaded
    gated = [st for st in prepared.plan.steps if st.kind == "step" and st.gate
             and st.gate != EXPERIMENT]
    if analysis.hooks.enabled and gated:
        hooks: tuple[str | int, ...] = ("spec", "analysis", "hooks", "enabled")
        raise InputError(
            "analysis hooks cannot gate each cluster of spec.gitops.clusters on its own "
            "metrics: the PostSync AnalysisRun is one manifest that every cluster's "
            "Application syncs unchanged, so it cannot name its cluster",
            location=loaded.location(("spec", "analysis", "hooks")), field=hooks,
            hint="leave hooks off: the workflow (dgdgen argo) then creates one AnalysisRun per "
            "cluster, each matching its own cluster label",
        )
    for st in gated:
        assert st.gate is not None  # `gated` holds the steps with a gate
        jobs = [n for n in gate_metrics(analysis, st.gate) if n in IN_CLUSTER_JOBS]
        if jobs:
            f: tuple[str | int, ...] = ("spec", "steps", st.index - 1, "gate")
            raise InputError(
                f"gate {st.gate!r} runs the {' and '.join(jobs)} metric, a Job in the cluster "
                "that runs the AnalysisRun reaching the frontends by in-cluster Service names: "
                "with spec.gitops.clusters it cannot measure each cluster on its own",
                location=loaded.location(f), field=f,
                hint="gate these steps on Prometheus metrics only (e.g. a gate in "
                "spec.analysis.gates without probe and quality)",
            )


def experiment_share(state: PlanStep, experiment: Any = None) -> float:
    """The candidate's share of the units: the step's weight, or ``experiment.cohortShare``."""
    if experiment is not None and experiment.cohorts == "preview":
        return float(experiment.cohort_share)
    return state.candidate.weight / 100


def gate_metrics(analysis: Any, gate: str) -> tuple[str, ...]:
    defs = metric_defs(analysis)
    if gate in BUILTIN_GATES:
        names = BUILTIN_GATES[gate]
        if gate in ("slo", "custom"):
            names += _custom_names(analysis)
    else:
        names = tuple(analysis.gates.get(gate, ()))
    out = []
    for n in names:
        m = defs[n]
        if n == "probe" and analysis.probe is None:
            continue
        if n == "quality" and analysis.quality is None:
            continue
        if m.slo_field and getattr(analysis.slos, m.slo_field) is None:
            continue  # that absolute SLO is switched off
        out.append(n)
    if any(defs[n].family in ("latency", "errors") for n in out) and "requests" not in out:
        out.insert(0, "requests")
    return tuple(out)


def required_samples(analysis: Any, metric: str) -> int:
    """Requests per generation the metric needs (:mod:`dgdgen.analysis.stats`); a custom
    metric counts its own events (``minSamples``) and needs no requests here."""
    m = metric_defs(analysis)[metric]
    if m.family == "latency":
        assert m.quantile is not None
        return stats.quantile_samples(m.quantile, analysis.max_regression, analysis.latency_spread)
    if m.family == "errors":
        baseline = analysis.slos.error_rate if analysis.slos.error_rate is not None else 0.01
        increase = min(analysis.max_error_rate_increase, 0.999 - baseline)
        return stats.proportion_samples(baseline, increase)
    return 0


@dataclass(frozen=True)
class Timing:
    initial_delay: int  # seconds
    interval: int
    count: int


@dataclass(frozen=True)
class StepGate:
    """One gated step: what its AnalysisRun measures, with which args, and for how long."""

    index: int
    label: str
    gate: str
    metrics: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...]  # (metric, why) left out at this step
    min_requests: int
    min_bake_seconds: int | None  # None without an expected request rate
    window_seconds: int
    timing: Timing
    args: tuple[tuple[str, str], ...]

    @property
    def arg_map(self) -> dict[str, str]:
        return dict(self.args)


def duration(seconds: int) -> str:
    """Seconds → the shortest Go/Prometheus duration (``90`` → ``1m30s``)."""
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"


def number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) >= 1 else repr(float(x))


def candidate_service(prepared: Prepared, revision: str) -> str:
    from dgdgen.model.names import frontend_service

    if prepared.mode in SHARED_FRONTEND_MODES:
        return frontend_service(prepared.stable.dgd.name)
    if prepared.mode == "worker-group":
        return frontend_service(f"{prepared.stable.dgd.name}-{revision}")
    return frontend_service(prepared.candidate_name)


def generation_labels(prepared: Prepared, state: PlanStep) -> tuple[str, str]:
    """Values of ``dgdgen_generation`` for (candidate, stable)."""
    if prepared.mode in SHARED_FRONTEND_MODES:
        return SHARED_GENERATION, SHARED_GENERATION
    return state.candidate.revision, state.stable.revision


def step_gate(prepared: Prepared, state: PlanStep) -> StepGate | None:
    """The gate of one plan state, or None when it has none (or analysis is off)."""
    from dgdgen.spec import parse_duration

    analysis = prepared.loaded.spec.spec.analysis
    if not analysis.enabled or state.kind != "step" or not state.gate or state.gate == EXPERIMENT:
        return None
    field = ("spec", "steps", state.index - 1, "gate")
    w = state.candidate.weight
    defs = metric_defs(analysis)
    metrics, dropped = [], []
    for n in gate_metrics(analysis, state.gate):
        m = defs[n]
        why = None
        if m.family != "probe" and w == 0:
            why = "the candidate gets no traffic at this step"
        elif m.relative and state.stable.weight == 0:
            why = "the stable generation gets no traffic at this step"
        elif m.relative and prepared.mode in SHARED_FRONTEND_MODES:
            why = f"one frontend serves both revisions in {prepared.mode} mode"
        if why:
            dropped.append((n, why))
        else:
            metrics.append(n)
    if not metrics or metrics == ["requests"]:
        raise InputError(
            f"gate {state.gate!r} has nothing to measure at step {state.index} ("
            + "; ".join(f"{n}: {why}" for n, why in dropped) + ")",
            location=prepared.loaded.location(field), field=field,
            hint="gate a step with candidate weight 0 with the 'probe' gate only",
        )
    samples = max([required_samples(analysis, n) for n in metrics] + [1])
    min_requests = analysis.min_requests or samples
    traffic = any(defs[n].family != "probe" for n in metrics)
    relative = any(defs[n].relative for n in metrics)
    bake = None
    if analysis.expected_request_rate and traffic:
        share = min(w, 100 - w) / 100 if relative else w / 100
        bake = stats.bake_seconds(min_requests, analysis.expected_request_rate, share)
    base_window = parse_duration(analysis.window)
    window = max(base_window, 60 * math.ceil(bake / 60)) if bake else base_window
    interval = parse_duration(analysis.interval)
    initial_delay = window if traffic else 0
    if analysis.count:
        count = analysis.count
    elif state.pause_seconds and state.pause_seconds > initial_delay:
        count = (state.pause_seconds - initial_delay) // interval + 1
    else:
        count = 1
    if count < analysis.failure_limit:
        f = ("spec", "analysis", "failureLimit")
        raise InputError(
            f"failureLimit {analysis.failure_limit} is above the {count} measurement(s) of step "
            f"{state.index}; Argo Rollouts refuses count < failureLimit",
            location=prepared.loaded.location(f), field=f,
        )
    cand, stable = generation_labels(prepared, state)
    args: dict[str, str] = {
        "namespace": prepared.loaded.spec.metadata.namespace,
        "rollout": prepared.loaded.spec.metadata.name,
        "candidate": cand,
    }
    if relative:
        args["stable"] = stable
    if traffic:
        args["window"] = duration(window)
        args["min-requests"] = str(min_requests)
    args.update(threshold_args(analysis, metrics))
    entry = preview.gate_entry(prepared)
    if "probe" in metrics:
        ns = prepared.loaded.spec.metadata.namespace
        svc = candidate_service(prepared, state.candidate.revision)
        domain = prepared.loaded.spec.spec.cluster_domain
        args["candidate-url"] = f"http://{svc}.{ns}.svc.{domain}:8000"
        if entry is not None:
            args["candidate-url"] = entry
    if "quality" in metrics:
        ns = prepared.loaded.spec.metadata.namespace
        domain = prepared.loaded.spec.spec.cluster_domain
        from dgdgen.traffic.weights import state_backends

        if prepared.mode in SHARED_FRONTEND_MODES:
            f = ("spec", "analysis", "quality")
            raise InputError(
                f"the quality gate compares the stable and the candidate frontend; in mode "
                f"{prepared.mode!r} one frontend serves both revisions",
                location=prepared.loaded.location(f), field=f,
                hint="use a strategy with a frontend per generation",
            )
        for b in state_backends(prepared, state):
            args[f"{b.role}-url"] = f"http://{b.service}.{ns}.svc.{domain}:8000"
        if entry is not None:
            args["candidate-url"] = entry
    return StepGate(
        index=state.index, label=state.label, gate=state.gate, metrics=tuple(metrics),
        dropped=tuple(dropped), min_requests=min_requests, min_bake_seconds=bake,
        window_seconds=window, timing=Timing(initial_delay, interval, count),
        args=tuple(args.items()),
    )


def threshold_args(analysis: Any, metrics: tuple[str, ...] | list[str]) -> dict[str, str]:
    values = {
        "ttft-p95-max": analysis.slos.ttft_p95_seconds,
        "ttft-p99-max": analysis.slos.ttft_p99_seconds,
        "itl-p95-max": analysis.slos.itl_p95_seconds,
        "error-rate-max": analysis.slos.error_rate,
        "max-regression": analysis.max_regression,
        "max-error-rate-increase": analysis.max_error_rate_increase,
    }
    defs = metric_defs(analysis)
    out: dict[str, str] = {}
    for n in metrics:
        bound = defs[n].bound_arg
        if bound in values and values[bound] is not None:
            out[bound] = number(values[bound])
        out.update(defs[n].args)
    return out


# --------------------------------------------------------------------------- Argo metrics


def conditions(metric: str, analysis: Any = None) -> tuple[str, str]:
    """(successCondition, failureCondition), inside the expr subset of
    :mod:`dgdgen.analysis.expr`. An empty or NaN result satisfies neither: Inconclusive."""
    m = METRICS[metric] if analysis is None else metric_defs(analysis)[metric]
    bound = queries.arg(m.bound_arg or "")
    has = "len(result) > 0 && !isNaN(result[0])"
    if m.lower_bound:  # requests: too few is Inconclusive, never Failed
        return f"{has} && result[0] >= {bound}", "false"
    if m.fail_below:  # a custom metric where higher is better
        return f"{has} && result[0] >= {bound}", f"{has} && result[0] < {bound}"
    return f"{has} && result[0] <= {bound}", f"{has} && result[0] > {bound}"


def inconclusive_limit(analysis: Any, count: int) -> int:
    """Inconclusive measurements a metric of ``count`` tolerates. Argo Rollouts ends a metric
    Inconclusive once more than this many are, and Successful when ``count`` is reached
    otherwise (analysis/analysis.go, assessMetricStatus): at most count - 1, so a metric whose
    every measurement was quiet never passes; by default exactly that, so one quiet minute (at
    a step sized to its minimum bake, every window that holds it is short of the minimum) does
    not end the step."""
    most = max(count - 1, 0)
    given = analysis.inconclusive_limit
    return most if given is None else min(given, most)


def argo_metric(
    analysis: Any, metric: str, timing: Timing, *, probe_url: str = "{{args.candidate-url}}",
    rollout: str = "", cluster_label: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One metric of an AnalysisTemplate or AnalysisRun; with ``cluster_label`` (the rollout
    fans out to several clusters) its query reads one cluster's series: ``{{args.cluster}}``."""
    m = metric_defs(analysis)[metric]
    out: dict[str, Any] = {"name": metric}
    if metric == "probe":
        from dgdgen.analysis.probe import job_provider

        out.update({"count": 1, "failureLimit": 0, "consecutiveErrorLimit":
                    analysis.consecutive_error_limit})
        out["provider"] = job_provider(analysis.probe, probe_url, headers)
        return out
    if metric == "quality":
        from dgdgen.analysis.quality_job import job_provider as quality_provider

        out.update({"count": 1, "failureLimit": 0, "consecutiveErrorLimit":
                    analysis.consecutive_error_limit})
        out["provider"] = quality_provider(analysis.quality, rollout, headers)
        return out
    if timing.initial_delay:
        out["initialDelay"] = duration(timing.initial_delay)
    out["interval"] = duration(timing.interval)
    out["count"] = timing.count
    out["failureLimit"] = analysis.failure_limit
    out["inconclusiveLimit"] = inconclusive_limit(analysis, timing.count)
    out["consecutiveErrorLimit"] = analysis.consecutive_error_limit
    ok, bad = conditions(metric, analysis)
    out["successCondition"] = ok
    out["failureCondition"] = bad
    prom: dict[str, Any] = {}
    if analysis.prometheus:
        prom["address"] = analysis.prometheus
    assert m.query is not None
    prom["query"] = m.query()
    if cluster_label is not None:
        prom["query"] = queries.cluster_scoped(prom["query"], cluster_label)
    prom["timeout"] = 30
    out["provider"] = {"prometheus": prom}
    return out


_PLACEHOLDER = re.compile(r"\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}")


class ArgError(Exception):
    pass


def resolve_args(obj: Any, args: Mapping[str, str]) -> Any:
    """Substitute ``{{args.NAME}}`` as Argo Rollouts v1.9.1 does (utils/analysis/factory.go
    ``ResolveMetricArgs``): serialise to JSON, replace with the JSON-escaped value, parse again."""
    text = json.dumps(obj)

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in args:
            raise ArgError(f"failed to resolve {m.group(0)}")
        return json.dumps(args[name])[1:-1]

    return json.loads(_PLACEHOLDER.sub(sub, text))
