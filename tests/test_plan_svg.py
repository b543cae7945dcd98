"""`dgdgen plan --format svg|png`: the picture carries the plan. Each example is drawn through the
CLI and the SVG is parsed; what it shows is compared with the plan as data (`--format json`) and
with its own axes (bar heights against the surge-budget line), never with pixels."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gen_support import EXAMPLES, REPO, run_cli

NS = {"svg": "http://www.w3.org/2000/svg"}
DOC_IMAGE = REPO / "docs" / "images" / "plan-vllm-disagg-block-size.svg"


def _plan(example: Path) -> dict:  # type: ignore[type-arg]
    done = run_cli("plan", str(example / "rollout.yaml"), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _svg(example: Path) -> tuple[str, ET.Element]:
    done = run_cli("plan", str(example / "rollout.yaml"), "--format", "svg")
    assert done.returncode == 0, done.stderr
    return done.stdout, ET.fromstring(done.stdout.encode("utf-8"))


def _cls(el: ET.Element) -> set[str]:
    return set(el.get("class", "").split())


def _one(parent: ET.Element, *classes: str, tag: str = "*") -> ET.Element:
    found = [e for e in parent.iterfind(f"svg:{tag}" if tag != "*" else "*", NS)
             if set(classes) <= _cls(e)]
    assert len(found) == 1, (classes, [e.attrib for e in found])
    return found[0]


def _text(parent: ET.Element, cls: str) -> str:
    return _one(parent, cls, tag="text").text or ""


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_svg_shows_the_plan(example: Path) -> None:
    plan = _plan(example)
    _, root = _svg(example)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert not list(root.iter("{http://www.w3.org/2000/svg}script"))
    # every state the plan has, in its order (Plan.all_states)
    states = (plan["steps"] + plan.get("rollback_steps", [])
              + [plan["rollback"], plan["cleanup"]])
    groups = [g for g in root.iterfind("svg:g", NS) if "state" in _cls(g)]
    assert [g.get("data-state") for g in groups] == [s["label"] for s in states]

    budget_line = _one(root, "surge-budget", tag="line")
    budget = int(budget_line.get("data-gpus", "-1"))
    forward = [s["peak_gpus"] for s in plan["steps"]]
    assert max(forward) <= budget  # the forward steps stay within the surge budget
    axis = max(float(r.get("y", 0)) + float(r.get("height", 0))
               for g in groups for r in g.iterfind("svg:rect", NS) if "gpus" in _cls(r))
    per_gpu = (axis - float(budget_line.get("y1", 0))) / budget
    gates = {g["step"]: g for g in plan.get("gates", [])}

    for g, st in zip(groups, states, strict=True):
        traffic = {gen: _one(g, "traffic", gen, tag="rect") for gen in ("stable", "candidate")}
        heights = {gen: float(r.get("height", 0)) for gen, r in traffic.items()}
        full = sum(heights.values())
        for gen in ("stable", "candidate"):
            assert int(traffic[gen].get("data-weight", -1)) == st[gen]["weight"]
            assert heights[gen] == pytest.approx(full * st[gen]["weight"] / 100, abs=0.02)
            bar = _one(g, "gpus", gen, tag="rect")
            assert int(bar.get("data-gpus", -1)) == st[gen]["gpus"]
            assert float(bar.get("height", 0)) == pytest.approx(per_gpu * st[gen]["gpus"], abs=0.02)
            counts = [int(n) for n in re.findall(r":(\d+)", _text(g, f"replicas-{gen}"))]
            assert counts == (list(st[gen]["replicas"].values()) if st[gen]["present"] else [])
        assert _text(g, "traffic-label") == f"{st['stable']['weight']}/{st['candidate']['weight']}"
        peak = _one(g, "peak", tag="line")
        assert int(peak.get("data-gpus", -1)) == st["peak_gpus"]
        assert axis - float(peak.get("y1", 0)) == pytest.approx(per_gpu * st["peak_gpus"], abs=0.02)
        assert _text(g, "gate") == (st["gate"] or "-")
        assert (_text(g, "pause") == "-") == (not st["pause_seconds"])
        gate = gates.get(st["index"]) if st["kind"] == "step" else None
        if gate is not None and gate["minBakeSeconds"]:
            seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u]
                          for n, u in re.findall(r"(\d+)([hms])", _text(g, "min-bake")))
            assert seconds == gate["minBakeSeconds"]
        else:
            assert _text(g, "min-bake") == "-"


def test_some_example_uses_its_whole_surge_budget() -> None:
    """The budget line is where the planner's limit is: some step of some example reaches it."""
    reached = []
    for example in EXAMPLES:
        _, root = _svg(example)
        budget = int(_one(root, "surge-budget", tag="line").get("data-gpus", -1))
        reached += [max(s["peak_gpus"] for s in _plan(example)["steps"]) == budget]
    assert any(reached)


