"""Plan reports: a text table, JSON, a Markdown summary with mermaid charts for pull requests, and
an SVG picture (PNG through rsvg-convert). One function per text format, chosen from
:data:`FORMATS`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dgdgen.picture import (
    FONT_FAMILY,
    INK,
    MUTED,
    generation_colours,
    generation_label,
    text_width,
    wrap,
)

if TYPE_CHECKING:
    from dgdgen.analysis.gates import StepGate
    from dgdgen.plan import GenerationState, Plan, PlanStep
    from dgdgen.prepared import Prepared
    from dgdgen.spec import CustomMetric

ROLE_ABBR = {"frontend": "fe", "aggregated": "agg", "prefill": "pre", "decode": "dec", "other": "oth"}


# Metrics measured by a Job that sends its own requests: no live traffic, no request minimum.
_JOB_METRICS = frozenset({"probe", "quality"})


def _duration(seconds: int | None) -> str:
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


def _reps(prepared: Prepared, gen: GenerationState) -> str:
    if not gen.present:
        return "—"
    abbr = _abbr(prepared)
    return " ".join(f"{abbr[n]}:{r}" for n, r in gen.replicas.items())


def _title(state: PlanStep) -> str:
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


def _order(plan: Plan, state: PlanStep) -> str:
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
        bound = "until idle" if state.drain_seconds == 0 else f"≤{_duration(state.drain_seconds)}"
        leave = [f"drain {bound}", "shrink"]
    elif (_went(at_peak, leave_a.replicas, up=False)
          or _went(gain_b.replicas, gain_a.replicas, up=False)):
        leave = ["shrink"]  # a generation still serving loses workers: no drain to wait for
    if state.shift_first:
        return "→".join([*shift, *leave, *grow]) or "-"
    return "→".join([*room, *grow, *shift, *leave]) or "-"


def _gates(prepared: Prepared) -> dict[int, StepGate]:
    """The gated steps (analysis enabled), by step index."""
    from dgdgen.analysis.gates import step_gate

    out = {}
    for st in prepared.plan.steps:
        sg = step_gate(prepared, st)
        if sg is not None:
            out[st.index] = sg
    return out


def _analysis_on(prepared: Prepared) -> bool:
    return bool(prepared.loaded.spec.spec.analysis.enabled)


def _gate_cells(st: PlanStep, gated: dict[int, StepGate]) -> list[str]:
    sg = gated.get(st.index) if st.kind == "step" else None
    if sg is None:
        return ["-", "-"]
    # custom metrics count their own events (notes); Job metrics (probe, quality) no requests
    traffic = "requests" in sg.metrics
    return [
        str(sg.min_requests) if traffic else "-",
        _duration(sg.min_bake_seconds) if sg.min_bake_seconds else "-",
    ]


def _check_cell(st: PlanStep, checks: dict[int, list[Check]]) -> str:
    found = checks.get(st.index, []) if st.kind == "step" else []
    return "; ".join(f"{c.label} {c.minimum}" for c in found) or "-"


def _rows(prepared: Prepared) -> list[list[str]]:
    rows = []
    gated = _gates(prepared) if _analysis_on(prepared) else {}
    checks = step_checks(prepared)
    for st in prepared.plan.all_states():
        extra = _gate_cells(st, gated) if _analysis_on(prepared) else []
        if checks:
            extra.append(_check_cell(st, checks))
        rows.append([
            _title(st),
            f"{st.stable.weight}/{st.candidate.weight}",
            _reps(prepared, st.stable),
            _reps(prepared, st.candidate),
            f"{st.peak_gpus} (+{st.extra_gpus_peak})",
            _order(prepared.plan, st),
            f"{st.stable.capacity:.0%}/{st.candidate.capacity:.0%}",
            _duration(st.pause_seconds),
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
    return (HEADERS + (GATE_HEADERS if _analysis_on(prepared) else [])
            + ([CHECK_HEADER] if step_checks(prepared) else []))


def _gate_notes(prepared: Prepared) -> list[str]:
    """Where the statistics say a step's bake time is too short, or what a gate leaves out."""
    if not _analysis_on(prepared):
        named = sorted({st.gate for st in prepared.plan.steps if st.gate})
        if named:
            return [(f"note: analysis is off: gate(s) {', '.join(named)} named by the steps "
                     "are not rendered and hold nothing back; set spec.analysis.enabled: true")]
        return []
    a = prepared.loaded.spec.spec.analysis
    lines = []
    gated = _gates(prepared)
    traffic = any(m not in _JOB_METRICS for sg in gated.values() for m in sg.metrics)
    if a.expected_request_rate is None and traffic:
        lines.append("note: analysis: set spec.analysis.expectedRequestRate to see the minimum "
                     "bake time per gated step")
    for sg in gated.values():
        st = prepared.plan.state(sg.index)
        if sg.min_bake_seconds and (st.pause_seconds or 0) < sg.min_bake_seconds:
            lines.append(
                f"note: step {sg.index}: pause {_duration(st.pause_seconds)} is shorter than the "
                f"minimum bake time {_duration(sg.min_bake_seconds)} ({sg.min_requests} requests "
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
    from dgdgen.analysis.quality_job import load_prompt_set

    if not _analysis_on(prepared):
        return []
    a = prepared.loaded.spec.spec.analysis
    gated = _gates(prepared)
    out: list[Check] = []
    steps = tuple(sg.index for sg in gated.values() if "quality" in sg.metrics)
    if steps and a.quality is not None:
        q = a.quality
        _, prompts = load_prompt_set(prepared.loaded)
        needed = sign_test_samples(q.max_loss_share, q.effect)
        judge = f", {2 * len(prompts)} judge calls (both orders)" if q.judge is not None else ""
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
    if not _analysis_on(prepared) or state.kind != "step" or not state.gate:
        return []
    sg = _gates(prepared).get(index)
    lines = []
    if sg is not None:
        lines.append(f"gate {sg.gate}: {', '.join(sg.metrics)}")
        if "requests" in sg.metrics:
            bake = (f" (a bake of {_duration(sg.min_bake_seconds)} at the expected rate)"
                    if sg.min_bake_seconds else "")
            lines.append(f"Inconclusive below {sg.min_requests} requests per generation in the "
                         f"{_duration(sg.window_seconds)} window{bake}")
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
                                      experiment_share(st), alpha=a.experiment.alpha,
                                      power=a.experiment.power)
        if traffic.sticky is not None:
            sticky = (f"sticky per user by {'cookie' if traffic.sticky.cookie else 'header'} "
                      f"{traffic.sticky.cookie or traffic.sticky.header}")
        elif traffic.provider.value == "haproxy":
            sticky = "not sticky"
        else:
            sticky = ("not sticky: Gateway API v1 HTTPRoute has no session persistence, one user "
                      "can reach both generations; take one sample per request")
        out.append({"step": st.index, "candidateWeight": st.candidate.weight,
                    "stableSamples": n_s, "candidateSamples": n_c, "sticky": sticky,
                    "metric": a.experiment.metric,
                    "minimumDetectableEffect": a.experiment.minimum_detectable_effect})
    return out


