"""GitHub Actions workflow commands: ``::error file=F,line=L,col=C,title=T::message``
(docs.github.com, "Workflow commands for GitHub Actions": data escapes %, CR, LF; property values
also escape ':' and ','). An annotation is read beside the diff: the title is the rule, the
message the finding's headline and one ``help:`` line; the whole text is in the JSON and SARIF
reports and on the rule's page."""

from __future__ import annotations

from dgdgen.check.engine import Report
from dgdgen.check.findings import Severity

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    lines = []
    for f in report.findings:
        level = "notice" if f.suppressed else LEVEL[f.severity]
        title = f"{f.code} {f.slug}" + (" (suppressed)" if f.suppressed else "")
        message = f"{f.message} [{f.object}]"
        if f.suppressed:
            message += f" suppressed: {f.suppression_reason}"
        elif f.help:
            message += f"\nhelp: {f.help}; `dgdgen rules explain {f.code}`"
        props = ",".join((f"file={escape_property(f.file)}", f"line={f.line}",
                          f"col={f.column}", f"title={escape_property(title)}"))
        lines.append(f"::{level} {props}::{escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")
