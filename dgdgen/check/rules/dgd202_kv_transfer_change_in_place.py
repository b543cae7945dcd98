"""DGD202 kv-transfer-change-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import KV_CONSEQUENCE, Category
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._inplace import REMEDIATION, in_place

RULE = RuleMeta(
    code="DGD202",
    slug="kv-transfer-change-in-place",
    severity=Severity.ERROR,
    summary="The KV transfer or KV layout of a disaggregated DGD changes in place.",
    rationale=(
        "In a disaggregated DGD decode workers take KV blocks from prefill workers. Changing the "
        "KV connector or transfer backend (vLLM --kv-transfer-config, SGLang "
        "--disaggregation-transfer-backend, TRT-LLM cache_transceiver_config), the parallel "
        "sizes, the KV cache dtype or the block / page size makes old decode workers unable to "
        "take blocks from new prefill workers while both run (facts/dynamo.md §4; Grove GREP-393: "
        "cross-version P/D traffic should be assumed unsafe)."
    ),
    remediation=REMEDIATION,
    needs_base=True,
    category=Category.KV.value,
    by_release=tuple(sorted(KV_CONSEQUENCE.items())),
)


def check(ctx: Context) -> Iterator[Finding]:
    return in_place(ctx, RULE, Category.KV)