def _experiment_note(e: dict[str, object]) -> str:
    return (
        f"note: step {e['step']}: A/B experiment on {e['metric']}: both generations held at "
        f"{100 - int(str(e['candidateWeight']))}/{e['candidateWeight']} until {e['stableSamples']} "
        f"stable and {e['candidateSamples']} candidate samples (win rate "
        f"{0.5 + float(str(e['minimumDetectableEffect'])):g} detectable); then `dgdgen "
        f"experiment` decides; {e['sticky']}")


def _experiment_notes(prepared: Prepared) -> list[str]:
    return [_experiment_note(e) for e in experiment_plan(prepared)]


def _header(prepared: Prepared) -> list[str]:
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
    out = _header(prepared) + [""]
    for j, r in enumerate(rows):
        out.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def as_json(prepared: Prepared) -> str:
    data = prepared.plan.to_dict()
    data["stableName"] = prepared.stable.dgd.name
    data["candidateName"] = prepared.candidate_name
    if _analysis_on(prepared):
        data["gates"] = [
            {
                "step": sg.index, "gate": sg.gate, "metrics": list(sg.metrics),
                "dropped": [{"metric": m, "reason": r} for m, r in sg.dropped],
                "minRequests": sg.min_requests, "minBakeSeconds": sg.min_bake_seconds,
                "windowSeconds": sg.window_seconds, "initialDelaySeconds":
                sg.timing.initial_delay, "intervalSeconds": sg.timing.interval,
                "count": sg.timing.count, "args": sg.arg_map,
            }
            for sg in _gates(prepared).values()
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
    lines += [f"- {h}" for h in _header(prepared)]
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


# --------------------------------------------------------------------------- svg

SVG_NS = "http://www.w3.org/2000/svg"
_BUDGET = "#d62728"
_COL_W, _LEFT, _TRAFFIC_H, _GPU_H = 160, 150, 110, 150
_BAR_W = 64  # a column's bar, in its middle
_ROW, _LINE = 20, 15  # the rows under the chart; a wrapped line of notes
_CHECK_ROWS = {"quality": "quality", "custom": "custom", "experiment": "A/B s/c"}


def _snake(key: str) -> str:
    """``minPairs`` → ``min_pairs`` (``add`` turns it into ``data-min-pairs``)."""
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in key)


