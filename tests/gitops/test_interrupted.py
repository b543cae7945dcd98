"""A write killed at any point (a real SIGKILL of a real process) leaves either the state before
it or the state after it: the commit is made before the work tree moves, `status` never calls an
uncommitted state current, and the next writing command finishes or discards what was left —
a rerun of the killed command itself finishing it, exit 0, after exactly one step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git

STAGING = ".dgdgen-staging"
# Where a committing command can die, in order: while staging the new tree, once the journal is
# sealed but before the branch moved, after the branch moved but before the files, while moving
# the files, and after the files but before git's index followed.
BEFORE_COMMIT = ["stage:1", "stage:2", "commit:1"]
AFTER_COMMIT = ["ref:1", "apply:1", "apply:2", "index:1"]


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _killed(kill_at: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DGDGEN_TEST_KILL_AT=kill_at)
    return subprocess.run([sys.executable, "-m", "dgdgen", *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False, cwd=cwd)


def _status(ws: Workspace) -> dict[str, object]:
    r = cli("status", str(ws.spec), "--into", str(ws.into), "--format", "json")
    assert r.code in (0, 1), r.err
    doc: dict[str, object] = json.loads(r.out)
    return doc


def _expected(ws: Workspace, tmp_path: Path, step: str) -> dict[str, bytes]:
    expected = tmp_path / f"expected-{step}"
    assert cli("render", str(ws.spec), "--into", str(expected)).code == 0
    if step != "0":
        assert cli("render", str(ws.spec), "--into", str(expected), "--step", step).code == 0
    return _snapshot(expected)


def test_killed_while_staging_leaves_the_previous_tree(ws: Workspace) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into)).code == 0
    before = _snapshot(ws.into)
    r = _killed("stage:2", "render", str(ws.spec), "--into", str(ws.into), "--step", "2")
    assert r.returncode == -signal.SIGKILL
    assert (ws.into / STAGING).is_dir()  # the half-staged tree is there …
    visible = {k: v for k, v in _snapshot(ws.into).items() if not k.startswith(STAGING)}
    assert visible == before  # … and nothing it wrote is visible
    # --check only reads: it reports the interrupted write and leaves it
    r2 = cli("render", str(ws.spec), "--into", str(ws.into), "--check")
    assert r2.code == 1 and "an interrupted write is pending" in r2.out
    assert (ws.into / STAGING).is_dir()
    # the next writing command discards it; the tree is still the previous one
    r3 = cli("render", str(ws.spec), "--into", str(ws.into))
    assert r3.code == 0, r3.err
    assert "discarded an interrupted write" in r3.err
    assert not (ws.into / STAGING).exists()
    assert _snapshot(ws.into) == before


def test_render_killed_while_applying_is_finished_by_the_next_write(ws: Workspace,
                                                                    tmp_path: Path) -> None:
    """Outside a commit (render --into, no --commit) the journal is the commit point."""
    assert cli("render", str(ws.spec), "--into", str(ws.into)).code == 0
    expected = _expected(ws, tmp_path, "2")
    r = _killed("apply:1", "render", str(ws.spec), "--into", str(ws.into), "--step", "2")
    assert r.returncode == -signal.SIGKILL
    assert (ws.into / STAGING / "JOURNAL").exists()
    r2 = cli("render", str(ws.spec), "--into", str(ws.into))
    assert r2.code == 0, r2.err
    assert "finished an interrupted render" in r2.err
    assert not (ws.into / STAGING).exists()
    assert _snapshot(ws.into) == expected


def test_a_failed_render_writes_nothing(ws: Workspace) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into)).code == 0
    before = _snapshot(ws.into)
    r = cli("render", str(ws.spec), "--into", str(ws.into), "--step", "7")
    assert r.code == 2 and "no step 7" in r.err
    assert _snapshot(ws.into) == before


@pytest.mark.parametrize("kill_at", BEFORE_COMMIT + AFTER_COMMIT)
def test_promote_killed_anywhere_then_rerun_makes_exactly_one_step(
    ws: Workspace, tmp_path: Path, kill_at: str
) -> None:
    """Killed anywhere, `status` reports HEAD's step (never the uncommitted one) and, apart, what
    was interrupted; the same command run again exits 0 with exactly one promotion in the
    history, the tree of step 1, and a clean work tree."""
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    base = ws.head()
    r = _killed(kill_at, "promote", spec, "--into", into)
    assert r.returncode == -signal.SIGKILL, r.stderr
    st = _status(ws)
    committed = kill_at in AFTER_COMMIT
    assert (ws.head() != base) is committed
    assert st["step"] == ("step-01" if committed else "step-00")
    assert st["head"] == ws.head()
    assert st["pending"] is not None  # the interrupted write, apart from the step
    if committed:
        assert "committed" in str(st["pending"]) and "finishes it" in str(st["pending"])
    else:
        assert "discards it" in str(st["pending"])
    r2 = cli("promote", spec, "--into", into)
    assert r2.code == 0, r2.err
    assert [s.split(": ", 1)[1] for s in ws.log()[:2]] == [
        "promote to step 1 (bs32 at 25%)", "render step 0 (baseline)"]
    assert "promote to step 1" in r2.out
    assert git(ws.work, "status", "--porcelain") == ""
    assert _snapshot(ws.into) == _expected(ws, tmp_path, "1")
    st = _status(ws)
    assert st["step"] == "step-01" and st["pending"] is None and st["uncommitted"] is None


@pytest.mark.parametrize("kill_at", ["commit:1", "ref:1", "index:1"])
def test_another_command_after_a_kill_finishes_it_then_does_its_own(
    ws: Workspace, kill_at: str
) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    r = _killed(kill_at, "promote", spec, "--into", into)
    assert r.returncode == -signal.SIGKILL
    r2 = cli("rollback", spec, "--into", into)
    if kill_at == "commit:1":  # killed before its commit: nothing to roll back from
        assert r2.code == 2 and "at the baseline" in r2.err
        assert "discarded an interrupted command" in r2.err
        assert [s.split(": ", 1)[1] for s in ws.log()[:1]] == ["render step 0 (baseline)"]
    else:
        assert r2.code == 0, r2.err
        assert "finished an interrupted command" in r2.err
        assert [s.split(": ", 1)[1] for s in ws.log()[:2]] == [
            "roll back to bs16 (from step 1)", "promote to step 1 (bs32 at 25%)"]
    assert git(ws.work, "status", "--porcelain") == ""
    assert not (ws.into / STAGING).exists()


@pytest.mark.parametrize("kill_at", ["commit:1", "apply:1"])
def test_render_commit_killed_then_rerun(ws: Workspace, tmp_path: Path, kill_at: str) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    r = _killed(kill_at, "render", spec, "--into", into, "--step", "2", "--commit")
    assert r.returncode == -signal.SIGKILL
    r2 = cli("render", spec, "--into", into, "--step", "2", "--commit")
    assert r2.code == 0, r2.err
    assert [s.split(": ", 1)[1] for s in ws.log()[:2]] == [
        "render step 2", "render step 0 (baseline)"]
    assert git(ws.work, "status", "--porcelain") == ""
    assert _snapshot(ws.into) == _expected(ws, tmp_path, "2")


def test_gate_killed_after_its_commit_then_rerun_records_once(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    r = _killed("ref:1", "gate", spec, "--into", into, "--result", "passed")
    assert r.returncode == -signal.SIGKILL
    r2 = cli("gate", spec, "--into", into, "--result", "passed")
    assert r2.code == 0, r2.err
    assert "gate slo of step 1: passed" in r2.out
    assert [s.split(": ", 1)[1] for s in ws.log()[:2]] == [
        "gate slo of step 1: passed", "promote to step 1 (bs32 at 25%)"]
    assert git(ws.work, "status", "--porcelain") == ""


def test_a_killed_holder_of_the_writer_lock_is_reported_not_waited_for(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    r = _killed("commit:1", "promote", spec, "--into", into)
    assert r.returncode == -signal.SIGKILL
    r2 = cli("promote", spec, "--into", into)
    assert r2.code == 0, r2.err
    assert "the writer lock still named pid" in r2.err and "ended without releasing" in r2.err
