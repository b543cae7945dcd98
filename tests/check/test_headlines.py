"""Say it short, then deep (STYLE.md principle 12): on in-place single-flag edits of the bundled
examples' DGDs (tests/check/single_flag_edits.py: every backend, aggregated and disaggregated,
the hashed and the shared worker layout and Grove), the default text report of `dgdgen diff`
spends at most 400 characters per finding and no line is longer than 200, while the JSON
report's `details` still hold the whole consequence the headline says in a few words; `--verbose`
prints it. benchmarks/bench_finding_length.py measures the same runs (docs/checker.md)."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from single_flag_edits import LAYOUTS, Case, cases

from dgdgen.check import inplace
from dgdgen.cli import main

CASES = cases()
BUDGET = 400  # characters of text output per finding
MAX_LINE = 200

# What each headline's few words stand for, in the whole text (dgdgen/check/inplace.py).
WHOLE: dict[str, tuple[str, ...]] = {
    inplace.HASHED_MDC_SHORT: (inplace.HASHED_MDC,),
    # releases that share a short text (1.6 measured, 1.7 from source) share its entry
    **{short: tuple(inplace.SHARED_MDC[r] for r in inplace.SHARED_MDC
                    if inplace.SHARED_MDC_SHORT[r] == short)
       for short in inplace.SHARED_MDC_SHORT.values()},
    inplace.HASHED_KV_SHORT: (inplace.HASHED_KV,),
    inplace.HASHED_KV_SPLIT_SHORT: (inplace.HASHED_KV_SPLIT.split("{")[0],),
    inplace.SHARED_KV_SHORT: (inplace.SHARED_KV,),
    inplace.RUNTIME_SHORT: (inplace.HASHED_RUNTIME, inplace.SHARED_RUNTIME),
    inplace.RUNTIME_WORKERS_SHORT: (inplace.HASHED_RUNTIME_WORKERS,
                                    inplace.SHARED_RUNTIME_WORKERS),
    inplace.RUNTIME_FRONTEND_SHORT: (inplace.RUNTIME_FRONTEND,),
    inplace.RENAME_SHORT: (inplace.RENAME,),
    inplace.MODEL_REMOVED_SHORT: (inplace.MODEL_REMOVED,),
}


def _diff(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", *argv, "--color", "never"])
    assert code in (0, 1)
    return out.getvalue()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Case, str, str, Any, str]]:
    """(case, layout, text, JSON report, --verbose text) of every case on every layout, the
    head at the relative path a repository would hold it (the text report prints it)."""
    root = tmp_path_factory.mktemp("edits")
    here = os.getcwd()
    out = []
    os.chdir(root)
    try:
        for case in CASES:
            Path(case.path).parent.mkdir(parents=True, exist_ok=True)
            Path("base.yaml").write_text(case.old)
            Path(case.path).write_text(case.new)
            for layout, options in LAYOUTS.items():
                args = ("base.yaml", case.path, *options)
                out.append((case, layout, _diff(*args), json.loads(_diff(*args, "-f", "json")),
                            _diff(*args, "--verbose")))
    finally:
        os.chdir(here)
    return out


def test_the_cases_cover_every_backend_both_topologies_and_both_layouts() -> None:
    seen = {(c.base.backend, c.base.disaggregated) for c in CASES}
    assert seen == {(b, d) for b in ("vllm", "sglang", "trtllm") for d in (False, True)}
    assert {"hashed", "shared"} <= set(LAYOUTS)
    text = {c.old for c in CASES}
    assert any("v1alpha1" in t for t in text) and any("v1beta1" in t for t in text)


def test_the_text_report_spends_at_most_400_characters_per_finding(runs: Any) -> None:
    over = []
    findings = 0
    for case, layout, text, report, _ in runs:
        n = len(report["findings"])
        findings += n
        if n and len(text) / n > BUDGET:
            over.append((case.id, layout, round(len(text) / n), text))
    assert findings > 300  # the edits really raise findings
    assert over == []


def test_no_line_is_longer_than_200_characters(runs: Any) -> None:
    long = [(case.id, layout, line) for case, layout, text, _, verbose in runs
            for line in (text + verbose).splitlines() if len(line) > MAX_LINE]
    assert long == []


def test_each_finding_is_one_headline_and_each_rule_one_help_line(runs: Any) -> None:
    for case, layout, text, report, _ in runs:
        lines = text.splitlines()
        for f in report["findings"]:
            head = f"{f['file']}:{f['line']}:{f['column']}: {f['severity']} {f['code']} "
            assert sum(x.startswith(head) for x in lines) >= 1, (case.id, layout, f)
        codes = {f["code"] for f in report["findings"]}
        helps = [x for x in lines if x.startswith("  help: ")]
        assert len(helps) == len(codes), (case.id, layout, text)
        assert all(f"`dgdgen rules explain {c}`" in text for c in codes)


def test_json_and_verbose_keep_the_whole_consequence(runs: Any) -> None:
    """Layered, not dropped: each in-place finding's headline ends with a few words whose whole
    text is in its JSON `details`, and `--verbose` prints those details (a rule's explanation
    once per run: later findings of the rule refer to the first)."""
    checked = 0
    for case, layout, _, report, verbose in runs:
        flat = " ".join(verbose.split())
        for f in report["findings"]:
            assert f["details"] and f["help"], f
            details = " ".join(f["details"].split())
            own = details.split("; applied in place: ")[0]
            assert details in flat or (own in flat and "as explained for" in flat), (
                case.id, layout, f["code"])
            if f["code"] not in ("DGD201", "DGD202", "DGD203"):
                continue
            short = next((s for s in WHOLE if f["message"].endswith(s)), None)
            assert short is not None, (case.id, layout, f["message"])
            whole = [w for w in WHOLE[short] if w in f["details"]]
            assert whole and " ".join(whole[0].split()) in flat, (case.id, layout, f)
            assert len(f["details"]) > 2 * len(f["message"])
            checked += 1
    assert checked > 200
