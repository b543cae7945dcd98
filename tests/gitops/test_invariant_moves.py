"""A GitOps move that would break an invariant on the cluster is refused (exit 1, nothing
committed); the way back never is — there the findings are notes."""

from __future__ import annotations

import pytest
from gen_support import stable_only_parent
from gitops_support import Workspace, cli, git


@pytest.fixture
def stable_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    stable_only_parent(monkeypatch)


@pytest.mark.usefixtures("stable_parent")
def test_promote_into_a_broken_state_is_refused_and_rollback_is_not(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    for _ in range(2):
        assert cli("promote", spec, "--into", into).code == 0
        assert cli("gate", spec, "--into", into, "--result", "passed").code == 0
    head = ws.head()
    r = cli("promote", spec, "--into", into)  # to step 3, where the stable has no workers
    assert r.code == 1, r.err
    assert "CLU101 incomplete-generation-reachable" in r.err and "nothing was written" in r.err
    assert ws.head() == head and git(ws.work, "status", "--porcelain") == ""
    r = cli("promote", spec, "--into", into, "--to", "3", "--skip-gate", "--reason", "x")
    assert r.code == 1  # a skipped gate does not skip an invariant
    r = cli("rollback", spec, "--into", into)
    assert r.code == 0, r.err
