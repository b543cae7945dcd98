"""The rehearsal chart drawn from its data (no rehearsal needed: the drawing takes a Chart, which
write_report builds from the run): every panel has a value axis with its top value and the time
axis, no text overlaps or is crossed by a gridline, the gate dots have their own labelled row
above the share, the worker panel counts workers only, the generations are named and coloured
as the spec names them, and the observed share is drawn in neither generation's colour."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from svg_layout import SVG, assert_reads, axes

from dgdgen.picture import NAMED_COLOURS, ROLE_COLOURS
from dgdgen.pipeline.prepare import prepare
from dgdgen.rehearse.report import Chart, ChartState, draw_chart, worker_counts

REPO = Path(__file__).resolve().parents[2]


def _chart(stable: str, candidate: str, names: dict[str, str], rolled_back: bool) -> Chart:
    """A rehearsal's shape: baseline, three steps (the first two gated), then cleanup or, from
    a failed gate, rollback; states close together at the start, equal worker counts."""
    spans = [("step-00", 0, 8, 0), ("step-01", 8, 40, 25), ("step-02", 40, 75, 50),
             ("step-03", 75, 95, 100), ("cleanup", 95, 110, 100)]
    if rolled_back:
        spans = [*spans[:3], ("rollback", 75, 110, 0)]
    states = [ChartState(label, a, a + 1.5, b, w, "slo" if label in ("step-01", "step-02")
                         else None,
                         ("Failed" if rolled_back and label == "step-02" else "Successful")
                         if label in ("step-01", "step-02") else None,
                         {stable: 2 if w < 100 else 0, candidate: 2 if w else 0})
              for label, a, b, w in spans]
    observed = [(t + 0.5, float(next(s.candidate_weight for s in states
                                     if s.started <= t < s.ended or s is states[-1])))
                for t in range(0, 110, 2)]
    latency = {stable: [[(float(t), 0.4 + 0.01 * (t % 7)) for t in range(2, 90)]],
               candidate: [[(float(t), 0.5 + 0.01 * (t % 5)) for t in range(10, 110)]]}
    return Chart("examples/x/rollout.yaml", 110.0, 60, stable, candidate, names, states,
                 observed, latency, {g: [[(t, v / 10) for t, v in run] for run in runs]
                                     for g, runs in latency.items()})


CASES = {
    "block-size": ("bs16", "bs32", {"stable": "stable bs16", "candidate": "candidate bs32"},
                   False),
    "blue-green-rolled-back": ("blue", "green", {"stable": "stable blue",
                                                 "candidate": "candidate green"}, True),
    "generated": ("rc33bd73", "r6de4fe4", {"stable": "stable (rc33bd73, generated)",
                                           "candidate": "candidate (r6de4fe4, generated)"}, False),
}


@pytest.mark.parametrize("case", CASES)
def test_chart_reads_at_a_glance(case: str) -> None:
    stable, candidate, names, rolled_back = CASES[case]
    chart = _chart(stable, candidate, names, rolled_back)
    root = ET.fromstring(draw_chart(chart))
    assert_reads(root)
    panels = {g.get("data-title"): g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"}
    assert list(panels) == ["candidate traffic share (%)", "TTFT p95 (s)", "ITL p95 (s)",
                            "worker processes"]
    for title, g in panels.items():
        found = axes(g)
        assert found["x"][1][0] == "0 s" and all(t.endswith(" s") for t in found["x"][1])
        assert float(found["x"][1][-1][:-2]) <= chart.duration
        values = [float(v.split()[0]) for v in found["y"][1]]
        assert values[0] == 0 and values == sorted(values)
        # the top of the plot has its value: the highest tick sits on the plot's top edge
        frame = next(r for r in g.iter(f"{SVG}rect"))
        top_tick = min(float(t.get("y", 0)) for t in g.iter(f"{SVG}text")
                       if "tick" in (t.get("class") or "") and t.get("text-anchor") == "end")
        assert top_tick - 3.5 == pytest.approx(float(frame.get("y", 0)), abs=0.1), title
        drawn = [float(p.split(",")[1]) for path in g.iter(f"{SVG}path")
                 for p in path.get("d", "").replace("M", " ").replace("L", " ").split()]
        assert drawn and min(drawn) >= float(frame.get("y", 0)) - 0.05, title
    assert axes(panels["candidate traffic share (%)"])["y"] == (
        "share %", ["0 %", "25 %", "50 %", "75 %", "100 %"])
    assert axes(panels["worker processes"])["y"][0] == "workers"
    # the gates: dots in their own row above the plot, the row named
    share = panels["candidate traffic share (%)"]
    plot_top = float(next(share.iter(f"{SVG}rect")).get("y", 0))
    dots = [d for d in share.iter(f"{SVG}circle") if d.get("class") == "gate"]
    assert len(dots) == 2 and all(float(d.get("cy", 0)) + 5 < plot_top for d in dots)
    assert [t.text for t in share.iter(f"{SVG}text") if t.get("class") == "gate-row-label"] == [
        "gate"]
    labels = [t.text for t in share.iter(f"{SVG}text") if t.get("class") == "state-label"]
    assert labels == [s.label for s in chart.states]
    # colours: the generations' own where they name one, the observed share in neither
    want = ({"stable": NAMED_COLOURS["blue"], "candidate": NAMED_COLOURS["green"]}
            if stable == "blue" else ROLE_COLOURS)
    lines = {p.get("data-generation"): (p.get("stroke"), p.get("stroke-width"))
             for p in root.iter(f"{SVG}path") if p.get("class") == "replicas"}
    assert lines == {stable: (want["stable"], "3.5"), candidate: (want["candidate"], "1.5")}
    (observed,) = [p for p in share.iter(f"{SVG}path") if p.get("class") == "observed"]
    assert observed.get("stroke") not in want.values()
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend-label"]
    assert legend[:4] == [names["stable"], names["candidate"], "planned candidate share",
                          "observed candidate share"]
    assert root.find(f"{SVG}rect") is not None and root.find(f"{SVG}rect").get("fill") == "#ffffff"


def test_worker_panel_counts_workers_not_frontends() -> None:
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    counts = worker_counts(prepared, {
        "bs16": {"Frontend": 1, "VllmDecodeWorker": 2, "VllmPrefillWorker": 2},
        "bs32": {"Frontend": 2, "VllmDecodeWorker": 1}})
    assert counts == {"bs16": 4, "bs32": 1}


@pytest.mark.skipif(shutil.which("rsvg-convert") is None, reason="rsvg-convert not installed")
def test_chart_renders(tmp_path: Path) -> None:
    stable, candidate, names, rolled_back = CASES["blue-green-rolled-back"]
    svg = draw_chart(_chart(stable, candidate, names, rolled_back))
    done = subprocess.run(["rsvg-convert", "--format", "png"], input=svg.encode(),
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout[:4] == b"\x89PNG", done.stderr
