"""The package passes strict mypy and ruff (STYLE.md: strict mypy on the package), with the
pinned versions of the `dev` extra. Skipped where they are not installed (`pip install -e
'.[dev]'`); CI installs them, so there a skip fails (tests/conftest.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} not installed (pip install -e '.[dev]')")
    return path


def test_ruff_finds_nothing() -> None:
    r = subprocess.run([_tool("ruff"), "check", "--no-cache", "dgdgen"], cwd=REPO,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.long(minutes=2)
def test_mypy_strict_finds_nothing(tmp_path: Path) -> None:
    """Long: mypy --strict over the whole package from an empty cache, about 40 s of CPU; longer
    beside other tests."""
    # the configuration is pyproject's [tool.mypy] (strict, the dgdgen package); a fresh cache
    # directory so that a stale one cannot hide an error
    r = subprocess.run([_tool("mypy"), "--cache-dir", str(tmp_path / "cache")], cwd=REPO,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
