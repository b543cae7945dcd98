"""What a user reads cites what a user can open: the repository's docs, its tests, or upstream.

No document, rule text (`rules explain`, docs/rules, SARIF help), citation attached to a
checker finding, code comment, docstring, schema description, template, test or corpus source
may point at `facts/*.md` or DESIGN.md, notes that ship with neither the package nor the
repository."""

from __future__ import annotations

import re
from pathlib import Path

from gen_support import REPO, run_cli

# A citation of the notes: `facts/<name>.md`, its short form `facts §N`, or DESIGN.md (`§` also
# as JSON writes it, `\u00a7`).
_NOTES = re.compile(r"facts/|\b(?:facts|DESIGN) (?:§|\\u00a7)|\bDESIGN\.md\b")
# A line of a test that spells a note on purpose, as an example the checks must reject.
_EXAMPLE = "# not-a-citation: rejected"


def test_docs_cite_no_facts_notes() -> None:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    hits = [f"{p.relative_to(REPO)}:{n}" for p in files
            for n, line in enumerate(p.read_text().splitlines(), 1) if _NOTES.search(line)]
    assert not hits, hits


def test_rule_explanations_cite_no_facts_notes() -> None:
    from dgdgen.check.rules.registry import RULES
    for code in RULES:
        done = run_cli("rules", "explain", code)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        assert code in out and not _NOTES.search(out), code


def test_finding_citations_cite_no_facts_notes() -> None:
    from dgdgen.check import flags
    entries = [*flags.MDC_INPUTS, *flags.KV_INPUTS, flags.UNKNOWN_ENGINE_FILE_MDC,
               *flags.FLAG_LIFECYCLE, *flags.PD_MUST_AGREE]
    assert entries
    bad = [e.cite for e in entries if _NOTES.search(e.cite) or not e.cite.strip()]
    assert not bad, bad


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
    assert {"dgdgen/check/flags.py", "dgdgen/spec/__init__.py", "schemas/rollout-spec.schema.json",
            "schemas/overlays/dgd-proposed-rollout-fields.yaml", "argo/dgd-health.lua",
            "policies/cases/DGD107.yaml", "docs/checker.md"} <= names
    assert any(n.startswith("templates/") for n in names)
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()[:90]}" for p, text in files
            for n, line in enumerate(text.splitlines(), 1) if _NOTES.search(line)]
    assert not hits, "cite upstream, docs/ or a test instead:\n" + "\n".join(hits)


def _test_text() -> list[tuple[Path, str]]:
    """Every text file under tests/: test code, support modules, the corpus builder and the
    corpus cases' expected.json (whose ``source`` a reader follows), and the test data."""
    out = []
    for p in sorted((REPO / "tests").rglob("*")):
        if not p.is_file() or "__pycache__" in p.parts or p == Path(__file__).resolve():
            continue  # this file spells the notes to test the pattern
        try:
            out.append((p, p.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def _note_lines(text: str) -> list[tuple[int, str]]:
    """The lines of a test file that cite the notes, but for a line that spells one on purpose as
    an example a check must reject (it ends with the marker)."""
    return [(n, line) for n, line in enumerate(text.splitlines(), 1)
            if _NOTES.search(line) and not line.rstrip().endswith(_EXAMPLE)]


def test_tests_cite_no_notes() -> None:
    files = _test_text()
    names = {p.relative_to(REPO).as_posix() for p, _ in files}
    # the scan reaches test code, the corpus builder, the corpus sources and support modules
    assert {"tests/check/corpus/build.py", "tests/check/test_corpus.py", "tests/analysis/synth.py",
            "tests/check/corpus/vllm-image-bump-v1alpha1/expected.json",
            "tests/traffic/fake_frontend.py"} <= names
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()[:90]}" for p, text in files
            for n, line in _note_lines(text)]
    assert not hits, "cite upstream, docs/ or a test instead:\n" + "\n".join(hits)


def test_test_scan_catches_a_note() -> None:
    """The exemption is narrow: a note in a comment, a docstring or a corpus source is caught;
    only a line that ends with the example marker passes."""
    text = "\n".join((
        "# the card hashes files (facts/dynamo.md §3 item 3)",
        '  "source": "runtime:block-size; facts/dynamo.md \\u00a74",',
        '"""DESIGN.md §4 invariants."""',
        "x = 1  # facts §3.3",
        f'notes = ("facts §3.3",)  {_EXAMPLE}',
        f"# {_EXAMPLE} facts/dynamo.md (the marker must end the line)",
        "from dgdgen.check.facts import dgd_facts",
    ))
    assert [n for n, _ in _note_lines(text)] == [1, 2, 3, 4, 6]


# A section sign in a document: `docs/<page>.md, §N` names another page's section; a bare `§N`
# must be a numbered section (`## N.`) of the page it stands in, not a section of the notes.
_SECTION = re.compile(r"(?:(\b[\w/-]+\.md),? )?§\s*(\d+)")


def _bare_sections(text: str) -> list[str]:
    own = set(re.findall(r"^#+ (\d+)\.", text, flags=re.M))
    return [m[0] for m in _SECTION.finditer(text) if not m[1] and m[2] not in own]


def test_docs_section_signs_name_their_page() -> None:
    hits = [f"{p.relative_to(REPO)}: {s}" for p in [REPO / "README.md",
                                                    *sorted((REPO / "docs").rglob("*.md"))]
            for s in _bare_sections(p.read_text(encoding="utf-8"))]
    assert not hits, hits
    # what the check tells apart
    page = "## 3. Sync waves\n(§3) and (docs/gitops.md, §4) pass, (§1, streaming) does not\n"
    assert _bare_sections(page) == ["§1"]
    assert _bare_sections("weights are 0..256 (§3(a), (b))") == ["§3"]
