"""Drain hooks: before a generation that was serving shrinks (or is removed), wait until its
frontend has nothing in flight, bounded by the request timeout — so long SSE streams on the
leaving workers are not cut when the weights have just moved away.

One Argo CD ``Sync`` hook Job per leaving generation, in the drain wave between *shift* (the
weights move) and *shrink* (:mod:`dgdgen.render.waves`): Argo CD applies the shift wave, waits
until it is Healthy, runs the Job to completion, then shrinks. A promotion commit and the
workflow (which waits for that sync operation) get the same drain. The Job runs
``python3 -m dgdgen.gitops.drain`` in the promotion image against the generation's frontend
Service; with an HTTPRoute provider it first waits until the route reports the new weights
Accepted/ResolvedRefs at its current generation, and a frontend that does not answer counts as
drained only when its Service has no serving endpoint. For those two API reads it runs under its
own ServiceAccount, whose Role allows ``get``/``list`` on EndpointSlices and ``get`` on that one
route (:func:`rbac`, hooks of the same wave). It exists only where each generation has its own frontend (``separate-dgd``,
``worker-group``) and the generation's DGD really shrinks in the shrink wave; a shared frontend
(``partition``, ``in-place``) cannot tell the generations' requests apart (docs/analysis.md,
Prometheus setup: the frontend's gauges carry only ``model``).

Cleanup gets one for the stable it removes (the plan shows it: `drain` in cleanup's order).
Rollback gets one for the candidate it removes (or shrinks at weight 0): a `dgdgen rollback`
commit from the state it leaves, and the static ``render -o`` rollback directories from the step
the plan plans that transition from (:func:`dgdgen.render.waves.plan_previous`). The Job and its
account are hooks beside the stable's manifests, which stay byte-identical to the baseline
(docs/planning.md, States).
"""

from __future__ import annotations

import copy
import hashlib
from typing import TYPE_CHECKING, Any

from dgdgen.model.generation import LABEL_GENERATION, LABEL_ROLLOUT
from dgdgen.model.names import frontend_service
from dgdgen.plan import DRAIN_MODES
from dgdgen.render.manifest import Manifest
from dgdgen.render.services import FRONTEND_PORT
from dgdgen.spec import TrafficProvider

if TYPE_CHECKING:
    from dgdgen.plan import GenerationState, PlanStep
    from dgdgen.plan.prepared import Prepared

HOOK = "argocd.argoproj.io/hook"
HOOK_DELETE = "argocd.argoproj.io/hook-delete-policy"
PER_MODE = DRAIN_MODES  # modes with a frontend per generation
ZEROS_PER_REPLICA = 4  # polls at 0 in a row per frontend replica behind the Service
UID = 999  # the promotion image's user (argo/Dockerfile)


def leaving(prepared: Prepared, state: PlanStep, previous: PlanStep | None
             ) -> list[tuple[GenerationState, GenerationState, str]]:
    """(now, before, DGD name) of each generation that shrinks in the shrink wave or goes, i.e.
    that drains first in this transition (also what a plan display shows as the drain)."""
    from dgdgen.render import waves

    # Rollback too: the candidate it removes may still have streams in flight (found by
    # `dgdgen rehearse`: pruned at once, a stream on it failed). The drain Job is dgdgen's own
    # hook, not a manifest of the stable, which stays byte-identical to the baseline.
    if previous is None or prepared.mode not in PER_MODE:
        return []
    out = []
    for now, before, dgd_name in (
        (state.stable, previous.stable, prepared.stable.dgd.name),
        (state.candidate, previous.candidate, prepared.candidate_name),
    ):
        if not before.present:
            continue
        goes = not now.present
        shrinks = now.present and any(now.replicas.get(k, 0) < v
                                      for k, v in before.replicas.items())
        # Only a generation that gets no new requests can drain at its frontend (in-flight at 0);
        # one still serving part of the traffic would hold the sync for the whole timeout. Its
        # workers finish their requests on SIGTERM (shown by `dgdgen rehearse` under load).
        if goes or (shrinks and now.weight == 0
                    and waves.dgd_wave(prepared, state, previous, dgd_name) == waves.SHRINK):
            out.append((now, before, dgd_name))
    return out


def _name(rollout: str, revision: str) -> str:
    name = f"{rollout}-drain-{revision}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{rollout[:63 - len('-drain-') - 9]}-drain-{digest}"


def _timeout(prepared: Prepared) -> int:
    from dgdgen.render.grace import stream_bound_seconds

    # "0s" disables the route's timeout: the workflow's wait timeout bounds the drain instead
    return stream_bound_seconds(prepared.loaded.spec.spec)


