"""SARIF 2.1.0 (OASIS), validated against the vendored schema in tests
(schemas/sarif-2.1.0.schema.json). Levels: error → error, warning → warning, info → note;
suppressed findings carry ``suppressions`` with the justification."""

from __future__ import annotations

import json
from urllib.parse import quote

from dgdgen import __version__
from dgdgen.check.engine import Report
from dgdgen.check.findings import Severity
from dgdgen.check.rules.registry import RULES

LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
DOCS = "docs/rules/{code}.md"


def render(report: Report, *, color: bool = False, verbose: bool = False) -> str:
    codes = [m.RULE.code for m in report.rules] or sorted(RULES)
    index = {code: i for i, code in enumerate(codes)}
    rules = []
    for code in codes:
        meta = RULES[code].RULE
        target = report.target
        effect = meta.consequence(target.release, target.namespaces)
        on = f"On {target.describe()}, applied in place: {effect}. " if effect else ""
        on_md = f"**On {target.describe()}:** {effect}.\n\n" if effect else ""
        rules.append({
            "id": meta.code,
            "name": meta.slug,
            "shortDescription": {"text": meta.summary},
            "fullDescription": {"text": meta.rationale},
            "help": {"text": on + meta.remediation,
                     "markdown": f"{on_md}**Fix:** {meta.remediation}\n\n"
                                 f"See `{DOCS.format(code=code)}`."},
            "defaultConfiguration": {"level": LEVEL[meta.severity]},
            "properties": {"tags": [t for t in ("rollout", meta.category) if t]},
        })
    results = []
    for f in report.findings:
        result: dict[str, object] = {
            "ruleId": f.code,
            "level": LEVEL[f.severity],
            # short text for the alert list; the whole finding as its markdown (SARIF 2.1.0
            # §3.11: a viewer that renders Markdown shows it instead of the text)
            "message": {"text": f"{f.message} [{f.object}]",
                        "markdown": f"{f.message} [{f.object}]\n\n{f.details or f.message}"},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": quote(f.file.replace("\\", "/"))},
                    "region": {"startLine": f.line, "startColumn": f.column},
                },
                "logicalLocations": [{"fullyQualifiedName": f.object, "kind": "object"}],
            }],
            "partialFingerprints": {"dgdgenFindingHash/v1": f.fingerprint},
            "properties": {"slug": f.slug, **({"category": f.category} if f.category else {})},
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.suppressed:
            result["suppressions"] = [{"kind": "inSource" if "(annotation)" in
                                       (f.suppression_reason or "") else "external",
                                       "justification": f.suppression_reason or ""}]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "dgdgen",
                "version": __version__,
                "rules": rules,
            }},
            "results": results,
            "columnKind": "unicodeCodePoints",
            "properties": {"isolationRequired": report.isolation_verdict,
                           "assumed": report.assumed,
                           "dynamoVersion": report.release,
                           "workersRunBy": report.run_by.value},
        }],
    }
    return json.dumps(log, indent=2, sort_keys=True) + "\n"
