"""The plan as a picture: SVG 1.1 drawn from the plan and the text report's cells, and PNG through
``rsvg-convert``. ``dgdgen plan --format svg|png``; the rehearsal's charts take the legend's
generation names from here (:func:`generation_names`)."""

from __future__ import annotations

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
from dgdgen.pipeline.report import (
    analysis_on,
    duration_text,
    gate_checks,
    header_lines,
    move_order,
    replicas_text,
    state_title,
    step_checks,
    step_gates,
)

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

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
    gated = step_gates(prepared) if analysis_on(prepared) else {}
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
        add(x_axis, "text", state_title(st), x=centre(col), y=titles_y, text_anchor="middle",
            font_weight="bold", fill=INK, class_="tick state-title", data_state=st.label)

    if forward < len(states):
        # rollback and cleanup are where a rollout can end, not steps after the last one
        sx = col_x(forward)
        add(root, "text", "ends: from whichever step it stops at", x=sx + 8, y=caption_y,
            fill=MUTED, class_="ends-label")
        ends_bottom = rows_top  # replaced once the rows are known
        sep = add(root, "line", class_="ends-separator", x1=sx, y1=caption_y - 12, x2=sx,
                  y2=ends_bottom, stroke=MUTED, stroke_dasharray="2 3")

    order = {st.label: _order_lines(move_order(p, st), _COL_W - 16, 11) for st in states}
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
        bake = duration_text(sg.min_bake_seconds) if sg is not None and sg.min_bake_seconds else "-"
        g = add(root, "g", class_="state", id=f"state-{st.label}", data_state=st.label,
                data_kind=st.kind)
        tip(g, f"{state_title(st)}: traffic stable {st.stable.weight} % / candidate "
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
                 ("replicas-stable", replicas_text(prepared, st.stable)),
                 ("replicas-candidate", replicas_text(prepared, st.candidate)),
                 ("peak-gpus", f"{st.peak_gpus} (+{st.extra_gpus_peak})"),
                 ("pause", duration_text(st.pause_seconds)), ("gate", st.gate or "-"),
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
    notes = [line for line in header_lines(prepared)[2:] if line not in details]
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