def surge_budget_gpus(prepared: Prepared) -> int:
    """The most GPUs the plan may hold outside a rollback: the larger generation's full size plus
    the surge budget (``capacity.maxSurge`` replicas per worker component, at that component's
    GPUs per replica)."""
    p = prepared.plan
    full = max(p.steps[0].stable.gpus, p.cleanup.candidate.gpus)
    per_replica = {
        name: max(comp.gpus_per_replica,
                  prepared.candidate.dgd.components[name].gpus_per_replica
                  if name in prepared.candidate.dgd.components else 0)
        for name, comp in prepared.stable.dgd.components.items()
    }
    return full + sum(n * per_replica.get(name, 0) for name, n in p.surge_replicas.items())


def generation_names(prepared: Prepared) -> dict[str, str]:
    """The legend's name of each generation: its role and the spec's revision, a revision the
    spec leaves out (dgdgen's content hash) said to be generated."""
    spec = prepared.loaded.spec.spec
    p = prepared.plan
    return {"stable": generation_label("stable", p.stable_revision, spec.stable.revision is None),
            "candidate": generation_label("candidate", p.candidate_revision,
                                          spec.candidate.revision is None)}


def _order_lines(order: str, width: float, size: float) -> list[str]:
    """A transition's moves (``make room→grow→shift→drain ≤1h→shrink``) in lines no wider than
    ``width``, broken after an arrow."""
    lines: list[str] = []
    for move in order.split("→"):
        if lines and text_width(lines[-1] + "→" + move, size) <= width:
            lines[-1] += "→" + move
        else:
            if lines:
                lines[-1] += "→"
            lines.append(move)
    return lines


