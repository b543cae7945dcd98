"""Shared by DGD103 / DGD104: flags the target Dynamo release deprecates or removed."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.facts import line_of
from dgdgen.check.findings import Finding
from dgdgen.check.flags import FLAG_LIFECYCLE
from dgdgen.check.rules import RuleMeta
from dgdgen.dgd import Backend


def lifecycle(ctx: Context, rule: RuleMeta, state: str) -> Iterator[Finding]:
    # The flags in this state in the target release, per backend: decided once, not per worker.
    statuses = [s for s in FLAG_LIFECYCLE if s.state(ctx.release) == state]
    by_backend = {b: [s for s in statuses if b in s.backends] for b in Backend}
    for pair in ctx.dgds:
        h = pair.head
        for comp in h.components.values():
            mine = by_backend[comp.backend]
            if not mine or not comp.is_worker:
                continue
            spelled = [("--" + raw[2:].replace("_", "-"), raw, s) for raw, s in comp.raw_flags]
            for status in mine:
                hits = [(raw, s) for flag, raw, s in spelled if flag == status.flag]
                if status.env and status.env in comp.env:
                    hits.append((status.env, comp.env[status.env]))
                for raw, s in hits:
                    line, col = line_of(h.dgd, s.path, s.offset)
                    yield rule.finding(
                        file=h.file, line=line, column=col,
                        message=(f"{comp.name}: {raw} is {state} for {comp.backend.value} in "
                                 f"Dynamo {ctx.release}; use {status.replacement} "
                                 f"({status.cite})"),
                        object=h.object, component=comp.name, key=raw,
                    )
