"""The rehearsal's report: JSON (everything observed), Markdown (the tables a reviewer reads) and
an SVG chart (planned vs observed traffic share, TTFT p95 and ITL p95 per generation, gate
verdicts, replicas), drawn with the standard library's ElementTree.

Why one module: the three renderings are read off the same observations (the state rows, the
per-generation series, their p95s) and must agree figure for figure; the drawing primitives
they share with the plan picture live in :mod:`dgdgen.picture`.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgdgen.picture import (
    FONT_FAMILY,
    GRID,
    INK,
    MUTED,
    generation_colours,
    legend_row,
    nice_ticks,
    sub,
    text_width,
    time_axis,
    value_axis,
)
from dgdgen.rehearse.load import lateness, lateness_lines, lateness_text, p95
from dgdgen.rehearse.run import (
    ANSWERING_ENGINE,
    NO_DECISION,
    STAND_IN_JUDGE,
    Outcome,
    engine_note,
    judge_note,
)

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

# A gate's dot: passed, not passed (Failed or Inconclusive: the rollout does not go on), and no
# decision (an A/B experiment step without samples: neither promoted nor rolled back).
_GATE_FILL = {"Successful": "#2ca02c", NO_DECISION: "#ff7f0e"}
_GATE_NOT_PASSED = "#d62728"


@dataclass(frozen=True)
class StateRow:
    label: str
    planned: dict[str, int]
    observed: dict[str, float]
    requests: int
    failed: int
    truncated: int
    split_error: float  # points, the largest over the generations
    ttft_p95: dict[str, float | None]
    verdict: str | None
    gate: str | None
    gate_plan: tuple[str, ...]
    replicas: dict[str, dict[str, int]]
    seconds: float
    quality: dict[str, Any] | None = None  # quality_figures of the state's gate


# The figures of the quality gate's one-line report (dgdgen.analysis.quality_gate), as `dgdgen
# analyze` prints it in its table's `quality` row.
_QUALITY_ROW = re.compile(r"^quality +\S+ +(?P<phase>\S+) +(?P<detail>.*)$",
                          re.MULTILINE)
_COUNTS = re.compile(r"(?P<wins>\d+) wins, (?P<losses>\d+) losses, (?P<ties>\d+) ties")
_INTERVAL = re.compile(r"interval \[(?P<lo>[\d.]+), (?P<hi>[\d.]+)\] at (?P<conf>[\d.]+)%")
_CALLS = re.compile(r"(?P<calls>\d+) judge calls")
_SIGN_P = re.compile(r"sign test p=(?P<p>[\d.e+-]+)")


def quality_figures(analyze_output: str) -> dict[str, Any] | None:
    """The quality measurement of a gate's `dgdgen analyze` output: its verdict and one-line
    report, the scored pairs (wins, losses, ties), the sign test's p, the judge's loss-share
    interval and judge calls (each None where the gate did not report it); None without one."""
    row = _QUALITY_ROW.search(analyze_output)
    if row is None:
        return None
    detail = row["detail"]
    counts, interval = _COUNTS.search(detail), _INTERVAL.search(detail)
    calls, sign = _CALLS.search(detail), _SIGN_P.search(detail)
    figures = {k: int(v) for k, v in counts.groupdict().items()} if counts else {}
    return {
        "verdict": row["phase"], "detail": detail,
        "pairs": sum(figures.values()) if counts else None,
        "wins": figures.get("wins"), "losses": figures.get("losses"), "ties": figures.get("ties"),
        "signTestP": float(sign["p"]) if sign else None,
        "lossShareInterval": [float(interval["lo"]), float(interval["hi"])] if interval else None,
        "intervalConfidence": round(float(interval["conf"]) / 100, 6) if interval else None,
        "judgeCalls": int(calls["calls"]) if calls else None,
    }


def state_rows(out: Outcome) -> list[StateRow]:
    rows = []
    settle = out.options.settle
    for s in out.states:
        lo, hi = s.traffic_moved + settle, s.ended
        recs = [r for r in out.records if lo <= r.start < hi]
        counted = [r for r in recs if r.outcome.served_by]
        observed = {}
        for gen in s.planned:
            n = sum(1 for r in counted if r.outcome.served_by == gen)
            observed[gen] = 100.0 * n / len(counted) if counted else 0.0
        err = max((abs(observed[g] - s.planned[g]) for g in s.planned), default=0.0)
        ttft = {g: p95([r.outcome.ttft for r in counted
                         if r.outcome.served_by == g and r.outcome.ttft is not None])
                for g in s.planned}
        rows.append(StateRow(
            label=s.label, planned=s.planned, observed=observed, requests=len(recs),
            failed=sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
            truncated=sum(1 for r in recs if r.outcome.truncated),
            split_error=err if counted else float("nan"), ttft_p95=ttft, verdict=s.verdict,
            gate=s.gate, gate_plan=s.gate_plan, replicas=s.replicas_observed,
            seconds=s.ended - s.started, quality=quality_figures(s.analyze_output),
        ))
    return rows


# the resolution of the latency series queried from Prometheus, seconds
_STEP = 1.0


def _series(out: Outcome, metric: str) -> dict[str, list[tuple[float, float]]]:
    """p95 of a frontend histogram per generation over the rehearsal, from Prometheus."""
    window = next((c.rehearsed for c in out.scaled.changes if c.field == "spec.analysis.window"),
                  "15s")
    rollout = out.prepared.loaded.spec.metadata.name
    expr = (f"histogram_quantile(0.95, sum by (le, dgdgen_generation) "
            f"(rate({metric}_bucket{{dgdgen_rollout=\"{rollout}\"}}[{window}])))")
    res = out.prometheus.query_range(expr, out.t0_wall, out.t0_wall + out.duration, _STEP)
    series: dict[str, list[tuple[float, float]]] = {}
    for item in res:
        gen = str((item.get("metric") or {}).get("dgdgen_generation", "?"))
        pts = []
        for t, v in item.get("values") or []:
            try:
                f = float(v)
            except ValueError:
                continue
            if math.isfinite(f):
                pts.append((float(t) - out.t0_wall, f))
        series[gen] = pts
    return series


def wall_seconds_by(out: Outcome) -> dict[str, float]:
    """The wall time per phase; what no phase holds (the set-up before the first state, the
    proxy and Prometheus starting, the load stopping) is "other"."""
    phases = dict(out.phases)
    phases["other (set-up, proxy and Prometheus start, load stop)"] = round(
        max(0.0, out.duration - sum(phases.values())), 1)
    return phases


def wall_text(by: dict[str, float]) -> str:
    return "; ".join(f"{k} {v:g} s" for k, v in by.items())


def to_json(out: Outcome, rows: list[StateRow]) -> dict[str, Any]:
    recs = out.records
    return {
        "spec": str(out.options.spec),
        "result": out.result,
        "exitCode": out.exit_code,
        "provider": out.provider,
        "proxy": "HAProxy standing in for the Gateway" if out.stand_in else "rendered haproxy.cfg",
        "trafficPath": out.options.traffic_path,
        "timeScale": out.options.time_scale,
        "requestRate": out.options.rate,
        "candidateSlowdown": out.options.candidate_slowdown,
        "candidateQuality": out.options.candidate_quality,
        # what answered: the answering engine's answers test the gate, not a model
        "workers": engine_note(out.answering, out.options.candidate_quality),
        # who judged them, where a judge scores the quality gate
        "judge": judge_note(out.judge_accuracy),
        "judgeAccuracy": out.judge_accuracy,
        "scaled": [{"field": c.field, "original": c.original, "rehearsed": c.rehearsed}
                   for c in out.scaled.changes],
        "wallSeconds": round(out.duration, 1),
        "wallSecondsBy": wall_seconds_by(out),
        "requests": len(recs),
        "streams": sum(1 for r in recs if r.outcome.stream),
        "failed": sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
        "truncated": sum(1 for r in recs if r.outcome.truncated),
        # how far behind its rate the load started its requests (dgdgen.rehearse.load)
        "loadLate": lateness(recs),
        "processesPeak": out.processes_peak,
        "rssPeakMB": round(out.rss_peak_mb, 1),
        "pssPeakMB": round(out.pss_peak_mb, 1),
        "commandsCpuSeconds": round(out.commands_cpu, 1),
        "proxyReloads": out.reloads,
        "drains": [{"generation": g, "seconds": round(s, 2), "exitCode": n}
                   for g, s, n in out.drains],
        "frontends": [{"generation": g, "frontend": name, "requests": n}
                      for g, name, n in out.frontends],
        "states": [{
            "state": r.label, "planned": r.planned,
            "observed": {g: round(v, 2) for g, v in r.observed.items()},
            "splitErrorPoints": None if math.isnan(r.split_error) else round(r.split_error, 2),
            "requests": r.requests, "failed": r.failed, "truncated": r.truncated,
            "ttftP95Seconds": {g: (None if v is None else round(v, 4))
                               for g, v in r.ttft_p95.items()},
            "gate": r.gate, "gatePlan": list(r.gate_plan), "verdict": r.verdict,
            "replicas": r.replicas, "quality": r.quality,
            "seconds": round(r.seconds, 1),
        } for r in rows],
        "events": [{"t": round(t, 2), "event": e} for t, e in out.events],
        "failures": failures(out),
        "outOfMesh": out_of_mesh(out),
        "preview": preview_split(out),
    }


def preview_split(out: Outcome) -> dict[str, Any] | None:
    """``spec.traffic.preview``: per state, the share of the requests sent with its value that
    the candidate served, and the share of the others (the route's load) it served, each over
    the requests that started after the state's traffic settled; None without a preview."""
    if out.preview is None:
        return None
    cand = out.prepared.plan.candidate_revision
    settle = out.options.settle

    def share(recs: list[Any], lo: float, hi: float) -> tuple[int, float | None]:
        served = [r for r in recs if lo <= r.start < hi and r.outcome.served_by]
        on = sum(1 for r in served if r.outcome.served_by == cand)
        return len(served), (round(100.0 * on / len(served), 2) if served else None)

    states = []
    for s in out.states:
        lo, hi = s.traffic_moved + settle, s.ended
        n, on = share(out.previewed, lo, hi)
        m, others = share(out.records, lo, hi)
        in_state = [r for r in out.previewed if lo <= r.start < hi]
        states.append({"state": s.label, "candidateWeight": s.planned.get(cand, 0),
                       "previewRequests": n, "previewOnCandidate": on,
                       "previewFailed": sum(1 for r in in_state if not r.outcome.ok),
                       "otherRequests": m, "othersOnCandidate": others})
    recs = out.previewed
    return {
        "carries": out.preview, "candidate": cand, "requests": len(recs),
        "failed": sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
        "states": states,
    }


def _preview_lines(data: dict[str, Any]) -> list[str]:
    p = data.get("preview")
    if not p:
        return []

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{v:g} %"

    lines = [(f"Preview: {p['requests']} requests sent with the {p['carries']} "
              f"({p['failed']} failed), on top of the route's load; the share each state's "
              f"candidate ({p['candidate']}) served, after the state's traffic settled:"), "",
             ("| state | candidate weight | with the preview: requests, on the candidate | "
              "without: requests, on the candidate |"), "| --- | ---: | --- | --- |"]
    lines += [f"| {s['state']} | {s['candidateWeight']} % | {s['previewRequests']}, "
              f"{pct(s['previewOnCandidate'])} | {s['otherRequests']}, "
              f"{pct(s['othersOnCandidate'])} |" for s in p["states"]]
    return [*lines, ""]


def out_of_mesh(out: Outcome) -> dict[str, Any] | None:
    """The callers outside a GAMMA mesh (through the parent Service's selector): how many
    requests, how many failed, and per state which generation served them."""
    if out.parent_service is None:
        return None
    recs = out.out_of_mesh
    by_state = []
    for s in out.states:
        in_state = [r for r in recs if s.started <= r.start < s.ended]
        served: dict[str, int] = {}
        for r in in_state:
            if r.outcome.served_by:
                served[r.outcome.served_by] = served.get(r.outcome.served_by, 0) + 1
        by_state.append({"state": s.label, "requests": len(in_state),
                         "failed": sum(1 for r in in_state if not r.outcome.ok),
                         "servedBy": dict(sorted(served.items()))})
    return {
        "service": out.parent_service,
        "requests": len(recs),
        "failed": sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
        "truncated": sum(1 for r in recs if r.outcome.truncated),
        "states": by_state,
    }


# How a failed request's way in is shown beside its state (the route's own load: nothing).
_ENTRY_NOTE = {"out-of-mesh": " (outside the mesh)", "preview": " (with the preview)"}

# Failed or truncated requests listed in the report, at most (the counts are always complete).
MAX_FAILURES_LISTED = 50


def failures(out: Outcome) -> list[dict[str, Any]]:
    """The failed and truncated requests, each with when it started and how long it took, in
    which state (or while
    the traffic of a state was moving or settling: then not in the state's row), what served
    it and what the client saw."""
    listed = []
    for r in sorted([*out.records, *out.out_of_mesh, *out.previewed], key=lambda r: r.start):
        if r.outcome.ok:
            continue
        state = next((s for s in out.states if s.started <= r.start < s.ended), None)
        when = "after the last state"
        if state is not None:
            settled = state.traffic_moved + out.options.settle
            when = state.label if r.start >= settled else f"{state.label} (traffic moving)"
        listed.append({"t": round(r.start, 2), "seconds": round(r.outcome.duration, 2),
                       "state": when, "entry": r.entry, "servedBy": r.outcome.served_by,
                       "stream": r.outcome.stream, "status": r.outcome.status,
                       "truncated": r.outcome.truncated, "error": r.outcome.error})
        if len(listed) >= MAX_FAILURES_LISTED:
            break
    return listed


def _fmt_pct(planned: dict[str, int], observed: dict[str, float]) -> tuple[str, str]:
    return ("/".join(f"{v}" for v in planned.values()),
            "/".join(f"{v:.1f}" for v in observed.values()))


def _out_of_mesh_lines(data: dict[str, Any]) -> list[str]:
    o = data.get("outOfMesh")
    if not o:
        return []
    per = "; ".join(f"{s['state']} " + (", ".join(f"{g} {n}" for g, n in s["servedBy"].items())
                                         or "—") + (f" ({s['failed']} failed)" if s["failed"]
                                                    else "")
                    for s in o["states"])
    return [(f"Callers outside the mesh (through Service `{o['service']}`'s selector, not the "
             f"route): {o['requests']} requests, {o['failed']} failed, {o['truncated']} "
             f"truncated; served per state: {per}."), ""]


def to_markdown(out: Outcome, rows: list[StateRow], data: dict[str, Any]) -> str:
    gens = list(out.states[0].planned) if out.states else []
    lines = [
        f"# Rehearsal of `{out.options.spec}`",
        "",
        (f"**Result: {out.result}** (exit {out.exit_code}) — {data['requests']} requests "
        f"({data['streams']} streamed), {data['failed']} failed, {data['truncated']} truncated, "
        f"{data['wallSeconds']} s."),
        "",
        f"Wall time: {wall_text(data['wallSecondsBy'])}.",
        "",
        f"Real Dynamo {__import__('dgdgen.runtime', fromlist=['x']).DYNAMO_VERSION} frontends and "
        + ("workers of dgdgen's answering engine" if out.answering else "mocker workers")
        + " (one process per rendered replica), a real HAProxy ("
        + ("standing in for the Gateway with the HTTPRoute's weights" if out.stand_in
           else "the rendered `haproxy.cfg`, addresses mapped to loopback")
        + f"; weights moved by {'reload' if out.options.traffic_path == 'reload' else 'runtime API'}"
        "), a real Prometheus scraping what the rendered PodMonitors select, and the GitOps "
        "commands on a scratch Git repository. No Kubernetes, no operator, no GPUs.",
        "",
        (f"**Answers: {ANSWERING_ENGINE}**, not a model's: each worker answers every prompt "
         "deterministically from the prompt (the prompt set's reference, simple arithmetic, "
         "else a fixed sentence); the candidate answers "
         f"{out.options.candidate_quality:.0%} of the prompts wrongly (wrong value, truncated, "
         "broken tool-call JSON), the stable none (`--candidate-quality`)."
         if out.answering else
         "Answers: the mocker's (empty text); no gate here reads them."),
        "",
        *([f"**Judge: {STAND_IN_JUDGE}**, started inside the rehearsal's network namespace in "
           "place of the spec's judge URL: of two answers the one that contains the prompt's "
           "reference wins, both or neither is a tie"
           + ("." if out.judge_accuracy == 1 else
              f"; right on {out.judge_accuracy:.0%} of its calls only (`--judge-accuracy`)."),
           ""] if out.judge_accuracy is not None else []),
        f"Clock scaled by {out.options.time_scale:g}; load {out.options.rate:g} requests/s"
        + (f"; candidate slowed down {out.options.candidate_slowdown:g}×"
           if out.options.candidate_slowdown != 1 else "") + ".",
        "",
        lateness_text(data["loadLate"], data["requests"], data["requestRate"]),
        "",
        "| field | spec | rehearsed |",
        "| --- | --- | --- |",
        *[f"| `{c.field}` | {c.original} | {c.rehearsed} |" for c in out.scaled.changes],
        "",
        (f"| state | planned % ({'/'.join(gens)}) | observed % | split error (points) | requests "
        f"| failed | truncated | client TTFT p95 (s) ({'/'.join(gens)}) | gate | replicas |"),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        planned, observed = _fmt_pct(r.planned, r.observed)
        err = "—" if math.isnan(r.split_error) else f"{r.split_error:.1f}"
        ttft = "/".join("—" if v is None else f"{v:.3f}" for v in r.ttft_p95.values())
        gate = f"{r.gate}: {r.verdict}" if r.gate and r.verdict else (r.gate or "—")
        reps = "; ".join(f"{g} " + " ".join(f"{c}:{n}" for c, n in sorted(m.items()))
                         for g, m in sorted(r.replicas.items()))
        lines.append(f"| {r.label} | {planned} | {observed} | {err} | {r.requests} | {r.failed} "
                     f"| {r.truncated} | {ttft} | {gate} | {reps} |")
    lines += ["", ("Client TTFT p95: measured by the load generator on the requests that started "
              "after the state's traffic settled, per generation that served them. A gate reads "
              "the frontends' histograms in Prometheus over its own window and compares as its "
              "spec says, so the two can differ (few requests, a window reaching into the state "
              "before); the gate's own figures are under Gates."),
              "", (f"Peak: {data['processesPeak']} processes, {data['rssPeakMB']} MB RSS "
              f"({data['pssPeakMB']} MB PSS: pages they share counted once); "
              f"{data['proxyReloads']} proxy reloads."), "",
              ("Requests each frontend process served, by its own "
               "`dynamo_frontend_requests_total` (a Service with several replicas spreads its "
               "connections over all of them): "
               + "; ".join(f"{f['generation']} {f['frontend']} {f['requests']}"
                           for f in data["frontends"]) + "."),
              "", *_out_of_mesh_lines(data), *_preview_lines(data), "![chart](chart.svg)", ""]
    if data["failures"]:
        lines += ["## Failed requests", "",
                  "| start (s) | took (s) | state | served by | what the client saw |",
                  "| ---: | ---: | --- | --- | --- |"]
        for f in data["failures"]:
            what = "truncated stream" if f["truncated"] else f"HTTP {f['status']}"
            if f["error"]:
                what += f": {f['error']}"
            state = f["state"] + _ENTRY_NOTE.get(f.get("entry", ""), "")
            lines.append(f"| {f['t']} | {f['seconds']} | {state} | {f['servedBy'] or '—'} "
                         f"| {what} |")
        lines.append("")
    gated = [s for s in out.states if s.analyze_output]
    if gated:
        lines += ["## Gates", ""]
        for s in gated:
            # what the plan says the gate measures and decides (the rehearsal's scaled spec),
            # then what `dgdgen analyze` measured
            lines += [f"### {s.label}: {s.gate} — {s.verdict}", ""]
            if s.gate_plan:
                lines += ["Planned:", "", *(f"- {t}" for t in s.gate_plan), ""]
            lines += ["```", s.analyze_output, "```", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class ChartState:
    """A state as the chart draws it: when it started, moved the traffic and ended (seconds of
    the rehearsal), the candidate's planned weight, its gate's verdict, and the worker
    processes each generation ran (frontends not counted)."""

    label: str
    started: float
    traffic_moved: float
    ended: float
    candidate_weight: int
    gate: str | None
    verdict: str | None
    workers: dict[str, int]


@dataclass(frozen=True)
class Chart:
    """What the rehearsal chart draws, taken from an :class:`Outcome` by :func:`chart_of`."""

    spec: str
    duration: float
    time_scale: float
    stable: str
    candidate: str
    names: dict[str, str]  # stable | candidate → the legend's name (planpicture.generation_names)
    states: list[ChartState]
    observed: list[tuple[float, float]]  # (t, candidate % of the requests served around t)
    ttft: dict[str, list[list[tuple[float, float]]]]  # revision → runs of (t, p95 seconds)
    itl: dict[str, list[list[tuple[float, float]]]]


def worker_counts(prepared: Prepared, replicas: dict[str, dict[str, int]]) -> dict[str, int]:
    """Per generation, the processes of its worker components (a frontend serves no model)."""
    comps = {**prepared.stable.dgd.components, **prepared.candidate.dgd.components}
    return {gen: sum(n for c, n in per.items() if c in comps and comps[c].is_worker)
            for gen, per in replicas.items()}


def chart_of(out: Outcome) -> Chart:
    from dgdgen.pipeline.picture import generation_names

    plan = out.prepared.plan
    states = [ChartState(
        s.label, s.started, s.traffic_moved, s.ended, s.planned.get(plan.candidate_revision, 0),
        s.gate, s.verdict, worker_counts(out.prepared, s.replicas_observed),
    ) for s in out.states]
    bucket = max(1.0, out.duration / 120)
    counts: dict[int, list[int]] = {}
    for r in out.records:
        if not r.outcome.served_by:
            continue
        b = counts.setdefault(int(r.start // bucket), [0, 0])
        b[0] += 1
        b[1] += r.outcome.served_by == plan.candidate_revision
    observed = [((k + 0.5) * bucket, 100.0 * c / n) for k, (n, c) in sorted(counts.items()) if n]
    return Chart(
        str(out.options.spec), out.duration, out.options.time_scale, plan.stable_revision,
        plan.candidate_revision, generation_names(out.prepared), states, observed,
        _serving(out, _series(out, "dynamo_frontend_time_to_first_token_seconds")),
        _serving(out, _series(out, "dynamo_frontend_inter_token_latency_seconds")))


def to_svg(out: Outcome, rows: list[StateRow]) -> str:
    return draw_chart(chart_of(out))


# the share's lines: neither generation's colour
_PLANNED, _OBSERVED = "#8c8c8c", INK
# a generation's line: the stable's wide, the candidate's narrow on top, so equal values show both
WIDTH = {"stable": "3.5", "candidate": "1.5"}


def draw_chart(c: Chart) -> str:
    """The rehearsal over time, four panels on one time axis: the candidate's share of the
    requests (planned and observed) with each state's name and gate verdict above it, the p95
    time to first token and inter-token latency of each generation, and the worker processes
    each ran. Every panel has its value axis (the top value labelled) and the time axis."""
    width, left, right = 900, 70, 20
    total = max(c.duration, 1.0)
    plot_right = width - right

    def x(t: float) -> float:
        return left + (plot_right - left) * max(0.0, min(t, total)) / total

    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": str(width),
                             "height": "0", "viewBox": "", "font-family": FONT_FAMILY})
    ET.SubElement(svg, "title").text = f"dgdgen rehearse: {c.spec}"
    background = sub(svg, "rect", x=0, y=0, width=width, height=0, fill="#ffffff")
    role = {c.stable: "stable", c.candidate: "candidate"}
    colour = {gen: generation_colours(c.stable, c.candidate)[r] for gen, r in role.items()}
    sub(svg, "text", f"Rehearsal of {c.spec}: {c.names['stable']} → {c.names['candidate']}",
        x=12, y=18, font_size=13, font_weight="bold", fill=INK, class_="title")
    time_ticks = [t for t in nice_ticks(total, 8) if t <= total + 1e-9]
    time_name = f"seconds since the rehearsal started (scaled clock, ×{c.time_scale:g})"
    top = 34.0

    def panel(title: str, name: str, h: float, band: float = 0.0
              ) -> tuple[ET.Element, float, float]:
        g = sub(svg, "g", class_="panel", data_title=name)
        sub(g, "text", title, x=left, y=top + 12, font_size=12, fill=INK, class_="panel-title")
        y0 = top + 20 + band
        y1 = y0 + h
        sub(g, "rect", x=left, y=y0, width=plot_right - left, height=h, fill="none",
            stroke=GRID)
        for s in c.states:  # where each state starts, inside the plot only
            sub(g, "line", class_="state-start", x1=f"{x(s.started):.1f}", y1=y0,
                x2=f"{x(s.started):.1f}", y2=y1, stroke=GRID)
        time_axis(g, x, time_ticks, y1, left, plot_right, time_name)
        return g, y0, y1

    def line(g: ET.Element, pts: list[tuple[float, float]], y1: float, h: float, vmax: float,
             **attrs: object) -> None:
        d = " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * v / vmax:.1f}"
                     for i, (t, v) in enumerate(pts))
        sub(g, "path", d=d, fill="none", **attrs)

    # 1. the candidate's share; above it each state's name (in the first of three rows where it
    # keeps clear of its neighbours; one with no room is left to its tooltip) and the gates
    g, y0, y1 = panel("candidate's share of the requests: planned and observed",
                      "candidate traffic share (%)", 150, band=56)
    ends = [float("-inf")] * 3
    for s in c.states:
        sx = x(s.started) + 2
        row = next((i for i, e in enumerate(ends) if sx >= e + 6), None)
        if row is None:
            continue
        ends[row] = sx + text_width(s.label, 9)
        label = sub(g, "text", s.label, x=f"{sx:.1f}", y=f"{y0 - 56 + 11 * row + 9:.1f}",
                    font_size=9, fill=MUTED, class_="state-label")
        ET.SubElement(label, "title").text = s.label
    gate_y = y0 - 13
    if any(s.verdict for s in c.states):
        sub(g, "text", "gate", x=left - 6, y=f"{gate_y + 3.5:.1f}", text_anchor="end",
            font_size=10, fill=INK, class_="gate-row-label")
    for s in c.states:
        if s.verdict:
            dot = sub(g, "circle", cx=f"{x(s.ended):.1f}", cy=f"{gate_y:.1f}", r=5,
                      fill=_GATE_FILL.get(s.verdict, _GATE_NOT_PASSED), class_="gate",
                      data_verdict=s.verdict, data_state=s.label)
            ET.SubElement(dot, "title").text = f"{s.label}: gate {s.gate} {s.verdict}"
    planned: list[tuple[float, float]] = []
    for s in c.states:
        planned += [(s.traffic_moved, s.candidate_weight), (s.ended, s.candidate_weight)]
    if planned:
        line(g, planned, y1, 150, 100, stroke=_PLANNED, stroke_width=2, stroke_dasharray="5 3",
             class_="planned")
    if c.observed:
        line(g, c.observed, y1, 150, 100, stroke=_OBSERVED, stroke_width=1.2, class_="observed")
    value_axis(g, [(y1 - 150 * v / 100, f"{v} %") for v in (0, 25, 50, 75, 100)], left, y0, y1,
               "share %")
    top = y1 + 44
    # 2, 3. latency per generation
    for title, name, axis, series in (
            ("time to first token, p95 per generation", "TTFT p95 (s)", "TTFT p95 s", c.ttft),
            ("inter-token latency, p95 per generation", "ITL p95 (s)", "ITL p95 s", c.itl)):
        g, y0, y1 = panel(title, name, 110)
        peak = max((v for segs in series.values() for pts in segs for _, v in pts), default=0.0)
        ticks = nice_ticks(peak or 1.0)
        for gen in sorted(series, key=lambda s: role.get(s) != "stable"):
            for pts in series[gen]:
                line(g, pts, y1, 110, ticks[-1], stroke=colour.get(gen, MUTED),
                     stroke_width=WIDTH.get(role.get(gen, ""), "1.5"), class_="series",
                     data_generation=gen)
        value_axis(g, [(y1 - 110 * v / ticks[-1], f"{v:g} s") for v in ticks], left, y0, y1,
                   axis)
        top = y1 + 44
    # 4. worker processes (the frontends are no workers: they serve no model)
    g, y0, y1 = panel("worker processes per generation (frontends not counted)",
                      "worker processes", 90)
    peak = max([1] + [n for s in c.states for n in s.workers.values()])
    ticks = nice_ticks(peak, min(peak, 4))
    for gen in (c.stable, c.candidate):
        held: list[tuple[float, float]] = []
        for s in c.states:
            n = s.workers.get(gen, 0)
            held += [(s.started, n), (s.ended, n)]
        line(g, held, y1, 90, ticks[-1], stroke=colour[gen], stroke_width=WIDTH[role[gen]],
             class_="replicas", data_generation=gen)
    value_axis(g, [(y1 - 90 * v / ticks[-1], f"{v:g}") for v in ticks], left, y0, y1, "workers")
    top = y1 + 48

    legend = sub(svg, "g", class_="legend")
    items: list[tuple[dict[str, object], str]] = [
        ({"stroke": colour[gen], "stroke-width": WIDTH[role[gen]], "data-key": gen},
         c.names[role[gen]]) for gen in (c.stable, c.candidate)]
    items += [({"stroke": _PLANNED, "stroke-width": "2", "stroke-dasharray": "5 3",
                "data-key": "planned"}, "planned candidate share"),
              ({"stroke": _OBSERVED, "stroke-width": "1.2", "data-key": "observed"},
               "observed candidate share")]
    items += [({"r": "5", "fill": _GATE_FILL["Successful"]}, "gate passed (Successful)"),
              ({"r": "5", "fill": _GATE_NOT_PASSED}, "gate not passed (Failed or Inconclusive)")]
    if any(s.verdict == NO_DECISION for s in c.states):
        items.append(({"r": "5", "fill": _GATE_FILL[NO_DECISION]},
                      "no decision (an A/B experiment without samples)"))
    y = legend_row(legend, items, left, top, plot_right)
    sub(legend, "text", "latency lines end a second after a generation's last request",
        x=left, y=f"{y + 16:.1f}", font_size=10, fill=MUTED, class_="legend-label")
    height = int(y + 26)
    svg.set("height", str(height))
    svg.set("viewBox", f"0 0 {width} {height}")
    background.set("height", str(height))
    ET.indent(svg)
    return ET.tostring(svg, encoding="unicode") + "\n"


def _serving(out: Outcome, series: dict[str, list[tuple[float, float]]]
             ) -> dict[str, list[list[tuple[float, float]]]]:
    """Each generation's latency points, cut into runs where it served requests: a rate over a
    window keeps its last value for a window after the traffic left (after a rollback the
    candidate serves nothing), which would draw a line for a generation no longer serving, and
    a gap longer than the window has no value to draw."""
    from dgdgen.spec import parse_duration

    window = next((c.rehearsed for c in out.scaled.changes if c.field == "spec.analysis.window"),
                  "15s")
    try:
        span = float(parse_duration(str(window)))
    except ValueError:
        span = 15.0
    served: dict[str, list[float]] = {}
    for r in out.records:
        if r.outcome.served_by:
            served.setdefault(r.outcome.served_by, []).append(r.start)
    out_series: dict[str, list[list[tuple[float, float]]]] = {}
    for gen, pts in series.items():
        starts = sorted(served.get(gen, []))
        runs: list[list[tuple[float, float]]] = []
        current: list[tuple[float, float]] = []
        j = 0
        for t, v in pts:
            while j < len(starts) and starts[j] < t - span:
                j += 1
            # served within the window before t, and still served after it (the value a rate
            # holds once the traffic left is stale: the line ends a query step after the last
            # request, not a window later)
            if j < len(starts) and starts[j] <= t and starts[-1] >= t - _STEP:
                current.append((t, v))
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        out_series[gen] = runs
    return out_series


def write_report(out: Outcome, dest: Path) -> dict[str, Any]:
    rows = state_rows(out)
    data = to_json(out, rows)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report.json").write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    (dest / "report.md").write_text(to_markdown(out, rows, data))
    (dest / "chart.svg").write_text(to_svg(out, rows))
    return data


def split_text(shares: dict[str, Any], unit: str = " %") -> str:
    """``{"bs16": 75, "bs32": 25}`` as ``bs16 75 % / bs32 25 %``: the summary is read by people,
    not parsed (report.json carries the data)."""
    return " / ".join(f"{g} {v}{unit}" for g, v in shares.items()) or "—"


def summary_lines(data: dict[str, Any]) -> list[str]:
    out = lateness_lines(data.get("loadLate"))
    for s in data["states"]:
        err = s["splitErrorPoints"]
        out.append(f"  {s['state']:<9} planned {split_text(s['planned'])}, observed "
                   f"{split_text(s['observed'])} "
                   f"(±{'—' if err is None else err}) requests {s['requests']} failed {s['failed']}"
                   f" truncated {s['truncated']}"
                   + (f" gate {s['gate']}: {s['verdict']}" if s["verdict"] else ""))
    p = data.get("preview") or {}
    for s in p.get("states", []):
        out.append(f"  {s['state']:<9} preview ({p['carries']}): {s['previewRequests']} "
                   f"requests, {s['previewOnCandidate']} % on the candidate; without: "
                   f"{s['othersOnCandidate']} %")
    for f in data.get("failures", [])[:10]:
        what = "truncated" if f["truncated"] else f"status {f['status']}"
        where = f["state"] + _ENTRY_NOTE.get(f.get("entry", ""), "")
        out.append(f"  failed at {f['t']} s in {where}: {what}"
                   + (f" ({f['error']})" if f["error"] else "")
                   + (f", served by {f['servedBy']}" if f["servedBy"] else ""))
    return out


