"""Sync waves follow the transition: grow (new or bigger DGDs, frontends) → shift (weights) →
shrink (smaller DGDs); objects that disappear are pruned last."""

from __future__ import annotations

from typing import Any

import pytest
from gen_support import EXAMPLES, without_roll_settings
from gitops_support import EXAMPLE

from dgdgen import yamlio
from dgdgen.gitops import target
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import Manifest, render_state, waves


def _waves(manifests: list[Manifest]) -> dict[str, str | None]:
    return {m.filename: (m.obj["metadata"].get("annotations") or {}).get(waves.ANN_WAVE)
            for m in manifests}


def test_dgd_waves_per_step() -> None:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    stable = "dynamographdeployment-vllm-v1-disagg-router.yaml"
    cand = "dynamographdeployment-bs32-vllm-v1-disagg-router.yaml"
    # step 1: the candidate appears (grow); the stable keeps its size (grow wave, nothing to wait)
    w1 = _waves(render_state(p, p.plan.steps[1]))
    assert w1[cand] == waves.GROW and w1[stable] == waves.GROW
    # step 2: the stable loses replicas: only after the weights moved
    w2 = _waves(render_state(p, p.plan.steps[2]))
    assert w2[stable] == waves.SHRINK and w2[cand] == waves.GROW
    assert w2["service-vllm-v1-disagg-router-fe.yaml"] == waves.GROW
    # rolling back from step 2: the stable grows back first
    wr = _waves(render_state(p, p.plan.rollback, p.plan.steps[2]))
    assert wr[stable] == waves.GROW


def test_traffic_kinds_shift_between_grow_and_shrink() -> None:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    route = Manifest({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                      "metadata": {"name": "r", "namespace": "inference"}, "spec": {}})
    run = Manifest({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
                    "metadata": {"name": "a"}, "spec": {"metrics": []}})
    out = waves.annotate(p, p.plan.steps[2], p.plan.steps[1], [route, run])
    assert out[0].obj["metadata"]["annotations"] == {
        waves.ANN_WAVE: waves.SHIFT, waves.ANN_SYNC_OPTIONS: waves.PRUNE_LAST}
    assert "annotations" not in out[1].obj["metadata"]  # hooks run after every wave
    assert "annotations" not in route.obj["metadata"]  # inputs are not modified


def _dump(ms: list[Manifest]) -> dict[str, str]:
    return {m.filename: yamlio.dump(m.obj) for m in ms}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_rollback_from_any_step_equals_the_baseline(example: Any) -> None:
    p = prepare(str(example / "rollout.yaml"))
    baseline = target.state_files(p, p.plan.steps[0], None, validate=False)
    for frm in p.plan.steps[1:]:
        got = {k: without_roll_settings(v) for k, v in
               target.state_files(p, p.plan.rollback, frm, validate=False).items()}
        # the stable's manifests exactly (in place plus the forward roll's surge settings,
        # CLU201); beside them at most the drain hook of the candidate the rollback removes (dgdgen's own Job and the account it reads EndpointSlices with,
        # run and deleted by Argo CD)
        assert {k: v for k, v in got.items() if "-drain-" not in k} == baseline, frm.label
        extra = set(got) - set(baseline)
        assert all(k.split("-", 1)[0] in ("job", "serviceaccount", "role", "rolebinding")
                   and "-drain-" in k for k in extra), (frm.label, extra)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_static_render_drains_where_the_plan_says(example: Any) -> None:
    """`dgdgen render -o` (plan order) and `dgdgen plan` agree on every step and rollback state:
    a state whose transition the plan shows with `drain` carries the drain hook of the
    generation that stops serving, and no other state does. Before, the rendered `rollback/`
    had none although the plan's rollback row promised one (and `dgdgen rollback` commits one),
    and `partition`, whose one frontend cannot drain, was planned with a drain; `cleanup/`
    drained the departing stable (a blue-green stable still holds the streams of the last
    step's switch) while the plan showed no drain there."""
    from dgdgen.pipeline.files import all_files

    p = prepare(str(example / "rollout.yaml"))
    files = all_files(p, validate=False)
    for state in p.plan.steps[1:] + p.plan.rollback_steps + (p.plan.rollback, p.plan.cleanup):
        jobs = [k for k in files if k.startswith(f"{state.label}/job-") and "-drain-" in k]
        assert bool(jobs) == (state.drain_seconds is not None), (state.label, jobs)
        if state.kind == "cleanup" and jobs:
            # the hook of the stable that goes
            assert [j.rsplit("-drain-", 1)[1] for j in jobs] == [
                f"{p.plan.stable_revision}.yaml"], jobs
        if state.kind == "rollback" and jobs:
            # the hook of the candidate being removed, from the step the plan plans it from
            rev = p.plan.rollback_origin(state).candidate.revision
            assert [j.rsplit("-drain-", 1)[1] for j in jobs] == [f"{rev}.yaml"], jobs
            # the same files as a `dgdgen rollback` commit from that step
            frm = p.plan.rollback_origin(state)
            got = target.state_files(p, state, frm, validate=False)
            assert got == {k.split("/", 1)[1]: v for k, v in files.items()
                           if k.startswith("rollback/")}
