"""Where the prefill and decode workers of one disaggregated DGD disagree on what the KV hand-over
needs to agree on (:data:`dgdgen.check.flags.PD_MUST_AGREE`). Read by DGD108 (the disagreement
itself) and by DGD202 (what an in-place roll of such a graph does: the operator brings the new
prefill and decode workers up together, so they must agree with each other)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from dgdgen.check.cmdline import Setting
from dgdgen.check.facts import ComponentFacts, DgdFacts
from dgdgen.check.flags import PD_MUST_AGREE, PdKey
from dgdgen.model.dgd import Role


@dataclass(frozen=True)
class Mismatch:
    prefill: ComponentFacts
    decode: ComponentFacts
    key: PdKey
    prefill_value: str
    decode_value: str
    prefill_setting: Setting | None  # None: the engine's default
    decode_setting: Setting | None


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


def mismatches(head: DgdFacts) -> Iterator[Mismatch]:
    """Every (prefill, decode, setting) of ``head`` whose two values cannot work together."""
    if not head.disaggregated:
        return
    prefill = [c for c in head.workers() if c.role is Role.PREFILL]
    decode = [c for c in head.workers() if c.role is Role.DECODE]
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
                yield Mismatch(p, d, key, pv, dv, ps, ds)
