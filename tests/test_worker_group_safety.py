"""Isolation `worker-group` puts both generations in ONE DGD, so every transition applies that
one object in one Argo CD sync wave (docs/planning.md, "worker-group: one DGD, one wave"). Here
every transition of every accepted worker-group plan is checked from the RENDERED objects and
their sync waves — never from the plan's own figures:

(a) a group that the route gives weight > 0 has its workers in the DGD that is live when the route
    applies (the state's DGD when its wave comes first, the previous state's otherwise), and
    never fewer than the state's DGD gives it (no traffic before the workers exist);
(b) a group whose workers shrink (or that goes) is given, by the route live when the DGD applies,
    no more than its new share, and weight 0 when it loses every worker of a component; a drain
    Job for it runs between the route and the DGD when its weight dropped to 0, exactly where
    the plan says `drain`.

A spec whose transitions would grow one group and shrink the other in one state is refused
(exit 2, the step and field path named)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gen_support import REPO, copy_example_inputs, run_cli
from dgdgen.errors import PlanError
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.render.waves import ANN_WAVE

EXAMPLE = "vllm-disagg-v1beta1-worker-group"
WAVE = ANN_WAVE


def _variant(tmp_path: Path, *, strategy: str | None, replicas: int | None,
             steps: list[int] | None) -> Path:
    src = REPO / "examples" / EXAMPLE
    copy_example_inputs(src, tmp_path)
    for name in ("rollout.yaml", "dgd.yaml"):
        shutil.copy(src / name, tmp_path / name)
    spec_path = tmp_path / "rollout.yaml"
    data = yaml.safe_load(spec_path.read_text())
    if strategy is not None:
        data["spec"]["strategy"] = strategy
    if steps is not None:
        data["spec"]["steps"] = [{"weight": w, "pause": "10m", "gate": "slo"} if w < 100
                                 else {"weight": w} for w in steps]
    spec_path.write_text(yaml.safe_dump(data, sort_keys=False))
    if replicas is not None:
        dgd_path = tmp_path / "dgd.yaml"
        dgd = yaml.safe_load(dgd_path.read_text())
        for comp in dgd["spec"]["components"]:
            if comp["type"] != "frontend":
                comp["replicas"] = replicas
        dgd_path.write_text(yaml.safe_dump(dgd, sort_keys=False))
    return spec_path


def _by_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def _wave(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["annotations"][WAVE])


def _groups(dgd: dict[str, Any], stable_rev: str) -> dict[str, dict[str, int]]:
    """Worker replicas per group (workerGroupName; the stable's components carry none) per
    component, the group's suffix taken off so both groups name components alike."""
    out: dict[str, dict[str, int]] = {}
    for comp in dgd["spec"]["components"]:
        if comp["type"] == "frontend":
            continue
        group = comp.get("workerGroupName", stable_rev)
        base = comp["name"].removesuffix(f"-{group}")
        out.setdefault(group, {})[base] = int(comp.get("replicas", 1))
    return out


def _weights(objs: list[dict[str, Any]]) -> dict[str, int]:
    """Route weight per group, the backend Service mapped to its generation label."""
    services = {s["metadata"]["name"]: s["metadata"]["labels"]["dgdgen.dev/generation"]
                for s in _by_kind(objs, "Service") if "dgdgen.dev/generation" in
                (s["metadata"].get("labels") or {})}
    (route,) = _by_kind(objs, "HTTPRoute")
    out: dict[str, int] = {}
    for rule in route["spec"]["rules"]:
        for ref in rule["backendRefs"]:
            out[services[ref["name"]]] = out.get(services[ref["name"]], 0) + int(ref["weight"])
    return out


def _render(prepared: Any, state: Any, previous: Any) -> list[dict[str, Any]]:
    return [m.obj for m in render_state(prepared, state, previous)]


def _check_transition(prepared: Any, before: Any, state: Any, *, plan_order: bool) -> None:
    where = f"{before.label} → {state.label}"
    stable_rev = prepared.plan.stable_revision
    old = _render(prepared, before, None)
    new = _render(prepared, state, before)
    (old_dgd,) = _by_kind(old, "DynamoGraphDeployment")
    (new_dgd,) = _by_kind(new, "DynamoGraphDeployment")
    (route,) = _by_kind(new, "HTTPRoute")
    dgd_wave, route_wave = _wave(new_dgd), _wave(route)
    assert dgd_wave != route_wave, where
    g_old, g_new = _groups(old_dgd, stable_rev), _groups(new_dgd, stable_rev)
    w_old, w_new = _weights(old), _weights(new)
    comps = sorted({c for g in (*g_old.values(), *g_new.values()) for c in g})
    live_at_route = g_new if dgd_wave < route_wave else g_old
    route_at_dgd = w_new if route_wave < dgd_wave else w_old
    jobs = {j["metadata"]["labels"]["dgdgen.dev/generation"]: j
            for j in _by_kind(new, "Job") if "-drain-" in j["metadata"]["name"]}
    for group in sorted(set(g_old) | set(g_new) | set(w_new)):
        live = live_at_route.get(group, {})
        now = g_new.get(group, {})
        was = g_old.get(group, {})
        # (a) weight only onto workers that exist when the route applies, and keep existing
        if w_new.get(group, 0) > 0:
            for c in comps:
                assert live.get(c, 0) >= 1 and now.get(c, 0) >= 1, (where, group, c, live, now)
                assert live.get(c, 0) >= now.get(c, 0), (where, group, c, "grows after route")
        # (b) a shrinking group has its share moved off it before the DGD shrinks
        shrinks = any(now.get(c, 0) < was.get(c, 0) for c in comps)
        if not shrinks:
            continue
        assert route_at_dgd.get(group, 0) <= w_new.get(group, 0), (where, group, route_at_dgd)
        if any(now.get(c, 0) == 0 for c in comps):
            assert route_at_dgd.get(group, 0) == 0, (where, group, "loses its workers serving")
        if w_new.get(group, 0) == 0 < w_old.get(group, 0) or (
                group not in g_new and w_old.get(group, 0) == 0 and group in g_old
                and state.kind == "cleanup"):
            assert group in jobs, (where, group, "no drain Job before the shrink")
        if group in jobs:
            assert route_wave < _wave(jobs[group]) < dgd_wave, (where, group, "drain order")
    if plan_order:
        # the plan says drain exactly where the render has a drain Job
        assert (state.drain_seconds is not None) == bool(jobs), (where, state.drain_seconds, jobs)


def _check_plan(spec: Path) -> int:
    prepared = prepare(str(spec))
    plan = prepared.plan
    assert prepared.mode == "worker-group"
    checked = 0
    from dgdgen.render.waves import plan_previous

    for state in plan.all_states():
        before = plan_previous(plan, state)
        if before is not None:
            _check_transition(prepared, before, state, plan_order=True)
            checked += 1
    # a rollback may start at any step: each transition on its path, from where it really starts
    for k in range(1, len(plan.steps)):
        path = (plan.steps[k], *plan.rollback_from(k))
        for before, state in zip(path, path[1:]):
            _check_transition(prepared, before, state, plan_order=False)
            checked += 1
    return checked


def test_bundled_worker_group_example_is_safe_in_every_state() -> None:
    assert _check_plan(REPO / "examples" / EXAMPLE / "rollout.yaml") >= 6


def test_three_step_worker_group_is_safe_in_every_state(tmp_path: Path) -> None:
    """Two replicas per worker, 50 → 100 (the shape that shrank the stable while it still carried
    traffic), as a blue-green rollout: the stable group keeps its workers until cleanup."""
    spec = _variant(tmp_path, strategy="blue-green", replicas=2, steps=[50, 100])
    assert _check_plan(spec) >= 6


@pytest.mark.parametrize(("replicas", "steps", "step", "field"), [
    (2, [50, 100], 1, "spec.steps[0]"),  # stable 2 → 1 while the candidate grows 0 → 1
    (1, None, 2, "spec.steps[1]"),  # the bundled steps as canary: its rollback regrows g1
])
def test_worker_group_canary_that_needs_a_split_is_refused(
        tmp_path: Path, replicas: int, steps: list[int] | None, step: int, field: str) -> None:
    spec = _variant(tmp_path, strategy="canary", replicas=replicas, steps=steps)
    with pytest.raises(PlanError):
        prepare(str(spec))
    for command in ("validate", "render"):
        args = [command, str(spec)] + (["-o", str(tmp_path / "out")] if command == "render"
                                       else [])
        r = run_cli(*args)
        assert r.returncode == 2, (command, r.stdout, r.stderr)
        err = r.stderr.strip()
        assert "Traceback" not in err and len(err.splitlines()) <= 2, err
        assert f"{spec}:" in err and field in err, err
        assert f"step {step}" in err and "blue-green" in err and "separate-dgd" in err, err
