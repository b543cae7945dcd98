"""Every rule: registered once, documented, and proven by its fire / don't-fire case file
(policies/cases/<CODE>.yaml, also the examples of its docs)."""

from __future__ import annotations

import os
import re

import pytest

from dgdgen.check import docs
from dgdgen.check.context import FileInput
from dgdgen.check.engine import Options, run
from dgdgen.check.flags import normalize_release
from dgdgen.check.inplace import parse_run_by
from dgdgen.check.rules.registry import RULES
from dgdgen.yamlio import load_documents_fast

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES_DIR = os.path.join(REPO, "policies", "cases")
RULES_DIR = os.path.join(REPO, "dgdgen", "check", "rules")


def test_registry_is_complete() -> None:
    modules = {f[:-3] for f in os.listdir(RULES_DIR)
               if re.match(r"^[a-z]{3}\d{3}_.*\.py$", f)}
    registered = {m.__name__.rsplit(".", 1)[-1] for m in RULES.values()}
    assert modules == registered


def test_codes_and_slugs_are_unique_and_well_formed() -> None:
    metas = [m.RULE for m in RULES.values()]
    assert len({m.code for m in metas}) == len(metas)
    names = [m.slug for m in metas] + [a for m in metas for a in m.aliases]
    assert len(set(names)) == len(names)
    for m in metas:
        assert re.fullmatch(r"(DGD|RTE|ANA)\d{3}", m.code), m.code
        assert re.fullmatch(r"[a-z][a-z0-9-]+", m.slug), m.slug
        module = RULES[m.code].__name__.rsplit(".", 1)[-1]
        assert module.startswith(m.code.lower() + "_" + m.slug.replace("-", "_")), module


def test_every_rule_has_docs_and_both_kinds_of_case() -> None:
    assert sorted(f[:-5] for f in os.listdir(CASES_DIR) if f.endswith(".yaml")) == sorted(RULES)
    for code, module in RULES.items():
        meta = module.RULE
        for text in (meta.summary, meta.rationale, meta.remediation):
            assert len(text) > 20, code
        # A citation a user can open: an upstream PR / issue, a source file, or a published CRD.
        assert re.search(r"#\d+|\w\.(?:go|py|rs|md)\b|CRD", meta.rationale), \
            f"{code}: rationale cites nothing"
        # (no citation of notes users do not have: tests/test_citations.py scans the rule text)
        kinds = {c.expect for c in docs.cases(code)}
        assert kinds == {"fire", "pass"}, code


ALL_CASES = [(code, c) for code in sorted(RULES) for c in docs.cases(code)]


@pytest.mark.parametrize("code,case", ALL_CASES,
                         ids=[f"{code}-{i}" for i, (code, _) in enumerate(ALL_CASES)])
def test_case(code: str, case: docs.Case) -> None:
    head = load_documents_fast(case.head, "case.yaml")
    base = load_documents_fast(case.base, "case.yaml") if case.base is not None else None
    report = run([FileInput("case.yaml", head, base)],
                 Options(release=normalize_release(case.dynamo_version),
                         run_by=parse_run_by(case.workers_run_by)))
    hits = [f for f in report.findings if f.code == code]
    if case.expect == "fire":
        assert hits, case.name
        if case.count is not None:
            assert len(hits) == case.count, [f.message for f in hits]
        for f in hits:
            assert f.line >= 1 and f.file == "case.yaml"
    else:
        assert case.expect == "pass"
        assert not hits, [f.message for f in hits]


def test_committed_rule_docs_are_current() -> None:
    out_dir = os.path.join(REPO, "docs", "rules")
    for name, text in docs.pages().items():
        path = os.path.join(out_dir, name)
        assert os.path.exists(path), f"run: python -m dgdgen.check.docs --write docs/rules ({name})"
        with open(path, encoding="utf-8") as fh:
            assert fh.read() == text, "stale: python -m dgdgen.check.docs --write docs/rules"
