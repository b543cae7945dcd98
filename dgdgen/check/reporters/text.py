"""Human text, ruff / clippy-like: per finding one headline ``file:line:col: severity CODE
message`` (what changed, the consequence in a few words) and, the first time a rule fires in a
run, one ``help:`` line (what to do, where to read more). What many findings share — the
release, the worker backing, how an in-place roll of each DGD goes — is said once, after the
findings. ``--verbose`` adds each finding's whole text (mechanics, release specifics, sources)
and its full fix, wrapped; colour on a TTY."""

from __future__ import annotations

import re
import textwrap

from dgdgen.check.context import roll_of_dgd
from dgdgen.check.engine import Report
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.inplace import roll_summary

_COLOR = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m", Severity.INFO: "\033[36m"}
_DIM, _BOLD, _RESET = "\033[2m", "\033[1m", "\033[0m"
_ANSI = re.compile("\033\\[[0-9;]*m")
WIDTH = 100  # --verbose wraps the long texts to this many characters
MAX_LINE = 200  # no line longer: a headline after a long path is broken at its consequence


def explain_hint(code: str) -> str:
    """Where a rule's whole story is: its page, printed by ``dgdgen rules explain``."""
    return f"`dgdgen rules explain {code}`"


def help_line(f: Finding) -> str:
    """The one line of what to do under a finding's headline."""
    return f"  help: {f.help}; {explain_hint(f.code)}"


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    lines: list[str] = []
    # Each rule's help once per run: one edit can raise several findings of one rule (and
    # rules that share a help say it once too).
    helped: set[str] = set()
    helps: set[str] = set()
    # --verbose: a rule's long texts (the in-place explanation, the fix) once per run too.
    first: dict[tuple[str, str], Finding] = {}
    # The object only where a file's findings are about more than one.
    objects: dict[str, set[str]] = {}
    for f in report.findings:
        objects.setdefault(f.file, set()).add(f.object)

    def earlier(key: tuple[str, str], f: Finding) -> str | None:
        """Where the text ``key`` was printed before ``f``, or None when ``f`` prints it."""
        seen = first.setdefault(key, f)
        if seen is f:
            return None
        at = f"line {seen.line}" if seen.file == f.file else f"{seen.file}:{seen.line}"
        return f"{seen.code} at {at}"

    def wrapped(label: str, text: str) -> list[str]:
        return textwrap.wrap(text, WIDTH, initial_indent=f"    {label}",
                             subsequent_indent="      ", break_on_hyphens=False,
                             break_long_words=False)

    hidden = False
    for f in report.findings:
        where = f"{f.file}:{f.line}:{f.column}"
        which = f" [{f.object}]" if len(objects[f.file]) > 1 else ""
        if f.suppressed:
            lines.append(paint(_DIM, f"{where}: suppressed {f.code}: {f.message}{which} "
                                     f"[{f.suppression_reason}]"))
            continue
        slug = f" {f.slug}:" if verbose else ""
        lines.append(f"{paint(_BOLD, where)}: {paint(_COLOR[f.severity], f.severity.value)} "
                     f"{f.code}{slug} {f.message}{which}")
        if not verbose:
            hidden = hidden or bool(f.details) or bool(f.remediation)
            if f.code not in helped and f.help:
                helped.add(f.code)
                said = "as above" if f.help in helps else f.help
                helps.add(f.help)
                lines.append(f"  {paint(_DIM, 'help:')} {said}; {explain_hint(f.code)}")
            continue
        lines.append(f"    {f.object}" + (f", component {f.component}" if f.component else ""))
        details = f.details
        if details and f.explanation and details.endswith(f.explanation):
            seen = earlier((f.code, f.explanation), f)
            if seen is not None:
                details = details[:-len(f.explanation)] + f"as explained for {seen} above"
        if details:
            lines += wrapped("", details)
        if f.remediation:
            seen = earlier(("fix", f.remediation), f)
            lines += wrapped("fix: ", f.remediation if seen is None else f"as for {seen} above")
        lines.append(f"    see: {explain_hint(f.code)} (docs/rules/{f.code}.md)")
    several_files = len(report.files) > 1
    verdicts: list[str] = []
    for p in report.pairs:
        v = p.verdict
        if v is None or not v.changes:
            continue
        assumed = report.assumed_of(p)
        required = v.isolation_required or bool(assumed)
        mode = "isolation required" if required else "safe in place"
        if v.beside is not None:
            mode += f", isolated beside {v.beside}"
        if v.renamed_from is not None:
            mode += f", renamed from {v.renamed_from}"
        shown = ", ".join(v.categories)
        if assumed:  # fail safe: what the checker cannot decide is assumed to change
            shown += ("; " if shown else "") + "assumed: " + ", ".join(assumed)
        cats = f" ({shown})" if shown else ""
        # the grade matters to a reviewer when the model itself changes
        risk = f"; risk {v.risk.value}" if verbose or v.risk.rank > 0 else ""
        where = f"{p.head.file}: " if several_files or verbose else ""
        verdicts.append(f"{where}{p.head.object}: {mode}{cats}{risk}")
        alone = f"{mode}{cats}{risk}"  # the verdict when it is the run's only one
        if verbose and required and v.in_place:
            # how the operator would roll it: the context every in-place finding shares
            verdicts.append("  applied in place: "
                            + roll_summary(roll_of_dgd(report.target, p.head)))
    c = report.counts()
    counts = ", ".join(_count(c[k], k) for k in ("error", "warning", "info", "suppressed")
                       if c[k] or k == "error" or verbose)
    if c["files"] > 1 or verbose:
        counts += f" in {_count(c['files'], 'file')}"
    summary = f"{counts}; {report.target.describe() if verbose else report.target.brief()}"
    if not report.pairs:
        # Routes and analysis templates have rules of their own, but a run that saw no DGD must
        # say so rather than look like a clean DGD check (docs/checker.md, "Nothing checked").
        summary += "; no DynamoGraphDeployment among them"
    if hidden:
        summary += "; details: --verbose"
    if (len(verdicts) == 1 and len(report.pairs) == 1 and not verbose
            and len(alone) + 2 + len(summary) <= MAX_LINE):
        # one DGD, changed: its verdict and the run's summary on one line (the headlines name
        # its file)
        verdicts.pop()
        summary = f"{alone}; {summary}"
    lines += verdicts
    lines.append(paint(_BOLD, summary))
    return "".join(f"{part}\n" for line in lines for part in fit(line))


def _count(n: int, what: str) -> str:
    if what in ("info", "suppressed"):
        return f"{n} {what}"
    return f"{n} {what}" + ("" if n == 1 else "s")


def fit(line: str) -> list[str]:
    """``line`` as is, or — longer than :data:`MAX_LINE` (a long path before a headline) —
    broken where the headline says its consequence (the last ``: `` that leaves a first part
    short enough), else between words; the rest indented."""
    extra = len(line) - len(_ANSI.sub("", line))  # colour codes, all before the message
    if len(line) - extra <= MAX_LINE:
        return [line]
    cut = line.rfind(": ", 0, MAX_LINE + extra)
    if cut > MAX_LINE // 3:
        head, rest = line[:cut + 1], line[cut + 2:]
    else:
        parts = textwrap.wrap(line, MAX_LINE, break_on_hyphens=False, break_long_words=False)
        head, rest = parts[0], line[len(parts[0]):].strip()
    return [head, *textwrap.wrap(rest, MAX_LINE - 4, initial_indent="    ",
                                 subsequent_indent="    ", break_on_hyphens=False,
                                 break_long_words=False)]
