"""Run ``dgdgen`` commands as processes of their own without paying Python's start-up each time.

The rehearsal moves the rollout with the GitOps commands a user runs (``dgdgen render --into``,
``promote``, ``analyze --record``, ``cleanup``, the drain hook's ``python -m
dgdgen.gitops.drain``), each a process of its own with its own exit code and output. Started as
``python -m dgdgen``, each spent most of its time starting: the interpreter and dgdgen's imports
take about 0.8 s of CPU, the command's own work 0.3 s (docs/rehearse.md, "Where the wall time
goes"). A fork server keeps that proof and drops the cost: one process, forked from the rehearsal
before it starts any thread, imports what the commands need once; each command then runs in a
fresh fork of it — its own process, with its own working folder, environment, output files and
exit code, and nothing left over from the command before — through the module's ``__main__``, as
``python -m`` runs it (for dgdgen, the console script's entry point). A process that already
runs threads cannot fork one safely: :meth:`ForkServer.spawned` starts the server as a fresh
interpreter instead (the test suite's workers run their commands so, tests/cli_server.py).

Standard library only at import time.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import locale
import logging
import os
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

_MAX = 1 << 20


def open_standard_streams() -> None:
    """In a forked child whose descriptors 0-2 are set: the standard streams a fresh interpreter
    would open on them (the server's own may be anything: a test's capture, a closed terminal)."""
    encoding = locale.getpreferredencoding(False)
    sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding=encoding,  # noqa: SIM115
                      errors="backslashreplace", closefd=False)


# The signals whose disposition a fresh `python -m` inherits from its starter when ignored.
INHERITED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)


def ignored_signals() -> list[int]:
    """In the process that asks for a fork: the signals it ignores, which an interpreter it
    started would ignore too (exec keeps an ignored signal ignored and resets a handled one)."""
    return [int(s) for s in INHERITED if signal.getsignal(s) == signal.SIG_IGN]


def inherit_dispositions(req: Mapping[str, object]) -> None:
    """In the fork: each signal as a fresh interpreter started by the asker would have it —
    ignored where the asker ignores it (a command started by `nohup` or a script's background
    job), else the default, Python's own handler for SIGINT."""
    ignored = {int(s) for s in req.get("ignored", ())}  # type: ignore[attr-defined]
    for sig in INHERITED:
        signal.signal(sig, signal.SIG_IGN if sig in ignored else
                      signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


def run_as_main(module: str, argv: list[str]) -> int:
    """Run ``module`` as ``python -m MODULE ARGV`` would, in this (forked) process; the exit code
    the interpreter would end with (negative: the signal it would end by)."""
    code: int
    try:
        sys.argv = [module, *argv]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            sys.stderr.write(f"{exc.code}\n")
    except KeyboardInterrupt:  # as the interpreter: the traceback, then the signal's own end
        import traceback

        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:  # noqa: BLE001 - as the interpreter would: a traceback, exit 1
        import traceback

        traceback.print_exc()
        code = 1
    logging.shutdown()  # what the interpreter's exit does for the module's log handlers
    flush_standard_streams()
    return code


def flush_standard_streams() -> None:
    """Flush standard output and error as the interpreter's exit does (a closed one is skipped)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def exit_child(code: int) -> None:
    """End a forked child with ``code`` as :func:`run_as_main` gave it (never returns)."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def _run_child(req: dict[str, object], out_fd: int, err_fd: int) -> int:
    """In the forked child: become the command and run it; its exit code."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    for fd in (devnull, out_fd, err_fd):
        os.close(fd)
    open_standard_streams()
    os.chdir(str(req["cwd"]))
    env = req["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    inherit_dispositions(req)
    # as `python -m MODULE`: for dgdgen, its __main__ runs the console script's entry point,
    # which ends the process with the command's exit code once its output is flushed
    argv = [str(a) for a in req["argv"]]  # type: ignore[attr-defined]
    return run_as_main(str(req["module"]), argv)


def _serve(sock: socket.socket, preload: Sequence[str],
           warm: Callable[[], object] | None) -> None:
    for name in preload:
        importlib.import_module(name)
    if warm is not None:
        try:
            warm()
        except Exception:  # noqa: BLE001, S110 - only a head start: each command does its own work
            pass
    # What is loaded now stays out of the cyclic collector's way: a command's collections would
    # otherwise walk every inherited object and copy each page they touch (copy-on-write).
    # The console script's threshold, as a fresh `dgdgen` runs with (dgdgen.cli.console).
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, *gc.get_threshold()[1:])
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, _MAX, 2)
        except OSError:
            return
        if not msg:
            return
        req = json.loads(msg)
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                sock.close()
                code = _run_child(req, fds[0], fds[1])
            finally:
                exit_child(code)
        for fd in fds:
            os.close(fd)
        _, status, usage = os.wait4(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        try:
            sock.send(json.dumps({"code": 128 - code if code < 0 else code,
                                  "cpu": usage.ru_utime + usage.ru_stime}).encode())
        except OSError:  # the other end gave up on the command (a timeout) and closed
            return


def threads() -> int:
    """Threads of this process, native ones (a Rust library's pool) included."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def fork_server(serve: Callable[[socket.socket], None], *,
                ignore: Sequence[int]) -> tuple[int, socket.socket | None]:
    """Fork a server process that runs ``serve`` on its end of a socket pair and ends when it
    returns, ignoring the signals ``ignore`` names; (its PID, this process's end). (0, None) when
    this process runs other threads: a fork could copy a lock one of them holds."""
    if threads() > 1:
        return 0, None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            ours.close()
            for sig in ignore:
                signal.signal(sig, signal.SIG_IGN)
            serve(theirs)
        except BaseException:  # noqa: BLE001 - a server that cannot serve just ends
            code = 70
        finally:
            os._exit(code)
    theirs.close()
    return pid, ours


def spawn_server(program: str, args: Sequence[str] = (), *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None,
                 ) -> tuple[subprocess.Popen[bytes] | None, socket.socket | None]:
    """Start ``python -c PROGRAM FD ARGS``, a fresh interpreter that serves on its end of a socket
    pair (descriptor FD), in ``cwd`` with ``env`` (default: this process's); (its process, this
    process's end), or (None, None) when it cannot start. Safe in a process that runs threads."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", program, str(theirs.fileno()), *args],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, cwd=cwd,
            env=None if env is None else dict(env))
    except OSError:
        ours.close()
        return None, None
    finally:
        theirs.close()
    return proc, ours


# A spawned server's program: it ignores a terminal's Ctrl-C as a forked one does (its commands
# reset it) and serves on the socket it was handed until the other end closes.
_SPAWNED = """
import signal, socket, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
from dgdgen.runtime.forkserver import _serve
_serve(socket.socket(fileno=int(sys.argv[1])), sys.argv[2:], None)
"""


class ForkServer:
    """A process that runs commands as fresh forks of itself (see the module's docstring).

    ``preload`` names the modules it imports; ``warm``, run once after them, may build what the
    commands would otherwise each build on first use from the shipped code and data (pydantic's
    deferred validators, the CRD schemas): state that is the same in every run. Nothing a
    command computes from its input is kept: each runs in a fork taken before it.

    Start it while the process is single-threaded; use it from one thread at a time (calls are
    serialised). A server that cannot start (threads already running) runs every command as
    ``python -m ...`` instead, which proves the same at the old cost.
    """

    def __init__(self, preload: Sequence[str] = (),
                 warm: Callable[[], object] | None = None) -> None:
        self._lock = threading.Lock()
        self.pid = 0
        # CPU time (user + system) of the commands run through the server so far
        self.cpu_seconds = 0.0
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None  # a spawned server's process
        # the rehearsal stops it: a terminal's Ctrl-C to the process group is not for it
        self.pid, self._sock = fork_server(lambda sock: _serve(sock, preload, warm),
                                           ignore=(signal.SIGINT,))

    @classmethod
    def spawned(cls, preload: Sequence[str] = (), *, cwd: Path | None = None) -> ForkServer:
        """A server started as a fresh interpreter rather than forked from this process: for a
        process that already runs threads (a test runner's worker), at the cost of one start.
        It imports ``preload`` from ``cwd`` and ends when this process closes it or ends."""
        server = cls.__new__(cls)
        server._lock = threading.Lock()
        server.cpu_seconds = 0.0
        server.pid = 0
        server._proc, server._sock = spawn_server(_SPAWNED, preload, cwd=cwd)
        if server._proc is not None:
            server.pid = server._proc.pid
        return server

    def __enter__(self) -> Self:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def run(self, module: str, argv: Sequence[str], *, cwd: Path,
            env: Mapping[str, str] | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """``python -m MODULE ARGV`` in ``cwd`` with ``env`` (default: this process's), its
        output captured as text, as :func:`subprocess.run` would return it. Past ``timeout``
        seconds the command is killed, the server closed and :class:`subprocess.TimeoutExpired`
        raised, as :func:`subprocess.run` would."""
        env = dict(os.environ if env is None else env)
        if self._sock is None:
            return subprocess.run([sys.executable, "-m", module, *argv], cwd=cwd, env=env,
                                  capture_output=True, text=True, check=False,
                                  timeout=timeout)
        with self._lock, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            req = {"module": module, "argv": list(argv), "cwd": str(cwd), "env": env,
                   "ignored": ignored_signals()}
            self._sock.settimeout(timeout)
            try:
                socket.send_fds(self._sock, [json.dumps(req).encode()],
                                [out.fileno(), err.fileno()])
                reply = self._sock.recv(_MAX)
            except TimeoutError:
                self._kill_commands()
                self.close()
                raise subprocess.TimeoutExpired([module, *argv], timeout or 0.0) from None
            except ConnectionError:  # the server is gone (killed, out of memory): a broken pipe
                reply = b""
            if not reply:
                # Closed (and reaped) at once: this command is lost, the next one runs in a
                # fresh interpreter, and an owner that starts servers on demand starts another
                # (tests/cli_server.py).
                self.close()
                raise RuntimeError(f"the command server ended while running {module} {argv}")
            answer = json.loads(reply)
            code = int(answer["code"])
            self.cpu_seconds += float(answer["cpu"])
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        return subprocess.CompletedProcess([module, *argv], code, stdout, stderr)

    def _kill_commands(self) -> None:
        """SIGKILL the commands the server is running (its children)."""
        try:
            with open(f"/proc/{self.pid}/task/{self.pid}/children") as fh:
                children = [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            return
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._proc is not None:
            self._proc.wait()
        elif self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        self.pid = 0
