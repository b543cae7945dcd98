"""Two writing commands on one repository at once: exactly one commits, the other exits 2 and
says what happened — never two commits where one undoes the other.

Real processes, interleaved exactly with the test hook DGDGEN_TEST_PAUSE_AT (the process stops at
a named point until the test lets it go), in the two windows a race can fall into — the paused
command a process of its own, the one that meets it run in the test's process (the writer lock
and the premise live on the repository, so the test's process is as separate a writer as a fresh
one, without a Python start-up per race):

* ``locked``: the first command holds the writer lock when the second starts — the second fails
  at once;
* ``premise``: the second command read HEAD, then the first one ran to its commit before the
  second took the lock — the second finds its premise gone.

Every ordered pair of the writing commands is played in both windows, then a few pairs are
started at the same instant with no hook at all, and the history checked: linear, one commit per
command that said it committed, each commit a whole rendered state.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from gitops_support import GIT_ENV, Result, Workspace, cli, git, make_workspace

# The commands that write, by name: the arguments after SPEC --into DIR.
AT_STEP_1 = {
    "promote": ["promote"],
    "rollback": ["rollback"],
    "gate": ["gate", "--result", "failed", "--message", "ttft p99 over budget"],
    "render": ["render", "--step", "2", "--commit"],
}
AT_LAST_STEP = {  # step 3 has no gate
    "cleanup": ["cleanup"],
    "rollback": ["rollback"],
    "render": ["render", "--step", "1", "--commit"],
}


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_ENV)
    env.update(extra)
    return env


def _template(root: Path, steps: int) -> Workspace:
    """A repository at step ``steps``, every gate on the way (and its own) recorded as passed."""
    ws = make_workspace(root)
    spec, into = str(ws.spec), str(ws.into)
    with pytest.MonkeyPatch.context() as mp:
        for k, v in GIT_ENV.items():
            mp.setenv(k, v)
        assert cli("render", spec, "--into", into, "--commit").code == 0
        for n in range(1, steps + 1):
            assert cli("promote", spec, "--into", into).code == 0
            if n < 3:
                assert cli("gate", spec, "--into", into, "--result", "passed").code == 0
    return ws


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Workspace]:
    return {n: _template(tmp_path_factory.mktemp(f"template-{n}"), n) for n in (1, 3)}


def _copy(template: Workspace, dest: Path) -> Workspace:
    root = template.work.parent
    shutil.copytree(root, dest, symlinks=True)
    return Workspace(dest / "remote.git", dest / "work", dest / template.spec.relative_to(root),
                     dest / template.into.relative_to(root))


def _argv(ws: Workspace, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "dgdgen", args[0], str(ws.spec), "--into", str(ws.into),
            *args[1:]]


def _paused(ws: Workspace, args: list[str], point: str, marker: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(_argv(ws, args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(DGDGEN_TEST_PAUSE_AT=f"{point}:{marker}"))
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None:
            _out, err = proc.communicate()
            raise AssertionError(f"{args} ended before reaching {point}: {proc.returncode} {err}")
        assert time.monotonic() < deadline, f"{args} never reached {point}"
        time.sleep(0.01)
    return proc


def _run(ws: Workspace, args: list[str]) -> Result:
    """The command that meets the paused one: run in this process (the test's process is as
    much a process of its own as a fresh ``python -m dgdgen``: the writer lock and the premise
    are on the repository, not in memory), which spares a Python start-up per race."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in GIT_ENV.items():
            mp.setenv(k, v)
        return cli(args[0], str(ws.spec), "--into", str(ws.into), *args[1:])


def _whole_states(ws: Workspace, since: str) -> list[str]:
    """The commits after ``since``: each with one parent (linear history) and, checked out, a
    directory that is exactly a fresh render of the state it records."""
    commits = git(ws.work, "rev-list", "--reverse", "--parents", f"{since}..HEAD").splitlines()
    for line in commits:
        sha, *parents = line.split()
        assert len(parents) == 1, f"{sha} is not on a linear history: {parents}"
        probe = ws.work.parent / f"probe-{sha[:8]}"
        git(ws.work, "worktree", "add", "-q", "--detach", str(probe), sha)
        try:
            spec = probe / ws.spec.relative_to(ws.work)
            into = probe / ws.into.relative_to(ws.work)
            with pytest.MonkeyPatch.context() as mp:
                for k, v in GIT_ENV.items():
                    mp.setenv(k, v)
                r = cli("render", str(spec), "--into", str(into), "--check")
            assert r.code == 0, f"{sha} is not a whole rendered state: {r.out}{r.err}"
        finally:
            git(ws.work, "worktree", "remove", "--force", str(probe))
    return [line.split()[0] for line in commits]


def _pairs() -> Iterator[tuple[int, str, str]]:
    for steps, commands in ((1, AT_STEP_1), (3, AT_LAST_STEP)):
        for a in commands:
            for b in commands:
                yield steps, a, b


PAIRS = list(_pairs())


def _commands(steps: int) -> dict[str, list[str]]:
    return AT_STEP_1 if steps == 1 else AT_LAST_STEP


@pytest.mark.parametrize(("steps", "first", "second"), PAIRS,
                         ids=[f"step{s}-{a}-then-{b}" for s, a, b in PAIRS])
