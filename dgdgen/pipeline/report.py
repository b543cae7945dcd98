"""Plan reports in text: a table, JSON, and a Markdown summary with mermaid charts for pull
requests, one function per format, chosen from :data:`FORMATS`; and the cells they share with the
picture (:mod:`dgdgen.pipeline.picture`) and with ``status`` / ``explain``: replicas, durations, the
order of a transition's moves, what each step's gate checks."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.analysis.gates import StepGate
    from dgdgen.plan import GenerationState, Plan, PlanStep
    from dgdgen.plan.prepared import Prepared
    from dgdgen.spec import CustomMetric

ROLE_ABBR = {"frontend": "fe", "aggregated": "agg", "prefill": "pre", "decode": "dec", "other": "oth"}


# Metrics measured by a Job that sends its own requests: no live traffic, no request minimum.
_JOB_METRICS = frozenset({"probe", "quality"})


def duration_text(seconds: int | None) -> str:
    if not seconds:
        return "-"
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "0s"


def _abbr(prepared: Prepared) -> dict[str, str]:
    roles: dict[str, list[str]] = {}
    for name, comp in prepared.stable.dgd.components.items():
        roles.setdefault(comp.role.value, []).append(name)
    out = {}
    for role, names in roles.items():
        for name in names:
            out[name] = ROLE_ABBR[role] if len(names) == 1 else name
    return out


def replicas_text(prepared: Prepared, gen: GenerationState) -> str:
    if not gen.present:
        return "—"
    abbr = _abbr(prepared)
    return " ".join(f"{abbr[n]}:{r}" for n, r in gen.replicas.items())


def state_title(state: PlanStep) -> str:
    if state.kind == "rollback-step":
        return state.label  # rollback-NN, as its folder and --step spell it
    return {"baseline": "0 baseline", "rollback": "rollback", "cleanup": "cleanup"}.get(
        state.kind, str(state.index)
    )


def _predecessor(plan: Plan, state: PlanStep) -> PlanStep | None:
    """The state a transition into ``state`` starts from: the previous step going forward; going
    back, the forward step the transition is planned from (:meth:`Plan.rollback_origin`);
    cleanup follows the last step."""
    if state.kind == "step":
        return plan.steps[state.index - 1]
    if state.kind in ("rollback-step", "rollback"):
        return plan.rollback_origin(state)
    if state.kind == "cleanup":
        return plan.steps[-1]
    return None


def _went(before: dict[str, int], after: dict[str, int], up: bool) -> bool:
    names = before.keys() | after.keys()
    return any((after.get(k, 0) > before.get(k, 0)) if up else (after.get(k, 0) < before.get(k, 0))
               for k in names)


def move_order(plan: Plan, state: PlanStep) -> str:
    """The moves of the transition into ``state``, in the order they happen (docs/planning.md):
    ``make room`` when the leaving generation loses replicas before the other grows, ``grow``
    only when a component of either generation gains replicas, ``shift`` only when the weights
    change, ``drain`` when a generation whose weight drops to 0 loses replicas, ``shrink`` when
    a component loses replicas after the shift (at cleanup: the generation that has had no
    traffic since the last step goes). ``-`` for the baseline, or when nothing moves."""
    prev = _predecessor(plan, state)
    if prev is None:
        return "-"
    # Going forward (and at cleanup) the stable leaves; going back, the candidate.
    forward = state.kind in ("step", "cleanup")
    gain_b, gain_a = ((prev.candidate, state.candidate) if forward else (prev.stable, state.stable))
    leave_b, leave_a = ((prev.stable, state.stable) if forward else (prev.candidate, state.candidate))
    # The leaving generation's replicas at the peak (after making room, before the other grows)
    # are the peak less the gaining generation's new size. In place and in partition the
    # operator replaces pods itself (one DGD: its peak is no sum of generations), a shift-first
    # rollback moves the weights before any replica, and cleanup only removes: none of them
    # makes room.
    phased = (plan.mode not in ("in-place", "partition") and not state.shift_first
              and state.kind != "cleanup")
    at_peak = ({k: n - gain_a.replicas.get(k, 0) for k, n in state.peak_replicas.items()}
               if phased else leave_b.replicas)
    room = ["make room"] if _went(leave_b.replicas, at_peak, up=False) else []
    grow = ["grow"] if (_went(gain_b.replicas, gain_a.replicas, up=True)
                        or _went(leave_b.replicas, leave_a.replicas, up=True)) else []
    shift = ["shift"] if prev.weights != state.weights else []
    leave = []
    if state.drain_seconds is not None:
        bound = "until idle" if state.drain_seconds == 0 else f"≤{duration_text(state.drain_seconds)}"
        leave = [f"drain {bound}", "shrink"]
    elif (_went(at_peak, leave_a.replicas, up=False)
          or _went(gain_b.replicas, gain_a.replicas, up=False)):
        leave = ["shrink"]  # a generation still serving loses workers: no drain to wait for
    if state.shift_first:
        return "→".join([*shift, *leave, *grow]) or "-"
    return "→".join([*room, *grow, *shift, *leave]) or "-"


def step_gates(prepared: Prepared) -> dict[int, StepGate]:
    """The gated steps (analysis enabled), by step index."""
    from dgdgen.analysis.gates import step_gate

    out = {}
    for st in prepared.plan.steps:
        sg = step_gate(prepared, st)
        if sg is not None:
            out[st.index] = sg
    return out


def analysis_on(prepared: Prepared) -> bool:
    return bool(prepared.loaded.spec.spec.analysis.enabled)


def _gate_cells(st: PlanStep, gated: dict[int, StepGate]) -> list[str]:
    sg = gated.get(st.index) if st.kind == "step" else None
    if sg is None:
        return ["-", "-"]
    # custom metrics count their own events (notes); Job metrics (probe, quality) no requests
    traffic = "requests" in sg.metrics
    return [
        str(sg.min_requests) if traffic else "-",
        duration_text(sg.min_bake_seconds) if sg.min_bake_seconds else "-",
    ]


def _check_cell(st: PlanStep, checks: dict[int, list[Check]]) -> str:
    found = checks.get(st.index, []) if st.kind == "step" else []
    return "; ".join(f"{c.label} {c.minimum}" for c in found) or "-"


def _rows(prepared: Prepared) -> list[list[str]]:
    rows = []
    gated = step_gates(prepared) if analysis_on(prepared) else {}
    checks = step_checks(prepared)
    for st in prepared.plan.all_states():
        extra = _gate_cells(st, gated) if analysis_on(prepared) else []
        if checks:
            extra.append(_check_cell(st, checks))
        rows.append([
            state_title(st),
            f"{st.stable.weight}/{st.candidate.weight}",
            replicas_text(prepared, st.stable),
            replicas_text(prepared, st.candidate),
            f"{st.peak_gpus} (+{st.extra_gpus_peak})",
            move_order(prepared.plan, st),
            f"{st.stable.capacity:.0%}/{st.candidate.capacity:.0%}",
            duration_text(st.pause_seconds),
            st.gate or "-",
            *extra,
        ])
    return rows


HEADERS = ["step", "weight s/c %", "stable", "candidate", "GPUs peak (+extra)", "order",
           "capacity s/c", "pause", "gate"]
GATE_HEADERS = ["min requests", "min bake"]
# Shown only when a step has such a gate: the table of a plan with latency gates only keeps its
# columns.
CHECK_HEADER = "min sample (quality, custom, A/B)"


def _headers(prepared: Prepared) -> list[str]:
    return (HEADERS + (GATE_HEADERS if analysis_on(prepared) else [])
            + ([CHECK_HEADER] if step_checks(prepared) else []))


def _gate_notes(prepared: Prepared) -> list[str]:
    """Where the statistics say a step's bake time is too short, or what a gate leaves out."""
    if not analysis_on(prepared):
        named = sorted({st.gate for st in prepared.plan.steps if st.gate})
        if named:
            return [(f"note: analysis is off: gate(s) {', '.join(named)} named by the steps "
                     "are not rendered and hold nothing back; set spec.analysis.enabled: true")]
        return []
    a = prepared.loaded.spec.spec.analysis
    lines = []
    gated = step_gates(prepared)
    traffic = any(m not in _JOB_METRICS for sg in gated.values() for m in sg.metrics)
    if a.expected_request_rate is None and traffic:
        lines.append("note: analysis: set spec.analysis.expectedRequestRate to see the minimum "
                     "bake time per gated step")
    for sg in gated.values():
        st = prepared.plan.state(sg.index)
        if sg.min_bake_seconds and (st.pause_seconds or 0) < sg.min_bake_seconds:
            lines.append(
                f"note: step {sg.index}: pause {duration_text(st.pause_seconds)} is shorter than the "
                f"minimum bake time {duration_text(sg.min_bake_seconds)} ({sg.min_requests} requests "
                "per generation at the expected rate); the gate waits for the data"
            )
        for metric, why in sg.dropped:
            lines.append(f"note: step {sg.index}: gate {sg.gate} leaves out {metric}: {why}")
    lines += _experiment_notes(prepared)
    checks = gate_checks(prepared)
    lines += [c.detail for c in checks if c.kind != "experiment"]
    quality = next((c for c in checks if c.kind == "quality"), None)
    if quality is not None:
        prompts, needed = int(str(quality.data["prompts"])), int(str(quality.data["minPairs"]))
        if prompts < needed:
            lines.append(
                f"note: quality gate: {prompts} prompts < {needed} pairs needed: the gate can "
                "only end Failed or Inconclusive; add prompts or raise "
                "spec.analysis.quality.effect")
    return lines


