"""`dgdgen plan`'s `order` column names only the moves a transition makes (docs/planning.md)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest
from gen_support import EXAMPLES, run_cli

from dgdgen.pipeline.prepare import prepare
from dgdgen.plan import GenerationState, Plan, PlanStep


def _transitions(plan: Plan) -> dict[str, PlanStep]:
    """Each state's predecessor, from the paths the plan itself applies: forward step by step,
    and every rollback path (`Plan.rollback_from`) from every step; cleanup after the last step.
    A rollback state entered from a step and from the rollback state that restored that step
    starts from the same generations either way."""
    before: dict[str, PlanStep] = {}
    steps = plan.steps

    def put(frm: PlanStep, to: PlanStep) -> None:
        known = before.setdefault(to.label, frm)
        assert (known.stable, known.candidate) == (frm.stable, frm.candidate), to.label

    for a, b in itertools.pairwise(steps):
        put(a, b)
    # a rollback state is reached from several steps; its figures are planned from one origin,
    # the state before it on the path from the last step (Plan.rollback_origin)
    for back in (*plan.rollback_steps, plan.rollback):
        put(plan.rollback_origin(back), back)
    put(steps[-1], plan.cleanup)
    return before


def _moved(a: GenerationState, b: GenerationState) -> tuple[bool, bool]:
    names = set(a.replicas) | set(b.replicas)
    up = any(b.replicas.get(n, 0) > a.replicas.get(n, 0) for n in names)
    down = any(b.replicas.get(n, 0) < a.replicas.get(n, 0) for n in names)
    return up, down


def _order_cells(spec: Path) -> dict[str, str]:
    r = run_cli("plan", str(spec))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("step "))
    start = lines[head].index("order")
    end = lines[head].index("capacity")
    cells = {}
    for line in lines[head + 2:]:
        if not line.strip():
            break
        label = line[:start].split()[0] if not line.startswith("0 baseline") else "0"
        cells[label] = line[start:end].strip()
    return cells


def _row_key(state: PlanStep) -> str:
    if state.kind == "rollback-step":
        return f"rollback-{state.index:02d}"
    return {"baseline": "0", "rollback": "rollback", "cleanup": "cleanup"}.get(state.kind, str(state.index))


def _check_every_transition(spec: Path) -> list[str]:
    """Hold every row's `order` to the plan's data; return the cells seen."""
    plan = prepare(str(spec)).plan
    cells = _order_cells(spec)
    before = _transitions(plan)
    assert set(cells) == {_row_key(s) for s in plan.all_states()}
    assert cells["0"] == "-"
    for state in plan.all_states()[1:]:
        prev = before[state.label]
        moves = cells[_row_key(state)].split("→")
        s_up, s_down = _moved(prev.stable, state.stable)
        c_up, c_down = _moved(prev.candidate, state.candidate)
        where = (spec.parent.name, state.label, moves)
        assert ("grow" in moves) == (s_up or c_up), where
        assert ("shift" in moves) == (prev.weights != state.weights), where
        drains = [m for m in moves if m.startswith("drain")]
        assert bool(drains) == (state.drain_seconds is not None), where
        assert ("shrink" in moves or "make room" in moves) == (s_down or c_down), where
        # Making room: the generation that gives up traffic runs fewer replicas at the peak than
        # before (the peak less the other generation's new size).
        leaving = (prev.stable, state.candidate) if state.kind == "step" else (prev.candidate, state.stable)
        at_peak = {k: n - leaving[1].replicas[k] for k, n in state.peak_replicas.items()}
        # (in place and in partition one DGD carries both: the operator replaces pods itself)
        room = (plan.mode not in ("in-place", "partition") and not state.shift_first
                and state.kind != "cleanup"
                and any(at_peak[k] < n for k, n in leaving[0].replicas.items()))
        assert ("make room" in moves) == room, where
        if not (s_up or c_up or s_down or c_down or prev.weights != state.weights):
            assert moves == ["-"], where
        # The phases keep their order: make room, grow, shift, drain, shrink; or, on a rollback
        # that the stable's running replicas can carry, the shift first and the regrowth last.
        want = (["shift", "drain", "shrink", "grow"] if state.shift_first
                else ["make", "grow", "shift", "drain", "shrink"])
        seen = [m.split()[0] for m in moves if m != "-"]
        assert seen == [m for m in want if m in seen], where
    return list(cells.values())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_order_names_exactly_the_moves_of_every_transition(example: Path) -> None:
    _check_every_transition(example / "rollout.yaml")


def test_order_shows_the_stable_making_room_under_headroom(tmp_path: Path) -> None:
    src = next(p for p in EXAMPLES if p.name == "vllm-disagg-block-size")
    shutil.copytree(src, tmp_path / "ex")
    spec = tmp_path / "ex" / "rollout.yaml"
    text = spec.read_text()
    assert "    maxUnavailable: 0\n" in text
    spec.write_text(text.replace("    maxUnavailable: 0\n",
                                 "    maxUnavailable: 50%\n    headroom: 25%\n"))
    cells = _check_every_transition(spec)
    assert any(c.startswith("make room") for c in cells)


def test_a_rollback_that_shifts_first_and_regrows_nothing_does_not_say_grow() -> None:
    example = next(p for p in EXAMPLES if p.name == "vllm-agg-blue-green")
    plan = prepare(str(example / "rollout.yaml")).plan
    # blue-green keeps the whole stable: rolling back moves weights and removes the candidate
    assert plan.rollback.shift_first
    assert plan.rollback.stable.replicas == plan.rollback_origin(plan.rollback).stable.replicas
    assert "grow" not in _order_cells(example / "rollout.yaml")["rollback"]


def test_a_blue_green_step_at_weight_0_does_not_say_shift() -> None:
    example = next(p for p in EXAMPLES if p.name == "vllm-agg-blue-green")
    plan = prepare(str(example / "rollout.yaml")).plan
    assert plan.steps[1].weights == plan.steps[0].weights  # the candidate comes up without traffic
    assert "shift" not in _order_cells(example / "rollout.yaml")["1"]
    # and the switch at the next step moves no replica: both generations are already full size
    assert plan.steps[2].candidate.replicas == plan.steps[1].candidate.replicas
    assert _order_cells(example / "rollout.yaml")["2"] == "shift"
