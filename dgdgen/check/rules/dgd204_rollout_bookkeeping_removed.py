"""DGD204 rollout-bookkeeping-removed."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import ANN_WORKER_HASH_V1, ANN_WORKER_HASH_V2

WORKER_HASH_LABEL = "nvidia.com/dynamo-worker-hash"

RULE = RuleMeta(
    code="DGD204",
    slug="rollout-bookkeeping-removed",
    severity=Severity.ERROR,
    summary="The operator's rollout bookkeeping (worker-hash annotations or labels) is removed.",
    rationale=(
        "The operator records the current worker generation in the DGD annotations "
        "nvidia.com/current-worker-hash and nvidia.com/current-worker-hash-v2, and in the pod "
        "label nvidia.com/dynamo-worker-hash (ai-dynamo/dynamo deploy/operator/internal/consts/consts.go). "
        "Losing them (kubectl replace, helm upgrade --force, a manifest exported without them) "
        "makes the operator treat the DGD as a first deploy and orphan the old generation "
        "(issue #13495, open; fix attempt PR #13509 closed)."
    ),
    remediation=(
        "Keep the annotations the live object carries (apply with server-side apply, or tell "
        "Argo CD to ignore them with ignoreDifferences) instead of deleting them from the manifest."
    ),
    help="keep the annotations the live object carries (server-side apply)",
    needs_base=True,
)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        if pair.base is None:
            continue
        head, base = pair.head, pair.base
        for key in (ANN_WORKER_HASH_V1, ANN_WORKER_HASH_V2):
            if key in base.annotations and key not in head.annotations:
                loc = head.dgd.location(("metadata",))
                yield RULE.finding(
                    file=head.file, line=loc.line, column=loc.column,
                    message=f"annotation {key} (operator bookkeeping) was removed",
                    object=head.object, key=key,
                )
        for name, comp in head.components.items():
            old = base.components.get(name)
            if old is None:
                continue
            if WORKER_HASH_LABEL in old.pod_labels and WORKER_HASH_LABEL not in comp.pod_labels:
                loc = head.dgd.location(comp.path)
                yield RULE.finding(
                    file=head.file, line=loc.line, column=loc.column,
                    message=f"{name}: pod label {WORKER_HASH_LABEL} (operator bookkeeping) "
                            "was removed",
                    object=head.object, component=name, key=WORKER_HASH_LABEL,
                )