def job(prepared: Prepared, before: GenerationState, dgd_name: str) -> dict[str, Any]:
    spec = prepared.loaded.spec
    ns = spec.metadata.namespace
    rollout = spec.metadata.name
    g = spec.spec.gitops
    svc = frontend_service(dgd_name if prepared.mode == "separate-dgd"
                           else f"{prepared.stable.dgd.name}-{before.revision}")
    frontends = sum(before.replicas.get(c.name, c.replicas)
                    for c in prepared.stable.dgd.frontends()) or 1
    timeout = _timeout(prepared)
    # the drain starts once the route reports the new weights accepted (HTTPRoute providers)
    route = route_name(prepared)
    route_args = ["--route", route] if route is not None else []
    # an L4 switch leaves pooled keep-alive clients on the leaving frontend: count what still
    # arrives at each of its pods, and fail rather than shrink under them (dgdgen.gitops.drain)
    l4 = l4_switch(prepared)
    host = f"{svc}.{ns}.svc.{spec.spec.cluster_domain}"
    labels = {"app.kubernetes.io/managed-by": "dgdgen", LABEL_ROLLOUT: rollout,
              LABEL_GENERATION: before.revision}
    restricted = {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "runAsNonRoot": True, "runAsUser": UID, "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": _name(rollout, before.revision),
            "namespace": ns,
            "labels": labels,
            "annotations": {
                HOOK: "Sync",
                "argocd.argoproj.io/sync-wave": _drain_wave(),
                HOOK_DELETE: "BeforeHookCreation",
            },
        },
        "spec": {
            "backoffLimit": 0,
            # the drain gives up by itself at the timeout; this only stops a stuck pod
            "activeDeadlineSeconds": timeout + 300,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    # the token reads the Service's EndpointSlices, nothing else (rbac below)
                    "serviceAccountName": account_name(rollout),
                    "automountServiceAccountToken": True,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": UID,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "drain",
                        "image": g.workflow.image,
                        "command": [
                            "python3", "-m", "dgdgen.gitops.drain",
                            "--url", f"http://{host}:{FRONTEND_PORT}/metrics",
                            "--timeout", str(timeout),
                            # quiet rounds over every pod (L4), else polls through the Service
                            "--zeros", str(ZEROS_PER_REPLICA * (1 if l4 else frontends)),
                            # unknown is not zero: a frontend that does not answer is drained
                            # only when its Service has no serving endpoint left
                            "--service", svc, "--namespace", ns,
                            *route_args,
                            *(["--l4-switch"] if l4 else []),
                        ],
                        "securityContext": restricted,
                        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"},
                                      "limits": {"memory": "128Mi"}},
                    }],
                },
            },
        },
    }


def l4_switch(prepared: Prepared) -> bool:
    """Whether callers leave a generation through a Service selector, which moves only new
    connections: the ``none`` provider's switch Service, and the GAMMA parent for callers outside
    the mesh (docs/traffic.md, "Pooled connections"). Routes, pools and HAProxy pick a backend
    per request."""
    provider = prepared.loaded.spec.spec.traffic.provider
    return provider in (TrafficProvider.NONE, TrafficProvider.GAMMA)


def account_name(rollout: str) -> str:
    # `-drain-` in the name like the Jobs': every consumer that sets the drain hooks apart
    # (rollback = baseline plus hooks) sets these apart too
    name = f"{rollout}-drain-reader"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{rollout[:63 - len('-drain-reader') - 9]}-{digest}-drain-reader"


def route_name(prepared: Prepared) -> str | None:
    """The HTTPRoute carrying the weights, or None (HAProxy: the shift wave's Deployment rollout
    is the weight change, and Argo CD's Deployment health waits for it; none: a Service)."""
    from dgdgen.traffic.settings import HTTPROUTE_PROVIDERS

    if prepared.loaded.spec.spec.traffic.provider.value in HTTPROUTE_PROVIDERS:
        return prepared.plan.rollout
    return None


def rbac(prepared: Prepared) -> list[dict[str, Any]]:
    """The drain Jobs' ServiceAccount and the one right they need: read the EndpointSlices of the
    namespace (their names are generated, so ``resourceNames`` cannot narrow it). Sync hooks in
    the drain wave like the Jobs: Argo CD creates a wave's ServiceAccount, Role and RoleBinding
    before its Jobs (kind order), and recreates them with the Jobs (BeforeHookCreation)."""
    spec = prepared.loaded.spec
    ns = spec.metadata.namespace
    name = account_name(spec.metadata.name)
    meta = {
        "name": name, "namespace": ns,
        "labels": {"app.kubernetes.io/managed-by": "dgdgen", LABEL_ROLLOUT: spec.metadata.name},
        "annotations": {HOOK: "Sync", "argocd.argoproj.io/sync-wave": _drain_wave(),
                        HOOK_DELETE: "BeforeHookCreation"},
    }
    rules: list[dict[str, Any]] = [{"apiGroups": ["discovery.k8s.io"],
                                    "resources": ["endpointslices"], "verbs": ["get", "list"]}]
    route = route_name(prepared)
    if route is not None:
        # the one route, by name: its status says whether the new weights are in force
        rules.append({"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"],
                      "resourceNames": [route], "verbs": ["get"]})
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": copy.deepcopy(meta),
         "automountServiceAccountToken": False},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": copy.deepcopy(meta), "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": copy.deepcopy(meta),
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}},
    ]


def _drain_wave() -> str:
    from dgdgen.render import waves

    return waves.DRAIN


def render(prepared: Prepared, state: PlanStep, previous: PlanStep | None) -> list[Manifest]:
    jobs = [Manifest(job(prepared, before, name))
            for _now, before, name in leaving(prepared, state, previous)]
    if not jobs:
        return []
    return [Manifest(o) for o in rbac(prepared)] + jobs
