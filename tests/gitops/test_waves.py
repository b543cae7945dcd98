"""Sync waves follow the transition: grow (new or bigger DGDs, frontends) → shift (weights) →
shrink (smaller DGDs); objects that disappear are pruned last."""

from __future__ import annotations

from typing import Any

import pytest
from gitops_support import EXAMPLE
from gen_support import EXAMPLES

from dgdgen import yamlio
from dgdgen.gitops import actions
from dgdgen.render import waves
from dgdgen.pipeline import prepare
from dgdgen.render import Manifest, render_state


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
    baseline = actions.state_files(p, p.plan.steps[0], None, validate=False)
    for frm in p.plan.steps[1:]:
        got = actions.state_files(p, p.plan.rollback, frm, validate=False)
        # the stable's manifests exactly; beside them at most the drain hook of the candidate
        # the rollback removes (dgdgen's own Job and the account it reads EndpointSlices with,
        # run and deleted by Argo CD)
        assert {k: v for k, v in got.items() if "-drain-" not in k} == baseline, frm.label
        extra = set(got) - set(baseline)
        assert all(k.split("-", 1)[0] in ("job", "serviceaccount", "role", "rolebinding")
                   and "-drain-" in k for k in extra), (frm.label, extra)
