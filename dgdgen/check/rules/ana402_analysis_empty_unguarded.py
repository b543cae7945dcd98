"""ANA402 analysis-empty-unguarded."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.check.rules._analysis import conditions

RULE = RuleMeta(
    code="ANA402",
    slug="analysis-empty-unguarded",
    severity=Severity.ERROR,
    summary="An analysis condition indexes `result[0]` without guarding an empty result.",
    rationale=(
        "When the series does not exist yet (a new generation, a filter that matches nothing) "
        "the Prometheus provider returns an empty vector, `result[0]` raises, and the "
        "measurement is an Error; after more than consecutiveErrorLimit (4) errors the run ends "
        "as Error and the rollout aborts (Argo Rollouts metricproviders/prometheus/prometheus.go). `default(result, 0)` does not "
        "help for Prometheus."
    ),
    remediation=(
        "Test the length first: `len(result) > 0 && ...` (empty fails) or "
        "`len(result) == 0 || ...` (empty passes); or make the query return a sample "
        "(`... or vector(0)`), knowing it hides a missing generation."
    ),
    help="test `len(result) > 0 &&` (empty fails) or `len(result) == 0 ||` first",
)

_VECTOR_FALLBACK = re.compile(r"\bor\s+(on\s*\([^)]*\)\s*)?vector\s*\(", re.IGNORECASE)


def check(ctx: Context) -> Iterator[Finding]:
    for c in conditions(ctx):
        if not c.indexes_result or re.search(r"\blen\s*\(\s*result\s*\)", c.text):
            continue
        if _VECTOR_FALLBACK.search(c.query):
            continue
        loc = c.doc.location(("spec", "metrics", c.index, c.key))
        yield RULE.finding(
            file=c.doc.file, line=loc.line, column=loc.column,
            message=f"metric {c.metric!r}: {c.key} `{c.text.strip()}` indexes result without "
                    "len(result) guard",
            object=c.object, key=f"{c.metric}.{c.key}",
        )
