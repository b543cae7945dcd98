"""DGD201 mdc-change-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import Category
from dgdgen.check.inplace import RENAME
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._inplace import HELP, REMEDIATION, in_place

RULE = RuleMeta(
    code="DGD201",
    slug="mdc-change-in-place",
    severity=Severity.ERROR,
    summary="A ModelDeploymentCard checksum input of a worker changes in place.",
    rationale=(
        "Workers publish a ModelDeploymentCard whose checksum covers the served model name, the "
        "model files, the chat template, the context length, the KV block size, the worker type "
        "and (since mid-2026) the worker router config (lib/llm/src/model_card.rs "
        "`mdcsum()`). What an in-place roll of such a change does depends on where the new "
        "workers register. With the operator's managed rolling update (Deployment-backed "
        "workers on every release; Grove and LeaderWorkerSet from 1.5, Dynamo #12769) each "
        "worker generation gets its own hash-suffixed Dynamo namespace and the frontend, "
        "selecting by prefix, serves old and new side by side: nothing is rejected, and the new "
        "configuration is exposed to real traffic with no gate, no pause and no rollback — "
        "what dgdgen exists to stop, so the rule fails by default. Where old and new workers "
        "share one namespace (Grove / LWS before 1.5, a worker that pins --endpoint, workers "
        "outside the operator's roll) the frontend's reaction to two checksums depends on the "
        "release. Both are measured with the real 1.6.1 frontend and mocker "
        "(tests/check/test_runtime_truth.py; docs/checker.md). A new served model name is "
        f"another model everywhere: {RENAME}. Which flags feed the card depends on the backend "
        "and on the release (--dynamo-version)."
    ),
    remediation=REMEDIATION,
    help=HELP,
    needs_base=True,
    category=Category.MDC.value,
    in_place=True,
)


def check(ctx: Context) -> Iterator[Finding]:
    return in_place(ctx, RULE, Category.MDC)
