"""The plan's GPU "+extra": the surge above the larger generation where each generation has its
own DGD; in `partition`, what the roll adds to the one DGD that runs today (docs/planning.md)."""

from __future__ import annotations

from gen_support import REPO, run_cli

from dgdgen.pipeline.prepare import prepare
from dgdgen.plan import Budget, ComponentInput, PlanInput, StepInput, make_plan

PARTITION = REPO / "examples" / "sglang-disagg-v1beta1-partition" / "rollout.yaml"


def _input(mode: str) -> PlanInput:
    # a candidate twice the stable's size: 1 → 2 replicas of each worker, 1 GPU each
    return PlanInput(
        rollout="r", mode=mode, strategy="canary",
        components=(ComponentInput("fe", "frontend", 1, 1, 0, 0),
                    ComponentInput("pre", "prefill", 1, 2, 1, 1),
                    ComponentInput("dec", "decode", 1, 2, 1, 1)),
        steps=(StepInput(50, 600), StepInput(100)), max_surge=Budget("100%"),
    )


def test_partition_extra_is_measured_against_what_runs_today() -> None:
    plan = make_plan(_input("partition"))
    today = plan.steps[0].stable.gpus
    assert today == 2
    for state in plan.all_states():
        assert state.extra_gpus_peak == max(0, state.peak_gpus - today), state.label
    # step 1 runs 1 + 1 replicas of each worker in the one DGD: 4 GPUs, 2 more than today
    assert (plan.steps[1].peak_gpus, plan.steps[1].extra_gpus_peak) == (4, 2)
    assert plan.cleanup.extra_gpus_peak == 2  # the larger candidate is 2 GPUs more than today


def test_a_dgd_per_generation_keeps_the_surge_above_the_larger_generation() -> None:
    plan = make_plan(_input("separate-dgd"))
    full = max(plan.steps[0].stable.gpus, plan.cleanup.candidate.gpus)
    assert full == 4
    for state in plan.all_states():
        assert state.extra_gpus_peak == max(0, state.peak_gpus - full), state.label


def test_the_partition_example_shows_what_the_roll_adds() -> None:
    p = prepare(str(PARTITION))
    r = run_cli("plan", str(PARTITION))
    assert r.returncode == 0, r.stderr
    rows = {line.split("  ")[0].strip(): line for line in r.stdout.splitlines()
            if line[:1].isdigit() or line.startswith(("rollback", "cleanup"))}
    today = p.plan.steps[0].stable.gpus
    for state in p.plan.all_states():
        key = {"baseline": "0 baseline"}.get(state.kind, state.label if state.kind != "step"
                                             else str(state.index))
        assert f"{state.peak_gpus} (+{state.peak_gpus - today})" in rows[key], (key, rows[key])
    assert "4 (+2)" in rows["1"]  # was "4 (+0)": measured against the candidate's 4 GPUs


def test_partition_peak_is_what_the_rendered_dgd_asks_for() -> None:
    """In partition the one rendered DGD carries stable + candidate in each worker's
    `replicas`, and the operator replaces ordinals inside that count: a transition never runs
    more pods of a component than the DGD asks for before or after it. The plan modelled the
    two generations side by side (step 2 peaked at 3 replicas of each 1-GPU worker, 6 GPUs)
    though the DGD never asks for more than 2 of each."""
    from dgdgen.render import render_state
    from dgdgen.render.waves import plan_previous

    p = prepare(str(PARTITION))

    def asked(state: object) -> dict[str, int]:
        dgd = next(m.obj for m in render_state(p, state)
                   if m.obj["kind"] == "DynamoGraphDeployment")
        return {c["name"]: c["replicas"] for c in dgd["spec"]["components"]}

    gpus = {"Frontend": 0, "decode": 1, "prefill": 1}  # per replica, both revisions (dgd.yaml)
    base = p.plan.steps[0].stable
    assert base.gpus == sum(n * gpus[k] for k, n in base.replicas.items())
    checked = 0
    for state in p.plan.all_states():
        prev = plan_previous(p.plan, state)
        if prev is None:
            continue
        before, after = asked(prev), asked(state)
        want = {k: max(before[k], after[k]) for k in after}
        assert state.peak_replicas == want, state.label
        assert state.peak_gpus == sum(n * gpus[k] for k, n in want.items()), state.label
        checked += 1
    assert checked == 4
    assert p.plan.steps[2].peak_gpus == 4  # was 6: stable and candidate modelled side by side
