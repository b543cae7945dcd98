"""`render --into PATH --init` creates the rollout's own repository, and refuses a PATH inside
another Git work tree (a dgdgen checkout, an application repository): nothing written there and
no commit on its branch."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gen_support import REPO, run_cli

SPEC = str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml")
ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@e"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          check=True, env={**ENV, "PATH": "/usr/bin:/bin"}).stdout


def test_init_refuses_a_directory_inside_another_work_tree(tmp_path: Path) -> None:
    other = tmp_path / "checkout"
    other.mkdir()
    _git(other, "init", "-q", "-b", "main")
    (other / "README.md").write_text("someone else's\n")
    _git(other, "add", "-A")
    _git(other, "commit", "-q", "-m", "theirs")
    r = run_cli("render", SPEC, "--into", str(other / "deploy"), "--init", env=ENV)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("dgdgen render: error: ") and "inside the Git work tree" in r.stderr
    assert not (other / "deploy").exists()
    assert _git(other, "log", "--format=%s").splitlines() == ["theirs"]


def test_init_makes_and_then_reuses_the_rollouts_own_repository(tmp_path: Path) -> None:
    into = tmp_path / "deploy"
    for _ in range(2):
        r = run_cli("render", SPEC, "--into", str(into), "--init", env=ENV)
        assert r.returncode == 0, r.stderr
    assert _git(into, "rev-parse", "--show-toplevel").strip() == str(into.resolve())
    assert _git(into, "log", "--format=%s").splitlines() == ["qwen-router: render step 0 (baseline)"]
