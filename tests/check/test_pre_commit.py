"""The real pre-commit framework runs this repository's hooks (`pre-commit try-repo`) in a
temporary Git repository: a staged block-size change in a disaggregated DGD fails with the
finding at the right line; a replicas-only change passes.

`language: python` hooks make pre-commit build this repository into its own virtualenv, which
needs the package index for its dependencies (the first run takes a while; PRE_COMMIT_HOME is
private to the test). The `repo: local` example of docs/checker.md runs as written, with the
installed `dgdgen` on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "check" / "corpus"


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    if not os.path.exists(exe):
        pytest.skip("pre-commit is not installed")
    return [exe]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.mark.long(minutes=2)
def test_pre_commit_try_repo(tmp_path: Path) -> None:
    """Long: pre-commit builds the hook's own virtual environment and installs dgdgen into it from
    a clone of this repository (about a minute of CPU; longer beside other tests)."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PRE_COMMIT_COLOR": "never"}
    env.pop("PYTHONPATH", None)
    repo = tmp_path / "deploy"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    base = (CORPUS / "sglang-page-size-disagg-v1beta1" / "old.yaml").read_text()
    (repo / "sglang.yaml").write_text(base)
    _git(repo, "add", "sglang.yaml")
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "base"], check=True, env=env)

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*_pre_commit(), "try-repo", str(REPO), "dgdgen-check",
                               "--verbose"], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=900)

    head = (CORPUS / "sglang-page-size-disagg-v1beta1" / "new.yaml").read_text()
    (repo / "sglang.yaml").write_text(head)
    _git(repo, "add", "sglang.yaml")
    proc = try_repo()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    line = head.splitlines().index('          - "32"') + 1
    assert f"sglang.yaml:{line}:13: error DGD201 decode --page-size 16→32: " in out, out
    assert "error DGD202 decode --page-size 16→32: " in out
    # what the hook prints reads in a terminal: a headline per finding, no line over 200
    report = [x for x in out.splitlines() if x.startswith(("sglang.yaml", "  help:"))]
    assert len(report) == 8 and max(map(len, out.splitlines())) <= 200, out

    # A replicas-only change passes.
    (repo / "sglang.yaml").write_text(base.replace("    replicas: 1\n    type: decode",
                                                   "    replicas: 2\n    type: decode"))
    _git(repo, "add", "sglang.yaml")
    proc = try_repo()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def _local_hook_config() -> str:
    """The `repo: local` block of docs/checker.md, exactly as a user copies it."""
    text = (REPO / "docs" / "checker.md").read_text()
    blocks = text.split("```yaml\n")[1:]
    blocks = [b[:b.index("```")] for b in blocks if b.startswith("repos:\n  - repo: local")]
    assert len(blocks) == 1, "docs/checker.md shows no `repo: local` pre-commit example"
    return blocks[0]


def test_pre_commit_local_hook_from_the_docs(tmp_path: Path) -> None:
    exe = shutil.which("dgdgen") or str(Path(sys.executable).parent / "dgdgen")
    if not os.path.exists(exe):
        pytest.skip("no dgdgen console script to put on PATH")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "PRE_COMMIT_COLOR": "never",
           "PATH": f"{Path(exe).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    repo = tmp_path / "deploy"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".pre-commit-config.yaml").write_text(_local_hook_config())
    base = (CORPUS / "sglang-page-size-disagg-v1beta1" / "old.yaml").read_text()
    (repo / "sglang.yaml").write_text(base)
    _git(repo, "add", ".")
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "base"], check=True, env=env)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*_pre_commit(), "run", "--verbose"], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)

    head = (CORPUS / "sglang-page-size-disagg-v1beta1" / "new.yaml").read_text()
    (repo / "sglang.yaml").write_text(head)
    _git(repo, "add", "sglang.yaml")
    proc = run()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    line = head.splitlines().index('          - "32"') + 1
    assert f"sglang.yaml:{line}:13: error DGD201 decode --page-size 16→32: " in out, out

    (repo / "sglang.yaml").write_text(base.replace("    replicas: 1\n    type: decode",
                                                   "    replicas: 2\n    type: decode"))
    _git(repo, "add", "sglang.yaml")
    proc = run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout
