"""A gate's verdict in one line that names what failed (STYLE.md principle 12: the metric and
its figure on the line that says "Failed"): ``Failed — quality Failed: 0 wins, 11 losses, 29
ties; sign test p=0.0005, candidate worse``.

One formatter for every console that says a verdict: `dgdgen analyze` (its last line, and the
message `--record` keeps with the result), the rehearsal's console (which reads that line off
the analyze output it also puts in report.md) and the GitOps `gate` command's subject."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dgdgen.analysis.expr import SUCCESSFUL

SKIPPED = "Skipped"
SEPARATOR = " — "  # between the verdict and what made it
VERDICT = "verdict: "  # how `dgdgen analyze` starts the line (tests/analysis read it too)


def figure(value: object) -> str:
    """A measured value as the analyze table prints it."""
    if value is None:
        return "-"
    if isinstance(value, list):
        return "[" + ", ".join(f"{v:.6g}" for v in value) + "]"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def metric_line(row: Mapping[str, object]) -> str:
    """``ttft-p95 Failed: 2.4 (pass if <= 2)``: a metric, its phase, its figure and threshold
    (or, where no value was measured — a quality comparison, an error — what was)."""
    detail = str(row.get("detail") or "")
    value = row.get("value")
    said = f"{figure(value)} ({detail})" if value is not None and detail else (
        figure(value) if value is not None else detail)
    return f"{row['metric']} {row['phase']}" + (f": {said}" if said else "")


def not_passed(rows: Sequence[Mapping[str, object]]) -> list[str]:
    """:func:`metric_line` of every metric that did not pass (nor was skipped)."""
    return [metric_line(r) for r in rows if r["phase"] not in (SUCCESSFUL, SKIPPED)]


def verdict_line(verdict: str, rows: Sequence[Mapping[str, object]]) -> str:
    """``Failed — quality Failed: 0 wins, ...; ttft-p95 Failed: 2.4 (pass if <= 2)``; a
    passed gate is its verdict alone."""
    bad = not_passed(rows) if verdict != SUCCESSFUL else []
    return verdict + (SEPARATOR + "; ".join(bad) if bad else "")


def from_output(output: str, verdict: str) -> str:
    """The verdict line a `dgdgen analyze` text output ends with (``verdict: ...``), or
    ``verdict`` alone when the output has none (an error before the table)."""
    for line in reversed(output.splitlines()):
        if line.startswith(VERDICT):
            return line[len(VERDICT):].strip()
    return verdict
