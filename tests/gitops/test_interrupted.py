"""A render killed mid-write (a real SIGKILL of a real process) leaves the previous tree intact; a
kill after the commit point is finished by the next command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git

STAGING = ".dgdgen-staging"


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _render_killed(ws: Workspace, step: str, kill_at: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DGDGEN_TEST_KILL_AT=kill_at)
    return subprocess.run(
        [sys.executable, "-m", "dgdgen", "render", str(ws.spec), "--into", str(ws.into),
         "--step", step],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )


def test_killed_while_staging_leaves_the_previous_tree(ws: Workspace) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into)).code == 0
    before = _snapshot(ws.into)
    r = _render_killed(ws, "2", "stage:2")
    assert r.returncode == -signal.SIGKILL
    assert (ws.into / STAGING).is_dir()  # the half-staged tree is there …
    visible = {k: v for k, v in _snapshot(ws.into).items() if not k.startswith(STAGING)}
    assert visible == before  # … and nothing it wrote is visible
    # the next command discards it; the tree is still the previous one
    r2 = cli("render", str(ws.spec), "--into", str(ws.into), "--check")
    assert r2.code == 0, r2.out
    assert not (ws.into / STAGING).exists()
    assert _snapshot(ws.into) == before


def test_killed_while_applying_is_finished_by_the_next_command(ws: Workspace, tmp_path: Path
                                                                ) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into)).code == 0
    expected = tmp_path / "expected"
    assert cli("render", str(ws.spec), "--into", str(expected)).code == 0
    assert cli("render", str(ws.spec), "--into", str(expected), "--step", "2").code == 0
    r = _render_killed(ws, "2", "apply:1")
    assert r.returncode == -signal.SIGKILL
    assert (ws.into / STAGING / "JOURNAL").exists()
    # status recovers first, then reads a complete step-02 tree
    st = cli("status", str(ws.spec), "--into", str(ws.into))
    assert st.code == 0, st.out + st.err
    assert "step       2 of 3" in st.out
    assert not (ws.into / STAGING).exists()
    assert _snapshot(ws.into) == _snapshot(expected)


def test_a_failed_render_writes_nothing(ws: Workspace) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into)).code == 0
    before = _snapshot(ws.into)
    r = cli("render", str(ws.spec), "--into", str(ws.into), "--step", "7")
    assert r.code == 2 and "no step 7" in r.err
    assert _snapshot(ws.into) == before


def _killed(ws: Workspace, kill_at: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DGDGEN_TEST_KILL_AT=kill_at)
    return subprocess.run([sys.executable, "-m", "dgdgen", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


@pytest.mark.parametrize("kill_at", ["apply:1", "commit:1"])
def test_render_commit_killed_after_the_commit_point_is_finished_with_its_commit(
    ws: Workspace, tmp_path: Path, kill_at: str
) -> None:
    """Killed after the journal's commit point (while applying, or between applying and the
    git commit): the same command run again finishes the apply AND the commit, with the
    message the killed run meant, instead of refusing on "uncommitted changes"."""
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    base = ws.head()
    expected = tmp_path / "expected"
    assert cli("render", spec, "--into", str(expected)).code == 0
    assert cli("render", spec, "--into", str(expected), "--step", "2").code == 0
    r = _killed(ws, kill_at, "render", spec, "--into", into, "--step", "2", "--commit")
    assert r.returncode == -signal.SIGKILL
    assert ws.head() == base  # killed before its commit
    r2 = cli("render", spec, "--into", into, "--step", "2", "--commit")
    assert r2.code == 0, r2.err
    assert "finished an interrupted command: committed" in r2.err
    assert ws.log()[0].endswith("render step 2")
    assert git(ws.work, "status", "--porcelain") == ""
    assert _snapshot(ws.into) == _snapshot(expected)


def test_promote_killed_before_its_commit_is_finished_by_the_next_command(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    r = _killed(ws, "commit:1", "promote", spec, "--into", into)
    assert r.returncode == -signal.SIGKILL
    st = cli("status", spec, "--into", into)  # reading is fine before and after
    assert st.code == 0, st.err
    r2 = cli("gate", spec, "--into", into, "--result", "passed")  # finishes step 1's commit
    assert r2.code == 0, r2.err
    assert [s.split(": ", 1)[1] for s in ws.log()[:2]] == [
        "gate slo of step 1: passed", "promote to step 1 (bs32 at 25%)"]
    assert git(ws.work, "status", "--porcelain") == ""
