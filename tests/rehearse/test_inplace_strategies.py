"""The in-place rehearsal plays the update strategy the checker's one model names
(dgdgen.check.inplace), and measures the disaggregated gap: every window in which no worker
generation is complete or an incomplete one receives traffic. Pure: no runtime (the real-runtime
runs are tests/rehearse/test_inplace.py)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dgdgen.model import dgd as dgdmod
from dgdgen.check.inplace import Pace, Roll, RunBy
from dgdgen.model.dgd import Role
from dgdgen.errors import InputError
from dgdgen.pipeline.prepare import prepare
from dgdgen.rehearse.inplace import (
    InPlaceOptions,
    InPlaceOutcome,
    Snapshot,
    budget_for,
    coherent_steps,
    edited_dgd,
    roll_for,
    strategy_line,
)
from dgdgen.rehearse.inplace_report import (
    INCOMPLETE_SERVING,
    NO_COMPLETE,
    gaps,
    summary_lines,
    to_json,
    to_markdown,
    to_svg,
)
from dgdgen.rehearse.load import Record
from dgdgen.runtime.client import Outcome

REPO = Path(__file__).resolve().parents[2]
DISAGG = REPO / "examples/vllm-disagg-block-size/rollout.yaml"
P, D = "VllmPrefillWorker", "VllmDecodeWorker"
ROLES = {P: Role.PREFILL, D: Role.DECODE, "Frontend": Role.FRONTEND}
NS = {"stable": "ns-old", "candidate": "ns-new"}


def _roll(**opts: str | None) -> tuple[Roll, dgdmod.Dgd]:
    prepared = prepare(str(DISAGG))
    edited = edited_dgd(prepared)
    return roll_for(prepared, edited, InPlaceOptions(spec=DISAGG, **opts)), edited


# --------------------------------------------------------------------------- strategy → roll


def test_deployment_backed_rolls_each_component_by_its_own_budget() -> None:
    roll, edited = _roll()
    assert roll.run_by is RunBy.DEPLOYMENT and roll.strategy.pace is Pace.SURGE
    assert roll.disaggregated and roll.hashed
    b = budget_for(roll, edited, D)
    assert (b.replicas, b.max_surge, b.max_unavailable) == (2, 1, 0)  # 25 % / 25 % of 2
    assert b.source.startswith("operator defaults")
    assert "RollingUpdate" in strategy_line(roll)


def test_a_recreate_annotation_drains_that_component_first() -> None:
    roll, edited = _roll()
    doc = edited.copy().doc
    doc["spec"]["services"][P].setdefault("annotations", {})[dgdmod.ANN_STRATEGY] = "Recreate"
    recreate = dgdmod.parse(doc)
    b = budget_for(roll, recreate, P)
    assert (b.max_surge, b.max_unavailable) == (0, 2) and "Recreate" in b.source
    assert budget_for(roll, recreate, D).max_surge == 1  # the other component keeps its own


@pytest.mark.parametrize(("strategy", "pace", "surge", "unavailable"), [
    ("RollingRecreate", Pace.ONE_AT_A_TIME, 0, 1),
    ("Coherent", Pace.COHERENT, 0, 1),
    ("OnDelete", Pace.ON_DELETE, 0, 0),
])
def test_grove_strategies_from_the_option(strategy: str, pace: Pace, surge: int,
                                          unavailable: int) -> None:
    roll, edited = _roll(workers_run_by="grove", grove_strategy=strategy)
    assert roll.run_by is RunBy.GROVE and roll.strategy.pace is pace
    assert roll.strategy_source == "named by --grove-update-strategy"
    for comp in (P, D):
        b = budget_for(roll, edited, comp)
        assert (b.max_surge, b.max_unavailable) == (surge, unavailable)
    assert f"Grove {strategy}, named by --grove-update-strategy" in strategy_line(roll)


def test_grove_without_option_takes_the_release_default_and_the_annotation_wins() -> None:
    roll, _ = _roll(workers_run_by="grove")
    # the disaggregated example on 1.6: Coherent by default (the checker's docstring)
    assert roll.strategy.name == "Grove Coherent" and roll.strategy.together
    assert roll.strategy_source.startswith("the default of Dynamo 1.6")
    prepared = prepare(str(DISAGG))
    doc = edited_dgd(prepared).copy().doc
    doc["metadata"]["annotations"] = {"nvidia.com/grove-update-strategy": "OnDelete"}
    annotated = roll_for(prepared, dgdmod.parse(doc),
                         InPlaceOptions(spec=DISAGG, workers_run_by="grove",
                                        grove_strategy="Coherent"))
    assert annotated.strategy.pace is Pace.ON_DELETE
    assert "annotation" in annotated.strategy_source


def test_multinode_under_deployment_is_a_leaderworkerset_one_group_at_a_time() -> None:
    prepared = prepare(str(DISAGG))
    doc = edited_dgd(prepared).copy().doc
    doc["spec"]["services"][D]["multinode"] = {"nodeCount": 2}
    edited = dgdmod.parse(doc)
    roll = roll_for(prepared, edited, InPlaceOptions(spec=DISAGG))
    assert roll.run_by is RunBy.LWS and roll.strategy.pace is Pace.ONE_AT_A_TIME
    b = budget_for(roll, edited, D)
    assert (b.max_surge, b.max_unavailable) == (0, 1)
    assert budget_for(roll, edited, P).max_surge == 1  # a single-node component: a Deployment


def test_coherent_needs_1_6(tmp_path: Path) -> None:
    shutil.copytree(DISAGG.parent, tmp_path / "ex")
    spec = tmp_path / "ex" / "rollout.yaml"
    spec.write_text(spec.read_text().replace(
        "spec:\n  stable:", "spec:\n  dynamo:\n    version: \"1.5\"\n  stable:", 1))
    prepared = prepare(str(spec))
    with pytest.raises(InputError, match="needs Dynamo 1.6"):
        roll_for(prepared, edited_dgd(prepared),
                 InPlaceOptions(spec=spec, workers_run_by="grove", grove_strategy="Coherent"))
    # Grove's own default before 1.6
    roll = roll_for(prepared, edited_dgd(prepared),
                    InPlaceOptions(spec=spec, workers_run_by="grove"))
    assert roll.strategy.pace is Pace.ONE_AT_A_TIME and roll.hashed


@pytest.mark.parametrize(("old", "new", "steps"), [
    # two of each: one unit (a prefill and a decode) per step
    ({P: 2, D: 2}, {P: 2, D: 2}, [({P: 1, D: 1}, {P: 1, D: 1}), ({P: 1, D: 1}, {P: 1, D: 1})]),
    # one of each: one step takes the whole model (no surge)
    ({P: 1, D: 1}, {P: 1, D: 1}, [({P: 1, D: 1}, {P: 1, D: 1})]),
    # residual decode pods join the last unit
    ({P: 1, D: 3}, {P: 1, D: 3}, [({P: 1, D: 3}, {P: 1, D: 3})]),
    ({P: 2, D: 3}, {P: 2, D: 4}, [({P: 1, D: 1}, {P: 1, D: 1}), ({P: 1, D: 2}, {P: 1, D: 3})]),
])
def test_coherent_steps_are_minimal_viable_units(
        old: dict[str, int], new: dict[str, int],
        steps: list[tuple[dict[str, int], dict[str, int]]]) -> None:
    got = coherent_steps(old, new)
    assert got == steps
    assert [sum(s[0][n] for s in got) for n in old] == list(old.values())  # every old pod goes
    assert [sum(s[1][n] for s in got) for n in new] == list(new.values())


# --------------------------------------------------------------------------- the gap


def _snap(t: float, old: tuple[int, int], new: tuple[int, int], event: str) -> Snapshot:
    workers: dict[str, dict[str, int]] = {}
    for cfg, (pf, dec) in (("stable", old), ("candidate", new)):
        if pf or dec:
            workers[cfg] = {c: n for c, n in ((P, pf), (D, dec)) if n}
    return Snapshot(t, workers, event)


# As recorded from a Deployment-backed roll of the disaggregated example (two prefill and two
# decode replicas, maxSurge 1 / maxUnavailable 0 each): the last old prefill pod went 80 ms before
# the last old decode pod.
DEPLOYMENT_ROLL = [
    _snap(2.0, (2, 2), (0, 0), "stable running"),
    _snap(6.0, (2, 2), (0, 0), "edit applied"),
    _snap(10.4, (2, 2), (1, 0), "candidate-vllmprefillworker-0 available"),
    _snap(10.4, (1, 2), (1, 0), "stable-vllmprefillworker-0 terminating"),
    _snap(10.45, (1, 2), (1, 1), "candidate-vllmdecodeworker-0 available"),
    _snap(10.45, (1, 1), (1, 1), "stable-vllmdecodeworker-0 terminating"),
    _snap(14.9, (1, 1), (2, 1), "candidate-vllmprefillworker-1 available"),
    _snap(14.9, (0, 1), (2, 1), "stable-vllmprefillworker-1 terminating"),
    _snap(14.98, (0, 1), (2, 2), "candidate-vllmdecodeworker-1 available"),
    _snap(14.98, (0, 0), (2, 2), "stable-vllmdecodeworker-1 terminating"),
    _snap(14.98, (0, 0), (2, 2), "roll done"),
]

COHERENT_ROLL = [
    _snap(2.0, (2, 2), (0, 0), "stable running"),
    _snap(6.0, (1, 1), (0, 0), "take-down set terminating"),
    _snap(10.1, (1, 1), (1, 0), "candidate-vllmprefillworker-0 available"),
    _snap(10.2, (1, 1), (1, 1), "candidate-vllmdecodeworker-0 available"),
    _snap(10.2, (0, 0), (1, 1), "take-down set terminating"),
    _snap(14.3, (0, 0), (1, 2), "candidate-vllmdecodeworker-1 available"),
    _snap(14.4, (0, 0), (2, 2), "candidate-vllmprefillworker-1 available"),
]


def test_the_old_generation_left_without_prefill_is_a_window_with_its_failures() -> None:
    found = gaps(DEPLOYMENT_ROLL, NS, ROLES, failures=[3.0, 14.95, 15.1, 16.0], duration=20.0)
    (gap,) = found
    assert (gap.start, gap.end) == (14.9, 14.98)
    assert gap.seconds == pytest.approx(0.08)
    assert gap.kinds == (INCOMPLETE_SERVING,) and gap.incomplete == ("stable",)
    assert gap.opened_by == "stable-vllmprefillworker-1 terminating"
    assert gap.closed_by == "stable-vllmdecodeworker-1 terminating"
    # the failures in it, and within the frontend's deregistration lag after it; not the others
    assert gap.failed == 2


def test_coherent_leaves_no_window() -> None:
    # the new generation's decode pod of the second step comes up before its prefill pod, but
    # the new generation is already complete (a prefill and a decode from the first step)
    assert gaps(COHERENT_ROLL, NS, ROLES, failures=[], duration=20.0) == []


def test_no_complete_generation_at_all() -> None:
    # one replica each, Grove RollingRecreate: each component replaced one pod at a time (no
    # surge), independently: the old prefill is gone before any new one is up
    snaps = [_snap(0.0, (1, 1), (0, 0), "stable running"),
             _snap(5.0, (0, 1), (0, 0), "stable-vllmprefillworker-0 terminating"),
             _snap(5.1, (0, 0), (0, 0), "stable-vllmdecodeworker-0 terminating"),
             _snap(9.0, (0, 0), (1, 0), "candidate-vllmprefillworker-0 available"),
             _snap(9.2, (0, 0), (1, 1), "candidate-vllmdecodeworker-0 available")]
    (gap,) = gaps(snaps, NS, ROLES, failures=[5.05, 7.0, 9.3], duration=12.0)
    assert (gap.start, gap.end) == (5.0, 9.2)
    assert gap.kinds == (NO_COMPLETE, INCOMPLETE_SERVING) and gap.incomplete == ("stable",)
    assert gap.failed == 3  # 9.3 is within the lag after its end


def test_an_aggregated_graph_has_no_gap_analysis() -> None:
    roles = {"VllmDecodeWorker": Role.AGGREGATED}
    snaps = [Snapshot(0.0, {"stable": {"VllmDecodeWorker": 1}}, "s"),
             Snapshot(1.0, {}, "gone")]
    assert gaps(snaps, NS, roles, failures=[1.5], duration=2.0) == []


def test_one_shared_namespace_is_one_generation() -> None:
    # old and new in one namespace: an old decode with a new prefill is a complete pool
    shared = {"stable": "ns", "candidate": "ns"}
    snaps = [_snap(0.0, (1, 1), (0, 0), "s"), _snap(1.0, (0, 1), (1, 0), "swap")]
    assert gaps(snaps, shared, ROLES, failures=[], duration=2.0) == []


def _outcome(snapshots: list[Snapshot], records: list[Record]) -> InPlaceOutcome:
    prepared = prepare(str(DISAGG))
    roll, _ = _roll()
    return InPlaceOutcome(
        options=InPlaceOptions(spec=Path("rollout.yaml")), prepared=prepared,
        stable_revision="bs16", candidate_revision="bs32", namespaces=dict(NS),
        frontend_mode="prefix", budgets={}, frontend_rolled=False, records=records,
        configs={}, snapshots=snapshots, events=[], edit_at=6.0, rolled_at=14.98,
        duration=20.0, rejected=[], roll=roll, roles=dict(ROLES))


def test_the_report_states_each_window_and_draws_it() -> None:
    failed = Record(14.95, Outcome(503, False, 0, None, 0.01, False, "no backend"))
    out = _outcome(DEPLOYMENT_ROLL, [failed])
    data = to_json(out)
    g = data["gaps"]
    assert g["disaggregated"] is True and g["failed"] == 1 and g["totalSeconds"] == 0.08
    (w,) = g["windows"]
    assert w["kinds"] == [INCOMPLETE_SERVING] and w["incomplete"] == ["stable"]
    assert data["updateStrategy"]["name"] == "RollingUpdate"
    assert data["updateStrategy"]["pace"] == "surge"
    md = to_markdown(out, data)
    assert "1 window" not in md and "Windows without a complete generation" in md
    assert "| 14.9 | 14.98 | 0.08 |" in md and "Update strategy: **RollingUpdate**" in md
    svg = ET.fromstring(to_svg(out, data))
    ns = "{http://www.w3.org/2000/svg}"
    assert len([r for r in svg.iter(f"{ns}rect") if r.get("class") == "gap"]) == 1
    legend = [t.text or "" for t in svg.iter(f"{ns}text") if t.get("class") == "legend-label"]
    assert any(t.startswith("shaded: no complete generation") for t in legend)
    lines = summary_lines(data)
    assert any("1 window, 0.08 s, 1 failed request in it" in ln for ln in lines)
    # none: the report says so
    data = to_json(_outcome(COHERENT_ROLL, []))
    assert data["gaps"]["windows"] == []
    assert "No window without a complete generation" in to_markdown(out, data)
