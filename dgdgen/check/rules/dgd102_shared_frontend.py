"""DGD102 shared-frontend."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import Role

RULE = RuleMeta(
    code="DGD102",
    slug="shared-frontend",
    severity=Severity.WARNING,
    summary="A component uses the global Dynamo namespace: one shared frontend serves several "
            "worker DGDs.",
    rationale=(
        "With globalDynamoNamespace: true the Dynamo namespace is the constant `dynamo` "
        "(ai-dynamo/dynamo deploy/operator/api/v1beta1/dynamocomponentdeployment_types.go ComputeDynamoNamespace), so a global frontend discovers the workers of every DGD that "
        "registers there (the upstream shared_frontend example, deleted in #7059). A rollout of "
        "one worker DGD reaches the shared frontend, which cannot be given its own generation: "
        "namespace isolation and per-generation metrics (frontend metrics carry only `model`, "
        "docs/analysis.md) are impossible."
    ),
    remediation=(
        "Give each model its own frontend in its DGD (drop globalDynamoNamespace) and route "
        "between frontends with an HTTPRoute or HAProxy; `dgdgen render` generates this layout."
    ),
    help="give each model its own frontend and route between frontends",
)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        for comp in h.components.values():
            if not comp.global_namespace:
                continue
            loc = h.dgd.location(comp.path + ("globalDynamoNamespace",))
            if comp.role is Role.FRONTEND:
                msg = (f"{comp.name}: frontend in the global Dynamo namespace `dynamo` serves the "
                       "workers of every DGD registered there")
            else:
                msg = (f"{comp.name}: registers in the global Dynamo namespace `dynamo`, where a "
                       "shared frontend serves it together with other DGDs")
            yield RULE.finding(file=h.file, line=loc.line, column=loc.column, message=msg,
                               object=h.object, component=comp.name, key=comp.name)
