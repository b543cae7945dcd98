"""The private network namespace works for a non-root user (user + network namespace).

Runs for real on this machine's kernel: as root, the probe drops to ``nobody`` via setpriv, with the
system Python because the project's venv interpreter may live in a home that ``nobody`` cannot read
(the module under test imports only the standard library and ``dgdgen.runtime``); as any other user
(`.ci/run`'s second pass runs as ``nobody``), the probe runs as that user.

Measured where these tests were written: Linux 6.18 (mainline, no Debian
``kernel.unprivileged_userns_clone`` sysctl, no AppArmor
``kernel.apparmor_restrict_unprivileged_userns``), ``user.max_user_namespaces`` = 96365, so an
unprivileged user + network namespace is allowed. The refusal test builds a real refusal inside a
user namespace of its own (``user.max_user_namespaces=0`` there), leaving the host's settings alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="root needs setpriv to drop to nobody")
def test_an_unprivileged_user_sees_only_loopback() -> None:
    """As root the probe drops to ``nobody``; as any other user it runs as that user."""
    if os.geteuid() == 0:
        py = _system_python()
        assert py is not None, "a system python3 readable by nobody is needed"
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", py]
    else:
        command = [sys.executable]
    res = subprocess.run(
        [*command, "-c", PROBE, str(ROOT)],
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


REFUSAL = """
import ctypes, os, sys
sys.path.insert(0, sys.argv[1])
from dgdgen.runtime import RuntimeUnavailable
from dgdgen.runtime.netns import enter_private_netns

libc = ctypes.CDLL("libc.so.6", use_errno=True)
go_r, go_w = os.pipe()
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(go_w); os.close(ready_r)
    assert libc.unshare(0x10000000) == 0  # CLONE_NEWUSER, as host root
    os.write(ready_w, b"x"); os.read(go_r, 1)
    # Owner of this user namespace: forbid any nested one, as a host with
    # user.max_user_namespaces=0 does, then drop to an unprivileged uid.
    with open("/proc/sys/user/max_user_namespaces", "w") as fh:
        fh.write("0")
    os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
    try:
        enter_private_netns()
    except RuntimeUnavailable as exc:
        print(exc); os._exit(3)
    os._exit(0)
os.close(go_r); os.close(ready_w)
os.read(ready_r, 1)
for name, text in (("uid_map", "0 0 65536"), ("setgroups", "allow"), ("gid_map", "0 0 65536")):
    try:
        with open(f"/proc/{pid}/{name}", "w") as fh:
            fh.write(text)
    except OSError:
        if name != "setgroups":
            raise
os.write(go_w, b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to build the refusing user namespace")
def test_refusal_names_the_setting_and_never_falls_back() -> None:
    res = subprocess.run(
        [sys.executable, "-c", REFUSAL, str(ROOT)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 3, (res.stdout, res.stderr)
    msg = res.stdout
    assert "cannot create an unprivileged user + network namespace" in msg
    assert "user.max_user_namespaces=0" in msg
    assert "sysctl -w user.max_user_namespaces=" in msg
    assert "does not start" in msg
