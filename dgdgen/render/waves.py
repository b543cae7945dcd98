"""Argo CD sync waves, decided per object from the transition previous state → this state.

Argo CD applies one wave, waits until every resource of it is synced and *Healthy*, then moves to
the next (docs/gitops.md §3). dgdgen uses four waves so that a promotion commit always moves in
the safe order:

* wave 0, **grow**: DGDs that appear or gain replicas, frontend Services, InferencePools, the
  proxy's Service, monitoring and analysis templates. The DGD health check (``argo/dgd-health.lua``)
  keeps this wave Progressing until the new workers are ready — without it a DGD counts as
  healthy at once and traffic would move onto pods that are still loading weights.
* wave 1, **shift**: the objects that carry traffic weights (HTTPRoute; the HAProxy Deployment,
  which mounts the config of the new weights: an immutable ConfigMap named after its content,
  created in wave 0 as nothing mounts it yet).
* wave 2, **drain**: Argo CD ``Sync`` hook Jobs that wait until a leaving generation's frontend
  has nothing in flight, bounded by the request timeout (:mod:`dgdgen.render.drain`).
* wave 3, **shrink**: DGDs that lose replicas. They shrink only after the weights moved away and
  the leaving generation drained.

Objects that disappear (the candidate on rollback, the stable on cleanup) carry
``PruneLast=true``, so Argo CD deletes them after all waves are Healthy, i.e. after the route no
longer sends them traffic (Argo CD v3.5.1 docs/user-guide/sync-options.md).

Every object gets an explicit wave so a reader of the rendered tree sees the order. AnalysisRuns
get no wave: they are either Argo CD hooks (PostSync, after every wave) or left out of the Git tree
(:func:`dgdgen.pipeline.files.deployed`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dgdgen.plan import GenerationState, Plan, PlanStep
    from dgdgen.plan.prepared import Prepared
    from dgdgen.render.manifest import Manifest

ANN_WAVE = "argocd.argoproj.io/sync-wave"
ANN_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
PRUNE_LAST = "PruneLast=true"

GROW, SHIFT, DRAIN, SHRINK = "0", "1", "2", "3"
WAVE_NAMES = {GROW: "grow", SHIFT: "shift", DRAIN: "drain", SHRINK: "shrink"}

DGD_KIND = "DynamoGraphDeployment"
# Kinds whose change moves traffic. The HAProxy Deployment mounts the weights ConfigMap (a new
# config rolls the proxy): the Deployment belongs to the shift wave, and so would a mutable
# ConfigMap. Keyed on kind only, so any traffic renderer that emits these kinds is ordered
# correctly.
SHIFT_KINDS = frozenset({"HTTPRoute", "GRPCRoute", "ConfigMap", "Deployment"})
NO_WAVE_KINDS = frozenset({"AnalysisRun"})


def plan_previous(plan: Plan, state: PlanStep) -> PlanStep | None:
    """The state a plan-order rollout comes from: step N-1 for step N, the last step for cleanup,
    and for a rollback state the forward step its transition is planned from
    (:meth:`Plan.rollback_origin`, the step `dgdgen plan` shows that transition from): so the
    static render of a rollback state carries the drain hook of the candidate it stops serving,
    as the plan promises and as a `dgdgen rollback` commit does.

    The baseline has no previous state. A rollback's waves do not depend on where it started:
    every generation it contains is at its full size, so it can only grow, and the stable's
    manifests stay byte-identical to the baseline (the drain hook is dgdgen's own Job beside
    them)."""
    if state.kind == "step" and state.index > 0:
        return plan.steps[state.index - 1]
    if state.kind in ("rollback-step", "rollback"):
        return plan.rollback_origin(state)
    if state.kind == "cleanup":
        return plan.steps[-1]
    return None


def _shrinks(now: GenerationState, before: GenerationState | None) -> tuple[bool, bool]:
    """(any component shrinks, any component grows) going from ``before`` to ``now``."""
    if before is None or not before.present:
        return False, now.present
    down = any(now.replicas.get(k, 0) < v for k, v in before.replicas.items())
    up = any(v > before.replicas.get(k, 0) for k, v in now.replicas.items())
    return down, up


def dgd_wave(prepared: Prepared, state: PlanStep, previous: PlanStep | None, name: str) -> str:
    """Wave of the DGD called ``name`` in ``state``. A DGD that holds both generations (the
    single-DGD modes) shrinks in the last wave only when nothing in it grows; otherwise it must go
    first so the growing generation is ready before weights move (the planner already limited the
    stable's shrink inside such a step to ``maxUnavailable`` / ``headroom``)."""
    gens: list[tuple[GenerationState, GenerationState | None]] = []
    if name == prepared.stable.dgd.name:
        gens.append((state.stable, previous.stable if previous else None))
    if name == prepared.candidate_name:
        gens.append((state.candidate, previous.candidate if previous else None))
    if len(gens) == 2 and state.kind in ("baseline", "rollback"):
        # One DGD holding both generations: a rollback removes the candidate's group, which must
        # wait until the route no longer sends it traffic. In `partition` the stable's workers
        # regrowing in the same object is the lesser harm (queueing, not failed requests); in
        # `worker-group` the planner refuses a rollback that regrows the stable's group (the
        # route would send it traffic before its workers exist: docs/planning.md, "worker-group:
        # one DGD, one sync wave"), so there it only shrinks. The baseline is the rollback
        # target and must stay byte-identical to it, so it uses the same wave (on a first deploy
        # nothing is served yet; on a new rollout's baseline the DGD is unchanged).
        return SHRINK
    down = up = False
    for now, before in gens:
        d, u = _shrinks(now, before)
        down, up = down or d, up or u
    return SHRINK if down and not up else GROW


def wave_of(prepared: Prepared, state: PlanStep, previous: PlanStep | None,
            obj: dict[str, Any]) -> str | None:
    kind = str(obj.get("kind"))
    if kind in NO_WAVE_KINDS:
        return None
    if kind == DGD_KIND:
        return dgd_wave(prepared, state, previous, str(obj["metadata"]["name"]))
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if labels.get("dgdgen.dev/role") == "epp":
        # a pool's endpoint picker (its Deployment and ConfigMap too) is Ready before the route
        # gives the pool weight (dgdgen.render.epp)
        return GROW
    if kind == "ConfigMap" and obj.get("immutable") is True:
        # content-named (the HAProxy config): a new one is a new object nothing mounts yet, so it
        # exists before the shift wave points the Deployment at it (the Deployment applied
        # first would roll pods that wait for a ConfigMap not there yet)
        return GROW
    if kind in SHIFT_KINDS:
        return SHIFT
    if kind == "Service" and labels.get("dgdgen.dev/role") == "switch":
        # the Service whose selector carries traffic: provider none's switch between two
        # frontends, and the GAMMA parent for callers outside the mesh
        return SHIFT
    return GROW


def annotate(prepared: Prepared, state: PlanStep, previous: PlanStep | None,
             manifests: Sequence[Manifest]) -> list[Manifest]:
    """Copies of ``manifests`` with sync-wave and PruneLast annotations."""
    out = []
    for m in manifests:
        wave = wave_of(prepared, state, previous, m.obj)
        if wave is None:
            out.append(m)
            continue
        obj = dict(m.obj)
        meta = dict(obj.get("metadata") or {})
        anns = dict(meta.get("annotations") or {})
        anns[ANN_WAVE] = wave
        options = [o for o in str(anns.get(ANN_SYNC_OPTIONS, "")).split(",") if o]
        if PRUNE_LAST not in options:
            options.append(PRUNE_LAST)
        anns[ANN_SYNC_OPTIONS] = ",".join(options)
        meta["annotations"] = anns
        obj["metadata"] = meta
        out.append(dataclasses.replace(m, obj=obj))
    return out
