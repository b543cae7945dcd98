"""The plan's invariants (docs/planning.md, "Moving between steps" and "Rollback"),
property-tested over thousands of random rollouts.

The checks here are written independently of the planner's own arithmetic: they recompute
capacity, shares and surges from the plan's replica numbers.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgdgen.errors import PlanError
from dgdgen.plan import Budget, ComponentInput, PlanInput, StepInput, make_plan

ROLE_SETS = [("aggregated",), ("prefill", "decode"), ("prefill", "decode", "aggregated")]


@st.composite
def plan_inputs(draw):
    roles = draw(st.sampled_from(ROLE_SETS))
    comps = [ComponentInput("Frontend", "frontend", draw(st.integers(1, 3)),
                            draw(st.integers(1, 3)), 0, 0)]
    for i, role in enumerate(roles):
        s = draw(st.integers(1, 16))
        c = draw(st.one_of(st.just(s), st.integers(1, 16)))
        g = draw(st.sampled_from([1, 2, 4, 8]))
        comps.append(ComponentInput(f"w{i}-{role}", role, s, c, g, g))
    if draw(st.booleans()):
        comps.append(ComponentInput("Planner", "other", 1, 1, 0, 0))
    weights = sorted(draw(st.lists(st.integers(0, 100), min_size=0, max_size=6))) + [100]
    steps = tuple(StepInput(w, draw(st.sampled_from([None, 60, 600]))) for w in weights)
    pct = st.integers(0, 100).map(lambda p: f"{p}%")
    surge = draw(st.one_of(st.integers(0, 16), pct))
    unavail = draw(st.one_of(st.integers(0, 4), pct))
    headroom = draw(st.sampled_from([0, "0%", "10%", "25%", "50%"]))
    return PlanInput(
        rollout="r", mode=draw(st.sampled_from(["separate-dgd", "worker-group", "partition"])),
        strategy=draw(st.sampled_from(["canary", "canary", "blue-green"])),
        components=tuple(comps), steps=steps, max_surge=Budget(surge),
        max_unavailable=Budget(unavail), headroom=Budget(headroom),
        stable_revision="s1", candidate_revision="c2",
        drain_seconds=draw(st.sampled_from([0, 300, 3600])),
    )


def _cap(reps, comps, which):
    fracs = []
    for c in comps:
        if c.role in ("aggregated", "prefill", "decode"):
            t = c.stable_replicas if which == "s" else c.candidate_replicas
            fracs.append(reps[c.name] / t)
    if any(reps[c.name] == 0 for c in comps if c.role == "frontend"):
        return 0.0
    return min(fracs)


def _check(inp: PlanInput) -> None:
    plan = make_plan(inp)
    comps = inp.components
    workers = [c for c in comps if c.role in ("aggregated", "prefill", "decode")]
    headroom = inp.headroom.fraction([c.stable_replicas for c in workers])
    unavail = inp.max_unavailable.fraction([c.stable_replicas for c in workers])
    prev = None
    for state in plan.all_states():
        s, c = state.stable, state.candidate
        # weights of each step sum to 100 %
        assert s.weight + c.weight == 100 or (not c.present and s.weight == 100) or (
            not s.present and c.weight == 100)
        for gen, which in ((s, "s"), (c, "c")):
            share = gen.weight / 100
            if share > 0:
                # a generation with weight > 0 has ready capacity ...
                cap = _cap(gen.replicas, comps, which)
                assert cap > 0, (state.label, gen)
                # ... and its share never exceeds its capacity by more than the headroom
                assert share <= cap + headroom + 1e-9, (state.label, which, share, cap)
            if gen.present:
                # prefill : decode ratio within one replica of the generation's target ratio
                for a in workers:
                    for b in workers:
                        ta = a.stable_replicas if which == "s" else a.candidate_replicas
                        tb = b.stable_replicas if which == "s" else b.candidate_replicas
                        if ta >= tb:
                            ideal_b = gen.replicas[a.name] * tb / ta
                            assert abs(gen.replicas[b.name] - ideal_b) < 1 + 1e-9, (
                                state.label, a.name, b.name, gen.replicas)
        if state.kind in ("step", "rollback-step", "rollback"):
            # extra replicas in use never exceed the surge budget — rollback included
            for w in workers:
                size = max(w.stable_replicas, w.candidate_replicas)
                budget = inp.max_surge.replicas(size, round_up=True)
                assert state.peak_replicas[w.name] - size <= budget, (state.label, w.name)
            # no phase of any transition routes traffic to a generation without workers
            assert state.min_serving_workers >= 1, (state.label, state.min_serving_workers)
        if state.kind in ("step", "rollback-step"):
            # a generation whose weight drops to 0 drains between shift and shrink: whatever it
            # still runs when the weights move (the peak less the other generation) and loses
            # afterwards; one that keeps serving never drains at its frontend, so no drain waits
            if state.kind == "step":
                before, leaving, other = plan.steps[state.index - 1].stable, s, c
            else:
                before, leaving, other = plan.rollback_origin(state).candidate, c, s
            at_shift = {k: (before.replicas[k] if state.shift_first
                            else state.peak_replicas[k] - other.replicas[k])
                        for k in leaving.replicas}
            if inp.mode == "partition":
                # one frontend serves both revisions: nothing can drain at it
                assert state.drain_seconds is None, state.label
            elif leaving.weight == 0 < before.weight and any(
                    leaving.replicas[k] < at_shift[k] for k in leaving.replicas):
                assert state.drain_seconds == inp.drain_seconds, state.label
            elif leaving.weight > 0:
                assert state.drain_seconds is None, state.label
        if state.kind == "step":
            # total serving capacity never drops below 1 - maxUnavailable
            assert state.min_capacity >= 1 - unavail - 1e-9, (state.label, state.min_capacity)
            # the peak holds at least both generations' final replicas of the step
            for w in workers:
                assert state.peak_replicas[w.name] >= c.replicas[w.name]
        # weights never go backwards within the rollout
        if state.kind == "step" and prev is not None:
            assert c.weight >= prev
        if state.kind in ("baseline", "step"):
            prev = c.weight
    # rollback restores the baseline exactly
    assert plan.rollback.stable == plan.steps[0].stable
    assert not plan.rollback.candidate.present
    # rollback from step k passes only through earlier steps' replicas, and only those where
    # the stable is short of full size; there the stable takes all the traffic it can carry
    # (in partition the worker counts carry the weights: the forward ones)
    if inp.mode != "in-place":
        n = len(plan.steps) - 1
        for k in range(1, n + 1):
            path = plan.rollback_from(k)
            indices = [p.index for p in path[:-1]]
            assert indices == sorted(indices, reverse=True) and all(0 < i < k for i in indices)
            for p in path[:-1]:
                fwd = plan.steps[p.index]
                assert p.stable.replicas == fwd.stable.replicas
                assert p.candidate.replicas == fwd.candidate.replicas
                cap = _cap(p.stable.replicas, comps, "s")
                assert cap < 1, (p.label, cap)
                want = fwd.stable.weight if inp.mode == "partition" else math.floor(
                    cap * 100 + 1e-9)
                assert p.stable.weight == want, (p.label, p.stable.weight, cap)
                assert p.candidate.weight == 100 - want
    assert plan.cleanup.candidate.weight == 100 and not plan.cleanup.stable.present


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan_inputs())
def test_invariants_hold_or_plan_is_refused(inp: PlanInput) -> None:
    try:
        _check(inp)
    except PlanError as exc:
        # the only refusals for well-formed steps: a surge budget that cannot make progress, or
        # that could not hold a rollback; or, in worker-group, a transition that would grow one
        # group and shrink the other in the one DGD (a canary one; blue-green never does)
        assert ("surge budget is too small" in exc.message
                or "this rollback could not proceed" in exc.message
                or _one_dgd_refusal(inp, exc)), exc.message


def _one_dgd_refusal(inp: PlanInput, exc: PlanError) -> bool:
    return (inp.mode == "worker-group" and inp.strategy == "canary"
            and exc.message.startswith("isolation worker-group: ")
            and "in the one DGD, which is applied in one sync wave" in exc.message)


@settings(max_examples=1000, deadline=None)
@given(plan_inputs())
def test_full_surge_always_plans(inp: PlanInput) -> None:
    """With a 100 % surge budget every canary and blue/green plan is possible, but for a
    worker-group canary: its rollback from the last step regrows the stable group while it
    removes the candidate's, in the one DGD (refused, tests/test_worker_group_safety.py)."""
    import dataclasses

    full = dataclasses.replace(inp, max_surge=Budget("100%"))
    try:
        _check(full)
    except PlanError as exc:
        assert _one_dgd_refusal(full, exc), exc.message
        return
    assert not (full.mode == "worker-group" and full.strategy == "canary")


