"""`dgdgen history` and `dgdgen explain` on repositories the tests build with real git and fixed
commit times: a completed rollout, a rolled-back one, a superseded one, a paused one, and one
killed mid-write (after its commit moved HEAD, before its files) — the answers are the true
ones, and each command explain names moves the rollout on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from gitops_support import Workspace, cli

T0 = 1_780_000_000  # 2026-05-28T20:26:40Z


def _at(monkeypatch: pytest.MonkeyPatch, minute: int) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{T0 + 60 * minute} +0000")


def _do(ws: Workspace, *args: str) -> None:
    r = cli(args[0], str(ws.spec), "--into", str(ws.into), *args[1:])
    assert r.code == 0, r.err


def _history(ws: Workspace) -> list[dict[str, object]]:
    r = cli("history", str(ws.spec), "--into", str(ws.into), "--format", "json")
    assert r.code == 0, r.err
    rollouts: list[dict[str, object]] = json.loads(r.out)["rollouts"]
    return rollouts


def _explain(ws: Workspace) -> tuple[int, dict[str, object]]:
    r = cli("explain", str(ws.spec), "--into", str(ws.into), "--format", "json")
    doc: dict[str, object] = json.loads(r.out)
    return r.code, doc


def _run_command(ws: Workspace, command: object) -> None:
    """Run the command explain named (its spec path relative to the current directory)."""
    assert isinstance(command, str) and command.startswith("dgdgen ")
    args = command.split()[1:]
    r = cli(*[os.path.abspath(a) if a.endswith((".yaml", "qwen-router")) else a for a in args])
    assert r.code == 0, (command, r.err)


def test_history_of_completed_rolled_back_superseded_and_paused_rollouts(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws.work)
    # 1: completed, the gate of step 2 skipped, in 50 minutes
    _at(monkeypatch, 0)
    _do(ws, "render", "--commit")
    _at(monkeypatch, 10)
    _do(ws, "promote")
    _at(monkeypatch, 20)
    _do(ws, "gate", "--result", "passed")
    _at(monkeypatch, 30)
    _do(ws, "promote")
    _at(monkeypatch, 40)
    _do(ws, "promote", "--skip-gate", "--reason", "INC-42")
    _at(monkeypatch, 50)
    _do(ws, "cleanup")
    # 2: rolled back from step 1 after a failed gate, in 15 minutes
    _at(monkeypatch, 60)
    _do(ws, "render", "--step", "0", "--commit")
    _at(monkeypatch, 65)
    _do(ws, "promote")
    _at(monkeypatch, 70)
    _do(ws, "gate", "--result", "failed", "--message", "ttft p95 2.4s")
    code, doc = _explain(ws)
    assert code == 1 and "recorded as failed (ttft p95 2.4s)" in str(doc["explanation"])
    _at(monkeypatch, 75)
    _run_command(ws, doc["command"])  # dgdgen rollback
    # 3: started again, restarted before it ended (superseded); 4: paused at step 1
    for minute in (80, 85):
        _at(monkeypatch, minute)
        _do(ws, "render", "--step", "0", "--commit")
        _at(monkeypatch, minute + 1)
        _do(ws, "promote")
    _at(monkeypatch, 90)
    _do(ws, "pause", "--reason", "freeze", "--by", "Ana <a@x.io>")

    h = _history(ws)
    assert [r["outcome"] for r in h] == ["completed", "rolled back", "superseded", "paused"]
    done, back, gone, held = h
    assert done["start"] == "2026-05-28T20:26:40Z" and done["end"] == "2026-05-28T21:16:40Z"
    assert done["durationSeconds"] == 50 * 60 and done["highestStep"] == 3
    assert done["steps"] == ["step-00", "step-01", "step-02", "step-03", "cleanup"]
    assert done["gates"] == {"step-01": "passed", "step-02": "skipped"}
    assert back["steps"] == ["step-00", "step-01", "rollback"]
    assert back["durationSeconds"] == 15 * 60 and back["gates"] == {"step-01": "failed"}
    assert gone["end"] is None and gone["highestStep"] == 1
    assert held["holds"] == [{"by": "Ana <a@x.io>", "reason": "freeze",
                              "since": held["holds"][0]["since"], "until": None}]  # type: ignore[index]
    assert held["version"] == "bs32" and held["stable"] == "bs16"
    assert [c["step"] for c in held["commits"]] == ["step-00", "step-01", "step-01"]  # type: ignore[index]
    text = cli("history", str(ws.spec), "--into", str(ws.into)).out.splitlines()
    assert text[1].split() == ["1", "bs16", "→", "bs32", "2026-05-28T20:26:40Z",
                               "2026-05-28T21:16:40Z", "50m00s", "step", "3", "1:passed",
                               "2:skipped", "completed"]
    assert text[2].split()[-2:] == ["1:failed", "rolled"] or text[2].endswith("rolled back")
    assert text[-1].startswith("4: paused by Ana <a@x.io> at ") and text[-1].endswith(
        ": freeze; still paused")

    code, doc = _explain(ws)
    assert code == 1 and "paused by Ana <a@x.io>" in str(doc["explanation"])
    _run_command(ws, doc["command"])  # dgdgen resume
    code, doc = _explain(ws)
    assert code == 1 and "waits for the gate slo of step 1, not recorded" in str(
        doc["explanation"])
    assert "Inconclusive below 1826 requests per generation" in str(doc["explanation"])
    _run_command(ws, doc["command"])  # dgdgen gate --result passed
    code, doc = _explain(ws)
    assert code == 0 and "the next move is step 2 (candidate 50%)" in str(doc["explanation"])
    assert "bake time of 10m" in str(doc["explanation"])
    _run_command(ws, doc["command"])  # dgdgen promote
    assert _history(ws)[-1]["highestStep"] == 2
    assert _history(ws)[-1]["holds"][0]["until"] is not None  # type: ignore[index]


def test_history_and_explain_of_a_write_killed_after_its_commit(
        ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws.work)
    _do(ws, "render", "--commit")
    _do(ws, "promote")
    _do(ws, "gate", "--result", "passed")
    env = dict(os.environ, DGDGEN_TEST_KILL_AT="ref:1")
    r = subprocess.run([sys.executable, "-m", "dgdgen", "promote", str(ws.spec), "--into",
                        str(ws.into)], env=env, capture_output=True, timeout=120, check=False)
    assert r.returncode == -signal.SIGKILL
    h = _history(ws)
    assert len(h) == 1 and h[0]["outcome"] == "interrupted" and h[0]["highestStep"] == 2
    assert "its files were not all written" in str(h[0]["note"])
    code, doc = _explain(ws)
    assert code == 1 and "interrupted write" in str(doc["explanation"])
    _run_command(ws, doc["command"])  # finishes the write, and changes nothing else
    assert ws.log()[0] == "qwen-router: promote to step 2 (bs32 at 50%)"
    assert _history(ws)[0]["outcome"] == "in progress"
    code, doc = _explain(ws)
    assert code == 1 and "gate slo of step 2" in str(doc["explanation"])


def test_explain_before_anything_is_rendered_and_outside_git(ws: Workspace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    code, doc = _explain(ws)
    assert code == 0 and "Nothing is rendered" in str(doc["explanation"])
    assert _history(ws) == []
    r = cli("history", str(ws.spec), "--into", str(tmp_path / "out"))
    assert r.code == 2 and "not inside a Git work tree" in r.err
