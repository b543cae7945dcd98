"""Per-generation frontend Services: the stable handle the traffic layer points at. They select
the frontend pods by the labels :mod:`dgdgen.render.dgds` puts on them; port 8000 (``http``) is
the frontend's HTTP port (facts/dynamo.md §8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dgdgen.generation import LABEL_GENERATION, LABEL_ROLE, LABEL_ROLLOUT
from dgdgen.render import Manifest
from dgdgen.render.names import frontend_service

if TYPE_CHECKING:
    from dgdgen.pipeline import Prepared
    from dgdgen.plan import PlanStep

FRONTEND_PORT = 8000
MANAGED_BY = {"app.kubernetes.io/managed-by": "dgdgen"}


def service(name: str, namespace: str, rollout: str, revision: str | None) -> dict[str, Any]:
    selector = {LABEL_ROLLOUT: rollout}
    if revision is not None:
        selector[LABEL_GENERATION] = revision
    selector[LABEL_ROLE] = "frontend"
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
            "selector": selector,
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
        return [Manifest(service(frontend_service(prepared.stable.dgd.name), ns, rollout, None))]
    out = []
    for gen, dgd_name in (
        (state.stable, prepared.stable.dgd.name),
        (state.candidate, prepared.candidate_name),
    ):
        if not gen.present:
            continue
        if prepared.mode == "worker-group":  # one DGD: one Service per worker group
            dgd_name = f"{prepared.stable.dgd.name}-{gen.revision}"
        out.append(Manifest(service(frontend_service(dgd_name), ns, rollout, gen.revision)))
    return out
