"""`promote --push` whose push fails: the message names the commit and how to push it, and a
retry pushes that commit instead of promoting past the step's gate. A real bare remote whose
pre-receive hook refuses pushes while a flag file exists."""

from __future__ import annotations

from pathlib import Path

from gitops_support import Workspace, cli, git


def _refuse_pushes(ws: Workspace, refuse: bool) -> None:
    hook = ws.remote / "hooks" / "pre-receive"
    flag = ws.remote / "refuse"
    hook.write_text(f"#!/bin/sh\nif [ -e '{flag}' ]; then echo 'remote says no' >&2; exit 1; fi\n")
    hook.chmod(0o755)
    if refuse:
        flag.write_text("")
    elif flag.exists():
        flag.unlink()


def _remote_head(ws: Workspace) -> str:
    return git(ws.remote, "rev-parse", "refs/heads/main").strip()


def test_failed_push_names_the_commit_and_a_retry_pushes_not_promotes(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into, "--push").code == 0  # step 1, pushed
    assert cli("gate", spec, "--into", into, "--result", "passed", "--push").code == 0

    _refuse_pushes(ws, True)
    r = cli("promote", spec, "--into", into, "--push")
    assert r.code == 2
    step2 = ws.head()
    assert ws.log()[0].endswith("promote to step 2 (bs32 at 50%)")
    assert f"committed {step2[:12]}" in r.err and "the push failed" in r.err
    assert "remote says no" in r.err
    assert f"git -C {ws.work} push origin" in r.err and "--push again" in r.err
    assert _remote_head(ws) != step2

    # the remote still refuses: the retry fails the same way and makes no commit
    r = cli("promote", spec, "--into", into, "--push")
    assert r.code == 2 and ws.head() == step2 and "the push failed" in r.err

    # the remote accepts again: the retry pushes step 2 and stops there (its gate is unjudged)
    _refuse_pushes(ws, False)
    r = cli("promote", spec, "--into", into, "--push")
    assert r.code == 0, r.err
    assert ws.head() == step2 and _remote_head(ws) == step2
    assert "pushed 1 earlier commit(s)" in r.out and "Not moving further" in r.out
    assert (Path(into) / ".dgdgen-index").read_text().count('"step": "step-02"') == 1

    # with nothing left unpushed, the next promotion is an ordinary one
    assert cli("gate", spec, "--into", into, "--result", "passed", "--push").code == 0
    r = cli("promote", spec, "--into", into, "--push")
    assert r.code == 0 and "promote to step 3" in r.out
    assert _remote_head(ws) == ws.head()


def test_promote_push_on_a_stale_branch_is_refused(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into, "--push").code == 0
    # someone else pushed to the remote meanwhile
    other = ws.work.parent / "other"
    git(ws.work.parent, "clone", "-q", str(ws.remote), str(other))
    (other / "README").write_text("x\n")
    git(other, "add", "README")
    git(other, "commit", "-q", "-m", "elsewhere")
    git(other, "push", "-q", "origin", "HEAD:main")
    head = ws.head()
    r = cli("promote", spec, "--into", into, "--push")
    assert r.code == 2 and "has commits this branch does not" in r.err and "pull" in r.err
    assert ws.head() == head
