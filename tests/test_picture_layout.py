"""The layout checks the pictures' tests use (tests/svg_layout.py): the boxes they measure hold
what rsvg-convert draws, and they fail on a picture with overlapping texts, a struck-through
text, a text outside the picture or a panel without its axes."""

from __future__ import annotations

import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

import pytest
from svg_layout import axes, layout_problems, text_boxes

SVG_NS = "http://www.w3.org/2000/svg"


def _png_pixels(raw: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows of an 8-bit RGB or RGBA PNG (what rsvg-convert writes), as RGB
    triples."""
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = kind = 0
    while pos < len(raw):
        (n,) = struct.unpack(">I", raw[pos:pos + 4])
        tag, body = raw[pos + 4:pos + 8], raw[pos + 8:pos + 8 + n]
        if tag == b"IHDR":
            width, height, depth, kind = struct.unpack(">IIBB", body[:10])
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and kind in (2, 6), (depth, kind)
    bpp = 4 if kind == 6 else 3
    data, stride, rows, prev = zlib.decompress(idat), bpp * width, [], bytearray(bpp * width)
    for r in range(height):
        f, line = data[r * (stride + 1)], bytearray(data[r * (stride + 1) + 1:(r + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(v for i, v in enumerate(line) if i % bpp < 3))
        prev = line
    return width, height, rows


# The widest and tallest strings the pictures draw, in each size and weight they use: capitals,
# digits, ascenders, descenders and the symbols of the plan's cells.
SAMPLES = [
    ("WMQ@ gjpqy|{} mmmwww 100/0 ≤1m30s →", 12, "normal", "start"),
    ("Rollout qwen-router: vllm (bs16) → bs32 Wjgq", 15, "bold", "start"),
    ("stable bs16 75 % · candidate 25 % — ≥ −", 10, "normal", "middle"),
    ("peak 6 GPUs: surge budget WWW", 11, "bold", "end"),
    ("9 px state-label step-01 rollback-02", 9, "normal", "start"),
]


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="rsvg-convert not installed")
def test_boxes_hold_the_ink_rsvg_convert_draws() -> None:
    width, row = 640, 40
    svg = ET.Element("svg", {"xmlns": SVG_NS, "width": str(width),
                             "height": str(row * len(SAMPLES)),
                             "font-family": "DejaVu Sans, Arial, sans-serif"})
    ET.SubElement(svg, "rect", {"width": "100%", "height": "100%", "fill": "#ffffff"})
    for i, (text, size, weight, anchor) in enumerate(SAMPLES):
        x = {"start": 20, "middle": width / 2, "end": width - 20}[anchor]
        ET.SubElement(svg, "text", {"x": str(x), "y": str(row * i + 28), "font-size": str(size),
                                    "font-weight": weight, "text-anchor": anchor}).text = text
    done = subprocess.run(["rsvg-convert", "--format", "png"], input=ET.tostring(svg),
                          capture_output=True, timeout=60, check=True)
    w, _, rows = _png_pixels(done.stdout)
    boxes = text_boxes(svg)
    for i, box in enumerate(boxes):
        ink = [(x, y) for y in range(row * i, row * (i + 1)) for x in range(w)
               if min(rows[y][3 * x:3 * x + 3]) < 200]
        assert ink, box.text
        xs, ys = [p[0] for p in ink], [p[1] for p in ink]
        assert box.left <= min(xs) and max(xs) + 1 <= box.right, (box, min(xs), max(xs))
        assert box.top <= min(ys) and max(ys) + 1 <= box.bottom, (box, min(ys), max(ys))
        # and the box is no wider than the ink by more than a few pixels a side: a table that
        # made every box huge would pass the overlap checks by never drawing anything near
        assert (box.right - box.left) - (max(xs) - min(xs)) < 8, box


def _picture(*children: str, width: int = 300, height: int = 120) -> ET.Element:
    return ET.fromstring(f'<svg xmlns="{SVG_NS}" width="{width}" height="{height}" '
                         f'font-family="DejaVu Sans" font-size="12">{"".join(children)}</svg>')


def test_a_clean_picture_passes() -> None:
    root = _picture('<text x="10" y="20">traffic %</text>',
                    '<text x="10" y="40" font-weight="bold">GPUs</text>',
                    '<line x1="0" y1="44" x2="300" y2="44"/>',
                    '<text x="200" y="110" transform="rotate(-90 200 110)">share</text>')
    assert layout_problems(root) == []


@pytest.mark.parametrize(("children", "expected"), [
    (('<text x="10" y="20">traffic %</text>', '<text x="60" y="22">75/25</text>'),
     "'traffic %' overlaps '75/25'"),
    (('<text x="10" y="20">peak 6</text>',
      '<text x="48" y="20" text-anchor="end" font-weight="bold">GPUs</text>'),
     "'peak 6' overlaps 'GPUs'"),
    (('<g transform="translate(0,30)"><text x="10" y="20">step-01</text></g>',
      '<text x="30" y="48">step-02</text>'), "'step-01' overlaps 'step-02'"),
    (('<text x="100" y="80" transform="rotate(-90 100 80)">worker processes</text>',
      '<text x="90" y="30">10</text>'), "'worker processes' overlaps '10'"),
    (('<text x="10" y="20">peak 6</text>', '<line x1="0" y1="16" x2="300" y2="16"/>'),
     "a line (unnamed) strikes through 'peak 6'"),
    (('<text x="250" y="20">cleanup state</text>',), "'cleanup state' leaves the 300x120 picture"),
])
def test_a_bad_picture_fails(children: tuple[str, ...], expected: str) -> None:
    assert expected in layout_problems(_picture(*children))


def test_axes_are_found_and_a_missing_part_fails() -> None:
    axis = ('<g class="axis y"><line class="axis-line" x1="40" y1="10" x2="40" y2="100"/>'
            '<text class="tick" x="36" y="100">0</text><text class="tick" x="36" y="14">8</text>'
            '<text class="axis-label" x="4" y="60">GPUs</text></g>')
    panel = _picture(f'<g id="gpus">{axis}</g>').find(f"{{{SVG_NS}}}g")
    assert panel is not None
    assert axes(panel) == {"y": ("GPUs", ["0", "8"])}
    for missing in ('<text class="axis-label" x="4" y="60">GPUs</text>',
                    '<text class="tick" x="36" y="14">8</text>',
                    '<line class="axis-line" x1="40" y1="10" x2="40" y2="100"/>'):
        broken = _picture(f'<g id="gpus">{axis.replace(missing, "")}</g>').find(f"{{{SVG_NS}}}g")
        assert broken is not None
        with pytest.raises(AssertionError):
            axes(broken)
