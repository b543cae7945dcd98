"""DGD202 kv-transfer-change-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import Category
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._inplace import HELP, REMEDIATION, in_place

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
        "take blocks from new prefill workers when both share one Dynamo namespace (Grove "
        "GREP-393: cross-version P/D traffic should be assumed unsafe). With the operator's "
        "hash-suffixed worker namespaces new prefill only finds new decode, so transfers stay "
        "within a generation, but the new KV configuration then takes a growing share of real "
        "traffic ungated, with prefill:decode ratios drifting (Dynamo PR #10936). The worker "
        "hash covers every worker component: an edit of the prefill workers alone rolls the "
        "decode workers too, into the same new namespace, so when the edit leaves prefill and "
        "decode disagreeing (DGD108) every transfer of the new generation fails, and its share "
        "of real traffic grows as the roll goes on."
    ),
    remediation=REMEDIATION,
    help=HELP,
    needs_base=True,
    category=Category.KV.value,
    in_place=True,
)


def check(ctx: Context) -> Iterator[Finding]:
    return in_place(ctx, RULE, Category.KV)
