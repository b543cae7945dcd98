"""The test directories collect together in any combination.

Every directory's conftest is imported by pytest under the one module name `conftest`, so a
test module that imports helpers `from conftest` gets whichever conftest pytest loaded last: run
as `pytest tests/gitops tests/analysis`, the GitOps tests imported the analysis conftest and
failed at collection. Helpers live in `<dir>_support.py` modules instead."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from gen_support import REPO

TESTS = REPO / "tests"


def _collect(*paths: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *paths],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False)


def test_no_test_module_imports_a_conftest() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(n.split(".")[-1] == "conftest" for n in names):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


@pytest.mark.long(minutes=2)
def test_directories_with_conftests_collect_in_one_run() -> None:
    """Long: three collections of the whole suite in fresh pytest processes, each importing every
    test module."""
    dirs = sorted(p.parent.relative_to(REPO).as_posix() for p in TESTS.glob("*/conftest.py"))
    assert "tests/gitops" in dirs and "tests/analysis" in dirs
    full = _collect("tests")
    assert full.returncode == 0, full.stdout[-3000:] + full.stderr[-3000:]
    expected = _count(full.stdout, dirs)
    # Both orders: the conftest pytest loads last differs.
    for order in (dirs, dirs[::-1]):
        r = _collect(*order)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        assert _count(r.stdout, dirs) == expected


def _count(out: str, dirs: list[str]) -> int:
    """Collected test ids under the given directories."""
    return sum(1 for line in out.splitlines()
               if "::" in line and line.startswith(tuple(d + "/" for d in dirs)))
