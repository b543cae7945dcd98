"""DGD108 prefill-decode-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.headline import clip
from dgdgen.check.pd import mismatches
from dgdgen.check.rules import RuleMeta

RULE = RuleMeta(
    code="DGD108",
    slug="prefill-decode-mismatch",
    severity=Severity.ERROR,
    summary="The prefill and decode workers of a disaggregated DGD disagree on the KV layout, "
            "the KV transfer or the engine's KV-compatibility inputs.",
    rationale=(
        "A decode worker reads the KV blocks a prefill worker wrote, through the same "
        "connector: the block (page) size, the KV cache dtype and the connector or transfer "
        "backend must be the same on both sides (ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/{vllm,sglang}/args.py, trtllm/backend_args.py). When they differ the "
        "transfer fails or the decode worker reads a mismatched layout, from the first "
        "request. vLLM's NIXL connector also refuses, at its handshake, a peer whose "
        "compatibility hash differs: the model, the model dtype (`--dtype`), the attention "
        "backend and whether the hybrid KV cache manager is on must agree as well "
        "(vllm-project/vllm 0.31.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
        "`compute_nixl_compatibility_hash`; Dynamo 1.6.1 pins vllm 0.31.0). SGLang's decode "
        "worker refuses a prefill peer whose page size or KV cache dtype string differs, and a "
        "prefill worker with decode context parallelism (`--dcp-size` > 1) refuses a decode "
        "peer with another DCP size (sgl-project/sglang 0.5.21 "
        "python/sglang/srt/disaggregation/common/conn.py `try_ensure_parallel_info`, "
        "`requires_dcp_relayout`; Dynamo 1.6.1 pins sglang 0.5.21). A side that leaves "
        "a setting unset is compared with the engine's default where it is fixed (vLLM and "
        "SGLang `--kv-cache-dtype auto`, SGLang DCP size 1 and transfer backend mooncake, "
        "TRT-LLM tokens_per_block 32); where the engine derives it (vLLM's block size, model "
        "dtype, attention backend, hybrid KV cache manager; SGLang's page size, from the "
        "platform and the attention backend) or a value leaves the choice to the "
        "engine (TRT-LLM's `DEFAULT` transfer backend), only values set on both sides are "
        "compared."
    ),
    remediation=(
        "Give the prefill and the decode workers the same value (or leave it unset on both)."
    ),
    help="give prefill and decode the same value, or leave it unset on both",
)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        for m in mismatches(h):
            at = m.decode_setting or m.prefill_setting
            assert at is not None  # two defaults are equal
            comp = m.decode if m.decode_setting is not None else m.prefill
            loc = h.dgd.location(at.path)
            shown = "/".join(m.key.keys)
            yield RULE.finding(
                file=h.file, line=loc.line, column=loc.column,
                message=f"{m.key.what} differs: prefill {m.prefill.name} "
                        f"{clip(m.prefill_value)}, decode {m.decode.name} "
                        f"{clip(m.decode_value)}: decode cannot read prefill's KV",
                details=f"{m.key.what} ({shown}) differs between prefill {m.prefill.name!r} "
                        f"({m.prefill_value}{'' if m.prefill_setting else ', the default'}) and "
                        f"decode {m.decode.name!r} ({m.decode_value}"
                        f"{'' if m.decode_setting else ', the default'}): the decode worker "
                        "cannot read what the prefill worker hands over",
                object=h.object, component=comp.name,
                key=f"{m.prefill.name}:{m.decode.name}:{m.key.keys[0]}",
            )
