"""DGD001 suppression-without-reason."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context, annotations_of, object_id
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.suppress import ANNOTATION, parse_annotations

RULE = RuleMeta(
    code="DGD001",
    slug="suppression-without-reason",
    severity=Severity.WARNING,
    summary=f"A `{ANNOTATION}` suppression gives no reason, so it is not applied.",
    rationale=(
        "A suppression is a decision someone must be able to review later. Peer checkers require "
        "a reason (kube-linter `ignore-check.kube-linter.io/<check>: \"<reason>\"`, Checkov "
        "`checkov.io/skip1: ID=reason`; conftest #432 asks for one)."
    ),
    remediation=f'Write the reason after the code: `{ANNOTATION}: "DGD105: dev cluster, a '
                'capacity gap is acceptable"`.',
    help='give the suppression a reason: `dgdgen.dev/ignore: "CODE: why"`',
)


def check(ctx: Context) -> Iterator[Finding]:
    for doc in ctx.documents():
        ann = annotations_of(doc.data)
        for entry in parse_annotations(ann):
            if entry.reason:
                continue
            loc = doc.location(("metadata", "annotations", entry.annotation))
            yield RULE.finding(
                file=doc.file, line=loc.line, column=loc.column,
                message=f"suppression of {entry.selector!r} has no reason and is not applied",
                object=object_id(doc.data), key=entry.selector,
            )
