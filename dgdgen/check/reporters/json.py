"""JSON: ``isolation_required``, ``findings`` (code, slug, severity, category, message, file,
line, column, object, ...), the per-DGD verdicts and a summary. Keys sorted, stable."""

from __future__ import annotations

import json as _json

from dgdgen.check.engine import Report


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    return _json.dumps(report.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
