"""Plan reports: a text table, JSON, and a Markdown summary with mermaid charts for pull
requests. One function per format, chosen from :data:`FORMATS`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.analysis.gates import StepGate
    from dgdgen.pipeline import Prepared
    from dgdgen.plan import GenerationState, PlanStep

ROLE_ABBR = {"frontend": "fe", "aggregated": "agg", "prefill": "pre", "decode": "dec", "other": "oth"}


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
        return f"rollback→{state.index}"
    return {"baseline": "0 baseline", "rollback": "rollback", "cleanup": "cleanup"}.get(
        state.kind, str(state.index)
    )


def _order(state: PlanStep) -> str:
    """How the transition into ``state`` moves: grow, shift, drain, shrink (docs/planning.md)."""
    if state.kind in ("baseline", "cleanup"):
        return "-"
    drain = []
    if state.drain_seconds is not None:
        bound = "until idle" if state.drain_seconds == 0 else f"≤{_duration(state.drain_seconds)}"
        drain = [f"drain {bound}", "shrink"]
    if state.shift_first:
        return "→".join(["shift", *drain, "grow"])
    return "→".join(["grow", "shift", *drain])


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
    traffic = any(m != "probe" for m in sg.metrics)
    return [
        str(sg.min_requests) if traffic else "-",
        _duration(sg.min_bake_seconds) if sg.min_bake_seconds else "-",
    ]


def _rows(prepared: Prepared) -> list[list[str]]:
    rows = []
    gated = _gates(prepared) if _analysis_on(prepared) else {}
    for st in prepared.plan.all_states():
        extra = _gate_cells(st, gated) if _analysis_on(prepared) else []
        rows.append([
            _title(st),
            f"{st.stable.weight}/{st.candidate.weight}",
            _reps(prepared, st.stable),
            _reps(prepared, st.candidate),
            f"{st.peak_gpus} (+{st.extra_gpus_peak})",
            _order(st),
            f"{st.stable.capacity:.0%}/{st.candidate.capacity:.0%}",
            _duration(st.pause_seconds),
            st.gate or "-",
            *extra,
        ])
    return rows


HEADERS = ["step", "weight s/c %", "stable", "candidate", "GPUs peak (+extra)", "order",
           "capacity s/c", "pause", "gate"]
GATE_HEADERS = ["min requests", "min bake"]


def _headers(prepared: Prepared) -> list[str]:
    return HEADERS + (GATE_HEADERS if _analysis_on(prepared) else [])


def _gate_notes(prepared: Prepared) -> list[str]:
    """Where the statistics say a step's bake time is too short, or what a gate leaves out."""
    if not _analysis_on(prepared):
        named = sorted({st.gate for st in prepared.plan.steps if st.gate})
        if named:
            return [f"note: analysis is off: gate(s) {', '.join(named)} named by the steps are "
                    "not rendered and hold nothing back; set spec.analysis.enabled: true"]
        return []
    a = prepared.loaded.spec.spec.analysis
    lines = []
    gated = _gates(prepared)
    traffic = any(m != "probe" for sg in gated.values() for m in sg.metrics)
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
    return lines


def _header(prepared: Prepared) -> list[str]:
    p = prepared.plan
    lines = [
        f"rollout {p.rollout}: {prepared.stable.dgd.name} ({p.stable_revision}) → "
        f"{prepared.candidate_name} ({p.candidate_revision})",
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
