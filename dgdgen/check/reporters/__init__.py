"""Output formats: one module each with ``render(report, *, color) -> str``, picked from
:data:`REPORTERS` by name (STYLE.md principle 5: no `if fmt == ...` chains)."""

from __future__ import annotations

import importlib
from typing import Protocol

from dgdgen.check.engine import Report

REPORTERS: dict[str, str] = {
    "text": "dgdgen.check.reporters.text",
    "json": "dgdgen.check.reporters.json",
    "sarif": "dgdgen.check.reporters.sarif",
    "github": "dgdgen.check.reporters.github",
    "junit": "dgdgen.check.reporters.junit",
}


class Reporter(Protocol):
    def render(self, report: Report, *, color: bool = False, verbose: bool = False) -> str: ...


def render(name: str, report: Report, *, color: bool = False, verbose: bool = False) -> str:
    """``verbose``: the text report's whole findings; the other formats always carry them
    (JSON ``details``, SARIF message markdown and rule help, JUnit failure text)."""
    module: Reporter = importlib.import_module(REPORTERS[name])
    return module.render(report, color=color, verbose=verbose)