def test_svg_is_deterministic_and_the_docs_picture_is_current() -> None:
    example = REPO / "examples" / "vllm-disagg-block-size"
    first, _ = _svg(example)
    second, _ = _svg(example)
    assert first == second
    assert DOC_IMAGE.read_text(encoding="utf-8") == first, (
        f"regenerate: dgdgen plan {example}/rollout.yaml --format svg > {DOC_IMAGE}")


def test_png_is_the_svg_rasterised() -> None:
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert (librsvg2-bin) is not installed")
    example = REPO / "examples" / "vllm-disagg-block-size"
    _, root = _svg(example)
    done = subprocess.run([sys.executable, "-m", "dgdgen", "plan", str(example / "rollout.yaml"),
                           "--format", "png"], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    raw = done.stdout
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    assert (width, height) == (int(root.get("width", 0)), int(root.get("height", 0)))


def test_output_option_writes_the_picture_atomically(tmp_path: Path) -> None:
    """`plan --format svg -o FILE` writes the same bytes as standard output; an unwritable FILE
    is one error, exit 2, and leaves nothing behind."""
    example = REPO / "examples" / "vllm-disagg-block-size"
    out = tmp_path / "plan.svg"
    done = run_cli("plan", str(example / "rollout.yaml"), "--format", "svg", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert out.read_text(encoding="utf-8") == _svg(example)[0]
    bad = tmp_path / "missing" / "plan.svg"
    done = run_cli("plan", str(example / "rollout.yaml"), "--format", "svg", "-o", str(bad))
    assert done.returncode == 2
    assert f"cannot write {bad}" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "missing").exists()


def _boxes(root: ET.Element) -> list[tuple[str, float, float, float, float]]:
    """The box each text occupies, from its position, anchor and size: DejaVu Sans advances at
    most about 0.62 em per character (0.68 em bold), ascends 0.76 em and descends 0.24 em."""
    boxes = []
    parents = {c: p for p in root.iter() for c in p}
    for el in root.iter("{http://www.w3.org/2000/svg}text"):
        text = el.text or ""
        size = float(el.get("font-size") or 12)
        bold = el.get("font-weight") == "bold"
        width = len(text) * size * (0.68 if bold else 0.62)
        x, y = float(el.get("x", 0)), float(el.get("y", 0))
        anchor = el.get("text-anchor", "start")
        left = x - {"start": 0.0, "middle": width / 2, "end": width}[anchor]
        assert parents.get(el) is not None
        boxes.append((text, left, y - 0.76 * size, left + width, y + 0.24 * size))
    return boxes


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_svg_reads_at_a_glance(example: Path) -> None:
    """No two labels overlap, no label is struck through by the surge-budget line, the GPU axis
    has values, the legend explains the bar, the peak tick and the budget line, and the ends
    (rollback, cleanup) are set apart from the forward steps."""
    _, root = _svg(example)
    boxes = _boxes(root)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
            assert apart, f"{a[0]!r} overlaps {b[0]!r}"
    line = _one(root, "surge-budget", tag="line")
    ly = float(line.get("y1", 0))
    for text, left, top, right, bottom in boxes:
        crosses = top < ly < bottom and left < float(line.get("x2", 0)) \
            and right > float(line.get("x1", 0))
        assert not crosses, f"the surge-budget line strikes through {text!r}"
    ticks = [e for e in root.iter("{http://www.w3.org/2000/svg}text") if "gpu-tick" in _cls(e)]
    values = [int(e.text or "-1") for e in ticks]
    assert values[0] == 0 and len(values) >= 2 and values == sorted(values)
    budget = int(line.get("data-gpus", -1))
    assert values[-1] + (values[1] - values[0]) > budget  # the scale reaches the budget
    for e in ticks:  # each value sits at its height on the GPU axis
        slope = (float(line.get("y1", 0)) - (float(ticks[0].get("y", 0)) - 4)) / budget
        assert float(e.get("y", 0)) - 4 == pytest.approx(
            float(ticks[0].get("y", 0)) - 4 + slope * int(e.text or 0), abs=0.05)
    legend = " | ".join(e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}text")
                        if "legend-label" in _cls(e))
    assert "peak: most GPUs during the move into the state" in legend
    assert f"surge budget: {budget} GPUs" in legend and "GPUs held in the state" in legend
    sep = _one(root, "ends-separator", tag="line")
    groups = [g for g in root.iterfind("svg:g", NS) if "state" in _cls(g)]
    for g in groups:
        x = float(_one(g, "gpus", "stable", tag="rect").get("x", 0))
        forward = g.get("data-kind") in ("baseline", "step")
        assert (x < float(sep.get("x1", 0))) == forward, g.get("data-state")
