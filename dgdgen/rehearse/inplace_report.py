"""What an in-place rehearsal observed, and its report: which configuration served each request
(from the worker that answered), the segments of one serving configuration and their worst p95
latencies, and ``report.json`` / ``report.md`` / ``report.svg`` (:func:`write_report`).
:mod:`dgdgen.rehearse.inplace` plays the roll; this module only reads its outcome."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgdgen.model.dgd import Role
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
from dgdgen.pipeline.picture import generation_names
from dgdgen.rehearse.inplace import InPlaceOutcome, Snapshot
from dgdgen.rehearse.load import (
    Record,
    itl,
    lateness,
    lateness_lines,
    lateness_text,
    p95,
    worst_p95,
)
from dgdgen.rehearse.report import WIDTH, split_text


def served_config(out: InPlaceOutcome, rec: Record) -> str:
    """The configuration whose worker served a request ("" when the frontend named none, e.g. a
    failed request; "mixed" when prefill and decode were of different configurations)."""
    d = out.configs.get(rec.outcome.decode_worker, "")
    pf = out.configs.get(rec.outcome.prefill_worker, "") if rec.outcome.prefill_worker else d
    if d and pf and d != pf:
        return "mixed"
    return d


def serving_role(out: InPlaceOutcome) -> Role:
    roles = {c.role for c in out.prepared.stable.dgd.components.values() if c.role.is_worker}
    return Role.DECODE if Role.DECODE in roles else Role.AGGREGATED


@dataclass(frozen=True)
class Segment:
    """A stretch of the roll with a constant set of available workers."""

    start: float
    end: float
    workers: dict[str, int]  # config → available workers of the serving role
    expected: float  # the candidate's share of those workers, %
    requests: int
    candidate: int
    observed: float | None  # % of the requests attributed, None without any


# How long before the rehearsal records a new worker available the frontend may already route to
# it: the frontend discovers a worker when it registers, the rehearsal counts it available when its
# own poll finds it ready by /health and listed (dgdgen.rehearse.inplace), and a request's start
# is taken just before the load's thread sends it. In a side-by-side run beside the rest of the
# suite the frontend listed a candidate namespace 0.08 s before the rehearsal counted its decode
# worker available, and four requests started in that stretch went to it (2026-12-07).
DISCOVERY_LEAD = 0.25


def segments(out: InPlaceOutcome, *, settle: float = 0.5,
             lead: float = DISCOVERY_LEAD) -> list[Segment]:
    """Per stretch between two pod changes: the candidate's share of the serving role's available
    workers, and the share of the requests that started in it (from ``settle`` seconds after the
    change: the frontend's discovery follows a removal within milliseconds; to ``lead`` seconds
    before the next: it may route to a new worker before the rehearsal counts it available) its
    workers served."""
    role = serving_role(out)
    comps = {n for n, c in out.prepared.stable.dgd.components.items() if c.role is role}
    rows = []
    snaps = out.snapshots
    for i, snap in enumerate(snaps):
        end = snaps[i + 1].t if i + 1 < len(snaps) else out.duration
        counts = {cfg: sum(n for c, n in m.items() if c in comps)
                  for cfg, m in snap.workers.items()}
        total = sum(counts.values())
        expected = 100.0 * counts.get("candidate", 0) / total if total else 0.0
        until = end - lead if i + 1 < len(snaps) else end
        recs = [r for r in out.records if snap.t + settle <= r.start < until]
        served = [served_config(out, r) for r in recs]
        attributed = [s for s in served if s]
        cand = sum(1 for s in attributed if s == "candidate")
        rows.append(Segment(snap.t, end, counts, expected, len(recs), cand,
                            100.0 * cand / len(attributed) if attributed else None))
    return rows


# How long after the rehearsal's own record of a pod change a failed request still counts as the
# window's: the frontend sees a worker go when its deregistration arrives (milliseconds here), and
# a request it routed before finishes failing after that.
GAP_LAG = 0.25

# The two kinds of window. With no complete generation the model is not ready and every request
# gets 503. A generation with decode workers and no prefill worker gets no request: the 1.6.1
# frontend routes only to a generation whose workers' `needs` are met (every 1.6.1 backend and the
# mocker declare them; dgdgen.check.inplace NEEDS_ROUTING, tests/check/test_runtime_needs.py) —
# its workers idle, capacity is the other generation's.
NO_COMPLETE = "no complete generation"
INCOMPLETE_IDLE = "an incomplete generation's workers serve nothing"


@dataclass(frozen=True)
class Gap:
    """A stretch of a disaggregated roll in which no generation (worker namespace) has both an
    available prefill and an available decode worker (every request 503), or one has decode
    workers and no prefill worker (listed by the frontend, sent no request: its workers idle)."""

    start: float
    end: float
    kinds: tuple[str, ...]  # NO_COMPLETE and/or INCOMPLETE_IDLE
    incomplete: tuple[str, ...]  # the generations with decode and no prefill workers
    opened_by: str  # the pod change that opened it (a snapshot's event)
    closed_by: str
    failed: int  # requests that failed from its start to GAP_LAG seconds after its end

    @property
    def seconds(self) -> float:
        return self.end - self.start


def generations(snap_workers: dict[str, dict[str, int]], namespaces: dict[str, str],
                roles: dict[str, Role]) -> dict[str, tuple[int, int]]:
    """(available prefill, available decode) workers per generation — per worker namespace: in
    one shared namespace old and new are one pool."""
    out: dict[str, tuple[int, int]] = {}
    for cfg, comps in snap_workers.items():
        ns = namespaces.get(cfg, cfg)
        pf, dec = out.get(ns, (0, 0))
        for comp, n in comps.items():
            if roles.get(comp) is Role.PREFILL:
                pf += n
            elif roles.get(comp) is Role.DECODE:
                dec += n
        out[ns] = (pf, dec)
    return out


def gaps(snapshots: list[Snapshot], namespaces: dict[str, str], roles: dict[str, Role],
         failures: list[float], duration: float) -> list[Gap]:
    """Every window of a disaggregated roll in which no generation is complete or an incomplete
    one is listed with decode workers, from the rehearsal's snapshots (one after every pod
    change); ``failures``: the start times of the failed requests. Pure: tests feed it recorded
    snapshots. Empty for a graph without both prefill and decode workers."""
    kinds_of_roles = set(roles.values())
    if not (Role.PREFILL in kinds_of_roles and Role.DECODE in kinds_of_roles):
        return []
    by_ns = {ns: cfg for cfg, ns in namespaces.items()}
    states: list[tuple[float, tuple[str, ...], tuple[str, ...], str]] = []
    for snap in snapshots:
        gens = generations(snap.workers, namespaces, roles)
        kinds = []
        if not any(pf and dec for pf, dec in gens.values()):
            kinds.append(NO_COMPLETE)
        half = tuple(sorted(by_ns.get(ns, ns) for ns, (pf, dec) in gens.items()
                            if dec and not pf))
        if half:
            kinds.append(INCOMPLETE_IDLE)
        states.append((snap.t, tuple(kinds), half, snap.event))
    out: list[Gap] = []
    i = 0
    while i < len(states):
        t, state_kinds, half, event = states[i]
        if not state_kinds:
            i += 1
            continue
        all_kinds, all_half = set(state_kinds), set(half)
        j = i + 1
        while j < len(states) and states[j][1]:
            all_kinds |= set(states[j][1])
            all_half |= set(states[j][2])
            j += 1
        end = states[j][0] if j < len(states) else duration
        closed = states[j][3] if j < len(states) else "end of the run"
        if end > t:
            failed = sum(1 for f in failures if t <= f <= end + GAP_LAG)
            out.append(Gap(t, end, tuple(k for k in (NO_COMPLETE, INCOMPLETE_IDLE)
                                         if k in all_kinds),
                           tuple(sorted(all_half)), event, closed, failed))
        i = j
    return out


def gap_summary(out: InPlaceOutcome) -> dict[str, Any]:
    """The windows of ``out`` for report.json."""
    roles = out.roles or {n: c.role for n, c in out.prepared.stable.dgd.components.items()}
    failures = [r.start for r in out.records if not r.outcome.ok]
    found = gaps(out.snapshots, out.namespaces, roles, failures, out.duration)
    disagg = {Role.PREFILL, Role.DECODE} <= set(roles.values())
    return {
        "disaggregated": disagg,
        "lagSeconds": GAP_LAG,
        "windows": [{"start": round(g.start, 3), "end": round(g.end, 3),
                     "seconds": round(g.seconds, 3), "kinds": list(g.kinds),
                     "incomplete": list(g.incomplete), "openedBy": g.opened_by,
                     "closedBy": g.closed_by, "failed": g.failed} for g in found],
        "totalSeconds": round(sum(g.seconds for g in found), 3),
        "failed": sum(g.failed for g in found),
    }


def to_json(out: InPlaceOutcome) -> dict[str, Any]:
    recs = out.records
    served: dict[str, int] = {}
    for r in recs:
        s = served_config(out, r) or "unattributed"
        served[s] = served.get(s, 0) + 1
    segs = segments(out)
    return {
        "spec": str(out.options.spec),
        "strategy": "in-place (the operator's roll, ungated)",
        "updateStrategy": _update_strategy(out),
        "dynamo": _release(out),
        "result": out.result,
        "exitCode": out.exit_code,
        "workerNamespaces": out.options.worker_namespaces,
        "namespaces": out.namespaces,
        "frontend": out.frontend_mode,
        "frontendRolled": out.frontend_rolled,
        "revisions": {"stable": out.stable_revision, "candidate": out.candidate_revision},
        "requestRate": out.options.rate,
        "candidateSlowdown": out.options.candidate_slowdown,
        "podStartupSeconds": out.options.pod_startup,
        "budgets": {n: {"replicas": b.replicas, "maxSurge": b.max_surge,
                        "maxUnavailable": b.max_unavailable, "source": b.source}
                    for n, b in out.budgets.items()},
        "servingRole": serving_role(out).value,
        "editAt": round(out.edit_at, 2),
        "rolledAt": round(out.rolled_at, 2),
        "rollSeconds": round(out.rolled_at - out.edit_at, 1),
        "wallSeconds": round(out.duration, 1),
        "requests": len(recs),
        "streams": sum(1 for r in recs if r.outcome.stream),
        "failed": sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
        "truncated": sum(1 for r in recs if r.outcome.truncated),
        # how far behind its rate the load started its requests (dgdgen.rehearse.load)
        "loadLate": lateness(recs),
        "served": dict(sorted(served.items())),
        "candidateServed": served.get("candidate", 0),
        "rejectedWorkers": out.rejected,
        "ttftP95Seconds": {cfg: _round(p95([r.outcome.ttft for r in recs
                                            if served_config(out, r) == cfg
                                            and r.outcome.ttft is not None]))
                           for cfg in ("stable", "candidate")},
        "worstTtftP95Seconds": _round(worst_p95(recs, lambda r: r.outcome.ttft)),
        "worstItlP95Seconds": _round(worst_p95(recs, itl)),
        "segments": [{"start": round(s.start, 2), "end": round(s.end, 2), "workers": s.workers,
                      "expectedCandidatePercent": round(s.expected, 1),
                      "requests": s.requests, "candidateServed": s.candidate,
                      "observedCandidatePercent": None if s.observed is None
                      else round(s.observed, 1)} for s in segs],
        "gaps": gap_summary(out),
        "events": [{"t": round(t, 2), "event": e} for t, e in out.events],
        "prefillRouterWindows": [{"frontend": fe, "namespace": ns, "start": round(a, 3),
                                  "end": round(b, 3)} for fe, ns, a, b in out.router_windows],
        "failures": [{"t": round(r.start, 2), "seconds": round(r.outcome.duration, 2),
                      "servedBy": served_config(out, r),
                      "stream": r.outcome.stream, "status": r.outcome.status,
                      "truncated": r.outcome.truncated, "error": r.outcome.error}
                     for r in recs if not r.outcome.ok][:50],
    }


def _update_strategy(out: InPlaceOutcome) -> dict[str, Any] | None:
    roll = out.roll
    if roll is None:
        return None
    s = roll.strategy
    return {"name": s.name, "source": roll.strategy_source or None,
            "workersRunBy": roll.run_by.value, "pace": s.pace.value,
            "prefillDecodeTogether": s.together, "rollsBeforePodsAreDeleted": s.automatic,
            "text": s.text}


# What local processes cannot show: a new generation's cold KV cache (dgdgen.analysis.timing).
COLD_CACHE = (
    "new workers start with an empty KV cache: on a cluster their TTFT is high until prefixes "
    "are cached again (Dynamo's rolling-update guide); the rehearsal's workers keep no prefix "
    "cache, so its TTFT does not show it — a gated rollout's TTFT metrics wait "
    "spec.analysis.warmUp at the candidate's first step")


def _release(out: InPlaceOutcome) -> dict[str, Any]:
    """The release whose roll is played and the runtime that plays it."""
    from dgdgen.check.releases import DEFAULT, source_note
    from dgdgen.runtime import DYNAMO_VERSION

    release = out.roll.target.release if out.roll is not None else DEFAULT
    return {"release": release, "runtime": DYNAMO_VERSION,
            "note": source_note(release) or None, "coldCache": COLD_CACHE}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def to_markdown(out: InPlaceOutcome, data: dict[str, Any]) -> str:
    from dgdgen.runtime import DYNAMO_VERSION

    hashed = out.options.worker_namespaces == "hashed"
    how = (f"every worker pod with `DYN_NAMESPACE_WORKER_SUFFIX`: the stable's workers in "
           f"`{out.namespaces['stable']}`, the candidate's in `{out.namespaces['candidate']}`; "
           f"the frontend selects them with `{out.frontend_mode}`" if hashed else
           f"old and new workers in ONE Dynamo namespace `{out.namespaces['stable']}`, the "
           f"frontend with `{out.frontend_mode}`")
    lines = [
        f"# In-place rehearsal of `{out.options.spec}`",
        "",
        (f"**{out.result}** (exit {out.exit_code}) — {data['requests']} requests "
         f"({data['streams']} streamed), {data['failed']} failed, {data['truncated']} truncated; "
         f"the candidate configuration served {data['candidateServed']}; roll "
         f"{data['rollSeconds']} s, wall {data['wallSeconds']} s."),
        "",
        f"The edit applied to the running DGD and rolled the way the Dynamo operator rolls it "
        f"({'hashed' if hashed else 'shared'} worker namespaces): {how}. No gate, no pause, no "
        "rollback but another roll. Real Dynamo "
        f"{DYNAMO_VERSION} frontend and mocker workers; the load "
        f"({out.options.rate:g} requests/s) goes at the frontend Service; each request names the "
        "worker that served it (`nvext.extra_fields: [\"worker_id\"]`), each worker's id is read "
        "from its own metrics."
        + (f" Candidate slowed down {out.options.candidate_slowdown:g}×."
           if out.options.candidate_slowdown != 1 else "")
        + f" A new worker pod's process starts {out.options.pod_startup:g} s after the pod is "
        "created (image pull and model load).",
        "",
        lateness_text(data["loadLate"], data["requests"], out.options.rate),
        "",
        (f"The roll is Dynamo {data['dynamo']['release']}'s"
         + (f" ({data['dynamo']['note']}), played by the {DYNAMO_VERSION} runtime"
            if data["dynamo"]["note"] else "")
         + f". Not shown: {COLD_CACHE}."),
        "",
        "| component | replicas | maxSurge | maxUnavailable | from |",
        "| --- | ---: | ---: | ---: | --- |",
        *[f"| {n} | {b['replicas']} | {b['maxSurge']} | {b['maxUnavailable']} | {b['source']} |"
          for n, b in data["budgets"].items()],
        "",
        "Served by configuration: "
        + ", ".join(f"{k} {v}" for k, v in data["served"].items())
        + f". TTFT p95: stable {_fmt(data['ttftP95Seconds']['stable'])} s, candidate "
        f"{_fmt(data['ttftP95Seconds']['candidate'])} s; worst p95 over 5 s stretches: TTFT "
        f"{_fmt(data['worstTtftP95Seconds'])} s, ITL {_fmt(data['worstItlP95Seconds'])} s.",
        "",
    ]
    st = data.get("updateStrategy")
    if st:
        lines += [f"Update strategy: **{st['name']}**"
                  + (f", {st['source']}" if st["source"] else "") + f": {st['text']}."
                  + ("" if st["rollsBeforePodsAreDeleted"] else
                     " No pod rolled: the old configuration kept serving."), ""]
    lines += gap_lines(data["gaps"])
    if data["rejectedWorkers"]:
        lines += [(f"Ready by their own `/health` (a Kubernetes readiness probe passes) but not "
                   f"listed by the frontend's `/v1/models/{{model}}/ready`: "
                   f"{', '.join(data['rejectedWorkers'])}."), ""]
    if data["served"].get("mixed"):
        lines += [(f"**{data['served']['mixed']} requests were prefilled by a worker of one "
                   "configuration and decoded by a worker of the other** (the frontend's answer "
                   "names both workers)."), ""]
    if data["served"].get("unattributed"):
        lines += [(f"{data['served']['unattributed']} requests name no worker (they failed "
                   "before one was chosen)."), ""]
    lines += [
        f"## Share of each configuration over the roll ({data['servingRole']} workers)",
        "",
        ("| from (s) | to (s) | available workers (stable/candidate) | candidate share of "
         "workers % | requests | candidate served | observed candidate % |"),
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for s in data["segments"]:
        if s["end"] - s["start"] < 0.01 and not s["requests"]:
            continue  # two pod changes in the same instant: the JSON keeps the stretch
        w = s["workers"]
        obs = "—" if s["observedCandidatePercent"] is None else f"{s['observedCandidatePercent']}"
        lines.append(f"| {s['start']} | {s['end']} | {w.get('stable', 0)}/{w.get('candidate', 0)}"
                     f" | {s['expectedCandidatePercent']} | {s['requests']} | "
                     f"{s['candidateServed']} | {obs} |")
    lines += ["", "![chart](chart.svg)", "", "## Events", "", "| t (s) | event |", "| ---: | --- |",
              *[f"| {e['t']} | {e['event']} |" for e in data["events"]], ""]
    if data["failures"]:
        lines += ["## Failed requests", "",
                  "| start (s) | took (s) | served by | what the client saw |",
                  "| ---: | ---: | --- | --- |"]
        for f in data["failures"]:
            what = ("truncated stream" if f["truncated"] else f"HTTP {f['status']}") + (
                f": {f['error']}" if f["error"] else "")
            lines.append(f"| {f['t']} | {f['seconds']} | {f['servedBy'] or '—'} | {what} |")
        lines.append("")
    return "\n".join(lines)


def gap_lines(g: dict[str, Any]) -> list[str]:
    """report.md's lines on the disaggregated gap."""
    if not g["disaggregated"]:
        return []
    if not g["windows"]:
        return [("**No window without a complete generation**: at every pod change some "
                "generation had both a prefill and a decode worker available, and no "
                "generation with decode workers but no prefill worker was listed."), ""]
    lines = [(f"**Windows without a complete generation, or with an incomplete one: "
              f"{len(g['windows'])}, {g['totalSeconds']} s in all, {g['failed']} failed requests "
              f"in them** (without a complete generation every request gets 503; an incomplete "
              f"generation gets no request — the frontend routes only to a generation whose "
              f"prefill and decode workers are both ready, their cards' `needs` — so its "
              f"workers idle; failures counted from a window's start to {g['lagSeconds']} s "
              f"after its end)."), "",
             ("| from (s) | to (s) | seconds | what | incomplete generation | opened by | closed "
             "by | failed |"), "| ---: | ---: | ---: | --- | --- | --- | --- | ---: |"]
    for w in g["windows"]:
        lines.append(f"| {w['start']} | {w['end']} | {w['seconds']} | {'; '.join(w['kinds'])} "
                     f"| {', '.join(w['incomplete']) or '—'} | {w['openedBy']} | "
                     f"{w['closedBy']} | {w['failed']} |")
    return [*lines, ""]


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


