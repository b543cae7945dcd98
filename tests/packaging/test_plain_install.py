"""A plain install (`pip install dgdgen`, no extras) renders every example: the wheel is built from
this checkout and installed into a fresh virtual environment with only the core dependencies of
pyproject.toml — no kubernetes-validate, no hera — and its `dgdgen` renders each example
byte-identically to the committed golden tree, validating every object it writes."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("*/rollout.yaml"))


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a fresh venv holding the wheel and the core dependencies only."""
    root = tmp_path_factory.mktemp("plain")
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                 "-w", root / "dist", REPO)
    assert built.returncode == 0, built.stderr
    (wheel,) = (root / "dist").glob("dgdgen-*.whl")
    venv.create(root / "venv", with_pip=True)
    bindir = root / "venv" / "bin"
    core = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for step in (["--no-deps", str(wheel)], core):
        done = _run(bindir / "python", "-m", "pip", "install", "-q", *step)
        assert done.returncode == 0, done.stderr
    return bindir


def test_no_optional_package_is_installed(plain: Path) -> None:
    probe = _run(plain / "python", "-c",
                 "import importlib.util as u; print([m for m in ('kubernetes_validate', 'hera', "
                 "'pytest') if u.find_spec(m)])")
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_renders_from_a_plain_install(plain: Path, example: Path,
                                                    tmp_path: Path) -> None:
    out = tmp_path / "out"
    # Run outside the checkout so nothing can be read from it but the spec and its DGD.
    done = _run(plain / "dgdgen", "render", example / "rollout.yaml", "-o", out, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    golden = example / "rendered"
    ours = sorted(str(p.relative_to(out)) for p in out.rglob("*")
                  if p.is_file() and p.name != ".dgdgen-render")
    assert ours == sorted(str(p.relative_to(golden)) for p in golden.rglob("*") if p.is_file())
    for rel in ours:
        assert (out / rel).read_bytes() == (golden / rel).read_bytes(), rel
    # The proposed-field modes (workerGroupName, partition) render fields no released CRD has yet;
    # the overlay declares them, and changes nothing for the other examples.
    verified = _run(plain / "dgdgen", "verify", "--overlay", "dgd-proposed-rollout-fields", out,
                    cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "warning" not in verified.stdout + verified.stderr  # every kind had a schema
