"""The rehearsal's command server (dgdgen.runtime.forkserver): a GitOps command run as a fork of
it is what `python -m dgdgen` is — the same exit code and output, its own working folder and
environment — and nothing one command does is seen by the next."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dgdgen.runtime.forkserver import ForkServer

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"

PROBE = """
import json, os, sys
# a module every command has imported: a value left on it would reach the next command
json.dgdgen_probe = getattr(json, "dgdgen_probe", 0) + 1
print(json.dgdgen_probe, os.getcwd(), os.environ.get("PROBE"), sys.argv[1:])
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""


def in_a_fork(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)`` in a forked child, which has one thread whatever the test process runs
    (the server forks only from a single-threaded process)."""
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        return pool.apply(func, args)


def _fresh(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dgdgen", *args], cwd=cwd, capture_output=True,
                          text=True, check=False)


def _forked(args_list: list[list[str]], cwd: Path) -> list[tuple[int, str, str, int]]:
    with ForkServer(("dgdgen.cli", "dgdgen.commands.plan")) as server:
        out = []
        for args in args_list:
            r = server.run("dgdgen", args, cwd=cwd)
            out.append((r.returncode, r.stdout, r.stderr, server.pid))
        return out


def test_a_command_gives_what_a_fresh_interpreter_gives(tmp_path: Path) -> None:
    cases = [["plan", str(SPEC)], ["plan", str(tmp_path / "missing.yaml")],
             ["plan", "--no-such-flag", str(SPEC)]]
    forked = in_a_fork(_forked, cases, tmp_path)
    for args, (code, stdout, stderr, server) in zip(cases, forked, strict=True):
        assert server  # it ran in the server, not as a fallback
        fresh = _fresh(args, tmp_path)
        assert (code, stdout, stderr) == (fresh.returncode, fresh.stdout, fresh.stderr), args
    assert [c for c, *_ in forked] == [0, 2, 2]


def _probe(pkg: Path, a: Path, b: Path) -> list[tuple[int, str]]:
    sys.path.insert(0, str(pkg))
    with ForkServer(("json",)) as server:
        assert server.pid
        first = server.run("dgdgen_probe_mod", ["x"], cwd=a, env={"PROBE": "one"})
        second = server.run("dgdgen_probe_mod", ["y", "z"], cwd=b,
                            env={"PROBE": "two", "PROBE_EXIT": "3"})
    return [(first.returncode, first.stdout), (second.returncode, second.stdout)]


def test_each_command_starts_from_the_server_not_from_the_command_before(
        tmp_path: Path) -> None:
    pkg = tmp_path / "lib"
    pkg.mkdir()
    (pkg / "dgdgen_probe_mod.py").write_text(PROBE)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first, second = in_a_fork(_probe, pkg, a, b)
    assert first == (0, f"1 {a} one ['x']\n")
    assert second == (3, f"1 {b} two ['y', 'z']\n")


def test_with_a_thread_running_it_starts_fresh_interpreters(tmp_path: Path) -> None:
    """Forking a process with threads can copy a lock another thread holds: then every command
    runs as `python -m` instead, with the same result."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with ForkServer(("dgdgen.cli",)) as server:
            assert server.pid == 0
            r = server.run("dgdgen", ["plan", str(SPEC)], cwd=tmp_path)
    finally:
        stop.set()
        t.join()
    assert r.returncode == 0 and r.stdout == _fresh(["plan", str(SPEC)], tmp_path).stdout


SLEEPER = """
import os, sys, time
print(os.getpid(), flush=True)
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as fh:
        fh.write(str(os.getpid()))
time.sleep(float(sys.argv[1]))
"""


def test_a_spawned_server_serves_a_process_that_runs_threads(tmp_path: Path) -> None:
    """A process with threads (a test runner's worker) cannot fork a server; it can start one
    as a fresh interpreter, and its commands give what a fresh interpreter gives."""
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with ForkServer.spawned(("dgdgen.cli", "dgdgen.commands.plan"), cwd=REPO) as server:
            assert server.pid
            got = [server.run("dgdgen", args, cwd=tmp_path)
                   for args in (["plan", str(SPEC)], ["plan", "--no-such-flag"])]
    finally:
        stop.set()
        t.join()
    for r in got:
        fresh = _fresh(list(r.args[1:]), tmp_path)
        assert (r.returncode, r.stdout, r.stderr) == (fresh.returncode, fresh.stdout,
                                                      fresh.stderr)
    assert [r.returncode for r in got] == [0, 2]


