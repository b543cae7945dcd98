"""DGD103 deprecated-flag."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._lifecycle import lifecycle

RULE = RuleMeta(
    code="DGD103",
    slug="deprecated-flag",
    severity=Severity.WARNING,
    summary="A worker uses a flag that the target Dynamo release deprecates.",
    rationale=(
        "Deprecated flags are removed a few releases later, and the replacement usually changes "
        "what the worker publishes: vLLM --is-prefill-worker was deprecated on 2026-02-23 "
        "(#6483) and removed on 2026-07-24 (#12089); TRT-LLM --model-path is an obsolete alias "
        "of --model; --migration-limit moved to the frontend (ai-dynamo 1.6.1 frontend_args.py). Switching "
        "spellings during an image bump turns one risky change into two."
    ),
    remediation="Switch to the replacement the message names, in a change of its own.",
    help="switch to the replacement, in a change of its own",
)


def check(ctx: Context) -> Iterator[Finding]:
    return lifecycle(ctx, RULE, "deprecated")
