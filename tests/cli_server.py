"""The tests' `python -m dgdgen` runs, without paying Python's start-up and dgdgen's imports
each time (a fresh interpreter spent 0.41 s of CPU a command, most of it importing; the suite's
thousand such commands were a sixth of its CPU: docs/performance.md).

Each pytest worker starts one command server the first time a test runs a command: a fresh
interpreter that imports dgdgen's command modules, then runs every command as a fork of itself
(dgdgen.runtime.forkserver, the rehearsal's command server): its own process, working folder,
environment, output and exit code, from a state no command before it touched
(tests/rehearse/test_forkserver.py proves a forked command gives what a fresh interpreter
gives). What a fork cannot give is what an interpreter reads only when it starts: an
environment that changes any of it (the hash seed, locale, warning filters, …) gets a fresh
interpreter, as do the tests that are about start-up itself (they call `subprocess`
directly).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from dgdgen.runtime.forkserver import ForkServer

REPO = Path(__file__).resolve().parents[1]

# What the server imports: the CLI, every command's module and what the commands import lazily
# (a module a command never imports only costs the server's memory).
PRELOAD = ("dgdgen.cli", *sorted(
    f"dgdgen.commands.{p.stem}" for p in (REPO / "dgdgen" / "commands").glob("*.py")
    if p.stem != "__init__"), "dgdgen.pipeline.prepare", "dgdgen.write", "dgdgen.cluster.check",
    "dgdgen.gitops.actions", "dgdgen.analysis.gates", "ruamel.yaml")

# Read by the interpreter (or the C library) when it starts, not when a command reads its
# environment: a command whose environment differs from the server's in one of these runs in a
# fresh interpreter.
STARTUP = ("PYTHON", "LC_", "LANG", "TZ", "MALLOC_", "GLIBC_TUNABLES", "LD_PRELOAD",
           "LD_LIBRARY_PATH")

_server: ForkServer | None = None
_server_env: dict[str, str] = {}


def _startup(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP)}


def _get() -> ForkServer:
    """This worker's server: started on first use, and again after one was closed (a command
    past its timeout closes it)."""
    global _server, _server_env
    if _server is None or not _server.pid:
        _server_env = _startup(os.environ)
        _server = ForkServer.spawned(PRELOAD, cwd=REPO)
    return _server


@atexit.register
def _close() -> None:
    if _server is not None:
        _server.close()


def run(argv: list[str], *, cwd: Path, env: Mapping[str, str],
        timeout: float) -> subprocess.CompletedProcess[str]:
    """``python -m dgdgen ARGV`` in ``cwd`` with exactly ``env``."""
    server = _get()
    if _startup(env) != _server_env:
        return subprocess.run([sys.executable, "-m", "dgdgen", *argv], cwd=cwd, env=dict(env),
                              capture_output=True, text=True, timeout=timeout, check=False)
    return server.run("dgdgen", argv, cwd=cwd, env=env, timeout=timeout)
