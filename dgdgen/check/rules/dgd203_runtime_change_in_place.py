"""DGD203 runtime-change-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import Category
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._inplace import HELP, REMEDIATION, in_place

RULE = RuleMeta(
    code="DGD203",
    slug="runtime-change-in-place",
    severity=Severity.ERROR,
    summary="A worker or frontend image (the Dynamo runtime) changes in place.",
    rationale=(
        "A new runtime image (e.g. vllm-runtime 0.6.0 → 0.7.0) may change the frontend↔worker "
        "protocol and what goes into the card: cards from different releases hash differently "
        "for the same configuration (lib/llm/src/model_card.rs history). The finding names "
        "only what the image bump replaces. A new frontend image replaces the frontend in "
        "place — frontends are not hash-isolated on any release (only worker namespaces carry "
        "the worker hash) — so new frontends serve old workers while the workers roll, or the "
        "unchanged workers when only the frontend's image changes. A new worker image alone "
        "leaves the frontend as it is: the same frontend serves the old and the new worker "
        "runtime. PR #13886 documents only an N-2 frontend/worker window. The table below is "
        "for a bump of both."
    ),
    remediation=REMEDIATION,
    help=HELP,
    needs_base=True,
    category=Category.RUNTIME.value,
    in_place=True,
)


def check(ctx: Context) -> Iterator[Finding]:
    return in_place(ctx, RULE, Category.RUNTIME)
