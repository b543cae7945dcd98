"""What a user reads cites what a user can open: the repository's docs, its tests, or upstream.

No document, rule text (`rules explain`, docs/rules, SARIF help) or citation attached to a
checker finding may point at `facts/*.md`, notes that ship with neither the package nor the
repository."""

from __future__ import annotations

import subprocess
import sys

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