GAP_FILL = "#f4b6b6"


def to_svg(out: InPlaceOutcome, data: dict[str, Any]) -> str:
    """Two panels on one time axis: the candidate configuration's share of the workers (what
    the operator's roll makes available, expected) and of the requests served (observed), and
    the available workers of each configuration; the edit and the end of the roll marked and
    named above the share. Each panel has its value axis (the top labelled) and the time axis."""
    width, left, right, h = 900, 70, 20, 160
    plot_right = width - right
    total = max(out.duration, 1.0)

    def x(t: float) -> float:
        return left + (plot_right - left) * max(0.0, min(t, total)) / total

    def path(pts: list[tuple[float, float]], y1: float, scale: float) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * v / scale:.1f}"
                        for i, (t, v) in enumerate(pts))

    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": str(width),
                             "height": "0", "viewBox": "", "font-family": FONT_FAMILY})
    ET.SubElement(svg, "title").text = f"dgdgen rehearse (in place): {out.options.spec}"
    background = sub(svg, "rect", x=0, y=0, width=width, height=0, fill="#ffffff")
    names = generation_names(out.prepared)
    colour = generation_colours(out.stable_revision, out.candidate_revision)
    sub(svg, "text", f"In-place rehearsal of {out.options.spec}: {names['stable']} → "
        f"{names['candidate']}", x=12, y=18, font_size=13, font_weight="bold", fill=INK,
        class_="title")
    ticks = [t for t in nice_ticks(total, 8) if t <= total + 1e-9]
    time_name = "seconds since the rehearsal started"
    marks = [(out.edit_at, "edit applied", "edit"), (out.rolled_at, "roll done", "rolled")]

    def panel(title: str, name: str, top: float, band: float) -> tuple[ET.Element, float, float]:
        g = sub(svg, "g", class_="panel", data_title=name)
        sub(g, "text", title, x=left, y=top + 12, font_size=12, fill=INK, class_="panel-title")
        y0 = top + 20 + band
        y1 = y0 + h
        sub(g, "rect", x=left, y=y0, width=plot_right - left, height=h, fill="none",
            stroke=GRID)
        for t, _, cls in marks:
            sub(g, "line", class_=cls, x1=f"{x(t):.1f}", y1=y0, x2=f"{x(t):.1f}", y2=y1,
                stroke=MUTED, stroke_dasharray="2 2")
        time_axis(g, x, ticks, y1, left, plot_right, time_name)
        return g, y0, y1

    # panel 1: the candidate's share of the workers (expected) and of the requests (observed);
    # the edit and the end of the roll named above it, each in the first row that has room
    g, y0, y1 = panel("candidate configuration: share of the workers (expected) and of the "
                      "requests served (observed)", "candidate share (%)", 30.0, 26)
    ends = [float("-inf")] * 2
    for t, label, cls in marks:
        mx = x(t) + 3
        row = next((i for i, e in enumerate(ends) if mx >= e + 6), 1)
        ends[row] = mx + text_width(label, 9)
        sub(g, "text", label, x=f"{mx:.1f}", y=f"{y0 - 16 + 11 * row:.1f}", font_size=9,
            fill=MUTED, class_=f"mark-label {cls}")
    for w in data["gaps"]["windows"]:
        x0, x1 = x(w["start"]), x(w["end"])
        sub(g, "rect", x=f"{x0:.1f}", y=y0, width=f"{max(2.0, x1 - x0):.1f}", height=h,
            fill=GAP_FILL, class_="gap")
    expected = []
    for s in data["segments"]:
        expected += [(s["start"], s["expectedCandidatePercent"]),
                     (s["end"], s["expectedCandidatePercent"])]
    if expected:
        sub(g, "path", d=path(expected, y1, 100), fill="none", stroke="#8c8c8c",
            stroke_width=2, stroke_dasharray="5 3", class_="expected")
    bucket = max(1.0, out.duration / 90)
    counts: dict[int, list[int]] = {}
    for r in out.records:
        cfg = served_config(out, r)
        if not cfg:
            continue
        b = counts.setdefault(int(r.start // bucket), [0, 0])
        b[0] += 1
        b[1] += cfg == "candidate"
    pts = [((k + 0.5) * bucket, 100.0 * c / n) for k, (n, c) in sorted(counts.items()) if n]
    if pts:
        sub(g, "path", d=path(pts, y1, 100), fill="none", stroke=INK, stroke_width=1.2,
            class_="observed")
    value_axis(g, [(y1 - h * v / 100, f"{v} %") for v in (0, 25, 50, 75, 100)], left, y0, y1,
               "share %")
    # panel 2: available workers per configuration
    peak = max([1] + [sum(s.workers.get(c, {}).values()) for s in out.snapshots
                      for c in ("stable", "candidate")])
    scale = nice_ticks(peak, min(peak, 4))
    g, y0, y1 = panel("available workers per configuration (all worker components)", "workers",
                      y1 + 44, 0)
    for cfg in ("stable", "candidate"):
        wpts: list[tuple[float, float]] = []
        for i, snap in enumerate(out.snapshots):
            end = out.snapshots[i + 1].t if i + 1 < len(out.snapshots) else out.duration
            n = sum(snap.workers.get(cfg, {}).values())
            wpts += [(snap.t, n), (end, n)]
        if wpts:
            sub(g, "path", d=path(wpts, y1, scale[-1]), fill="none", stroke=colour[cfg],
                stroke_width=WIDTH[cfg], class_="workers", data_config=cfg)
    value_axis(g, [(y1 - h * v / scale[-1], f"{v:g}") for v in scale], left, y0, y1, "workers")
    legend = sub(svg, "g", class_="legend")
    items: list[tuple[dict[str, object], str]] = [
        ({"stroke": colour[cfg], "stroke-width": WIDTH[cfg]}, f"{names[cfg]} configuration")
        for cfg in ("stable", "candidate")]
    items += [({"stroke": "#8c8c8c", "stroke-width": "2", "stroke-dasharray": "5 3"},
               "expected: candidate share of the workers"),
              ({"stroke": INK, "stroke-width": "1.2"}, "observed: candidate share of requests"),
              ({"stroke": MUTED, "stroke-dasharray": "2 2"},
               "dotted: the spec's edit applied, the last old pod gone")]
    if data["gaps"]["windows"]:
        items.append(({"stroke": GAP_FILL, "stroke-width": "6"},
                      "shaded: no complete generation, or an incomplete one receiving traffic"))
    y = legend_row(legend, items, left, y1 + 48, plot_right)
    height = int(y + 12)
    svg.set("height", str(height))
    svg.set("viewBox", f"0 0 {width} {height}")
    background.set("height", str(height))
    ET.indent(svg)
    return ET.tostring(svg, encoding="unicode") + "\n"


def write_report(out: InPlaceOutcome, dest: Path) -> dict[str, Any]:
    data = to_json(out)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    (dest / "report.md").write_text(to_markdown(out, data))
    (dest / "chart.svg").write_text(to_svg(out, data))
    return data


def summary_lines(data: dict[str, Any]) -> list[str]:
    out = [*lateness_lines(data.get("loadLate")),
           "  served: " + ", ".join(f"{k} {v}" for k, v in data["served"].items())]
    st = data.get("updateStrategy")
    if st:
        out.append(f"  update strategy: {st['name']}"
                   + ("" if st["rollsBeforePodsAreDeleted"] else ": no pod rolled"))
    g = data["gaps"]
    if g["disaggregated"]:
        n, failed = len(g["windows"]), g["failed"]
        out.append(f"  no complete generation / incomplete one idle: {n} "
                   f"window{'' if n == 1 else 's'}, {g['totalSeconds']} s, {failed} failed "
                   f"request{'' if failed == 1 else 's'} in {'it' if n == 1 else 'them'}")
        for w in g["windows"]:
            out.append(f"    {w['start']:>7.2f}–{w['end']:<7.2f} s ({w['seconds']} s, "
                       f"{'; '.join(w['kinds'])}): {w['failed']} failed; opened by "
                       f"{w['openedBy']}, closed by {w['closedBy']}")
    for s in data["segments"]:
        obs = s["observedCandidatePercent"]
        workers = split_text(s["workers"], unit="")
        out.append(f"  {s['start']:>7.1f}–{s['end']:<7.1f} s workers {workers}, candidate "
                   f"{s['expectedCandidatePercent']} % of workers, "
                   f"{'—' if obs is None else obs} % of {s['requests']} requests")
    return out
