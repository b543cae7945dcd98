"""The private network namespace works for a non-root user (user + network namespace).

Runs for real as ``nobody`` via setpriv on this machine's kernel. The system Python is used because
the project's venv interpreter may live in a home that ``nobody`` cannot read; the module under test
imports only the standard library and ``dgdgen.runtime``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import os, socket, sys
sys.path.insert(0, sys.argv[1])
from dgdgen.runtime.netns import run_isolated

def inside():
    s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen()
    return os.geteuid(), sorted(n for _, n in socket.if_nameindex())

outer = sorted(n for _, n in socket.if_nameindex())
uid, names = run_isolated(inside, timeout=60)
print(os.geteuid(), uid, ",".join(names), ",".join(outer))
"""


def _system_python() -> str | None:
    for cand in ("/usr/bin/python3", "/bin/python3"):
        if os.access(cand, os.X_OK):
            return cand
    return None


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to drop to nobody"
)
def test_nobody_sees_only_loopback() -> None:
    py = _system_python()
    assert py is not None, "a system python3 readable by nobody is needed"
    res = subprocess.run(
        [
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            py,
            "-c",
            PROBE,
            str(ROOT),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    outer_uid, inner_uid, names, outer = res.stdout.split()
    assert outer_uid != "0"  # really unprivileged outside
    assert inner_uid == "0"  # mapped to root inside the user namespace
    assert names == "lo"
    assert outer != "lo"  # the host has more than loopback, so the check above means something
