"""Shared fixtures: real git repositories (a bare remote and a clone) holding a rollout spec."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from gitops_support import EXAMPLE, GIT_ENV, Workspace, git


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True,
                   capture_output=True)
    git(work, "checkout", "-q", "-b", "main")
    dry = work / "rollouts" / "qwen"
    dry.mkdir(parents=True)
    shutil.copy(EXAMPLE / "rollout.yaml", dry / "rollout.yaml")
    shutil.copy(EXAMPLE / "dgd.yaml", dry / "dgd.yaml")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "rollout spec")
    git(work, "push", "-q", "origin", "main")
    return Workspace(remote, work, dry / "rollout.yaml", work / "deploy" / "qwen-router")
