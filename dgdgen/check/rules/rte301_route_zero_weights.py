"""RTE301 route-zero-weights."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context, object_id
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._routes import backend_weight, route_rules

RULE = RuleMeta(
    code="RTE301",
    slug="route-zero-weights",
    severity=Severity.ERROR,
    summary="A route rule whose backendRefs all have weight 0.",
    rationale=(
        "Gateway API weights are relative: each backend gets weight / sum(weights); `weight: 0` "
        "means no traffic for that entry, and the CRD does not define what happens when all "
        "weights of a rule are 0 (Gateway API v1.6.1 HTTPRoute CRD, backendRefs[].weight). Implementations "
        "answer 500/503 or drop the rule: the model is unreachable."
    ),
    remediation="Give at least one backend of the rule a weight above 0 (the stable generation "
                "during a rollback).",
    help="give one backend a weight above 0",
)


def check(ctx: Context) -> Iterator[Finding]:
    for doc, i, refs in route_rules(ctx):
        if refs and all(backend_weight(r) == 0 for r in refs):
            loc = doc.location(("spec", "rules", i, "backendRefs"))
            yield RULE.finding(
                file=doc.file, line=loc.line, column=loc.column,
                message=f"rules[{i}]: all {len(refs)} backendRefs have weight 0; the rule "
                        "sends traffic nowhere",
                object=object_id(doc.data), key=f"rules[{i}]",
            )
