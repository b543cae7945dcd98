"""Shared by DGD103 / DGD104: flags the target Dynamo release deprecates or removed."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.facts import line_of
from dgdgen.check.findings import Finding
from dgdgen.check.flags import FLAG_LIFECYCLE
from dgdgen.check.rules import RuleMeta


def lifecycle(ctx: Context, rule: RuleMeta, state: str) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        for comp in h.components.values():
            if not comp.is_worker:
                continue
            for status in FLAG_LIFECYCLE:
                if comp.backend not in status.backends or status.state(ctx.release) != state:
                    continue
                hits = [(raw, s) for raw, s in comp.raw_flags
                        if "--" + raw[2:].replace("_", "-") == status.flag]
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
