"""The classification corpus: real upstream DGDs, one realistic edit each, hand-written expected
verdicts (tests/check/corpus/build.py). Runs the real command line, as the held-out corpus does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CORPUS = os.path.join(os.path.dirname(__file__), "corpus")
CASES = sorted(d for d in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, d))
               and not d.startswith(("_", ".")))


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", CASES)
def test_case_says_where_its_expectation_comes_from(name: str) -> None:
    """Every case names its source: a fact, the installed parsers, or a runtime probe that the
    runtime-backed tests really run (tests/check/test_runtime_truth.py)."""
    import re

    with open(os.path.join(CORPUS, name, "expected.json"), encoding="utf-8") as fh:
        source = json.load(fh).get("source", "")
    assert source.strip(), f"{name}: no source"
    probes = re.findall(r"runtime:([a-z0-9-]+)", source)
    with open(os.path.join(os.path.dirname(__file__), "test_runtime_truth.py"),
              encoding="utf-8") as fh:
        truth = fh.read()
    for probe in probes:
        assert f'Probe("{probe}"' in truth, f"{name}: no runtime probe {probe!r}"
    # An engine's own source (repository, file, commit) also counts: KV-compatibility inputs.
    assert probes or re.search(r"facts/|DESIGN\.md|ai-dynamo|issue 13|vllm-project/vllm "
                               r"|sgl-project/sglang |NVIDIA/TensorRT-LLM ", source), source


@pytest.mark.parametrize("name", CASES)
def test_verdict(name: str) -> None:
    d = os.path.join(CORPUS, name)
    with open(os.path.join(d, "expected.json"), encoding="utf-8") as fh:
        expected = json.load(fh)
    cmd = [sys.executable, "-m", "dgdgen", "diff", os.path.join(d, "old.yaml"),
           os.path.join(d, "new.yaml"), "--format", "json", "--fail-on", "never"]
    if expected.get("dynamo_version"):
        cmd += ["--dynamo-version", expected["dynamo_version"]]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # "cannot tell" (a value set on one side whose default the engine derives from the model's
    # files) is neither a change nor safe: isolation_required is null, the category listed
    # under cannot_tell, never under categories.
    got = {"isolation_required": report["isolation_required"],
           "categories": report["categories"], "risk": report["risk"],
           "cannot_tell": report["cannot_tell"]}
    want = {k: expected[k] for k in ("isolation_required", "categories", "risk")}
    want["cannot_tell"] = expected.get("cannot_tell", [])
    assert got == want, expected.get("note")
    # The categories of the findings agree with the verdict (the held-out corpus reads both).
    finding_cats = sorted({f["category"] for f in report["findings"] if f["category"]})
    assert finding_cats == expected["categories"]


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
