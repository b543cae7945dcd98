"""What the pictures (the plan's SVG, the rehearsal charts) share: the colour and the name of
each generation, and how wide a text is, so a label can be placed and a note wrapped without a
layout engine."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable

# A revision named after a colour is drawn in it (a blue/green rollout's "blue" stable and
# "green" candidate); any other revision takes its role's colour.
NAMED_COLOURS = {
    "blue": "#1f6fb4", "green": "#2c9a2c", "red": "#d62728", "orange": "#f58518",
    "purple": "#8a5cc2", "violet": "#8a5cc2", "yellow": "#d9b400", "gold": "#d9b400",
    "teal": "#17a2a2", "cyan": "#17a2a2", "magenta": "#c2409e", "pink": "#e377c2",
    "brown": "#8c564b", "grey": "#7f7f7f", "gray": "#7f7f7f", "black": "#222222",
}
ROLE_COLOURS = {"stable": "#4c78a8", "candidate": "#f58518"}
# lines that are neither generation: the plan, the observed share, gridlines
INK, MUTED, GRID = "#222222", "#666666", "#e4e4e4"
FONT_FAMILY = "DejaVu Sans, Arial, sans-serif"


def generation_colours(stable: str, candidate: str) -> dict[str, str]:
    """``{"stable": colour, "candidate": colour}``: a revision's own colour where its name is
    one, else its role's; two generations never share a colour (both fall back to the roles')."""
    named = {role: NAMED_COLOURS.get(rev.lower()) for role, rev in
             (("stable", stable), ("candidate", candidate))}
    out = {role: named[role] or ROLE_COLOURS[role] for role in named}
    if out["stable"] == out["candidate"]:
        # one named, the other's role colour the same hue: the unnamed takes the other role's
        unnamed = next((r for r in out if named[r] is None), None)
        if unnamed is not None:
            other = "candidate" if unnamed == "stable" else "stable"
            out[unnamed] = ROLE_COLOURS[other]
        if out["stable"] == out["candidate"]:
            out = dict(ROLE_COLOURS)
    return out


def generation_label(role: str, revision: str, generated: bool) -> str:
    """How a picture names a generation, as the spec does: ``stable bs16``; a revision the spec
    does not set is a content hash dgdgen made, and says so: ``candidate (rc33bd73, generated)``."""
    return f"{role} ({revision}, generated)" if generated else f"{role} {revision}"


# Advance per character in em of DejaVu Sans, rounded up by class: narrow punctuation and
# letters, digits and lower case, capitals and wide symbols (bold: about 10 % wider).
_NARROW = frozenset(" !'(),-./:;I[]fijlrt|")
_WIDE = frozenset("%@MWmw—…≤≥→×#+<=>~&")


def text_width(text: str, size: float, bold: bool = False) -> float:
    em = sum(0.42 if ch in _NARROW else 1.0 if ch in _WIDE
             else 0.8 if ch.isupper() else 0.64 for ch in text)
    return em * size * (1.1 if bold else 1.0)


def wrap(text: str, width: float, size: float) -> list[str]:
    """``text`` in lines no wider than ``width`` pixels at ``size``, words kept whole."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_width(f"{lines[-1]} {word}", size) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def nice_ticks(vmax: float, n: int = 4) -> list[float]:
    """Round axis values from 0 up to at least ``vmax`` (1, 2 or 5 times a power of ten apart);
    the last one is the axis's top, so the top always has its value."""
    raw = max(vmax, 1e-9) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [round(step * i, 10) for i in range(max(1, math.ceil(vmax / step - 1e-9)) + 1)]


def sub(parent: ET.Element, tag: str, text: str | None = None, /, **attrs: object
        ) -> ET.Element:
    """A child element; ``font_size`` becomes ``font-size``, ``class_`` ``class``."""
    el = ET.SubElement(parent, tag, {k.rstrip("_").replace("_", "-"): str(v)
                                     for k, v in attrs.items()})
    if text is not None:
        el.text = text
    return el


def time_axis(panel: ET.Element, x: Callable[[float], float], ticks: list[float], y: float,
              left: float, right: float, name: str) -> None:
    """A time axis along ``y``: its line, a value per tick (``N s``) and its name under them,
    at the right, clear of the last value."""
    axis = sub(panel, "g", class_="axis x")
    sub(axis, "line", class_="axis-line", x1=left, y1=y, x2=right, y2=y, stroke=MUTED)
    for t in ticks:
        sub(axis, "line", x1=f"{x(t):.1f}", y1=y, x2=f"{x(t):.1f}", y2=y + 4, stroke=MUTED)
        sub(axis, "text", f"{t:g} s", x=f"{x(t):.1f}", y=f"{y + 15:.1f}", text_anchor="middle",
            font_size=10, fill=MUTED, class_="tick")
    sub(axis, "text", name, x=right, y=f"{y + 28:.1f}", text_anchor="end", font_size=10,
        fill=MUTED, class_="axis-label")


def value_axis(panel: ET.Element, values: list[tuple[float, str]], x: float, y0: float,
               y1: float, name: str) -> None:
    """A vertical axis at ``x`` from ``y0`` (top) to ``y1``: its line, each (y, value), and its
    name turned a quarter left, in the margin."""
    axis = sub(panel, "g", class_="axis y")
    sub(axis, "line", class_="axis-line", x1=x, y1=y0, x2=x, y2=y1, stroke=MUTED)
    for y, value in values:
        sub(axis, "line", x1=x - 4, y1=f"{y:.1f}", x2=x, y2=f"{y:.1f}", stroke=MUTED)
        sub(axis, "text", value, x=x - 6, y=f"{y + 3.5:.1f}", text_anchor="end", font_size=10,
            fill=MUTED, class_="tick")
    cy = f"{(y0 + y1) / 2:.1f}"
    sub(axis, "text", name, x=14, y=cy, transform=f"rotate(-90 14 {cy})", text_anchor="middle",
        font_size=10, fill=INK, class_="axis-label")


def legend_row(parent: ET.Element, items: list[tuple[dict[str, object], str]], x: float,
               y: float, right: float) -> float:
    """Legend items (a swatch's attributes: a ``line`` or, with ``r``, a dot; and its label)
    one after another from ``(x, y)``, on a new line where the next would pass ``right``;
    returns the last line's ``y``."""
    lx = x
    for swatch, label in items:
        need = 24 + text_width(label, 10) + 18
        if lx > x and lx + need > right:
            lx, y = x, y + 16
        if "r" in swatch:
            sub(parent, "circle", cx=f"{lx + 9:.1f}", cy=f"{y - 3.5:.1f}", **swatch)
        else:
            sub(parent, "line", x1=f"{lx:.1f}", y1=f"{y - 3.5:.1f}", x2=f"{lx + 18:.1f}",
                y2=f"{y - 3.5:.1f}", **swatch)
        sub(parent, "text", label, x=f"{lx + 24:.1f}", y=f"{y:.1f}", font_size=10, fill=INK,
            class_="legend-label")
        lx += need
    return y