@dataclass(frozen=True)
class Check:
    """A gate whose minimum sample is not requests: the quality gate (scored pairs from its own
    prompts), a custom metric (the events its ``samples`` query counts) or the A/B experiment
    (samples per generation). ``steps`` are the forward steps it gates; ``detail`` says what
    passes, what fails and below which sample it is Inconclusive."""

    kind: str  # quality | custom | experiment
    label: str  # as the table and the picture name it
    minimum: str  # the minimum sample, with its unit
    steps: tuple[int, ...]
    detail: str
    data: dict[str, object]


def _bound(cm: CustomMetric, which: str) -> str:
    """One bound of a custom metric as it passes (docs/analysis.md, "Custom metrics")."""
    lower = cm.better == "lower"
    if which == "threshold" and cm.threshold is not None:
        return f"candidate {'≤' if lower else '≥'} {cm.threshold:g}"
    if which == "max_ratio" and cm.max_ratio is not None:
        ratio = "candidate/stable" if lower else "stable/candidate"
        return f"{ratio} ≤ {cm.max_ratio:g}"
    diff = "candidate − stable" if lower else "stable − candidate"
    return f"{diff} ≤ {cm.max_difference or 0:g}"


def gate_checks(prepared: Prepared) -> list[Check]:
    """The quality gate, each custom metric and the experiment, with the steps they gate (a
    custom metric's relative half is left out where the stable gets no traffic: the steps of
    its bound are the steps where it is measured)."""
    from dgdgen.analysis import custom
    from dgdgen.analysis.paired import sign_test_samples
    from dgdgen.analysis.quality_job import load_calibration_set, load_prompt_set

    if not analysis_on(prepared):
        return []
    a = prepared.loaded.spec.spec.analysis
    gated = step_gates(prepared)
    out: list[Check] = []
    steps = tuple(sg.index for sg in gated.values() if "quality" in sg.metrics)
    if steps and a.quality is not None:
        q = a.quality
        _, prompts = load_prompt_set(prepared.loaded)
        needed = sign_test_samples(q.max_loss_share, q.effect)
        judge = (f", up to {2 * len(prompts)} judge calls (both orders)" if q.judge is not None
                 else "")
        calibration = load_calibration_set(prepared.loaded)
        if calibration is not None:
            judge += f" after {2 * len(calibration[1])} calibration calls"
        out.append(Check(
            "quality", "quality", f"{needed} pairs", steps,
            f"quality gate (step {', '.join(map(str, steps))}): {len(prompts)} prompts of "
            f"{q.prompts} to the stable and the candidate ({2 * len(prompts)} requests{judge}), "
            f"scorer {q.scorer}; Failed when the candidate loses significantly more than "
            f"{q.max_loss_share:g} of the decided pairs (sign test), Inconclusive below {needed} "
            "scored pairs",
            {"minPairs": needed, "maxLossShare": q.max_loss_share, "effect": q.effect,
             "prompts": len(prompts), "scorer": q.scorer},
        ))
    for cm in a.custom_metrics:
        base = custom.PREFIX + cm.name
        parts = [("threshold", base)] if cm.threshold is not None else []
        rel = "max_ratio" if cm.max_ratio is not None else "max_difference"
        if getattr(cm, rel) is not None:
            parts.append((rel, base + custom.RELATIVE_SUFFIX))
        bounds = [(which, tuple(sg.index for sg in gated.values() if metric in sg.metrics))
                  for which, metric in parts]
        steps = tuple(sorted({i for _, at in bounds for i in at}))
        if not steps:
            continue
        every = len({at for _, at in bounds}) == 1
        said = [_bound(cm, which) + ("" if every else f" (step {', '.join(map(str, at))})")
                for which, at in bounds if at]
        out.append(Check(
            "custom", cm.name, f"{cm.min_samples} events", steps,
            f"custom metric {cm.name} (step {', '.join(map(str, steps))}, {cm.better} is "
            f"better): passes while {' and '.join(said)}; Inconclusive below {cm.min_samples} "
            "events per generation in the window",
            {"minSamples": cm.min_samples, "better": cm.better, "threshold": cm.threshold,
             "maxRatio": cm.max_ratio, "maxDifference": cm.max_difference},
        ))
    for e in experiment_plan(prepared):
        out.append(Check(
            "experiment", "A/B", f"{e['stableSamples']}/{e['candidateSamples']} samples",
            (int(str(e["step"])),), _experiment_note(e),
            {"stableSamples": e["stableSamples"], "candidateSamples": e["candidateSamples"],
             "minimumDetectableEffect": e["minimumDetectableEffect"], "metric": e["metric"]},
        ))
    return out


