"""The pure parts of the in-place rehearsal: the Deployment budgets it replaces pods by, the worker
hash that names a generation's Dynamo namespace, and the command line's bad input."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from svg_layout import assert_reads, axes

from dgdgen.model import dgd as dgdmod
from dgdgen.pipeline.prepare import prepare
from dgdgen.rehearse.inplace import (
    InPlaceOptions,
    InPlaceOutcome,
    InPlaceRehearsal,
    Snapshot,
    component_budget,
    edited_dgd,
    parse_budget,
    worker_hash,
)
from dgdgen.rehearse.inplace_report import to_json, to_markdown, to_svg
from dgdgen.rehearse.load import Record, worst_p95
from dgdgen.runtime.client import Outcome

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("value", "replicas", "up", "want"), [
    ("25%", 1, True, 1), ("25%", 1, False, 0),  # the operator's defaults for one replica
    ("25%", 2, True, 1), ("25%", 2, False, 0),
    ("25%", 4, True, 1), ("25%", 4, False, 1),
    ("25%", 5, True, 2), ("25%", 5, False, 1),  # Kubernetes: surge rounds up, unavailable down
    ("10%", 30, True, 3), ("1", 4, True, 1), (0, 3, False, 0),
])
def test_budget_rounds_like_a_deployment(value: object, replicas: int, up: bool,
                                         want: int) -> None:
    assert parse_budget(value, replicas, round_up=up) == want


def test_component_budget_reads_the_annotations_or_the_operator_defaults() -> None:
    prepared = prepare(str(REPO / "examples/vllm-agg-auto/rollout.yaml"))  # in-place
    b = component_budget(edited_dgd(prepared), "VllmDecodeWorker")
    # the capacity budget rendered as the operator's annotations (maxSurge 1, maxUnavailable 0)
    assert (b.max_surge, b.max_unavailable) == (1, 0) and b.source.startswith("annotations")
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    d = edited_dgd(prepared)  # edited by hand: no annotations, the defaults apply
    b = component_budget(d, "VllmDecodeWorker")
    assert (b.replicas, b.max_surge, b.max_unavailable) == (2, 1, 0)
    assert b.source.startswith("operator defaults")


def test_multinode_component_rolls_one_at_a_time() -> None:
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    doc = edited_dgd(prepared).doc
    doc["spec"]["services"]["VllmDecodeWorker"]["multinode"] = {"nodeCount": 2}
    b = component_budget(dgdmod.parse(doc), "VllmDecodeWorker")
    assert (b.max_surge, b.max_unavailable) == (0, 1) and "Grove" in b.source


def test_worker_hash_follows_the_worker_spec_not_the_replicas() -> None:
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    stable, edited = prepared.stable.dgd, edited_dgd(prepared)
    assert worker_hash(stable) != worker_hash(edited)  # --block-size 16 → 32
    assert worker_hash(stable) == worker_hash(stable.copy())
    scaled = stable.copy()
    scaled.doc["spec"]["services"]["VllmDecodeWorker"]["replicas"] = 7
    assert worker_hash(dgdmod.parse(scaled.doc)) == worker_hash(stable)
    frontend = stable.copy()
    frontend.doc["spec"]["services"]["Frontend"]["envs"] = [{"name": "X", "value": "1"}]
    assert worker_hash(dgdmod.parse(frontend.doc)) == worker_hash(stable)
    # edited by hand, the frontend is untouched (no grace period added by dgdgen)
    assert edited.component_doc("Frontend") == stable.component_doc("Frontend")


def _rec(t: float, ttft: float) -> Record:
    return Record(t, Outcome(200, True, 10, ttft, ttft + 0.1, False))


def test_worst_p95_is_the_worst_stretch() -> None:
    calm = [_rec(i * 0.1, 0.1) for i in range(100)]  # 10 s at 0.1 s
    spike = [_rec(10 + i * 0.1, 2.0) for i in range(30)]  # 3 s at 2 s
    assert worst_p95(calm, lambda r: r.outcome.ttft) == pytest.approx(0.1)
    assert worst_p95(calm + spike, lambda r: r.outcome.ttft) == pytest.approx(2.0)
    assert worst_p95([], lambda r: r.outcome.ttft) is None


@pytest.mark.parametrize("args", [
    ("--side-by-side", "--in-place"),
    ("--pod-startup", "-1"),
])
def test_bad_options_are_one_clear_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    r = subprocess.run([sys.executable, "-m", "dgdgen", "rehearse",
                        str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"), *args],
                       capture_output=True, text=True, cwd=tmp_path, check=False)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr


def _outcome(records: list[Record], snapshots: list[Snapshot]) -> InPlaceOutcome:
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    return InPlaceOutcome(
        options=InPlaceOptions(spec=Path("rollout.yaml")), prepared=prepared,
        stable_revision="bs16", candidate_revision="bs32",
        namespaces={"stable": "ns-a", "candidate": "ns-b"}, frontend_mode="prefix",
        budgets={}, frontend_rolled=False, records=records,
        configs={"d1": "stable", "p1": "stable", "d2": "candidate", "p2": "candidate"},
        snapshots=snapshots, events=[], edit_at=1.0, rolled_at=3.0, duration=4.0, rejected=[])


def _served(t: float, decode: str, prefill: str, status: int = 200) -> Record:
    return Record(t, Outcome(status, True, 5, 0.1, 0.2, False, "" if status == 200 else "x",
                             "", decode, prefill))


def test_report_attributes_each_request_and_compares_with_the_workers() -> None:
    snaps = [Snapshot(0.0, {"stable": {"VllmDecodeWorker": 2, "VllmPrefillWorker": 2}}, "s"),
             Snapshot(2.0, {"stable": {"VllmDecodeWorker": 1, "VllmPrefillWorker": 2},
                            "candidate": {"VllmDecodeWorker": 1}}, "c")]
    records = ([_served(0.6 + i * 0.1, "d1", "p1") for i in range(10)]
               + [_served(0.2, "d1", "p1")]  # inside the settle margin: not counted
               # within the discovery lead before the next change: routed under either set
               + [_served(1.9, "d2", "p2")]
               + [_served(2.6, "d2", "p2"), _served(2.7, "d1", "p1"), _served(2.8, "d1", "p2"),
                  _served(2.9, "", "", status=503)])
    out = _outcome(records, snaps)
    data = to_json(out)
    assert data["served"] == {"candidate": 2, "mixed": 1, "stable": 12, "unattributed": 1}
    assert data["candidateServed"] == 2 and data["failed"] == 1
    assert data["servingRole"] == "decode"
    first, second = data["segments"]
    assert (first["expectedCandidatePercent"], first["requests"],
            first["observedCandidatePercent"]) == (0.0, 10, 0.0)
    # decode workers 1 + 1: 50 %; of the 3 attributed requests (the failed one names no
    # worker), one candidate, one stable, one mixed
    assert second["expectedCandidatePercent"] == 50.0 and second["requests"] == 4
    assert second["candidateServed"] == 1
    assert second["observedCandidatePercent"] == pytest.approx(100 / 3, abs=0.1)
    md = to_markdown(out, data)
    assert "prefilled by a worker of one configuration and decoded by a worker of the other" in md
    assert "1 requests name no worker" in md
    svg = ET.fromstring(to_svg(out, data))
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.findall(f".//{ns}path[@class='observed']")
    assert svg.findall(f".//{ns}path[@class='expected']")


def test_in_place_chart_reads_at_a_glance() -> None:
    """Both panels have their value axis (the top labelled) and the time axis; no text
    overlaps or is crossed by a line; the dotted marks are named above the share and in the
    legend; an opaque white background; the configurations named as the spec names them, in
    their own colours, the observed share in neither."""
    from dgdgen.picture import ROLE_COLOURS

    snaps = [Snapshot(0.0, {"stable": {"VllmDecodeWorker": 2, "VllmPrefillWorker": 2}}, "s"),
             Snapshot(1.5, {"stable": {"VllmDecodeWorker": 1, "VllmPrefillWorker": 2},
                            "candidate": {"VllmDecodeWorker": 1}}, "c"),
             Snapshot(3.0, {"candidate": {"VllmDecodeWorker": 2, "VllmPrefillWorker": 2}}, "d")]
    records = ([_served(0.6 + i * 0.1, "d1", "p1") for i in range(10)]
               + [_served(2.0 + i * 0.1, "d2", "p2") for i in range(15)])
    out = _outcome(records, snaps)
    svg = ET.fromstring(to_svg(out, to_json(out)))
    ns = "{http://www.w3.org/2000/svg}"
    assert_reads(svg)
    panels = [g for g in svg.iter(f"{ns}g") if g.get("class") == "panel"]
    assert [g.get("data-title") for g in panels] == ["candidate share (%)", "workers"]
    found = [axes(g) for g in panels]
    assert found[0]["y"] == ("share %", ["0 %", "25 %", "50 %", "75 %", "100 %"])
    assert found[1]["y"] == ("workers", ["0", "1", "2", "3", "4"])  # 4 workers at the peak
    assert all(f["x"][1][0] == "0 s" for f in found)
    marks = {t.text for t in panels[0].iter(f"{ns}text") if "mark-label" in t.get("class", "")}
    assert marks == {"edit applied", "roll done"}
    legend = [t.text or "" for t in svg.iter(f"{ns}text") if t.get("class") == "legend-label"]
    assert legend[:2] == ["stable bs16 configuration", "candidate bs32 configuration"]
    assert any(t.startswith("dotted: the spec's edit applied") for t in legend)
    background = svg.find(f"{ns}rect")
    assert background is not None and background.get("fill") == "#ffffff"
    assert background.get("height") == svg.get("height")
    strokes = {p.get("data-config"): p.get("stroke") for p in svg.iter(f"{ns}path")
               if p.get("class") == "workers"}
    assert strokes == ROLE_COLOURS
    (observed,) = [p for p in svg.iter(f"{ns}path") if p.get("class") == "observed"]
    assert observed.get("stroke") not in strokes.values()


def test_an_in_place_spec_is_compared_with_a_gated_separate_dgd(tmp_path: Path) -> None:
    from dgdgen.rehearse.sidebyside import gated_spec

    spec, isolation = gated_spec(REPO / "examples/vllm-agg-auto/rollout.yaml", tmp_path / "g")
    assert isolation.startswith("separate-dgd (the spec says in-place)")
    assert "provider haproxy" in isolation
    prepared = prepare(str(spec))
    assert prepared.mode == "separate-dgd"
    assert prepared.loaded.spec.spec.traffic.provider.value == "haproxy"
    gates = [(s.candidate.weight, s.gate) for s in prepared.plan.steps[1:]]
    assert gates == [(10, "slo"), (50, "slo"), (100, None)]
    # a spec that isolates already is rehearsed as it is
    own = REPO / "examples/vllm-disagg-block-size/rollout.yaml"
    assert gated_spec(own, tmp_path / "h") == (own, "separate-dgd")


def test_side_by_side_hands_the_experiment_samples_to_the_gated_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring only (the runs themselves need the Dynamo runtime: tests/rehearse/
    test_inplace.py and test_experiment_steps.py): the gated runs of --side-by-side decide an
    experiment step on the samples given, as a plain rehearsal does."""
    from dgdgen.rehearse import inplace, inplace_report, run, sidebyside

    class Stop(Exception):
        pass

    seen: list[run.Options] = []

    class InPlace:
        def __init__(self, opts: InPlaceOptions, say: object) -> None:
            pass

        def run(self, *, pods: object) -> None:
            return None

    class Gated:
        def __init__(self, opts: run.Options, say: object) -> None:
            seen.append(opts)

        def run(self, *, commands: object, pods: object) -> None:
            raise Stop

    monkeypatch.setattr(inplace, "InPlaceRehearsal", InPlace)
    monkeypatch.setattr(inplace_report, "write_report", lambda out, dest: {})
    monkeypatch.setattr(sidebyside, "_inplace_row", lambda out, data, candidate: {})
    monkeypatch.setattr(run, "Rehearsal", Gated)
    samples = tmp_path / "samples.csv"
    with pytest.raises(Stop):
        sidebyside.run(sidebyside.SideBySideOptions(
            spec=REPO / "examples/vllm-disagg-block-size/rollout.yaml", workdir=tmp_path / "w",
            report=tmp_path / "r", experiment_samples=samples), lambda _: None)
    assert [o.experiment_samples for o in seen] == [samples]


def test_the_edit_and_the_roll_are_timed_by_their_snapshots() -> None:
    """The edit's and the roll's times are their snapshots' own, read once: the stable's segment
    ends exactly at the edit. (Read again after the snapshot, the clock had moved, and rounded to
    a hundredth in the report the segment before the edit could end after it: the end-to-end test
    then found no segment before the edit.)"""
    import itertools

    clock = itertools.count(start=1.004, step=0.003)
    r = object.__new__(InPlaceRehearsal)
    r.pods, r.snapshots = [], []
    r.now = lambda: next(clock)  # type: ignore[method-assign]
    t = r._snapshot("edit applied")
    assert r.snapshots[-1].t == t
