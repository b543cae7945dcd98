"""ANA401 analysis-nan-unguarded."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._analysis import conditions

RULE = RuleMeta(
    code="ANA401",
    slug="analysis-nan-unguarded",
    severity=Severity.ERROR,
    summary="An analysis condition on a Prometheus result has no NaN guard.",
    rationale=(
        "histogram_quantile and ratios over no traffic return NaN, and every comparison with NaN "
        "is false: `successCondition: result[0] <= 2.0` then fails the step when there is no "
        "traffic, `failureCondition: result[0] > 2.0` alone passes it, both together give "
        "Inconclusive (Argo Rollouts utils/evaluate/evaluate.go). A gate must decide "
        "no-data explicitly: too little traffic is inconclusive, never a pass "
        "(docs/analysis.md, \"Too little data is never a pass\")."
    ),
    remediation=(
        "Guard the value: `len(result) > 0 && !isNaN(result[0]) && result[0] <= {{args.max}}` "
        "(no data fails) or `isNaN(result[0]) || ...` (no data passes, deliberately)."
    ),
    help="guard the value with `!isNaN(result[0])` (no data fails) or `isNaN(result[0]) ||`",
)


def check(ctx: Context) -> Iterator[Finding]:
    for c in conditions(ctx):
        if "isNaN(" in c.text:
            continue
        loc = c.doc.location(("spec", "metrics", c.index, c.key))
        yield RULE.finding(
            file=c.doc.file, line=loc.line, column=loc.column,
            message=f"metric {c.metric!r}: {c.key} `{c.text.strip()}` has no isNaN() guard",
            object=c.object, key=f"{c.metric}.{c.key}",
        )
