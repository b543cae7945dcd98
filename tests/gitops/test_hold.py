"""`dgdgen pause` / `resume` on real repositories: a hold is a commit in the index; promote and
cleanup refuse while it is there (exit 4, who and why, the resume command), rollback and gate do
not; resume is its own commit; the workflow's promote step waits on a hold and promotes once it
is resumed; a hand-edited hold is refused like any other bad index field."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git, rendered_and_pushed


def _index(ws: Workspace, rev: str = "HEAD") -> dict[str, object]:
    doc: dict[str, object] = json.loads(git(ws.work, "show", f"{rev}:deploy/qwen-router/.dgdgen-index"))
    return doc


def _run(ws: Workspace, *args: str) -> tuple[int, str, str]:
    r = cli(args[0], str(ws.spec), "--into", str(ws.into), *args[1:])
    return r.code, r.out, r.err


def test_pause_holds_promote_and_cleanup_not_rollback_until_resume(ws: Workspace) -> None:
    assert _run(ws, "render", "--commit")[0] == 0
    assert _run(ws, "promote")[0] == 0
    code, out, _ = _run(ws, "pause", "--reason", "INC-77: KV-cache errors", "--by", "Ana <a@x.io>")
    assert code == 0
    assert ws.log()[0] == "qwen-router: pause at step 1: INC-77: KV-cache errors"
    assert "Dgdgen-Hold: Ana <a@x.io>: INC-77: KV-cache errors" in out
    hold = _index(ws)["hold"]
    assert isinstance(hold, dict) and hold["by"] == "Ana <a@x.io>"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", str(hold["since"]))
    # only the index changed: the rendered files are those of step 1
    assert git(ws.work, "diff", "--name-only", "HEAD~1", "HEAD").split() == [
        "deploy/qwen-router/.dgdgen-index"]
    head = ws.head()
    assert _run(ws, "gate", "--result", "passed")[0] == 0  # a judgement moves no traffic
    assert _index(ws)["hold"] == hold  # and keeps the hold
    head = ws.head()
    code, _, err = _run(ws, "promote")
    assert code == 4 and ws.head() == head
    assert "paused by Ana <a@x.io>" in err and "INC-77: KV-cache errors" in err
    assert "dgdgen resume" in err and "rollback` is never held" in err
    code, _, err = _run(ws, "promote", "--skip-gate", "--reason", "x")
    assert code == 4 and ws.head() == head  # skipping a gate is no way around a hold
    code, _, err = _run(ws, "render", "--step", "2", "--commit")
    assert code == 4 and ws.head() == head
    code, _, err = _run(ws, "pause", "--reason", "again")
    assert code == 2 and "already paused by Ana" in err
    st = json.loads(_run(ws, "status", "--format", "json")[1])
    assert st["hold"] == hold
    assert "paused     by Ana <a@x.io> since" in _run(ws, "status")[1]
    code, out, _ = _run(ws, "resume")
    assert code == 0 and ws.log()[0] == "qwen-router: resume at step 1"
    assert "held by Ana <a@x.io> since" in out
    assert "hold" not in _index(ws)
    assert _run(ws, "resume")[0] == 2  # not paused
    assert _run(ws, "promote")[0] == 0 and _index(ws)["step"] == "step-02"
    # rollback is a safety move: never held, and the hold stays for what comes next
    assert _run(ws, "pause", "--reason", "freeze")[0] == 0
    assert _run(ws, "rollback")[0] == 0
    assert _index(ws)["step"] == "rollback" and "hold" in _index(ws)


def test_pause_who_defaults_to_the_commit_author(ws: Workspace,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(ws, "render", "--commit")[0] == 0
    monkeypatch.delenv("GIT_AUTHOR_NAME")
    monkeypatch.delenv("GIT_AUTHOR_EMAIL")
    git(ws.work, "config", "user.name", "Bo Lee")
    git(ws.work, "config", "user.email", "bo@example.com")
    assert _run(ws, "pause", "--reason", "  two\n lines ")[0] == 0
    hold = _index(ws)["hold"]
    assert hold == {"by": "Bo Lee <bo@example.com>", "reason": "two lines",
                    "since": hold["since"]}  # type: ignore[index]
    assert git(ws.work, "log", "-1", "--format=%an").strip() == "Bo Lee"
    assert _run(ws, "pause", "--reason", " ")[0] == 2


@pytest.mark.parametrize(("hold", "field"), [
    ('{"by": "x", "reason": "y"}', "hold"),
    ('{"by": "", "reason": "y", "since": "2026-01-01T00:00:00Z"}', "hold.by"),
    ('{"by": "x", "reason": "y", "since": "yesterday"}', "hold.since"),
])
def test_a_hand_edited_hold_is_refused(ws: Workspace, hold: str, field: str) -> None:
    assert _run(ws, "render", "--commit")[0] == 0
    path = ws.into / ".dgdgen-index"
    text = path.read_text()
    path.write_text(text[:text.rindex("}")].rstrip() + f',\n  "hold": {hold}\n}}\n')
    code, _, err = _run(ws, "status")
    assert code == 2 and f"{field}:" in err and "Traceback" not in err


def test_the_workflow_waits_on_a_hold_and_promotes_after_resume(ws: Workspace, tmp_path: Path
                                                                ) -> None:
    """The WorkflowTemplate's container script, real git against a bare remote: paused, the
    promote action neither fails nor commits; it polls, and promotes once resume is pushed."""
    from dgdgen.gitops.workflow import PROMOTE_SCRIPT

    spec, into, bindir, home = rendered_and_pushed(ws, tmp_path)
    assert cli("pause", spec, "--into", into, "--reason", "INC-9", "--push").code == 0
    paused = git(ws.remote, "rev-parse", "main")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    env.update({
        "PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(home), "ACTION": "promote",
        "TO": "1", "MESSAGE": "", "REPO": str(ws.remote), "BRANCH": "main",
        "SPEC": "rollouts/qwen/rollout.yaml", "INTO": "deploy/qwen-router",
        "CLONE": str(tmp_path / "clone"), "COMMIT_FILE": str(tmp_path / "commit"),
        "HOLD_POLL": "0.2",
    })
    log = tmp_path / "stderr"
    with log.open("w") as err:
        proc = subprocess.Popen(["sh", "-c", PROMOTE_SCRIPT], env=env, stderr=err,
                                stdout=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 60
            while log.read_text().count("held: waiting") < 2 and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()  # it waits: it did not exit
                time.sleep(0.1)
            assert log.read_text().count("held: waiting") >= 2
            assert "paused by" in log.read_text() and "INC-9" in log.read_text()
            assert git(ws.remote, "rev-parse", "main") == paused  # nothing promoted
            assert cli("resume", spec, "--into", into, "--push").code == 0
            assert proc.wait(timeout=60) == 0, log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
    assert git(ws.remote, "log", "-1", "--format=%s", "main").strip() == \
        "qwen-router: promote to step 1 (bs32 at 25%)"
    assert (tmp_path / "commit").read_text() == git(ws.remote, "rev-parse", "main")
