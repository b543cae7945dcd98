"""DGD201 mdc-change-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import Category
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
        "lib/llm/src/model_card.rs). New workers with another checksum next to old ones are "
        "skipped with 'Checksum for new worker does not match' up to 1.4, and from 1.5 (#12890) "
        "split the model into cohorts so that the frontend removes the model until one cohort "
        "remains (§3.1; PRs #14215, #14451, #14632). Which flags feed the card depends on the "
        "backend and on the release (--dynamo-version)."
    ),
    remediation=REMEDIATION,
    needs_base=True,
    category=Category.MDC.value,
)


def check(ctx: Context) -> Iterator[Finding]:
    return in_place(ctx, RULE, Category.MDC)
