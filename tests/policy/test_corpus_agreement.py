"""Proof: the policy's CEL, evaluated with cel-python (and the Kubernetes CEL libraries of
dgdgen.crd.cel) on every old → new pair of the checker's corpus, denies exactly where
`dgdgen diff` reports DGD201 / DGD202 / DGD203 — except the known divergences listed here and in
docs/policy.md, each of which must still diverge exactly as recorded (so a fix or a regression
shows up as a failure, and the list stays true).

Long: the first test waits for the module's fixture, cel-python interpreting the policy on every
case (about a minute of CPU; more beside other tests); marked `long` (tests/suite_support.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from functools import cache

import pytest

from dgdgen.check.classify import pair_dgds
from dgdgen.cli import main
from dgdgen.model.dgd import read_dgds
from dgdgen.policy import Options, build
from dgdgen.policy.evaluate import evaluate
from dgdgen.yamlio import load_file

pytestmark = pytest.mark.long(minutes=2)

CORPUS = os.path.join(os.path.dirname(__file__), "..", "check", "corpus")
CASES = sorted(d for d in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, d))
               and not d.startswith(("_", ".")))
DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "policy.md")
IN_PLACE = ("DGD201", "DGD202", "DGD203")

# case → (codes the policy reports, codes `dgdgen diff` reports, why they differ)
KNOWN_DIVERGENCES: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {
    "trtllm-configmap-tokens-per-block": (
        (), ("DGD201", "DGD202"),
        "engine arguments in a ConfigMap: the DGD does not change, the ConfigMap is another "
        "object the policy never sees"),
    "trtllm-configmap-transceiver-backend": (
        (), ("DGD202",),
        "engine arguments in a ConfigMap: the DGD does not change, the ConfigMap is another "
        "object the policy never sees"),
    "vllm-configmap-env-jinja-template": (
        (), ("DGD201",),
        "an env value from a configMapKeyRef: the ConfigMap changes, the DGD does not"),
    "vllm-configmap-mounted-template-content": (
        (), ("DGD201",),
        "a flag naming a file of a mounted ConfigMap: the file changes, the DGD does not"),
    "vllm-configmap-arg-variable": (
        (), ("DGD201", "DGD202"),
        "a flag set to $(VAR) from a configMapKeyRef: the ConfigMap changes, the DGD does not"),
    "sh-c-env-variable-value": (
        (), ("DGD201",),
        "a `sh -c` script passes a flag as $VAR: the policy reads flags as written, it does not "
        "expand variables"),
    "vllm-kv-transfer-config-whitespace-only": (
        ("DGD202",), (),
        "JSON values are compared without blanks but not parsed: reordered keys look like a "
        "change (CEL has no JSON parser)"),
}


@cache
def _policy(version: str | None) -> dict[str, object]:
    return build(Options(dynamo_version=version))[0]


def _version(name: str) -> str | None:
    with open(os.path.join(CORPUS, name, "expected.json"), encoding="utf-8") as fh:
        value = json.load(fh).get("dynamo_version")
    return str(value) if value else None


def policy_codes(name: str) -> tuple[str, ...]:
    d = os.path.join(CORPUS, name)
    old = read_dgds(load_file(os.path.join(d, "old.yaml")))
    new = read_dgds(load_file(os.path.join(d, "new.yaml")))
    policy = _policy(_version(name))
    codes: set[str] = set()
    for base, head in pair_dgds(old, new):
        if base is None:
            continue  # a CREATE: the policy matches UPDATE only
        out = evaluate(policy, base.doc, head.doc)
        assert not out.errors, out.errors  # failurePolicy must never be what decides
        codes.update(out.codes)
    return tuple(sorted(codes))


def diff_codes(name: str) -> tuple[str, ...]:
    d = os.path.join(CORPUS, name)
    argv = ["diff", os.path.join(d, "old.yaml"), os.path.join(d, "new.yaml"),
            "--format", "json", "--fail-on", "never"]
    version = _version(name)
    if version:
        argv += ["--dynamo-version", version]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0
    report = json.loads(buf.getvalue())
    return tuple(sorted({f["code"] for f in report["findings"] if f["code"] in IN_PLACE}))


Outcomes = dict[str, tuple[tuple[str, ...], tuple[str, ...]]]


@pytest.fixture(scope="module")
def outcomes() -> Outcomes:
    """Every case through the policy and through `dgdgen diff`, once for the module: cel-python
    interprets the policy's CEL for about a minute of CPU over the corpus (a module-scoped fixture
    also keeps the module's tests on one pytest-xdist worker: tests/suite_support.py)."""
    return {name: (policy_codes(name), diff_codes(name)) for name in CASES}


@pytest.mark.parametrize("name", CASES)
def test_policy_denies_where_diff_reports(name: str, outcomes: Outcomes) -> None:
    got, want = outcomes[name]
    if name in KNOWN_DIVERGENCES:
        policy, diff, reason = KNOWN_DIVERGENCES[name]
        assert (got, want) == (policy, diff), f"the recorded divergence changed ({reason})"
        return
    assert got == want


def test_corpus_has_denials_and_admissions(outcomes: Outcomes) -> None:
    # Not vacuous: the corpus exercises every rule and the admitted side.
    seen = {c for got, _ in outcomes.values() for c in got}
    assert seen == set(IN_PLACE)
    assert any(got == () for got, _ in outcomes.values())


def test_divergences_and_agreement_are_documented(outcomes: Outcomes) -> None:
    with open(DOCS, encoding="utf-8") as fh:
        doc = fh.read()
    for name in KNOWN_DIVERGENCES:
        assert f"`{name}`" in doc, name
    agree = sum(1 for got, want in outcomes.values() if got == want)
    stated = re.search(r"agrees with `dgdgen diff` on \*\*(\d+) of (\d+)\*\* corpus cases", doc)
    assert stated is not None
    assert (int(stated.group(1)), int(stated.group(2))) == (agree, len(CASES)), (
        f"docs/policy.md must state the measured agreement: {agree} of {len(CASES)}")


def test_a_second_engine_agrees(outcomes: Outcomes) -> None:
    """cel-cpp (PyPI cel-expr-python, Google's C++ CEL) decides every corpus case as cel-python
    does: the verdicts are not an artefact of one interpreter."""
    pytest.importorskip("cel_expr_python", reason="cel-expr-python (cel-cpp) not installed")
    from dgdgen.policy import typecheck

    for name in CASES:
        d = os.path.join(CORPUS, name)
        old = read_dgds(load_file(os.path.join(d, "old.yaml")))
        new = read_dgds(load_file(os.path.join(d, "new.yaml")))
        codes: set[str] = set()
        for base, head in pair_dgds(old, new):
            if base is not None:
                codes.update(typecheck.evaluate(_policy(_version(name)), base.doc, head.doc) or ())
        assert tuple(sorted(codes)) == outcomes[name][0], name