def step_checks(prepared: Prepared) -> dict[int, list[Check]]:
    """:func:`gate_checks` by step; custom metrics of one step as one ``custom`` check (the
    smallest and largest minimum), so a table cell stays short; the notes name each."""
    by: dict[int, list[Check]] = {}
    for c in gate_checks(prepared):
        for i in c.steps:
            by.setdefault(i, []).append(c)
    out: dict[int, list[Check]] = {}
    for i, found in sorted(by.items()):
        customs = [c for c in found if c.kind == "custom"]
        rest = [c for c in found if c.kind != "custom"]
        if customs:
            mins = sorted(int(str(c.data["minSamples"])) for c in customs)
            span = str(mins[0]) if mins[0] == mins[-1] else f"{mins[0]}-{mins[-1]}"
            rest.insert(1 if rest and rest[0].kind == "quality" else 0, Check(
                "custom", "custom", f"{span} events", (i,),
                "; ".join(c.detail for c in customs),
                {"metrics": {c.label: c.data["minSamples"] for c in customs}},
            ))
        out[i] = rest
    return out


# Args of a gate that say where and what it measures, not what passes.
_NOT_BOUNDS = frozenset({"namespace", "rollout", "candidate", "stable", "window",
                         "min-requests", "candidate-url", "stable-url"})


