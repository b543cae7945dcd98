"""RTE302 route-backend-missing."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context, object_id
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._routes import backend_weight, route_rules
from dgdgen.model.dgd import Role, is_dgd, parse

INFERENCE_GROUPS = ("inference.networking.k8s.io", "inference.networking.x-k8s.io")

RULE = RuleMeta(
    code="RTE302",
    slug="route-backend-missing",
    severity=Severity.ERROR,
    summary="A route sends traffic (weight > 0) to a Service or InferencePool that is not "
            "rendered next to it.",
    rationale=(
        "An invalid backendRef's share of traffic MUST get HTTP 500, and a Service without ready "
        "endpoints SHOULD get 503 (Gateway API v1.6.1 HTTPRoute CRD, backendRefs): a route that points a weighted backend "
        "at a generation whose Service or InferencePool is not rendered fails that share of "
        "requests as soon as it syncs. In the rendered-manifests pattern every backend of a "
        "route lives in the same rendered tree."
    ),
    remediation=(
        "Render the backend's Service / InferencePool (or its DGD frontend) with the route, or "
        "set the backend's weight to 0 until it exists."
    ),
    help="render the backend with the route, or give it weight 0",
)


def _known(ctx: Context, file: str) -> set[tuple[str, str]]:
    """(kind, name) of the objects rendered in the checked files and next to ``file``. A DGD
    frontend component is served by the operator's Service `{dgd}-{component}` (lower case,
    the DynamoComponentDeployment name, ai-dynamo/dynamo deploy/operator `GetDCDResourceName`)."""
    out: set[tuple[str, str]] = set()
    # The siblings' Services, InferencePools and DGDs, as facts (DGDs that do not parse left out).
    for sib in ctx.siblings(file):
        out.add((sib.kind, sib.name))
        for component in sib.frontends:
            out.add(("Service", f"{sib.name}-{component.lower()}"))
    for d in ctx.documents():
        data = d.data
        if not isinstance(data, dict):
            continue
        name = (data.get("metadata") or {}).get("name")
        if not isinstance(name, str):
            continue
        out.add((str(data.get("kind")), name))
        if is_dgd(data):
            try:
                dgd = parse(data, source=d)
            except Exception:  # noqa: BLE001, S112 - broken DGDs are reported by the DGD rules
                continue
            for comp in dgd.components.values():
                if comp.role is Role.FRONTEND:
                    out.add(("Service", f"{dgd.name}-{comp.name.lower()}"))
    return out


def check(ctx: Context) -> Iterator[Finding]:
    known: dict[str, set[tuple[str, str]]] = {}
    for doc, i, refs in route_rules(ctx):
        for j, ref in enumerate(refs):
            if not isinstance(ref, dict) or backend_weight(ref) == 0 or "namespace" in ref:
                continue  # weight 0: no traffic; other namespaces: not rendered here
            group, kind = ref.get("group", "") or "", ref.get("kind", "Service")
            if not ((group == "" and kind == "Service")
                    or (group in INFERENCE_GROUPS and kind == "InferencePool")):
                continue
            if doc.file not in known:
                known[doc.file] = _known(ctx, doc.file)
            if (kind, str(ref.get("name"))) in known[doc.file]:
                continue
            loc = doc.location(("spec", "rules", i, "backendRefs", j))
            yield RULE.finding(
                file=doc.file, line=loc.line, column=loc.column,
                message=f"rules[{i}].backendRefs[{j}]: {kind} {ref.get('name')!r} has weight "
                        f"{backend_weight(ref)} but is not rendered with the route",
                object=object_id(doc.data), key=f"{kind}/{ref.get('name')}",
            )