def test_second_command_while_the_first_holds_the_lock(
    templates: dict[int, Workspace], tmp_path: Path, steps: int, first: str, second: str
) -> None:
    ws = _copy(templates[steps], tmp_path / "repo")
    base = ws.head()
    commands = _commands(steps)
    marker = tmp_path / "locked"
    a = _paused(ws, commands[first], "locked", marker)
    b = _run(ws, commands[second])
    marker.unlink()
    _out, err = a.communicate(timeout=120)
    assert a.returncode == 0, err
    assert b.code == 2, b.err
    assert "another dgdgen command is writing this repository" in b.err
    assert f"dgdgen {commands[first][0]}" in b.err  # names the holder
    assert len(_whole_states(ws, base)) == 1
    assert git(ws.work, "status", "--porcelain") == ""


@pytest.mark.parametrize(("steps", "first", "second"), PAIRS,
                         ids=[f"step{s}-{a}-then-{b}" for s, a, b in PAIRS])
def test_second_command_whose_premise_a_first_one_replaced(
    templates: dict[int, Workspace], tmp_path: Path, steps: int, first: str, second: str
) -> None:
    ws = _copy(templates[steps], tmp_path / "repo")
    base = ws.head()
    commands = _commands(steps)
    marker = tmp_path / "premise"
    b = _paused(ws, commands[second], "premise", marker)  # read HEAD, not yet locked
    a = _run(ws, commands[first])
    assert a.code == 0, a.err
    marker.unlink()
    _out, err = b.communicate(timeout=120)
    assert b.returncode == 2, err
    assert "the rollout changed after this command started" in err
    assert "nothing was done" in err
    assert len(_whole_states(ws, base)) == 1
    assert git(ws.work, "status", "--porcelain") == ""


@pytest.mark.parametrize("trial", range(4))
def test_pairs_started_together_keep_a_linear_whole_state_history(
    templates: dict[int, Workspace], tmp_path: Path, trial: int
) -> None:
    """No hook: whatever the interleaving, every command that said it committed did, and only
    those; the history is linear and every commit a whole state."""
    ws = _copy(templates[1], tmp_path / "repo")
    base = ws.head()
    first, second = [("rollback", "promote"), ("promote", "rollback"), ("gate", "promote"),
                     ("promote", "promote")][trial]
    procs = [subprocess.Popen(_argv(ws, AT_STEP_1[name]), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env())
             for name in (first, second)]
    results = [(p, *p.communicate(timeout=120)) for p in procs]
    assert all(p.returncode in (0, 1, 2) for p, _, _ in results), results
    committed = [err for p, _, err in results if p.returncode == 0]
    assert all("committed " in err for err in committed)
    assert len(_whole_states(ws, base)) == len(committed)
    assert git(ws.work, "status", "--porcelain") == ""


# Runs dgdgen as `python -m dgdgen` does, but stops the process when it first imports the module
# PAUSE_IMPORT names (creating the marker file, waiting until the test removes it): a command
# caught in the middle of its imports, the second or so a Python command spends before its work.
_PAUSED_IMPORT = """
import importlib.abc, os, runpy, sys, time

MODULE, MARKER = os.environ["PAUSE_IMPORT"].split(":", 1)


class Pause(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            sys.meta_path.remove(self)
            with open(MARKER, "w") as fh:
                fh.write(str(os.getpid()))
            deadline = time.monotonic() + 120
            while os.path.exists(MARKER) and time.monotonic() < deadline:
                time.sleep(0.01)
        return None


sys.meta_path.insert(0, Pause())
runpy.run_module("dgdgen", run_name="__main__", alter_sys=True)
"""

OVERTAKEN = [("rollback", "gate"), ("gate", "promote"), ("render", "rollback")]


@pytest.mark.parametrize(("paused", "other"), OVERTAKEN,
                         ids=[f"{a}-overtaken-by-{b}" for a, b in OVERTAKEN])
def test_a_command_overtaken_while_it_imports_does_not_commit(
    templates: dict[int, Workspace], tmp_path: Path, paused: str, other: str
) -> None:
    """The first command is started, and stopped while it imports pydantic (the spec's models:
    before it has read the spec or the rollout); the second runs to its commit meanwhile. The
    first started before that commit, so its premise is the state before it, and it must not
    act on a state nobody asked it to act on (a gate result meant for the step just left, a
    rollback over a record its caller never saw): it exits 2, and only the second commits."""
    ws = _copy(templates[1], tmp_path / "repo")
    base = ws.head()
    marker = tmp_path / "importing"
    argv = _argv(ws, AT_STEP_1[paused])
    a = subprocess.Popen([sys.executable, "-c", _PAUSED_IMPORT, *argv[3:]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=_env(PAUSE_IMPORT=f"pydantic:{marker}"))
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert a.poll() is None, a.communicate()
        assert time.monotonic() < deadline, f"{paused} never imported pydantic"
        time.sleep(0.01)
    b = _run(ws, AT_STEP_1[other])
    assert b.code == 0, b.err
    marker.unlink()
    _out, err = a.communicate(timeout=120)
    assert a.returncode == 2, err
    assert "the rollout changed after this command started" in err and "nothing was done" in err
    assert len(_whole_states(ws, base)) == 1
    assert git(ws.work, "status", "--porcelain") == ""