def gate_summary(prepared: Prepared, index: int) -> list[str]:
    """What the gate of forward step ``index`` measures and decides, one line a part: its
    metrics, the request minimum and bake time, its bounds, and the quality gate, custom
    metrics or experiment with their own minimum sample. Empty for a step without a gate."""
    state = prepared.plan.state(index)
    if not analysis_on(prepared) or state.kind != "step" or not state.gate:
        return []
    sg = step_gates(prepared).get(index)
    lines = []
    if sg is not None:
        lines.append(f"gate {sg.gate}: {', '.join(sg.metrics)}")
        if "requests" in sg.metrics:
            bake = (f" (a bake of {duration_text(sg.min_bake_seconds)} at the expected rate)"
                    if sg.min_bake_seconds else "")
            lines.append(f"Inconclusive below {sg.min_requests} requests per generation in the "
                         f"{duration_text(sg.window_seconds)} window{bake}")
        bounds = [f"{k} {v}" for k, v in sg.args if k not in _NOT_BOUNDS
                  and not k.startswith("custom-")]
        if bounds:
            lines.append("bounds: " + ", ".join(bounds))
    lines += [c.detail.removeprefix("note: ") for c in gate_checks(prepared) if index in c.steps]
    return lines


def experiment_plan(prepared: Prepared) -> list[dict[str, object]]:
    """The experiment steps: split, planned sample, stickiness."""
    from dgdgen.analysis.experiment import experiment_samples
    from dgdgen.analysis.gates import EXPERIMENT, experiment_share

    a = prepared.loaded.spec.spec.analysis
    traffic = prepared.loaded.spec.spec.traffic
    if a.experiment is None:
        return []
    out: list[dict[str, object]] = []
    for st in prepared.plan.steps:
        if st.kind != "step" or st.gate != EXPERIMENT:
            continue
        n_s, n_c = experiment_samples(a.experiment.minimum_detectable_effect,
                                      experiment_share(st, a.experiment),
                                      alpha=a.experiment.alpha,
                                      power=a.experiment.power)
        if a.experiment.cohorts == "preview" and traffic.preview is not None:
            p = traffic.preview
            value = p.value if p.value is not None else prepared.plan.candidate_revision
            carry = (f"cookie {p.cookie}={value}" if p.cookie is not None
                     else f"header {p.header}: {value}")
            sticky = (f"cohorts by the preview: users who send {carry} see the candidate "
                      f"(expected {a.experiment.cohort_share:.0%} of them), the others the "
                      "stable; each keeps their cohort")
        elif traffic.sticky is not None:
            sticky = (f"sticky per user by {'cookie' if traffic.sticky.cookie else 'header'} "
                      f"{traffic.sticky.cookie or traffic.sticky.header}")
        elif traffic.provider.value == "haproxy":
            sticky = "not sticky"
        else:
            sticky = ("not sticky: Gateway API v1 HTTPRoute has no session persistence, one user "
                      "can reach both generations; take one sample per request")
        out.append({"step": st.index, "candidateWeight": st.candidate.weight,
                    "cohorts": a.experiment.cohorts,
                    "stableSamples": n_s, "candidateSamples": n_c, "sticky": sticky,
                    "metric": a.experiment.metric,
                    "minimumDetectableEffect": a.experiment.minimum_detectable_effect})
    return out


