"""The layers of `dgdgen/` (docs/architecture.md) hold: `lint-imports` (import-linter, the
`test` extra) checks the contract written once in pyproject.toml — no module imports from a layer
above its own, siblings import neither each other — over every import (top-level, TYPE_CHECKING,
function-local). The package-level cycle test is tests/test_import_graph.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PACKAGE = REPO / "dgdgen"
MAX_TOP_MODULES = 10


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("lint-imports", path=str(BIN)) or shutil.which("lint-imports")
    if tool is None:
        pytest.skip("import-linter not installed (pip install -e '.[test]')")
    # grimp imports nothing, but finds `dgdgen` on sys.path: this checkout's, not an installed copy
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([tool, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def _contract_layers() -> list[list[str]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = config["tool"]["importlinter"]["contracts"]
    assert contract["type"] == "layers"
    return [[m.strip() for m in re.split(r"[|:]", layer)] for layer in contract["layers"]]


def test_the_layer_contract_is_kept() -> None:
    r = _lint_imports(REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout, r.stdout


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The check can fail: a function-local import of a command from the DGD model, in a copy of
    the package, is named as the broken layer with its file and line."""
    shutil.copytree(PACKAGE, tmp_path / "dgdgen", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    dgd = tmp_path / "dgdgen" / "model" / "dgd.py"
    lines = dgd.read_text(encoding="utf-8").count("\n")
    dgd.write_text(dgd.read_text(encoding="utf-8")
                   + "\n\ndef _upward() -> None:\n    from dgdgen.commands import render  # noqa\n",
                   encoding="utf-8")
    r = _lint_imports(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 kept, 1 broken" in r.stdout, r.stdout
    assert "dgdgen.model.dgd -> dgdgen.commands.render" in r.stdout, r.stdout
    assert f"l.{lines + 4}" in r.stdout, r.stdout


def test_every_package_and_top_module_has_a_layer() -> None:
    """A new folder or top-level module must be placed in the contract, or nothing checks it."""
    placed = {m for layer in _contract_layers() for m in layer}
    present = {f"dgdgen.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    present |= {f"dgdgen.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}
    assert present - placed == set(), "not in any layer of [tool.importlinter]: " + ", ".join(
        sorted(present - placed))
    assert placed - present == set(), sorted(placed - present)


def test_the_top_of_the_package_holds_at_most_ten_modules() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_architecture_doc_lists_the_contract_layers_in_order() -> None:
    """docs/architecture.md's table names the same layers, top to bottom, as the contract."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("| `dgdgen")]
    # the first cell of each row (a `\|` inside it separates siblings)
    named = [m for row in rows for m in re.findall(r"`(dgdgen[.\w]*)`", row.split(" | ")[0])]
    contract = [m for layer in _contract_layers() for m in layer]
    assert named == contract


def test_templates_hold_only_dgdgen_templates() -> None:
    """Vendored upstream files live in third_party/, each folder with its source and licence."""
    templates = sorted(str(p.relative_to(REPO / "templates"))
                       for p in (REPO / "templates").rglob("*") if p.is_file())
    assert templates == ["README.md", "haproxy/haproxy.cfg.j2"], templates
    for folder in (REPO / "third_party").iterdir():
        if folder.is_dir():
            assert (folder / "SOURCE.md").is_file() and (folder / "LICENSE").is_file(), folder
