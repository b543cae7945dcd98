"""The classification corpus: real upstream DGDs, one realistic edit each, hand-written expected
verdicts (tests/check/corpus/build.py). Runs the real command line, as the held-out corpus does."""

from __future__ import annotations

import json
import os
import re

import pytest
from gen_support import run_cli

CORPUS = os.path.join(os.path.dirname(__file__), "corpus")
CASES = sorted(d for d in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, d))
               and not d.startswith(("_", ".")))


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Upstream repositories a source may cite, each with a version that pins what was read.
_UPSTREAM = r"(?:ai-dynamo/dynamo|vllm-project/vllm|sgl-project/sglang|NVIDIA/TensorRT-LLM) "
_VERSION = r"(?:\b[0-9a-f]{9,40}\b|#\d+|\b\d+\.\d+\.\d+(?:rc\d+)?\b)"
# A file of the installed ai-dynamo wheel (dynamo/...), at the release the tables are built for.
_WHEEL = re.compile(r"ai-dynamo 1\.6\.1 (dynamo/[\w/]+\.py)\b")
# A file of this repository.
_REPO_FILE = re.compile(r"((?:docs|tests|dgdgen)/[\w./-]+\.(?:md|py))\b")


def citation_problem(part: str, truth: str, wheel: str | None) -> str | None:
    """Why one citation of a corpus source cannot be opened by a reader, or None when it can:
    a runtime probe that tests/check/test_runtime_truth.py runs, an https URL, an upstream file
    with the commit / release / PR it was read at, a file of the installed ai-dynamo 1.6.1 wheel
    (checked where the wheel is installed), or a file of this repository that exists."""
    if m := re.fullmatch(r"runtime:([a-z0-9-]+)", part):
        return None if f'Probe("{m[1]}"' in truth else f"no runtime probe {m[1]!r}"
    if part.startswith("https://"):
        return None
    if re.match(_UPSTREAM, part):
        return None if re.search(_VERSION, part) else "upstream file without a version"
    if m := _WHEEL.match(part):
        if wheel is not None and not os.path.isfile(os.path.join(wheel, m[1])):
            return f"no {m[1]} in the installed ai-dynamo wheel"
        return None
    if m := _REPO_FILE.match(part):
        return None if os.path.isfile(os.path.join(REPO, m[1])) else f"no {m[1]} here"
    return "not a citation a reader can open"


def _wheel_root() -> str | None:
    """site-packages of the installed ai-dynamo wheel, or None (the runtime tests need it)."""
    import importlib.util

    spec = importlib.util.find_spec("dynamo")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.dirname(list(spec.submodule_search_locations)[0])


def test_citation_check_is_not_vacuous() -> None:
    truth = 'Probe("block-size", ...)'
    for good in ("runtime:block-size", "https://github.com/ai-dynamo/dynamo/pull/12023",
                 "ai-dynamo/dynamo 2a6da14c8 lib/llm/src/model_card.rs mdcsum()",
                 "ai-dynamo/dynamo #6483 (deprecated)", "docs/checker.md (Prefix selection)",
                 "ai-dynamo 1.6.1 dynamo/vllm/args.py (served_model_name)"):
        assert citation_problem(good, truth, None) is None, good
    # the notes users do not have, as the sources used to cite them
    notes = ("facts/dynamo.md §3.3", "facts §3.3", "DESIGN.md §1")  # not-a-citation: rejected
    for bad in ("runtime:no-such-probe", *notes,
                "ai-dynamo/dynamo lib/llm/src/model_card.rs", "docs/no-such-page.md",
                "ai-dynamo argument parsers", "issue 13 item 3"):
        assert citation_problem(bad, truth, None) is not None, bad
    if (wheel := _wheel_root()) is not None:
        assert citation_problem("ai-dynamo 1.6.1 dynamo/vllm/no_such.py", truth, wheel)
        assert citation_problem("ai-dynamo 1.6.1 dynamo/vllm/args.py", truth, wheel) is None


@pytest.mark.parametrize("name", CASES)
def test_case_says_where_its_expectation_comes_from(name: str) -> None:
    """Every case names its source, each citation one a reader can open (citation_problem):
    a runtime probe that the runtime-backed tests really run (tests/check/test_runtime_truth.py),
    the upstream source at a named version, the installed 1.6.1 parsers, or this repository's
    docs."""
    with open(os.path.join(CORPUS, name, "expected.json"), encoding="utf-8") as fh:
        source = json.load(fh).get("source", "")
    assert source.strip(), f"{name}: no source"
    with open(os.path.join(os.path.dirname(__file__), "test_runtime_truth.py"),
              encoding="utf-8") as fh:
        truth = fh.read()
    wheel = _wheel_root()
    problems = [(part, why) for part in source.split("; ")
                if (why := citation_problem(part, truth, wheel)) is not None]
    assert not problems, f"{name}: {problems}"


@pytest.mark.parametrize("name", CASES)
def test_verdict(name: str) -> None:
    d = os.path.join(CORPUS, name)
    with open(os.path.join(d, "expected.json"), encoding="utf-8") as fh:
        expected = json.load(fh)
    cmd = ["diff", os.path.join(d, "old.yaml"),
           os.path.join(d, "new.yaml"), "--format", "json", "--fail-on", "never"]
    if expected.get("dynamo_version"):
        cmd += ["--dynamo-version", expected["dynamo_version"]]
    proc = run_cli(*cmd)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # Fail safe: what the checker cannot decide (a value set on one side whose default the
    # engine derives from the model's files) is assumed to change: isolation_required is
    # true, the category listed under assumed, never under categories.
    got = {"isolation_required": report["isolation_required"],
           "categories": report["categories"], "risk": report["risk"],
           "assumed": report["assumed"]}
    want = {k: expected[k] for k in ("isolation_required", "categories", "risk")}
    want["assumed"] = expected.get("assumed", [])
    assert got == want, expected.get("note")
    # The categories of the findings agree with the verdict (the held-out corpus reads both):
    # the known ones with `categories`; a fail-safe finding (DGD205) carries the category of the
    # input it could not resolve, which is `assumed` unless a known change already has it.
    known = sorted({f["category"] for f in report["findings"]
                    if f["category"] and f["code"] != "DGD205"})
    assert known == expected["categories"]
    fail_safe = [f for f in report["findings"] if f["code"] == "DGD205"]
    assert all(f["category"] for f in fail_safe), fail_safe
    assert sorted({f["category"] for f in fail_safe} - set(known)) == want["assumed"]


def test_checker_doc_cites_only_probes_that_exist() -> None:
    """docs/checker.md's table says "runtime `probe`": each such probe is really run."""
    import re

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(repo, "docs", "checker.md"), encoding="utf-8") as fh:
        doc = fh.read()
    with open(os.path.join(os.path.dirname(__file__), "test_runtime_truth.py"),
              encoding="utf-8") as fh:
        truth = fh.read()
    cited = set()
    for cell in re.findall(r"\| runtime ((?:`[a-z0-9-]+`(?:, )?)+)", doc):
        cited.update(re.findall(r"`([a-z0-9-]+)`", cell))
    assert len(cited) >= 15
    for probe in sorted(cited):
        assert f'Probe("{probe}"' in truth, probe