def _experiment_note(e: dict[str, object]) -> str:
    held = (f"{100 - int(str(e['candidateWeight']))}/{e['candidateWeight']}"
            + (" (the public split; the candidate's cohort is the preview's)"
               if e.get("cohorts") == "preview" else ""))
    return (
        f"note: step {e['step']}: A/B experiment on {e['metric']}: both generations held at "
        f"{held} until {e['stableSamples']} "
        f"stable and {e['candidateSamples']} candidate samples (win rate "
        f"{0.5 + float(str(e['minimumDetectableEffect'])):g} detectable); then `dgdgen "
        f"experiment` decides; {e['sticky']}")


def _experiment_notes(prepared: Prepared) -> list[str]:
    return [_experiment_note(e) for e in experiment_plan(prepared)]


def header_lines(prepared: Prepared) -> list[str]:
    p = prepared.plan
    lines = [
        (f"rollout {p.rollout}: {prepared.stable.dgd.name} ({p.stable_revision}) → "
         f"{prepared.candidate_name} ({p.candidate_revision})"),
        f"isolation {p.mode}, strategy {p.strategy}; surge per worker component "
        + ", ".join(f"{k} +{v}" for k, v in p.surge_replicas.items())
        + f"; baseline GPUs {p.baseline_gpus}",
    ]
    from dgdgen.render.dgds import CAPABILITY

    if p.mode in CAPABILITY:
        lines.append(f"requires operator capability: {CAPABILITY[p.mode]}")
    lines.extend(f"note: {n}" for n in p.notes)
    lines.extend(_gate_notes(prepared))
    return lines


