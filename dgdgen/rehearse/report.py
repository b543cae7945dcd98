"""The rehearsal's report: JSON (everything observed), Markdown (the tables a reviewer reads) and
an SVG chart (planned vs observed traffic share, TTFT p95 and ITL p95 per generation, gate
verdicts, replicas), drawn with the standard library's ElementTree."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgdgen.rehearse.run import NO_DECISION, Outcome

COLORS = {"stable": "#1f77b4", "candidate": "#d62728"}
# A gate's dot: passed, not passed (Failed or Inconclusive: the rollout does not go on), and no
# decision (an A/B experiment step without samples: neither promoted nor rolled back).
_GATE_FILL = {"Successful": "#2ca02c", NO_DECISION: "#ff7f0e"}
_GATE_NOT_PASSED = "#d62728"


def _p95(values: Sequence[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


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
        ttft = {g: _p95([r.outcome.ttft for r in counted
                         if r.outcome.served_by == g and r.outcome.ttft is not None])
                for g in s.planned}
        rows.append(StateRow(
            label=s.label, planned=s.planned, observed=observed, requests=len(recs),
            failed=sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
            truncated=sum(1 for r in recs if r.outcome.truncated),
            split_error=err if counted else float("nan"), ttft_p95=ttft, verdict=s.verdict,
            gate=s.gate, gate_plan=s.gate_plan, replicas=s.replicas_observed,
            seconds=s.ended - s.started,
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
        "scaled": [{"field": c.field, "original": c.original, "rehearsed": c.rehearsed}
                   for c in out.scaled.changes],
        "wallSeconds": round(out.duration, 1),
        "wallSecondsBy": wall_seconds_by(out),
        "requests": len(recs),
        "streams": sum(1 for r in recs if r.outcome.stream),
        "failed": sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
        "truncated": sum(1 for r in recs if r.outcome.truncated),
        "processesPeak": out.processes_peak,
        "rssPeakMB": round(out.rss_peak_mb, 1),
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
            "replicas": r.replicas,
            "seconds": round(r.seconds, 1),
        } for r in rows],
        "events": [{"t": round(t, 2), "event": e} for t, e in out.events],
        "failures": failures(out),
        "outOfMesh": out_of_mesh(out),
    }


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


# Failed or truncated requests listed in the report, at most (the counts are always complete).
MAX_FAILURES_LISTED = 50


def failures(out: Outcome) -> list[dict[str, Any]]:
    """The failed and truncated requests, each with when it started, in which state (or while
    the traffic of a state was moving or settling: then not in the state's row), what served
    it and what the client saw."""
    listed = []
    for r in sorted([*out.records, *out.out_of_mesh], key=lambda r: r.start):
        if r.outcome.ok:
            continue
        state = next((s for s in out.states if s.started <= r.start < s.ended), None)
        when = "after the last state"
        if state is not None:
            settled = state.traffic_moved + out.options.settle
            when = state.label if r.start >= settled else f"{state.label} (traffic moving)"
        listed.append({"t": round(r.start, 2), "state": when, "entry": r.entry,
                       "servedBy": r.outcome.served_by,
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
        "mocker workers (one process per rendered replica), a real HAProxy ("
        + ("standing in for the Gateway with the HTTPRoute's weights" if out.stand_in
           else "the rendered `haproxy.cfg`, addresses mapped to loopback")
        + f"; weights moved by {'reload' if out.options.traffic_path == 'reload' else 'runtime API'}"
        "), a real Prometheus scraping what the rendered PodMonitors select, and the GitOps "
        "commands on a scratch Git repository. No Kubernetes, no operator, no GPUs.",
        "",
        f"Clock scaled by {out.options.time_scale:g}; load {out.options.rate:g} requests/s"
        + (f"; candidate slowed down {out.options.candidate_slowdown:g}×"
           if out.options.candidate_slowdown != 1 else "") + ".",
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
              "", (f"Peak: {data['processesPeak']} processes, {data['rssPeakMB']} MB RSS; "
              f"{data['proxyReloads']} proxy reloads."), "",
              ("Requests each frontend process served, by its own "
               "`dynamo_frontend_requests_total` (a Service with several replicas spreads its "
               "connections over all of them): "
               + "; ".join(f"{f['generation']} {f['frontend']} {f['requests']}"
                           for f in data["frontends"]) + "."),
              "", *_out_of_mesh_lines(data), "![chart](chart.svg)", ""]
    if data["failures"]:
        lines += ["## Failed requests", "",
                  "| start (s) | state | served by | what the client saw |",
                  "| ---: | --- | --- | --- |"]
        for f in data["failures"]:
            what = "truncated stream" if f["truncated"] else f"HTTP {f['status']}"
            if f["error"]:
                what += f": {f['error']}"
            state = f["state"] + (" (outside the mesh)" if f.get("entry") == "out-of-mesh" else "")
            lines.append(f"| {f['t']} | {state} | {f['servedBy'] or '—'} | {what} |")
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


_CHART_FONT = "font: 10px sans-serif"


def _ticks(vmax: float, n: int = 4) -> list[float]:
    """Round axis values from 0 up to at least vmax (1, 2 or 5 times a power of ten apart)."""
    raw = max(vmax, 1e-9) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [round(step * i, 10) for i in range(math.ceil(vmax / step - 1e-9) + 1)]


def _num(v: float) -> str:
    return f"{v:g}"


def to_svg(out: Outcome, rows: list[StateRow]) -> str:
    width, left, right = 900, 70, 20
    panels = [("candidate traffic share (%)", 160, "%"), ("TTFT p95 (s)", 120, "s"),
              ("ITL p95 (s)", 120, "s"), ("worker processes", 90, "")]
    height = sum(h + 56 for _, h, _ in panels) + 70
    svg = ET.Element("svg", xmlns="http://www.w3.org/2000/svg", width=str(width),
                     height=str(height), viewBox=f"0 0 {width} {height}")
    ET.SubElement(svg, "title").text = f"dgdgen rehearse: {out.options.spec}"
    ET.SubElement(svg, "rect", x="0", y="0", width=str(width), height=str(height), fill="#ffffff")
    total = max(out.duration, 1.0)

    def x(t: float) -> float:
        return left + (width - left - right) * max(0.0, min(t, total)) / total

    stable = out.prepared.plan.stable_revision
    cand = out.prepared.plan.candidate_revision
    color = {stable: COLORS["stable"], cand: COLORS["candidate"]}
    top = 20.0
    ttft = _serving(out, _series(out, "dynamo_frontend_time_to_first_token_seconds"))
    itl = _serving(out, _series(out, "dynamo_frontend_inter_token_latency_seconds"))
    time_ticks = _ticks(total, 8)
    for title, h, unit in panels:
        g = ET.SubElement(svg, "g", {"class": "panel", "data-title": title})
        ET.SubElement(g, "text", {"x": str(left), "y": str(top + 12), "class": "panel-title",
                                  "style": "font: 12px sans-serif"}).text = title
        y0, y1 = top + 20, top + 20 + h
        ET.SubElement(g, "rect", x=str(left), y=str(y0), width=str(width - left - right),
                      height=str(h), fill="none", stroke="#999")
        for s in out.states:
            ET.SubElement(g, "line", x1=f"{x(s.started):.1f}", x2=f"{x(s.started):.1f}",
                          y1=str(y0), y2=str(y1), stroke="#ddd")
        # the time axis under every panel, in seconds of the scaled clock
        for t in time_ticks:
            if t > total:
                break
            ET.SubElement(g, "line", x1=f"{x(t):.1f}", x2=f"{x(t):.1f}", y1=str(y1),
                          y2=str(y1 + 4), stroke="#999")
            ET.SubElement(g, "text", {"x": f"{x(t):.1f}", "y": f"{y1 + 14:.1f}",
                                      "text-anchor": "middle", "class": "x-tick",
                                      "style": _CHART_FONT}).text = f"{_num(t)} s"
        if title.startswith("candidate"):
            vmax = 100.0
            _traffic_panel(g, out, rows, x, y0, h)
        elif title.startswith("worker"):
            vmax = float(_replica_panel(g, out, x, y0, h, color))
        else:
            series = ttft if title.startswith("TTFT") else itl
            peak = max((v for segs in series.values() for pts in segs for _, v in pts),
                       default=0.0)
            vmax = _ticks(peak or 1.0)[-1]
            for gen, segs in sorted(series.items()):
                for pts in segs:
                    d = " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * v / vmax:.1f}"
                                 for i, (t, v) in enumerate(pts))
                    ET.SubElement(g, "path", {"d": d, "fill": "none",
                                              "stroke": color.get(gen, "#555"),
                                              "class": "series", "data-generation": gen})
        for v in _ticks(vmax, 2 if h < 100 else 4):
            if v > vmax + 1e-9:
                break
            yv = y1 - h * v / vmax
            ET.SubElement(g, "line", x1=str(left - 4), x2=str(left), y1=f"{yv:.1f}",
                          y2=f"{yv:.1f}", stroke="#999")
            ET.SubElement(g, "text", {"x": str(left - 6), "y": f"{yv + 3:.1f}",
                                      "text-anchor": "end", "class": "y-tick",
                                      "style": _CHART_FONT}).text = _num(v) + (
                                          f" {unit}" if unit else "")
        top = y1 + 36
    ET.SubElement(svg, "text", {"x": str(left), "y": f"{top - 8:.1f}", "class": "axis-title",
                                "style": _CHART_FONT}).text = (
        "time since the rehearsal started, seconds of the scaled clock "
        f"(×{out.options.time_scale:g})")
    legend = ET.SubElement(svg, "g", {"class": "legend"})
    ly = top + 14
    items: list[tuple[str, dict[str, str], str]] = [
        (gen, {"stroke": c, "stroke-width": "3"},
         f"{gen} ({'stable' if gen == stable else 'candidate'})")
        for gen, c in color.items()]
    items += [("planned", {"stroke": "#333", "stroke-dasharray": "4 3"}, "planned candidate share"),
              ("observed", {"stroke": COLORS["candidate"]}, "observed candidate share")]
    lx = float(left)
    for key, style, label in items:
        ET.SubElement(legend, "line", {"x1": f"{lx:.1f}", "x2": f"{lx + 18:.1f}", "y1": f"{ly:.1f}",
                                       "y2": f"{ly:.1f}", "data-key": key, **style})
        ET.SubElement(legend, "text", {"x": f"{lx + 22:.1f}", "y": f"{ly + 4:.1f}",
                                       "class": "legend-label", "style": _CHART_FONT}).text = label
        lx += 30 + 6.2 * len(label)
    lx, ly = float(left), ly + 18
    dots = [(_GATE_FILL["Successful"], "gate passed (Successful)"),
            (_GATE_NOT_PASSED, "gate not passed (Failed or Inconclusive)")]
    if any(s.verdict == NO_DECISION for s in out.states):
        dots.append((_GATE_FILL[NO_DECISION],
                     "no decision (an A/B experiment without samples)"))
    for fill, label in dots:
        ET.SubElement(legend, "circle", {"cx": f"{lx + 5:.1f}", "cy": f"{ly:.1f}", "r": "5",
                                         "fill": fill})
        ET.SubElement(legend, "text", {"x": f"{lx + 14:.1f}", "y": f"{ly + 4:.1f}",
                                       "class": "legend-label", "style": _CHART_FONT}).text = label
        lx += 30 + 6.2 * len(label)
    ET.SubElement(legend, "text", {"x": f"{lx:.1f}", "y": f"{ly + 4:.1f}", "class": "legend-label",
                                   "style": _CHART_FONT}).text = (
        "latency lines end a second after a generation's last request")
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


def _traffic_panel(g: ET.Element, out: Outcome, rows: list[StateRow], x: Any, y0: float,
                   h: float) -> None:
    cand = out.prepared.plan.candidate_revision
    y1 = y0 + h
    planned = []
    for s in out.states:
        w = s.planned.get(cand, 0)
        planned += [(s.traffic_moved, w), (s.ended, w)]
    d = " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * w / 100:.1f}"
                 for i, (t, w) in enumerate(planned))
    ET.SubElement(g, "path", {"d": d, "fill": "none", "stroke": "#333", "stroke-dasharray": "4 3",
                              "class": "planned"})
    bucket = max(1.0, out.duration / 120)
    counts: dict[int, list[int]] = {}
    for r in out.records:
        if not r.outcome.served_by:
            continue
        b = counts.setdefault(int(r.start // bucket), [0, 0])
        b[0] += 1
        b[1] += r.outcome.served_by == cand
    pts = [((k + 0.5) * bucket, 100.0 * c / n) for k, (n, c) in sorted(counts.items()) if n]
    if pts:
        d = " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * v / 100:.1f}"
                     for i, (t, v) in enumerate(pts))
        ET.SubElement(g, "path", {"d": d, "fill": "none", "stroke": COLORS["candidate"],
                                  "class": "observed"})
    for s in out.states:
        if s.verdict:
            fill = _GATE_FILL.get(s.verdict, _GATE_NOT_PASSED)
            dot = ET.SubElement(g, "circle", {"cx": f"{x(s.ended):.1f}", "cy": f"{y0 + 8:.1f}",
                                              "r": "5", "fill": fill,
                                              "class": "gate", "data-verdict": s.verdict,
                                              "data-state": s.label})
            ET.SubElement(dot, "title").text = f"{s.label}: gate {s.gate} {s.verdict}"
    # state names under the panel's floor, each in the first of three rows where it does not
    # touch its neighbour (9 px text is about 5.5 px a character); a name with no room is left
    # to the tooltip of its state line rather than drawn over another
    ends = [float("-inf")] * 3
    for s in out.states:
        sx = x(s.started) + 2
        wide = 5.5 * len(s.label)
        row = next((i for i, e in enumerate(ends) if sx >= e + 4), None)
        if row is None:
            continue
        ends[row] = sx + wide
        ET.SubElement(g, "text", {"x": f"{sx:.1f}", "y": f"{y1 - 3 - 10 * row:.1f}",
                                  "class": "state-label", "style": "font: 9px sans-serif"}
                      ).text = s.label


def _replica_panel(g: ET.Element, out: Outcome, x: Any, y0: float, h: float,
                   color: dict[str, str]) -> int:
    y1 = y0 + h
    peak = max((sum(n for c, n in m.items()) for s in out.states
                for m in s.replicas_observed.values()), default=1) or 1
    for gen, c in color.items():
        pts = []
        for s in out.states:
            n = sum(s.replicas_observed.get(gen, {}).values())
            pts += [(s.started, n), (s.ended, n)]
        d = " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * n / peak:.1f}"
                     for i, (t, n) in enumerate(pts))
        ET.SubElement(g, "path", {"d": d, "fill": "none", "stroke": c, "class": "replicas",
                                  "data-generation": gen})
    return peak


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
    out = []
    for s in data["states"]:
        err = s["splitErrorPoints"]
        out.append(f"  {s['state']:<9} planned {split_text(s['planned'])}, observed "
                   f"{split_text(s['observed'])} "
                   f"(±{'—' if err is None else err}) requests {s['requests']} failed {s['failed']}"
                   f" truncated {s['truncated']}"
                   + (f" gate {s['gate']}: {s['verdict']}" if s["verdict"] else ""))
    for f in data.get("failures", [])[:10]:
        what = "truncated" if f["truncated"] else f"status {f['status']}"
        where = f["state"] + (" (outside the mesh)" if f.get("entry") == "out-of-mesh" else "")
        out.append(f"  failed at {f['t']} s in {where}: {what}"
                   + (f" ({f['error']})" if f["error"] else "")
                   + (f", served by {f['servedBy']}" if f["servedBy"] else ""))
    return out


