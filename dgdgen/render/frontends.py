"""The frontends dgdgen renders: readiness only while the model is served, and whether they
request resources.

The operator's default readiness probe of a Dynamo frontend is ``GET /health``, which the 1.6.1
frontend answers 200 with zero workers (``lib/llm/src/http/service/health.rs``: it lists the
discovered endpoints, whatever their number). With a Service per generation (the HTTPRoute
providers, HAProxy, the switch Service) a frontend whose workers are not up yet, or are gone,
would then be a ready endpoint and get its share of requests, every one failing. The frontend's
``GET /v1/models/{model}/ready`` (``lib/llm/src/http/service/openai.rs``, model readiness) is 404
while no worker serves the model and 200 once one does — the path the HAProxy check already uses
(:func:`dgdgen.traffic.haproxy.health_path`); the rendered candidate frontends get it as their
readiness probe. Measured against the real 1.6.1 frontend and mocker
(``tests/rehearse/test_frontend_readiness.py``).

Only the candidate's frontends: the stable's template is never changed, since that would restart
its serving pods (:mod:`dgdgen.render.dgds`). Only where each generation has its own frontend
(``separate-dgd``, ``worker-group``): a shared frontend serves both generations' workers, and
its Service must stay ready while either serves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from dgdgen.model.dgd import Dgd

PORT = "http"  # the frontend container's port name the operator sets (its HTTP port, 8000)
PERIOD = 5
FAILURES = 2  # ~10 s without the model: out of the Service endpoints


def path(model: str) -> str:
    # The model name is one path segment (`Qwen/Qwen3-0.6B` → `Qwen%2FQwen3-0.6B`).
    return f"/v1/models/{quote(model, safe='')}/ready"


def probe(model: str) -> dict[str, Any]:
    return {
        "httpGet": {"path": path(model), "port": PORT},
        "periodSeconds": PERIOD,
        "timeoutSeconds": 2,
        "successThreshold": 1,
        "failureThreshold": FAILURES,
    }


def apply(d: Dgd, only: set[str] | None = None) -> str | None:
    """Set every frontend of ``d`` (those in ``only`` when given) to be ready only while its
    model is served. Returns the model, or None when its workers name none (``--served-model-name``
    / ``--model`` / ``--model-path``): then the frontends keep their probe."""
    from dgdgen.traffic.haproxy import served_model

    model = served_model(d)
    if model is None:
        return None
    for fe in list(d.frontends()):
        if only is not None and fe.name not in only:
            continue
        if d.version == "v1alpha1":
            # v1alpha1 components carry the probe themselves; the operator uses it instead of
            # its /health default (DynamoComponentDeploymentSharedSpec.readinessProbe).
            d.component_doc(fe.name)["readinessProbe"] = probe(model)
            main = d.main_container(fe.name)
            if main is not None and "readinessProbe" in main:
                main["readinessProbe"] = probe(model)  # merged over the component's: both
        else:
            # v1beta1: the operator merges the `main` container of podTemplate over its
            # defaults, by name (the CRD's podTemplate description).
            main = d.main_container(fe.name, create=True)
            assert main is not None
            main["readinessProbe"] = probe(model)
    d.refresh()
    return model


def frontends_without_requests(d: Dgd) -> list[str]:
    """Frontends of ``d`` whose main container requests neither CPU nor memory (v1alpha1: the
    component's ``resources.requests`` or its main container's; v1beta1: the ``main``
    container's)."""
    out = []
    for fe in d.frontends():
        found: dict[str, Any] = {}
        if d.version == "v1alpha1":
            res = d.component_doc(fe.name).get("resources") or {}
            found.update((res.get("requests") or {}) if isinstance(res, dict) else {})
        main = d.main_container(fe.name) or {}
        res = main.get("resources") or {}
        found.update((res.get("requests") or {}) if isinstance(res, dict) else {})
        if not ({"cpu", "memory"} & set(found)):
            out.append(fe.name)
    return sorted(out)
