"""A seeded slice of the command fuzzer (benchmarks/fuzz_commands.py; its long run and what it
found: docs/robustness.md), and every input it found breaking the contract, kept in
tests/data/fuzz/ as a case.

The slice draws the same cases every run (seed 0; ``DGDGEN_FUZZ_SCALE`` multiplies their
number, as for tests/test_fuzz.py): every input kind, each command run in this process, held
to its documented exit codes, no traceback, 10 s and 500 MB a case."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CASES = sorted(p for p in (REPO / "tests" / "data" / "fuzz").iterdir() if p.is_dir())
SCALE = float(os.environ.get("DGDGEN_FUZZ_SCALE", "1"))


def _fuzzer() -> Any:
    spec = importlib.util.spec_from_file_location(
        "fuzz_commands", REPO / "benchmarks" / "fuzz_commands.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_commands", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fuzz = _fuzzer()


def test_a_seeded_slice_of_every_kind_keeps_the_contract() -> None:
    cases = max(len(fuzz.KINDS), int(90 * SCALE))
    summary = fuzz.run(cases, seed=0)
    broke = [f"case {n}: {c.kind}: {' '.join(c.args)}: {', '.join(r.broken)}\n{r.err[-600:]}"
             for n, c, r in summary.failures]
    assert not broke, "\n".join(broke)
    assert summary.cases == cases and set(summary.kinds) == set(fuzz.KINDS), summary.kinds
    # the mutations reach past the first refusal: valid runs and findings too, not only exit 2
    assert summary.codes[0] and summary.codes[1] and summary.codes[2], summary.codes


@pytest.fixture
def prometheus() -> Iterator[Any]:
    stand_in = fuzz._Prometheus()
    try:
        yield stand_in
    finally:
        stand_in.close()


@pytest.mark.parametrize("folder", CASES, ids=[p.name for p in CASES])
def test_a_reproducer_keeps_the_contract_and_says_why(folder: Path, tmp_path: Path,
                                                      prometheus: Any) -> None:
    """Each case.json names the command and input that broke the contract, and what the
    command now answers: its exit code and a part of its message."""
    case = fuzz.load_case(folder)
    expect = json.loads((folder / "case.json").read_text(encoding="utf-8"))["expect"]
    (tmp_path / "case").mkdir()
    with fuzz.isolated_environment(tmp_path):
        result = fuzz.run_case(case, tmp_path / "case", prometheus)
    assert not result.broken, (result.broken, result.err)
    assert result.code == expect["exit"], result.err
    assert expect["says"] in result.out + result.err, (result.out, result.err)


def test_a_case_is_held_to_its_own_memory_not_the_process_s(
        tmp_path: Path, prometheus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 500 MB are the case's, as a process of its own: a pytest worker that ran other tests
    first may hold more than that before any case (505 MB in one CI run, which failed every
    reproducer), and a case that itself takes more still breaks the contract."""
    import dgdgen.cli

    folder = CASES[0]
    case = fuzz.load_case(folder)
    over = int(fuzz.MEMORY_LIMIT_MB * 1.2) * 2**20
    ballast = b"x" * over  # resident before the case: not the case's
    (tmp_path / "a").mkdir()
    with fuzz.isolated_environment(tmp_path):
        result = fuzz.run_case(case, tmp_path / "a", prometheus)
    assert len(ballast) == over
    del ballast
    assert not result.broken and result.peak_mb < fuzz.MEMORY_LIMIT_MB, result

    real = dgdgen.cli.main

    def hungry(argv: list[str]) -> int:
        taken = b"y" * over  # the case's own
        return real(argv) + 0 * len(taken)

    monkeypatch.setattr(dgdgen.cli, "main", hungry)
    (tmp_path / "b").mkdir()
    with fuzz.isolated_environment(tmp_path):
        result = fuzz.run_case(case, tmp_path / "b", prometheus)
    assert result.broken == [f"peak {result.peak_mb:.0f} MB"], result
