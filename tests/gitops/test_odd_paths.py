"""Rendered directories whose paths Git's text output would quote — spaces, quotes, non-ASCII —
and the work tree's root itself (``--into .``): the whole promotion cycle works, a killed
promotion is finished by its rerun, and status and the drift check see a clean, current tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git

NAMES = {
    "space": "deploy/qwen router",
    "quotes": "deploy/it's \"quoted\"",
    "non-ascii": "deploy/ünïcødé-€",
    "root": ".",
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_promotion_cycle_in_an_oddly_named_directory(ws: Workspace, name: str) -> None:
    into = (ws.work / NAMES[name]).resolve() if NAMES[name] != "." else ws.work
    spec = str(ws.spec)
    r = cli("render", spec, "--into", str(into), "--commit")
    assert r.code == 0, r.err
    assert cli("promote", spec, "--into", str(into)).code == 0
    assert cli("gate", spec, "--into", str(into), "--result", "passed").code == 0
    env = dict(os.environ, DGDGEN_TEST_KILL_AT="ref:1")
    killed = subprocess.run([sys.executable, "-m", "dgdgen", "promote", spec, "--into",
                             str(into)], capture_output=True, text=True, env=env, timeout=120,
                            check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    st = json.loads(cli("status", spec, "--into", str(into), "--format", "json").out)
    assert st["step"] == "step-02" and st["pending"] is not None
    r = cli("promote", spec, "--into", str(into))
    assert r.code == 0, r.err
    assert "finished an interrupted command" in r.err
    assert [s.split(": ", 1)[1] for s in ws.log()[:3]] == [
        "promote to step 2 (bs32 at 50%)", "gate slo of step 1: passed",
        "promote to step 1 (bs32 at 25%)"]
    assert git(ws.work, "status", "--porcelain") == ""
    r = cli("status", spec, "--into", str(into), "--format", "json")
    assert r.code == 0, r.out + r.err
    st = json.loads(r.out)
    assert st["step"] == "step-02" and st["pending"] is None and st["uncommitted"] is None
    assert st["dirty"] == [] and st["drifted"] == []
    r = cli("render", spec, "--into", str(into), "--check")
    assert r.code == 0, r.out + r.err
    # a hand edit shows up as drift and as a dirty path, named as itself
    victim = next(p for p in Path(into).glob("*.yaml") if p.name.startswith("service-"))
    victim.write_text(victim.read_text() + "# edit\n")
    st = json.loads(cli("status", spec, "--into", str(into), "--format", "json").out)
    rel = victim.relative_to(ws.work).as_posix()
    assert st["dirty"] == [rel]
    r = cli("promote", spec, "--into", str(into))
    assert r.code == 2 and "uncommitted changes" in r.err and rel in r.err
