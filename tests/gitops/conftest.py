"""Shared fixtures: real git repositories (a bare remote and a clone) holding a rollout spec."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitops_support import GIT_ENV, Workspace, make_workspace


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path)
