"""Shared by DGD201–DGD203: the base → head change of one DGD demands isolation but the manifest
changes the DGD in place. What the operator then does — old and new workers side by side in
hash-suffixed namespaces, ungated, or both in one namespace — comes from the one model,
:mod:`dgdgen.check.inplace`, for the release and worker backing the user names."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.classify import MODEL_REMOVED_FIELD, Change, runtime_replaced
from dgdgen.check.context import Context, DgdPair
from dgdgen.check.findings import Finding
from dgdgen.check.flags import Category
from dgdgen.check.headline import what_changed
from dgdgen.check.inplace import (
    BOTH,
    MODEL_REMOVED,
    MODEL_REMOVED_SHORT,
    RENAME_FIELDS,
    roll_consequence,
    roll_headline,
)
from dgdgen.check.pd import mismatches
from dgdgen.check.rules import RuleMeta

REMEDIATION = (
    "Roll the change out with isolation instead of editing the running DGD: write a rollout spec "
    "whose candidate carries this change and run `dgdgen plan` / `dgdgen render` (each "
    "generation becomes its own DGD in its own Dynamo namespace, traffic moves in gated steps "
    "that can stop and roll back). Or revert the change."
)
HELP = "roll it out gated (`dgdgen plan`), or revert"


def in_place(ctx: Context, rule: RuleMeta, category: Category) -> Iterator[Finding]:
    for pair in ctx.dgds:
        if pair.verdict is None or pair.base is None or not pair.verdict.in_place:
            continue
        renamed = (f" (renamed from {pair.verdict.renamed_from})"
                   if pair.verdict.renamed_from else "")
        roll = ctx.roll(pair)
        replaced = runtime_replaced(pair.verdict.changes, pair.head)
        # a KV edit after which the head's own prefill and decode disagree (DGD108)
        m = next(mismatches(pair.head), None) if category is Category.KV else None
        split = (m.key.what, m.prefill_value, m.decode_value) if m is not None else None
        for change in pair.verdict.changes:
            if change.category is not category or change.assumed:
                continue  # assumed changes are DGD205's
            if change.field == MODEL_REMOVED_FIELD:
                # the same on every release and namespace layout
                effect, short = MODEL_REMOVED, MODEL_REMOVED_SHORT
            else:
                rename = category is Category.MDC and (
                    change.field in RENAME_FIELDS or _served_name_changes(pair, change))
                effect = roll_consequence(category, roll, rename=rename,
                                          replaced=replaced or BOTH, split=split)
                short = roll_headline(category, roll, rename=rename,
                                      replaced=replaced or BOTH, split=split)
            line, col = ctx.location_of_change(pair, change)
            yield rule.finding(
                file=pair.head.file, line=line, column=col,
                message=f"{what_changed(change)}: {short}",
                details=f"{change.component}: {change.reason}; applied in place{renamed}: "
                        f"{effect}",
                object=pair.head.object, component=change.component,
                key=change.key, explanation=effect,
            )


# The flags the served name falls back to when `--served-model-name` is not given: every backend
# of ai-dynamo 1.6.1 serves the model under its path then (dynamo/vllm/args.py: served_model_name
# = [model]; dynamo/sglang/args.py: served_model_name = model_path; dynamo/trtllm registers
# `served_model_name or model`).
_SERVED_NAME_SOURCES = frozenset({"--model", "--model-path"})


def _served_name_changes(pair: DgdPair, change: Change) -> bool:
    """A change of the model path that also changes the name clients call (no
    `--served-model-name` pins it)."""
    if change.field not in _SERVED_NAME_SOURCES or pair.base is None:
        return False
    old = pair.base.components.get(change.component)
    new = pair.head.components.get(change.component)
    return old is not None and new is not None and \
        old.served_model_name != new.served_model_name
