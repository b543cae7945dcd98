"""DGD108 prefill-decode-mismatch."""

from __future__ import annotations

import json
from collections.abc import Iterator

from dgdgen.check.cmdline import Setting
from dgdgen.check.context import Context
from dgdgen.check.facts import ComponentFacts
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import PD_MUST_AGREE, PdKey
from dgdgen.check.rules import RuleMeta
from dgdgen.dgd import Role

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
)


def _value(comp: ComponentFacts, key: PdKey) -> tuple[str | None, Setting | None]:
    for k in key.keys:
        s = comp.setting(k)
        if s is None:
            continue
        if key.json_field is None:
            return s.value, s
        try:
            data = json.loads(s.value)
        except ValueError:
            return None, s  # not JSON: cannot be compared
        field = data.get(key.json_field) if isinstance(data, dict) else None
        return (str(field) if field is not None else None), s
    return key.default, None


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        if not h.disaggregated:
            continue
        prefill = [c for c in h.workers() if c.role is Role.PREFILL]
        decode = [c for c in h.workers() if c.role is Role.DECODE]
        for p in prefill:
            for d in decode:
                if p.backend is not d.backend:
                    continue
                for key in PD_MUST_AGREE:
                    if p.backend not in key.backends:
                        continue
                    pv, ps = _value(p, key)
                    dv, ds = _value(d, key)
                    if pv is None or dv is None or pv == dv \
                            or pv in key.engine_picks or dv in key.engine_picks \
                            or pv in key.prefill_accepts_any:
                        continue
                    at = ds or ps
                    assert at is not None  # two defaults are equal
                    comp = d if ds is not None else p
                    loc = h.dgd.location(at.path)
                    shown = "/".join(key.keys)
                    yield RULE.finding(
                        file=h.file, line=loc.line, column=loc.column,
                        message=f"{key.what} ({shown}) differs between prefill {p.name!r} "
                                f"({pv}{'' if ps else ', the default'}) and decode "
                                f"{d.name!r} ({dv}{'' if ds else ', the default'}): the "
                                "decode worker cannot read what the prefill worker hands over",
                        object=h.object, component=comp.name,
                        key=f"{p.name}:{d.name}:{key.keys[0]}",
                    )
