"""DGD201 mdc-change-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import MDC_CONSEQUENCE, RENAME_CONSEQUENCE, Category
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._inplace import REMEDIATION, in_place

RULE = RuleMeta(
    code="DGD201",
    slug="mdc-change-in-place",
    severity=Severity.ERROR,
    summary="A ModelDeploymentCard checksum input of a worker changes in place.",
    rationale=(
        "Workers publish a ModelDeploymentCard whose checksum covers the served model name, the "
        "model files, the chat template, the context length, the KV block size, the worker type "
        "and (since mid-2026) the worker router config (facts/dynamo.md §3, "
        "lib/llm/src/model_card.rs). An in-place roll puts new workers with another checksum "
        "next to old ones in one Dynamo namespace; what the frontend then does depends on the "
        "release (facts/dynamo.md §3.1 up to 1.5; the 1.6.1 runtime, "
        "facts/dynamo-runtime.md, verified by tests/check/test_runtime_truth.py): see the "
        "table below. A new served model name is another model in every release: "
        f"{RENAME_CONSEQUENCE}. Which flags feed the card depends on the backend and on the "
        "release (--dynamo-version)."
    ),
    remediation=REMEDIATION,
    needs_base=True,
    category=Category.MDC.value,
    by_release=tuple(sorted(MDC_CONSEQUENCE.items())),
)


def check(ctx: Context) -> Iterator[Finding]:
    return in_place(ctx, RULE, Category.MDC)
