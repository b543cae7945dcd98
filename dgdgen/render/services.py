"""Per-generation frontend Services: the stable handle the traffic layer points at. They select
the frontend pods by the labels the Dynamo operator already puts on every component pod, so no
label has to be added to a running generation (which would restart its frontend); port 8000
(``http``) is the frontend's HTTP port (ai-dynamo 1.6.1 dynamo/frontend/frontend_args.py).

Operator pod labels (ai-dynamo/dynamo ``deploy/operator/internal/consts/consts.go``, set on the
pod template by the component workload renderer): ``nvidia.com/dynamo-graph-deployment-name``
(the DGD), ``nvidia.com/dynamo-component-type`` (``frontend``) and ``nvidia.com/dynamo-component``
(the component's name)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dgdgen.model.generation import LABEL_GENERATION, LABEL_ROLLOUT
from dgdgen.model.names import frontend_service
from dgdgen.render.manifest import Manifest

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared

FRONTEND_PORT = 8000
MANAGED_BY = {"app.kubernetes.io/managed-by": "dgdgen"}


OP_LABEL_DGD = "nvidia.com/dynamo-graph-deployment-name"
OP_LABEL_COMPONENT_TYPE = "nvidia.com/dynamo-component-type"
OP_LABEL_COMPONENT = "nvidia.com/dynamo-component"


def frontend_selector(prepared: Prepared, revision: str | None) -> dict[str, str]:
    """Labels that select the frontend pods of generation ``revision`` (None: the one frontend
    of the single-DGD modes), from the operator's own pod labels."""
    from dgdgen.render.dgds import group_component_name

    stable_name = prepared.stable.dgd.name
    if revision is None:
        return {OP_LABEL_DGD: stable_name, OP_LABEL_COMPONENT_TYPE: "frontend"}
    is_stable = revision == prepared.stable.revision
    if prepared.mode == "worker-group":
        # One DGD: the groups' frontends differ by component name only.
        (front, *_) = [c.name for c in prepared.stable.dgd.frontends()]
        comp = front if is_stable else group_component_name(front, revision)
        return {OP_LABEL_DGD: stable_name, OP_LABEL_COMPONENT_TYPE: "frontend",
                OP_LABEL_COMPONENT: comp}
    dgd = stable_name if is_stable else prepared.candidate_name
    return {OP_LABEL_DGD: dgd, OP_LABEL_COMPONENT_TYPE: "frontend"}


def service(name: str, namespace: str, rollout: str, revision: str | None,
            selector: dict[str, str]) -> dict[str, Any]:
    labels = dict(MANAGED_BY)
    labels[LABEL_ROLLOUT] = rollout
    if revision is not None:
        labels[LABEL_GENERATION] = revision
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "selector": dict(selector),
            "ports": [
                {
                    "name": "http",
                    "port": FRONTEND_PORT,
                    "targetPort": "http",
                    "protocol": "TCP",
                    "appProtocol": "http",
                }
            ],
        },
    }


def render(prepared: Prepared, state: PlanStep) -> Sequence[Manifest]:
    ns = prepared.loaded.spec.metadata.namespace
    rollout = prepared.loaded.spec.metadata.name
    if prepared.mode in ("partition", "in-place"):
        # one frontend serves both revisions: one Service
        return [Manifest(service(frontend_service(prepared.stable.dgd.name), ns, rollout, None,
                                 frontend_selector(prepared, None)))]
    out = []
    for gen, dgd_name in (
        (state.stable, prepared.stable.dgd.name),
        (state.candidate, prepared.candidate_name),
    ):
        if not gen.present:
            continue
        if prepared.mode == "worker-group":  # one DGD: one Service per worker group
            dgd_name = f"{prepared.stable.dgd.name}-{gen.revision}"
        out.append(Manifest(service(frontend_service(dgd_name), ns, rollout, gen.revision,
                                    frontend_selector(prepared, gen.revision))))
    return out
