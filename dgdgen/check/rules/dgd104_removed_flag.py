"""DGD104 removed-flag."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._lifecycle import lifecycle

RULE = RuleMeta(
    code="DGD104",
    slug="removed-flag",
    severity=Severity.ERROR,
    summary="A worker uses a flag that the target Dynamo release removed or rejects.",
    rationale=(
        "A removed flag makes the worker exit at start-up, so the rollout stalls with crashing "
        "pods: vLLM --connector / DYN_CONNECTOR is rejected since #6450 (2026-02-24; use "
        "--kv-transfer-config), vLLM --is-prefill-worker was removed by #12089 (2026-07-24; use "
        "--disaggregation-mode prefill) (ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/{vllm,sglang}/args.py, trtllm/backend_args.py)."
    ),
    remediation="Replace the flag as the message says before rolling out the new release.",
    help="replace the flag before rolling out the new release",
)


def check(ctx: Context) -> Iterator[Finding]:
    return lifecycle(ctx, RULE, "removed")