def test_a_command_past_its_timeout_is_killed_and_the_server_closed(tmp_path: Path) -> None:
    (tmp_path / "dgdgen_sleeper.py").write_text(SLEEPER)
    server = ForkServer.spawned(("json",), cwd=tmp_path)
    pid = server.pid
    assert pid
    quick = server.run("dgdgen_sleeper", ["0"], cwd=tmp_path)
    assert quick.returncode == 0 and int(quick.stdout) != pid
    started = tmp_path / "started"
    try:
        server.run("dgdgen_sleeper", ["60", str(started)], cwd=tmp_path, timeout=2.0)
    except subprocess.TimeoutExpired:
        pass
    else:
        raise AssertionError("no timeout")
    assert server.pid == 0  # closed, and reaped: the server is gone
    assert not Path(f"/proc/{pid}").exists()
    assert _gone(int(started.read_text()))  # and its command, which was killed


def _gone(pid: int) -> bool:
    """No such process, or only its exit status left."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_server_killed_between_commands_is_closed_and_the_next_runs_fresh(
        tmp_path: Path) -> None:
    """A server that dies (an out-of-memory kill) loses the command it was handed, and is
    closed and reaped at once: the next command runs in a fresh interpreter instead of failing
    on a dead socket."""
    (tmp_path / "dgdgen_sleeper.py").write_text(SLEEPER)
    server = ForkServer.spawned(("json",), cwd=tmp_path)
    pid = server.pid
    assert pid and server.run("dgdgen_sleeper", ["0"], cwd=tmp_path).returncode == 0
    os.kill(pid, signal.SIGKILL)
    try:
        server.run("dgdgen_sleeper", ["0"], cwd=tmp_path, timeout=60)
    except RuntimeError as exc:
        assert "ended" in str(exc)
    else:
        raise AssertionError("a command handed to a killed server ran")
    assert server.pid == 0 and _gone(pid)
    after = server.run("dgdgen_sleeper", ["0"], cwd=tmp_path, timeout=60)
    assert after.returncode == 0 and int(after.stdout) not in (0, pid)


# A signal's disposition as a program reads it, by value: one ignored when the interpreter
# started reads as the number 1, one ignored from Python as signal.SIG_IGN; they compare equal.
# Source text, for the probes run as programs here and in test_podserver.py.
DISPOSITION = """
def disposition(sig):
    handler = signal.getsignal(sig)
    return {signal.SIG_IGN: "ignored", signal.SIG_DFL: "default"}.get(handler, str(handler))
"""

DISPOSITIONS = "import signal\n" + DISPOSITION + """
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    print(disposition(sig))
"""


def start_as(ignore: bool) -> None:
    """This process's SIGINT and SIGHUP as `nohup` or a script's background job leaves them
    (ignored), or as an interactive shell does (Python's handler, the default)."""
    for sig, default in ((signal.SIGINT, signal.default_int_handler),
                         (signal.SIGHUP, signal.SIG_DFL)):
        signal.signal(sig, signal.SIG_IGN if ignore else default)


def _dispositions(tmp: Path, ignore: bool) -> tuple[str, str]:
    """In a fork started as ``start_as(ignore)``: what a served command and a fresh interpreter
    see."""
    start_as(ignore)
    with ForkServer.spawned(("json",), cwd=tmp) as server:
        assert server.pid
        served = server.run("dgdgen_dispositions", [], cwd=tmp, env=dict(os.environ))
    fresh = subprocess.run([sys.executable, "-m", "dgdgen_dispositions"], cwd=tmp,
                           capture_output=True, text=True, check=False)
    return served.stdout, fresh.stdout


@pytest.mark.parametrize("ignore", [False, True], ids=["default-signals", "nohup"])
def test_a_command_handles_signals_as_a_fresh_interpreter(tmp_path: Path, ignore: bool) -> None:
    (tmp_path / "dgdgen_dispositions.py").write_text(DISPOSITIONS)
    served, fresh = in_a_fork(_dispositions, tmp_path, ignore)
    assert served == fresh == ("ignored\ndefault\nignored\n" if ignore else
                               "<built-in function default_int_handler>\ndefault\ndefault\n")
