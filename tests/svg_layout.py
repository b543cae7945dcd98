"""What a picture must be to read at a glance, checked without a layout engine: no two texts
overlap, no drawn line strikes through a text, every text is inside the picture, and every
panel has its axes (a line, values, a name).

A text's box comes from its position, anchor, size and weight and the advance of each of its
characters in DejaVu Sans, the first font every picture names (the tables below are the fonts'
``hmtx`` advances in em; a character not in them counts as 1 em, wider than any in them). The
box spans the ink of ASCII text: 0.77 em above the baseline (ascenders) and 0.24 em under it
(descenders). ``test_picture_layout.py`` renders texts with rsvg-convert and checks that their
ink lies inside these boxes, so the boxes are no guess."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

SVG = "{http://www.w3.org/2000/svg}"
ASCENT, DESCENT = 0.77, 0.24
# a hair of room either side: antialiasing and the renderer's rounding to pixels
PAD = 1.0

_REGULAR = {
    ' ': 0.3179, '!': 0.4009, '"': 0.46, '#': 0.8379, '$': 0.6362, '%': 0.9502, '&': 0.7798,
    "'": 0.2749, '(': 0.3901, ')': 0.3901, '*': 0.5, '+': 0.8379, ',': 0.3179, '-': 0.3608,
    '.': 0.3179, '/': 0.3369, '0': 0.6362, '1': 0.6362, '2': 0.6362, '3': 0.6362, '4': 0.6362,
    '5': 0.6362, '6': 0.6362, '7': 0.6362, '8': 0.6362, '9': 0.6362, ':': 0.3369, ';': 0.3369,
    '<': 0.8379, '=': 0.8379, '>': 0.8379, '?': 0.5308, '@': 1.0, 'A': 0.6841, 'B': 0.686,
    'C': 0.6982, 'D': 0.77, 'E': 0.6318, 'F': 0.5752, 'G': 0.7749, 'H': 0.752, 'I': 0.2949,
    'J': 0.2949, 'K': 0.6558, 'L': 0.5571, 'M': 0.8628, 'N': 0.748, 'O': 0.7871, 'P': 0.603,
    'Q': 0.7871, 'R': 0.6948, 'S': 0.6348, 'T': 0.6108, 'U': 0.7319, 'V': 0.6841, 'W': 0.9888,
    'X': 0.6851, 'Y': 0.6108, 'Z': 0.6851, '[': 0.3901, '\\': 0.3369, ']': 0.3901, '^': 0.8379,
    '_': 0.5, '`': 0.5, 'a': 0.6128, 'b': 0.6348, 'c': 0.5498, 'd': 0.6348, 'e': 0.6152,
    'f': 0.3521, 'g': 0.6348, 'h': 0.6338, 'i': 0.2778, 'j': 0.2778, 'k': 0.5791, 'l': 0.2778,
    'm': 0.9741, 'n': 0.6338, 'o': 0.6118, 'p': 0.6348, 'q': 0.6348, 'r': 0.4111, 's': 0.521,
    't': 0.3921, 'u': 0.6338, 'v': 0.5918, 'w': 0.8179, 'x': 0.5918, 'y': 0.5918, 'z': 0.5249,
    '{': 0.6362, '|': 0.3369, '}': 0.6362, '~': 0.8379, '→': 0.8379, '≤': 0.8379, '≥': 0.8379,
    '—': 1.0, '−': 0.8379, '–': 0.5, '×': 0.8379, '…': 1.0, '·': 0.3179, 'µ': 0.6362,
}
_BOLD = {
    ' ': 0.3481, '!': 0.4561, '"': 0.521, '#': 0.8379, '$': 0.6958, '%': 1.002, '&': 0.8721,
    "'": 0.3062, '(': 0.457, ')': 0.457, '*': 0.5229, '+': 0.8379, ',': 0.3799, '-': 0.415,
    '.': 0.3799, '/': 0.3652, '0': 0.6958, '1': 0.6958, '2': 0.6958, '3': 0.6958, '4': 0.6958,
    '5': 0.6958, '6': 0.6958, '7': 0.6958, '8': 0.6958, '9': 0.6958, ':': 0.3999, ';': 0.3999,
    '<': 0.8379, '=': 0.8379, '>': 0.8379, '?': 0.5801, '@': 1.0, 'A': 0.7739, 'B': 0.7622,
    'C': 0.7339, 'D': 0.8301, 'E': 0.6831, 'F': 0.6831, 'G': 0.8208, 'H': 0.8369, 'I': 0.3721,
    'J': 0.3721, 'K': 0.7749, 'L': 0.6372, 'M': 0.9951, 'N': 0.8369, 'O': 0.8501, 'P': 0.7329,
    'Q': 0.8501, 'R': 0.77, 'S': 0.7202, 'T': 0.6821, 'U': 0.812, 'V': 0.7739, 'W': 1.103,
    'X': 0.771, 'Y': 0.7241, 'Z': 0.7251, '[': 0.457, '\\': 0.3652, ']': 0.457, '^': 0.8379,
    '_': 0.5, '`': 0.5, 'a': 0.6748, 'b': 0.7158, 'c': 0.5928, 'd': 0.7158, 'e': 0.6782,
    'f': 0.4351, 'g': 0.7158, 'h': 0.7119, 'i': 0.3428, 'j': 0.3428, 'k': 0.665, 'l': 0.3428,
    'm': 1.042, 'n': 0.7119, 'o': 0.687, 'p': 0.7158, 'q': 0.7158, 'r': 0.4932, 's': 0.5952,
    't': 0.478, 'u': 0.7119, 'v': 0.6519, 'w': 0.9238, 'x': 0.645, 'y': 0.6519, 'z': 0.582,
    '{': 0.7119, '|': 0.3652, '}': 0.7119, '~': 0.8379, '→': 0.8379, '≤': 0.8379, '≥': 0.8379,
    '—': 1.0, '−': 0.8379, '–': 0.5, '×': 0.8379, '…': 1.0, '·': 0.3799, 'µ': 0.7358,
}


@dataclass(frozen=True)
class Box:
    text: str
    left: float
    top: float
    right: float
    bottom: float
    cls: str

    def meets(self, other: Box) -> bool:
        return not (self.right <= other.left or other.right <= self.left
                    or self.bottom <= other.top or other.bottom <= self.top)


def _inherited(el: ET.Element, parents: dict[ET.Element, ET.Element], name: str) -> str | None:
    """An attribute or ``style`` property of ``el`` or the nearest ancestor that has it."""
    node: ET.Element | None = el
    while node is not None:
        style = node.get("style") or ""
        if name == "font-size":
            m = re.search(r"font-size:\s*([\d.]+)px", style) or re.search(
                r"font:[^;]*?([\d.]+)px", style)
            if m:
                return m.group(1)
        if name == "font-weight" and re.search(r"(font-weight:\s*bold|font:\s*bold)", style):
            return "bold"
        if node.get(name) is not None:
            return node.get(name)
        node = parents.get(node)
    return None


def text_width(text: str, size: float, bold: bool = False) -> float:
    table = _BOLD if bold else _REGULAR
    return sum(table.get(ch, 1.0) for ch in text) * size


def _translate(el: ET.Element) -> tuple[float, float, float]:
    """(dx, dy, rotation in degrees about the text's own x, y) of an element's transform."""
    t = (el.get("transform") or "").strip()
    if not t:
        return 0.0, 0.0, 0.0
    m = re.fullmatch(r"translate\(\s*([-\d.]+)[\s,]*([-\d.]*)\s*\)", t)
    if m:
        return float(m.group(1)), float(m.group(2) or 0), 0.0
    m = re.fullmatch(r"rotate\(\s*(-?90)[\s,]+([-\d.]+)[\s,]+([-\d.]+)\s*\)", t)
    if m and el.tag == f"{SVG}text" and (m.group(2), m.group(3)) == (el.get("x"), el.get("y")):
        return 0.0, 0.0, float(m.group(1))
    raise AssertionError(f"transform {t!r} on <{el.tag.removeprefix(SVG)}> is not measured here: "
                         "use translate(), or rotate(±90 x y) about a text's own position")


def text_boxes(root: ET.Element) -> list[Box]:
    parents = {c: p for p in root.iter() for c in p}
    boxes = []
    for el in root.iter(f"{SVG}text"):
        if list(el.iter(f"{SVG}tspan")):
            raise AssertionError("a <tspan> is not measured here: draw one <text> a line")
        text = el.text or ""
        size = float(_inherited(el, parents, "font-size") or 16)
        bold = _inherited(el, parents, "font-weight") == "bold"
        width = text_width(text, size, bold)
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        left = x - {"start": 0.0, "middle": width / 2, "end": width}[
            _inherited(el, parents, "text-anchor") or "start"]
        box = [left - PAD, y - ASCENT * size - PAD / 2, left + width + PAD,
               y + DESCENT * size + PAD / 2]
        dx, dy, rot = _translate(el)
        if rot:  # about (x, y): a quarter turn swaps the box's extents around that point
            l_, t_, r_, b_ = (v - c for v, c in zip(box, (x, y, x, y), strict=True))
            box = ([x + t_, y - r_, x + b_, y - l_] if rot < 0
                   else [x - b_, y + l_, x - t_, y + r_])
        node = parents.get(el)
        while node is not None:
            ax, ay, _ = _translate(node)
            dx, dy = dx + ax, dy + ay
            node = parents.get(node)
        boxes.append(Box(text, box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy,
                         el.get("class", "")))
    return boxes


def _crosses(x1: float, y1: float, x2: float, y2: float, b: Box) -> bool:
    """Whether the segment passes through the box's inside (Liang-Barsky clipping); a line
    that only touches an edge reads as an underline, not a strike."""
    inset = 0.5 + PAD
    lo_x, hi_x, lo_y, hi_y = b.left + inset, b.right - inset, b.top + inset, b.bottom - inset
    t0, t1, dx, dy = 0.0, 1.0, x2 - x1, y2 - y1
    for p, q in ((-dx, x1 - lo_x), (dx, hi_x - x1), (-dy, y1 - lo_y), (dy, hi_y - y1)):
        if p == 0:
            if q < 0:
                return False
            continue
        r = q / p
        if p < 0:
            t0 = max(t0, r)
        else:
            t1 = min(t1, r)
        if t0 > t1:
            return False
    return True


def layout_problems(root: ET.Element) -> list[str]:
    """Every overlap, struck-through text and text outside the picture, in words."""
    boxes = text_boxes(root)
    width, height = float(root.get("width", 0)), float(root.get("height", 0))
    problems = [f"{b.text!r} leaves the {width:g}x{height:g} picture" for b in boxes
                if b.left < 0 or b.top < 0 or b.right > width or b.bottom > height]
    for i, a in enumerate(boxes):
        problems += [f"{a.text!r} overlaps {b.text!r}" for b in boxes[i + 1:] if a.meets(b)]
    parents = {c: p for p in root.iter() for c in p}
    for line in root.iter(f"{SVG}line"):
        dx = dy = 0.0
        node = parents.get(line)
        while node is not None:
            ax, ay, _ = _translate(node)
            dx, dy = dx + ax, dy + ay
            node = parents.get(node)
        x1, y1, x2, y2 = (float(line.get(k, 0)) for k in ("x1", "y1", "x2", "y2"))
        problems += [f"a line ({line.get('class') or 'unnamed'}) strikes through {b.text!r}"
                     for b in boxes if _crosses(x1 + dx, y1 + dy, x2 + dx, y2 + dy, b)]
    return problems


def assert_reads(root: ET.Element) -> None:
    problems = layout_problems(root)
    assert not problems, "\n".join(problems)


def axes(panel: ET.Element) -> dict[str, tuple[str, list[str]]]:
    """A panel's axes by direction (``x``, ``y``): the axis name and its tick values, from a
    ``<g class="axis x|y">`` with a ``line.axis-line``, ``text.tick`` values and one
    ``text.axis-label``. Fails when an axis lacks its line, values or name."""
    out = {}
    for g in panel.iter(f"{SVG}g"):
        cls = (g.get("class") or "").split()
        if "axis" not in cls:
            continue
        (direction,) = [c for c in cls if c in ("x", "y")]
        lines = [e for e in g.iter(f"{SVG}line") if "axis-line" in (e.get("class") or "")]
        ticks = [e.text or "" for e in g.iter(f"{SVG}text") if "tick" in (e.get("class") or "")]
        names = [e.text or "" for e in g.iter(f"{SVG}text")
                 if "axis-label" in (e.get("class") or "")]
        where = f"{panel.get('id') or panel.get('data-title')}: {direction} axis"
        assert len(lines) == 1, f"{where} has no axis line"
        assert len(ticks) >= 2, f"{where} has {ticks} for values"
        assert len(names) == 1 and names[0].strip(), f"{where} has no name"
        out[direction] = (names[0], ticks)
    return out
