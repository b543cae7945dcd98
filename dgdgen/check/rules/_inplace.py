"""Shared by DGD201–DGD203: the base → head change of one DGD demands isolation but the manifest
changes the DGD in place, so the operator rolls old and new workers into one pool."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding
from dgdgen.check.flags import RENAME_CONSEQUENCE, RENAME_FIELDS, Category
from dgdgen.check.rules import RuleMeta

REMEDIATION = (
    "Roll the change out with isolation instead of editing the running DGD: write a rollout spec "
    "whose candidate carries this change and run `dgdgen plan` / `dgdgen render` (each "
    "generation becomes its own DGD in its own Dynamo namespace, traffic moves in gated steps). "
    "Or revert the change."
)


def in_place(ctx: Context, rule: RuleMeta, category: Category) -> Iterator[Finding]:
    for pair in ctx.dgds:
        if pair.verdict is None or pair.base is None or not pair.verdict.in_place:
            continue
        renamed = (f" (renamed from {pair.verdict.renamed_from})"
                   if pair.verdict.renamed_from else "")
        effect = rule.consequence(ctx.release)
        for change in pair.verdict.changes:
            if change.category is not category:
                continue
            this = (RENAME_CONSEQUENCE if category is Category.MDC
                    and change.field in RENAME_FIELDS else effect)
            tail = f"; on Dynamo {ctx.release} {this}" if this else ""
            line, col = ctx.location_of_change(pair, change)
            yield rule.finding(
                file=pair.head.file, line=line, column=col,
                message=f"{change.component}: {change.reason}; applied in place{renamed}, old and "
                        f"new workers share one Dynamo namespace{tail}",
                object=pair.head.object, component=change.component,
                key=f"{change.field}\x1f{change.old}\x1f{change.new}",
            )
