"""Human text, yamllint-like: ``file:line:col: severity CODE slug: message``; colour on a TTY."""

from __future__ import annotations

from dgdgen.check.engine import Report
from dgdgen.check.findings import Finding, Severity

_COLOR = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}
_DIM, _BOLD, _RESET = "\033[2m", "\033[1m", "\033[0m"


def render(report: Report, *, color: bool = False) -> str:
    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    lines: list[str] = []
    # A rule's long texts (the in-place explanation, the fix) once per run: one edit can raise
    # several findings, and the pre-commit hook prints this report as it is.
    first: dict[tuple[str, str], Finding] = {}

    def earlier(key: tuple[str, str], f: Finding) -> str | None:
        """Where the text ``key`` was printed before ``f``, or None when ``f`` prints it."""
        seen = first.setdefault(key, f)
        if seen is f:
            return None
        at = f"line {seen.line}" if seen.file == f.file else f"{seen.file}:{seen.line}"
        return f"{seen.code} at {at}"

    for f in report.findings:
        where = f"{f.file}:{f.line}:{f.column}"
        sev = f.severity.value
        if f.suppressed:
            lines.append(paint(_DIM, f"{where}: suppressed {f.code} {f.slug}: {f.message} "
                                     f"[{f.suppression_reason}]"))
            continue
        message = f.message
        if f.explanation and message.endswith(f.explanation):
            seen = earlier((f.code, f.explanation), f)
            if seen is not None:
                message = message[:-len(f.explanation)] + f"as explained for {seen} above"
        lines.append(f"{paint(_BOLD, where)}: {paint(_COLOR[f.severity], sev)} {f.code} "
                     f"{f.slug}: {message}")
        fix = ""
        if f.remediation:
            seen = earlier(("fix", f.remediation), f)
            fix = f" · fix: {f.remediation}" if seen is None else f" · fix: as for {seen} above"
        lines.append(f"    {f.object}{fix}")
    for p in report.pairs:
        v = p.verdict
        if v is None or not v.changes:
            continue
        assumed = report.assumed_of(p)
        required = v.isolation_required or bool(assumed)
        mode = "isolation required" if required else "safe in place"
        if v.beside is not None:
            mode += f", isolated beside {v.beside}"
        shown = ", ".join(v.categories)
        if assumed:  # fail safe: what the checker cannot decide is assumed to change
            shown += ("; " if shown else "") + "assumed: " + ", ".join(assumed)
        cats = f" ({shown})" if shown else ""
        lines.append(f"{p.head.file}: {p.head.object}: {mode}{cats}; risk {v.risk.value}")
    c = report.counts()
    summary = (f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} info, "
               f"{c['suppressed']} suppressed in {c['files']} file(s); "
               f"{report.target.describe()}")
    if not report.pairs:
        # Routes and analysis templates have rules of their own, but a run that saw no DGD must
        # say so rather than look like a clean DGD check (docs/checker.md, "Nothing checked").
        summary += "; no DynamoGraphDeployment among them"
    lines.append(paint(_BOLD, summary))
    return "\n".join(lines) + "\n"
