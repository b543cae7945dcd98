"""What a user reads cites what a user can open: the repository's docs, its tests, or upstream.

No document, rule text (`rules explain`, docs/rules, SARIF help), citation attached to a
checker finding, code comment, docstring, schema description or template may point at
`facts/*.md` or DESIGN.md, notes that ship with neither the package nor the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from gen_support import REPO


def test_docs_cite_no_facts_notes() -> None:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    hits = [f"{p.relative_to(REPO)}:{n}" for p in files
            for n, line in enumerate(p.read_text().splitlines(), 1) if "facts/" in line]
    assert not hits, hits


def test_rule_explanations_cite_no_facts_notes() -> None:
    from dgdgen.check.rules.registry import RULES
    for code in RULES:
        out = subprocess.run([sys.executable, "-m", "dgdgen", "rules", "explain", code],
                             capture_output=True, text=True, check=True).stdout
        assert code in out and "facts/" not in out, code


def test_finding_citations_cite_no_facts_notes() -> None:
    from dgdgen.check import flags
    entries = [*flags.MDC_INPUTS, *flags.KV_INPUTS, flags.UNKNOWN_ENGINE_FILE_MDC,
               *flags.FLAG_LIFECYCLE, *flags.PD_MUST_AGREE]
    assert entries
    bad = [e.cite for e in entries if "facts/" in e.cite or not e.cite.strip()]
    assert not bad, bad


# A citation of the notes: `facts/<name>.md`, its short form `facts §N`, or DESIGN.md (`§` also
# as JSON writes it, `\u00a7`).
_NOTES = re.compile(r"facts/|\b(?:facts|DESIGN) (?:§|\\u00a7)|\bDESIGN\.md\b")
# Everything a user reads or runs: the package (code, comments, docstrings, spec descriptions),
# the schemas, templates, docs, examples, and the files the package ships to a cluster.
_SHIPPED = ("dgdgen", "schemas", "templates", "docs", "examples", "argo", "policies")


def _shipped_text() -> list[tuple[Path, str]]:
    files = [REPO / "README.md"]
    for top in _SHIPPED:
        files += [p for p in sorted((REPO / top).rglob("*"))
                  if p.is_file() and "__pycache__" not in p.parts]
    out = []
    for p in files:
        try:
            out.append((p, p.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue  # images and other binaries
    return out


def test_note_pattern_matches_every_spelling() -> None:
    for cited in ("(facts/dynamo.md §2.1)", "``facts/dynamo-runtime.md``", "(facts §3.3)",
                  "DESIGN.md §1", "(DESIGN §4)", r"generations (facts \u00a73.1)"):
        assert _NOTES.search(cited), cited
    for fine in ("dgdgen.check.facts", "facts.py ``_tokens``", "docs/gitops.md §3",
                 "the facts cache"):
        assert not _NOTES.search(fine), fine


def test_shipped_files_cite_no_notes() -> None:
    files = _shipped_text()
    names = {p.relative_to(REPO).as_posix() for p, _ in files}
    # the scan reaches code, generated schema, overlays, templates and the shipped cluster files
    assert {"dgdgen/check/flags.py", "dgdgen/spec.py", "schemas/rollout-spec.schema.json",
            "schemas/overlays/dgd-proposed-rollout-fields.yaml", "argo/dgd-health.lua",
            "policies/cases/DGD107.yaml", "docs/checker.md"} <= names
    assert any(n.startswith("templates/") for n in names)
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()[:90]}" for p, text in files
            for n, line in enumerate(text.splitlines(), 1) if _NOTES.search(line)]
    assert not hits, "cite upstream, docs/ or a test instead:\n" + "\n".join(hits)