@settings(max_examples=500, deadline=None)
@given(plan_inputs())
def test_deterministic(inp: PlanInput) -> None:
    try:
        a = make_plan(inp)
    except PlanError:
        return
    assert a == make_plan(inp)


def test_surge_zero_needs_unavailability_and_headroom() -> None:
    comps = (ComponentInput("F", "frontend", 1, 1, 0, 0), ComponentInput("W", "aggregated", 4, 4, 1, 1))
    steps = (StepInput(25), StepInput(50), StepInput(75), StepInput(100))
    base = PlanInput("r", "separate-dgd", "canary", comps, steps, max_surge=Budget(0))
    try:
        make_plan(base)
    except PlanError as exc:
        assert "surge budget is too small" in exc.message
    else:
        raise AssertionError("no surge and no unavailability cannot make progress")
    import dataclasses

    relaxed = dataclasses.replace(base, max_unavailable=Budget("25%"), headroom=Budget("25%"))
    # Without surge the last step would have to remove the stable's last worker while it still
    # carries 25 % ("covered" by headroom): traffic to a generation with no workers. Refused.
    try:
        make_plan(relaxed)
    except PlanError as exc:
        assert "step 4 (75% → 100%)" in exc.message and "surge budget is too small" in exc.message
    else:
        raise AssertionError("the last step must not strand 25 % of traffic on zero workers")
    plan = make_plan(dataclasses.replace(relaxed, max_surge=Budget(1)))
    assert [s.candidate.replicas["W"] for s in plan.steps] == [0, 1, 2, 3, 4]
    # the first three steps still fit in the stable's 4 replicas; the last needs the one extra
    assert [s.peak_replicas["W"] for s in plan.steps[1:]] == [4, 4, 4, 5]
    assert all(s.min_serving_workers >= 1 for s in plan.steps[1:])
    assert all(s.min_capacity >= 0.75 - 1e-9 for s in plan.steps[1:])
    assert math.isclose(plan.steps[1].min_capacity, 0.75)