def table(prepared: Prepared) -> str:
    headers = _headers(prepared)
    rows = [headers] + _rows(prepared)
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    out = header_lines(prepared) + [""]
    for j, r in enumerate(rows):
        out.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def as_json(prepared: Prepared) -> str:
    data = prepared.plan.to_dict()
    data["stableName"] = prepared.stable.dgd.name
    data["candidateName"] = prepared.candidate_name
    if analysis_on(prepared):
        data["gates"] = [
            {
                "step": sg.index, "gate": sg.gate, "metrics": list(sg.metrics),
                "dropped": [{"metric": m, "reason": r} for m, r in sg.dropped],
                "minRequests": sg.min_requests, "minBakeSeconds": sg.min_bake_seconds,
                "windowSeconds": sg.window_seconds, "initialDelaySeconds":
                sg.timing.initial_delay, "intervalSeconds": sg.timing.interval,
                "count": sg.timing.count, "args": sg.arg_map,
            }
            for sg in step_gates(prepared).values()
        ]
        experiments = experiment_plan(prepared)
        if experiments:
            data["experiments"] = experiments
        checks = gate_checks(prepared)
        if checks:
            data["checks"] = [{"kind": c.kind, "name": c.label, "steps": list(c.steps),
                               "minimum": c.minimum, **c.data} for c in checks]
    return json.dumps(data, indent=2) + "\n"


def markdown(prepared: Prepared) -> str:
    p = prepared.plan
    lines = [f"### Rollout plan `{p.rollout}`", ""]
    lines += [f"- {h}" for h in header_lines(prepared)]
    headers = _headers(prepared)
    lines += ["", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in _rows(prepared)]
    steps = p.steps
    x = ", ".join(f'"{s.index}"' for s in steps)
    weights = ", ".join(str(s.candidate.weight) for s in steps)
    stable_w = ", ".join(str(sum(v for k, v in s.stable.replicas.items()
                                 if prepared.stable.dgd.components[k].is_worker)) for s in steps)
    cand_w = ", ".join(str(sum(v for k, v in s.candidate.replicas.items()
                               if prepared.stable.dgd.components[k].is_worker)) for s in steps)
    top = max([1] + [sum(s.peak_replicas.values()) for s in steps])
    lines += [
        "",
        "```mermaid",
        "xychart-beta",
        '  title "Traffic to the candidate (%) per step"',
        f"  x-axis [{x}]",
        '  y-axis "candidate weight %" 0 --> 100',
        f"  bar [{weights}]",
        "```",
        "",
        "```mermaid",
        "xychart-beta",
        '  title "Worker replicas per step: stable (first line), candidate (second line)"',
        f"  x-axis [{x}]",
        f'  y-axis "worker replicas" 0 --> {top}',
        f"  line [{stable_w}]",
        f"  line [{cand_w}]",
        "```",
        "",
    ]
    return "\n".join(lines)


FORMATS: dict[str, Callable[[Prepared], str]] = {
    "table": table,
    "json": as_json,
    "markdown": markdown,
}