def svg(prepared: Prepared) -> str:
    """The plan as a picture (SVG 1.1, no script, no external references): one column per state
    with the traffic split on a percent scale, the GPUs of each generation and the transition's
    peak against the surge budget line on a GPU scale, then rows with the replicas, the peak,
    the order of the moves with their drain bounds, the pause, gate and minimum bake time that
    lead on, and under them the plan's notes as the text plan prints them.

    Every drawn value also sits in a ``data-*`` attribute and a ``<title>`` (a tooltip), so the
    picture can be checked, and read by a screen reader, without measuring pixels. The axes are
    ``<g class="axis x|y">`` groups (a line, values, a name) inside each panel's group."""
    import xml.etree.ElementTree as ET

    p = prepared.plan
    states = p.all_states()
    gated = _gates(prepared) if _analysis_on(prepared) else {}
    checks = step_checks(prepared)
    budget = surge_budget_gpus(prepared)
    top_gpus = max([budget] + [st.peak_gpus for st in states] + [1])
    width = _LEFT + _COL_W * len(states) + 20
    colour = generation_colours(p.stable_revision, p.candidate_revision)
    names = generation_names(prepared)
    generated = any(n.endswith(", generated)") for n in names.values())

    def add(parent: ET.Element, tag: str, text: str | None = None, **attrs: object) -> ET.Element:
        el = ET.SubElement(parent, tag, {k.rstrip("_").replace("_", "-"): str(v)
                                         for k, v in attrs.items()})
        if text is not None:
            el.text = text
        return el

    def tip(el: ET.Element, text: str) -> ET.Element:
        add(el, "title", text)
        return el

    root = ET.Element("svg", {
        "xmlns": SVG_NS, "version": "1.1", "width": str(width), "height": "0", "viewBox": "",
        "font-family": FONT_FAMILY, "font-size": "12",
        "role": "img", "data-rollout": p.rollout,
    })
    add(root, "title", f"Rollout plan {p.rollout}: {names['stable']} → {names['candidate']}")
    background = add(root, "rect", x=0, y=0, width=width, fill="#ffffff")

    def revision(role: str) -> str:
        rev = p.stable_revision if role == "stable" else p.candidate_revision
        return f"{rev}, generated" if names[role].endswith(", generated)") else rev

    add(root, "text", f"Rollout {p.rollout}: {prepared.stable.dgd.name} ({revision('stable')}) → "
        f"{prepared.candidate_name} ({revision('candidate')})", x=12, y=24, font_size=15,
        font_weight="bold", fill=INK, class_="title")
    add(root, "text", f"isolation {p.mode}, strategy {p.strategy}; surge per worker component "
        + ", ".join(f"{k} +{v}" for k, v in p.surge_replicas.items())
        + f"; baseline GPUs {p.baseline_gpus}", x=12, y=44, fill=MUTED, class_="subtitle")

    # the legend, item after item, on as many lines as the width needs
    legend = add(root, "g", class_="legend")
    lx, ly = 12.0, 66.0
    items: list[tuple[str, str, str]] = [  # (swatch, generation, label)
        ("rect", "stable", names["stable"]), ("rect", "candidate", names["candidate"]),
        ("peak", "", "peak: most GPUs at once during the move into the state"),
        ("budget", "", f"surge budget: {budget} GPUs (full size plus maxSurge)"),
    ]
    if generated:
        items.append(("", "", "generated: the spec sets no revision; dgdgen named it by a hash"))
    for kind, who, label in items:
        need = (26 if kind else 0) + text_width(label, 12) + 24
        if lx > 12 and lx + need > width - 12:
            lx, ly = 12.0, ly + 18
        if kind == "rect":
            add(legend, "rect", x=lx, y=ly - 10, width=14, height=12, fill=colour[who],
                data_generation=who)
        elif kind == "peak":
            add(legend, "rect", x=lx, y=ly - 10, width=14, height=12, fill="none", stroke=INK,
                stroke_width=1.5, stroke_dasharray="3 2")
        elif kind == "budget":
            add(legend, "line", x1=lx - 2, y1=ly - 4, x2=lx + 18, y2=ly - 4, stroke=_BUDGET,
                stroke_dasharray="6 4", stroke_width=1.5)
        tx = lx + (22 if kind else 0)
        add(legend, "text", label, x=tx, y=ly, fill=INK, class_="legend-label")
        lx = tx + text_width(label, 12) + 24

    forward = sum(1 for st in states if st.kind in ("baseline", "step"))
    caption_y = ly + 28
    titles_y = caption_y + 24
    traffic_top = titles_y + 12
    gpu_top = traffic_top + _TRAFFIC_H + 30
    rows_top = gpu_top + _GPU_H + 34

    def col_x(col: int) -> float:
        return _LEFT + _COL_W * col

    def centre(col: int) -> float:
        return col_x(col) + _COL_W / 2

    def bar_x(col: int) -> float:
        return centre(col) - _BAR_W / 2

    def gpu_y(n: int) -> float:
        return round(gpu_top + _GPU_H - _GPU_H * n / top_gpus, 2)

    def pct_y(w: float) -> float:
        return round(traffic_top + _TRAFFIC_H - _TRAFFIC_H * w / 100, 2)

    def y_axis(panel: ET.Element, name: str, values: list[tuple[float, str]], y0: float,
               y1: float) -> ET.Element:
        axis = add(panel, "g", class_="axis y")
        add(axis, "line", class_="axis-line", x1=_LEFT - 10, y1=y0, x2=_LEFT - 10, y2=y1,
            stroke=MUTED)
        for y, value in values:
            add(axis, "line", x1=_LEFT - 14, y1=y, x2=_LEFT - 10, y2=y, stroke=MUTED)
            add(axis, "text", value, x=_LEFT - 17, y=round(y + 4, 2), text_anchor="end",
                fill=MUTED, class_="tick")
        add(axis, "text", name, x=12, y=round((y0 + y1) / 2 + 4, 2), font_weight="bold",
            fill=INK, class_="axis-label")
        return axis

    # the traffic panel: a percent scale; per state the candidate's share on top of the stable's
    traffic = add(root, "g", class_="panel", id="traffic")
    y_axis(traffic, "traffic", [(pct_y(v), f"{v} %") for v in (0, 50, 100)], traffic_top,
           traffic_top + _TRAFFIC_H)
    # the GPU panel: whole numbers from 0 to the top, at most six of them; the states along x
    gpus = add(root, "g", class_="panel", id="gpus")
    every = max(1, -(-top_gpus // 5))
    axis = y_axis(gpus, "GPUs", [(gpu_y(n), str(n)) for n in range(0, top_gpus + 1, every)],
                  gpu_top, gpu_top + _GPU_H)
    for tick in axis.iter("text"):
        if "tick" in tick.get("class", ""):
            tick.set("class", "tick gpu-tick")
            tick.set("data-gpus", tick.text or "")
    x_axis = add(gpus, "g", class_="axis x")
    add(x_axis, "line", class_="axis-line", x1=_LEFT - 10, y1=gpu_y(0), x2=width - 10,
        y2=gpu_y(0), stroke=MUTED)
    add(x_axis, "text", "state", x=12, y=titles_y, font_weight="bold", fill=INK,
        class_="axis-label")
    for col, st in enumerate(states):
        add(x_axis, "text", _title(st), x=centre(col), y=titles_y, text_anchor="middle",
            font_weight="bold", fill=INK, class_="tick state-title", data_state=st.label)

    if forward < len(states):
        # rollback and cleanup are where a rollout can end, not steps after the last one
        sx = col_x(forward)
        add(root, "text", "ends: from whichever step it stops at", x=sx + 8, y=caption_y,
            fill=MUTED, class_="ends-label")
        ends_bottom = rows_top  # replaced once the rows are known
        sep = add(root, "line", class_="ends-separator", x1=sx, y1=caption_y - 12, x2=sx,
                  y2=ends_bottom, stroke=MUTED, stroke_dasharray="2 3")

    order = {st.label: _order_lines(_order(p, st), _COL_W - 16, 11) for st in states}
    order_rows = max(len(v) for v in order.values())
    kinds = [k for k in _CHECK_ROWS if any(c.kind == k for cs in checks.values() for c in cs)]
    rows: list[tuple[str, str, int]] = [  # (label, class, lines)
        ("stable/candidate %", "traffic-label", 1), ("replicas stable", "replicas-stable", 1), ("replicas candidate", "replicas-candidate", 1),
        ("peak GPUs (+extra)", "peak-gpus", 1), ("order of moves", "order", order_rows),
        ("pause", "pause", 1), ("gate", "gate", 1), ("min bake", "min-bake", 1),
        *((_CHECK_ROWS[k], f"check {k}", 1) for k in kinds)]
    row_y: dict[str, float] = {}
    y = float(rows_top)
    for label, cls, n in rows:
        add(root, "text", label, x=12, y=y, fill=MUTED, class_="row-label")
        row_y[cls] = y
        y += _ROW + (n - 1) * 14
    if forward < len(states):
        sep.set("y2", str(y - _ROW + 6))

    for col, st in enumerate(states):
        bx = bar_x(col)
        sg = gated.get(st.index) if st.kind == "step" else None
        bake = _duration(sg.min_bake_seconds) if sg is not None and sg.min_bake_seconds else "-"
        g = add(root, "g", class_="state", id=f"state-{st.label}", data_state=st.label,
                data_kind=st.kind)
        tip(g, f"{_title(st)}: traffic stable {st.stable.weight} % / candidate "
            f"{st.candidate.weight} %, GPUs {st.stable.gpus}+{st.candidate.gpus}, "
            f"peak {st.peak_gpus}")
        # traffic: the stable share at the bottom, the candidate's on top
        y = float(traffic_top)
        for cls, gen in (("candidate", st.candidate), ("stable", st.stable)):
            h = round(_TRAFFIC_H * gen.weight / 100, 2)
            r = add(g, "rect", class_=f"traffic {cls}", data_weight=gen.weight, x=bx, y=round(y, 2),
                    width=_BAR_W, height=h, fill=colour[cls])
            tip(r, f"{cls}: {gen.weight}% of new requests")
            y += h
        # GPUs in the state, stacked; the most held during the move into it, outlined
        base = gpu_y(0)
        for cls, gen in (("stable", st.stable), ("candidate", st.candidate)):
            h = round(_GPU_H * gen.gpus / top_gpus, 2)
            top = round(base - h, 2)
            r = add(g, "rect", class_=f"gpus {cls}", data_gpus=gen.gpus, x=bx, y=top,
                    width=_BAR_W, height=h, fill=colour[cls])
            tip(r, f"{cls}: {gen.gpus} GPUs")
            base = top
        peak = add(g, "rect", class_="peak", data_gpus=st.peak_gpus, x=bx - 4,
                   y=gpu_y(st.peak_gpus), width=_BAR_W + 8,
                   height=round(gpu_y(0) - gpu_y(st.peak_gpus), 2), fill="none", stroke=INK,
                   stroke_width=1.5, stroke_dasharray="3 2")
        tip(peak, f"peak during the move into this state: {st.peak_gpus} GPUs "
            f"(+{st.extra_gpus_peak} above "
            + ("what runs today)" if p.mode == "partition" else "the full size)"))
        cells = (("traffic-label", f"{st.stable.weight}/{st.candidate.weight}"),
                 ("replicas-stable", _reps(prepared, st.stable)),
                 ("replicas-candidate", _reps(prepared, st.candidate)),
                 ("peak-gpus", f"{st.peak_gpus} (+{st.extra_gpus_peak})"),
                 ("pause", _duration(st.pause_seconds)), ("gate", st.gate or "-"),
                 ("min bake", bake))
        for cls, value in cells:
            cls = cls.replace(" ", "-")
            add(g, "text", value, x=centre(col), y=row_y[cls], text_anchor="middle", fill=INK,
                class_=cls)
        for i, line_text in enumerate(order[st.label]):
            add(g, "text", line_text, x=centre(col), y=row_y["order"] + 14 * i,
                text_anchor="middle", font_size=11, fill=INK, class_="order")
        here = {c.kind: c for c in checks.get(st.index, [])} if st.kind == "step" else {}
        for kind in kinds:
            c = here.get(kind)
            attrs = {f"data_{_snake(k)}": v for k, v in c.data.items()
                     if isinstance(v, (int, float, str))} if c is not None else {}
            cell = add(g, "text", c.minimum if c is not None else "-", x=centre(col),
                       y=row_y[f"check {kind}"], text_anchor="middle", fill=INK,
                       class_=f"check {kind}", **attrs)
            if c is not None:
                tip(cell, c.detail.removeprefix("note: "))
    # the GPU panel's axes and budget line over the columns, so no peak outline hides the line
    root.remove(gpus)
    root.append(gpus)
    line = add(gpus, "line", class_="surge-budget", data_gpus=budget, x1=_LEFT - 10,
               y1=gpu_y(budget), x2=width - 10, y2=gpu_y(budget), stroke=_BUDGET,
               stroke_dasharray="6 4", stroke_width=1.5)
    tip(line, f"surge budget: {budget} GPUs (full size plus maxSurge)")

    # under the rows: what each gate sized in pairs, events or samples decides, then the
    # plan's notes as the text plan prints them (the warnings a reviewer must not miss)
    y = float(row_y[rows[-1][1]] + 30)
    details = [c.detail for c in gate_checks(prepared)]
    notes = [line for line in _header(prepared)[2:] if line not in details]
    for heading, cls, texts in (("Gates", "gate-detail", details), ("Notes", "plan-note", notes)):
        if not texts:
            continue
        add(root, "text", heading, x=12, y=y, font_weight="bold", fill=INK, class_="heading")
        y += _LINE + 2
        for text in texts:
            for i, line_text in enumerate(wrap(text.removeprefix("note: "), width - 36, 11)):
                # a continuation line set in (SVG collapses leading spaces)
                add(root, "text", line_text, x=24 if i else 12, y=y, font_size=11, fill=INK,
                    class_=cls)
                y += _LINE
            y += 3
        y += 12
    height = int(y + 4)
    root.set("height", str(height))
    root.set("viewBox", f"0 0 {width} {height}")
    background.set("height", str(height))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


FORMATS["svg"] = svg


def png(prepared: Prepared) -> bytes:
    """The :func:`svg` picture as PNG, rasterised by ``rsvg-convert`` (librsvg, the SVG renderer
    GNOME and many document tools use); a clear error when it is not installed."""
    import shutil
    import subprocess

    from dgdgen.errors import DgdgenError

    tool = shutil.which("rsvg-convert")
    if tool is None:
        raise DgdgenError("--format png needs rsvg-convert (Debian/Ubuntu: apt install "
                          "librsvg2-bin; macOS: brew install librsvg); --format svg needs nothing")
    done = subprocess.run([tool, "--format", "png"], input=svg(prepared).encode("utf-8"),
                          capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        raise DgdgenError(f"rsvg-convert failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout
