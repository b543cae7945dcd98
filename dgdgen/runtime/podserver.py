"""Start the rehearsal's Dynamo processes as forks of one process that imported Dynamo once.

Each frontend and worker a rehearsal runs is ``python -m dynamo.frontend`` / ``dynamo.mocker`` /
``dgdgen.runtime.answerer``, a "pod" of its own, and a rehearsal starts dozens of them. Started
from a bare interpreter, each spent 0.30-0.40 s of CPU importing Dynamo's Python packages (its
pydantic models, the Rust core) before it did anything of its own; a fork of the server that
imported them once, 0.01-0.05 s (docs/rehearse.md, "Overhead and memory, before and after").
Each process started as a fork keeps what the proof needs of a pod:

* its own process: PID, session and process group (a stop signals the group, as a kubelet's
  does), working folder, environment (replaced whole, so the fork's own ``DYN_*`` variables
  and ``TMPDIR`` are the ones read), log (standard output and error), exit code, and a command
  line that reads as the ``python -m`` command it stands for (``ps``, /proc/PID/cmdline:
  setproctitle; its /proc/PID/environ, the starting environment, is the server's);
* the module run as ``python -m`` runs it, through its ``__main__``; the entry packages
  (``dynamo.frontend``, ``dynamo.mocker``) are never imported by the server, only the libraries
  they load (found in a throwaway fork), so what they do at import time (the mocker sets
  ``DYN_COMPUTE_THREADS`` there) happens in the fork, in its environment. What the fork inherits
  is only what the server imported: modules of libraries, nothing run (no runtime, no thread, no
  socket; Python's ``random`` reseeds on fork);
* nothing else of the server: descriptors other than its log are closed, the temp folder is read
  again from its ``TMPDIR``, signal handlers and mask are a fresh interpreter's (and what the
  libraries wrote to a temp folder as the server imported them is gone with the server's own);
* the interpreter's exit: once the module returns, the fork waits for the threads it started
  and runs the exit hooks its libraries registered when the server imported them (Dynamo's core
  lets its runtime's tasks finish there), never those of the server's own modules;
* its end with the server: a fork is killed when the server ends, however it ends.

The server is a fresh interpreter (``python -c``, in the forks' environment, on the caller's
search path), not a fork of the caller: a fork inherits every page of the process it is forked
from, and each pod would carry the rehearsal's own memory (dgdgen's modules, the plan, the load's
buffers: about 10 MB of RSS in each of a rehearsal's pods, docs/rehearse.md "Memory"). Started so,
it also serves a caller that runs threads. It never starts a thread itself, reaps each fork and
reports its exit status over its socket;
:class:`PodProcess` is what :class:`subprocess.Popen` is to the rest of the rehearsal (``pid``,
``returncode``, ``poll``, ``wait``). When the caller closes the server (or dies: the rehearsal
runs in a PID namespace of its own, :mod:`dgdgen.runtime.netns`), every fork still running is
killed. A server that cannot start (or cannot import what it preloads) runs each process with
:class:`subprocess.Popen` instead, which proves the same at the old cost.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from dgdgen.runtime.forkserver import (
    exit_child,
    flush_standard_streams,
    ignored_signals,
    inherit_dispositions,
    open_standard_streams,
    run_as_main,
    spawn_server,
)

_MAX = 1 << 20
# Room in the server's command line for its forks' command lines (setproctitle writes a title
# into that memory; SPT_NOENV keeps it out of the environment's, so /proc/PID/environ still
# reads as the environment the server started in, the rehearsal's own, and a title is cut at
# the command line's length): a rehearsal's longest, a mocker's, is about 260 characters.
_TITLE_ROOM = 4096
_PR_SET_PDEATHSIG = 1  # prctl(2)
# What a pod server imports: the entry modules pull in every library they need; the entry
# packages themselves are then forgotten, so each fork imports them afresh (module docstring).
DYNAMO_PRELOAD = ("dynamo.frontend.main", "dynamo.mocker.main", "dgdgen.runtime.answerer",
                  "setproctitle")
DYNAMO_ENTRY_PACKAGES = ("dynamo.frontend", "dynamo.mocker", "dgdgen.runtime.answerer")


def _run_pod(req: dict[str, object], log_fd: int) -> int:
    """In the fork (already in a session of its own): become ``python -m MODULE ARGV`` and run
    it; its exit code."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))  # the server's socket, its pidfds, the log's
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    inherit_dispositions(req)  # as exec leaves them: what the starter ignores stays ignored
    open_standard_streams()
    cwd = str(req["cwd"])
    os.chdir(cwd)
    env = req["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    tempfile.tempdir = None  # read again from this fork's TMPDIR
    module = str(req["module"])
    argv = [str(a) for a in req["argv"]]  # type: ignore[attr-defined]
    import setproctitle

    setproctitle.setproctitle(" ".join([sys.executable, "-m", module, *argv]))
    # as a fresh `python -m` builds it: the working folder, PYTHONPATH, the installation's
    extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [cwd, *extra, *req["base_path"]]  # type: ignore[misc]
    sys.orig_argv = [sys.executable, "-m", module, *argv]  # a module that re-executes itself
    for name in [n for n in sys.modules if _is_entry(n, req["entries"])]:  # type: ignore[arg-type]
        del sys.modules[name]  # one the caller had imported: `python -m` runs it afresh
    code = run_as_main(module, argv)
    # then what the interpreter's exit runs before the process ends: it waits for the threads
    # the module started and calls the exit hooks the libraries registered when the server
    # imported them (Dynamo's core lets its runtime's tasks finish there: without them a worker
    # stopped by SIGTERM ended before its last stream's final frame reached the frontend)
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    flush_standard_streams()
    return code


def _is_entry(name: str, entries: Sequence[str]) -> bool:
    return name in entries or name.startswith(tuple(e + "." for e in entries))


def _libraries(preload: Sequence[str], entries: Sequence[str]) -> list[str]:
    """The modules importing ``preload`` loads, in the order they were loaded, less the entry
    packages': found in a throwaway fork, so the entry modules' own code never runs here."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.close(r)
            for name in preload:
                importlib.import_module(name)
            with os.fdopen(w, "w") as fh:
                json.dump([n for n in sys.modules if not _is_entry(n, entries)], fh)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r) as fh:
        text = fh.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"importing {', '.join(preload)} failed")
    names: list[str] = json.loads(text)
    return names


# The server's program (PodServer): it ignores what a terminal or a stop sends the caller's
# process group (the caller closes it), reads what to serve from its socket, imports this module
# from the caller's search path and serves until the caller closes its end; never the exit hooks.
# Its second argument is room for the forks' command lines (_TITLE_ROOM).
_SPAWNED = """
import json, os, signal, socket, sys
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
sock = socket.socket(fileno=int(sys.argv[1]))
code = 70
try:
    config = json.loads(sock.recv(1 << 20))
    sys.path[:] = config["path"]
    from dgdgen.runtime.podserver import _serve
    _serve(sock, config["preload"], config["entries"], config["env"], config["base_path"])
    code = 0
finally:
    os._exit(code)
"""


def _serve(sock: socket.socket, preload: Sequence[str], entries: Sequence[str],
           env: Mapping[str, str], base_path: Sequence[str]) -> None:
    # a fork runs the exit hooks its libraries registered, none of the server's own modules'
    atexit._clear()
    # setproctitle finds the command line's memory now, before the environment changes, and
    # leaves the environment's alone (_TITLE_ROOM)
    os.environ["SPT_NOENV"] = "1"
    import setproctitle

    setproctitle.setproctitle(f"{sys.executable} -c <dgdgen pod server: {', '.join(preload)}>")
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # libc's, for the forks (no lookup there)
    # the forks' environment while the libraries import (one that reads a variable at import
    # reads what a fresh process would)
    os.environ.clear()
    os.environ.update(env)
    # what the libraries leave in the temp folder as they import (Dynamo's logging set-up writes
    # a JSON file there and never removes it: ai-dynamo 1.6.1 dynamo/runtime/logging.py) goes to
    # a folder of the server's own (in the forks' TMPDIR, not one this process had read before),
    # removed once they are imported; a fork reads its own TMPDIR
    tempfile.tempdir = None
    with tempfile.TemporaryDirectory(prefix="dgdgen-pod-server-") as scratch:
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = None
        for name in _libraries(preload, entries):
            if name not in sys.modules:
                try:
                    importlib.import_module(name)
                except Exception:  # noqa: BLE001, S112 - one a fork can still import for itself
                    continue
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None
    gc.collect()
    gc.freeze()  # what is loaded now stays out of the forks' collections (copy-on-write)
    # it watches its forks through pidfds (Linux 5.3): on an older kernel this ends the server
    # before it says it is ready, and every process starts as `python -m`
    os.close(os.pidfd_open(os.getpid()))
    sock.send(b'{"ready": true}')
    server = os.getpid()
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    running: dict[int, int] = {}  # pidfd → pid
    try:
        while True:
            for key, _ in sel.select():
                if key.data is not None:  # a fork ended: reap it, say so
                    sel.unregister(key.fd)
                    os.close(key.fd)
                    pid = running.pop(key.fd)
                    _, status = os.waitpid(pid, 0)
                    sock.send(json.dumps({"exit": pid,
                                          "code": os.waitstatus_to_exitcode(status)}).encode())
                    continue
                try:
                    msg, fds, _flags, _addr = socket.recv_fds(sock, _MAX, 1)
                except OSError:
                    msg, fds = b"", []
                if not msg:
                    return
                req = json.loads(msg)
                req.update(entries=list(entries), base_path=list(base_path))
                ready_r, ready_w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    code = 70
                    try:
                        os.close(ready_r)
                        os.setsid()
                        # it ends with the server, however the server ends (SIGKILL too)
                        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                        if os.getppid() != server:  # the server ended before that
                            os._exit(137)
                        os.close(ready_w)  # its process group exists before its PID is known
                        code = _run_pod(req, fds[0])
                    finally:
                        exit_child(code)
                os.close(ready_w)
                os.read(ready_r, 1)
                os.close(ready_r)
                os.close(fds[0])
                pidfd = os.pidfd_open(pid)
                running[pidfd] = pid
                sel.register(pidfd, selectors.EVENT_READ, pid)
                sock.send(json.dumps({"pid": pid}).encode())
    finally:
        for pidfd, pid in running.items():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)
            os.close(pidfd)


class PodProcess:
    """A process started by a :class:`PodServer`: what :class:`subprocess.Popen` offers of one
    (``args``, ``pid``, ``returncode``, ``poll``, ``wait``)."""

    def __init__(self, server: PodServer, args: list[str], pid: int) -> None:
        self.args = args
        self.pid = pid
        self.returncode: int | None = None
        self._server = server

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._server.exited:
            if not self._server.exited.wait_for(lambda: self.returncode is not None, timeout):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode


class PodServer:
    """A process that starts ``python -m MODULE`` processes as forks of itself (module docstring).

    ``env`` is the environment the server starts in and imports ``preload`` in (each fork's own is
    given with its start). :meth:`spawn` may be called from any thread. Closing it kills what is
    still running.
    """

    def __init__(self, env: Mapping[str, str], preload: Sequence[str] = DYNAMO_PRELOAD,
                 entries: Sequence[str] = DYNAMO_ENTRY_PACKAGES) -> None:
        self.entries = tuple(entries)
        self.pid = 0
        self.exited = threading.Condition()
        self._lock = threading.Lock()  # one start at a time: its reply is the next "pid"
        self._started: list[int] = []
        self.forks = 0  # processes started as forks so far
        self._ended = False  # the server's socket closed
        self._procs: dict[int, PodProcess] = {}
        self._early: dict[int, int] = {}  # exits reported before their start was answered
        self._sock: socket.socket | None = None
        self._reader: threading.Thread | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        # the search path a fresh `python -m` starts from: this process's, less its first entry
        # (the script's folder or the working folder) and what its PYTHONPATH added
        added = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p}
        # (an entry a caller put there as a Path is a folder too; what is neither, the import
        # system skips as well)
        path = [os.fspath(p) if isinstance(p, str | os.PathLike) else None for p in sys.path]
        config = {"path": [p for p in path if p is not None], "preload": list(preload),
                  "entries": list(self.entries), "env": dict(env),
                  "base_path": [p for p in path[1:]
                                if p is not None and os.path.abspath(p) not in added]}
        # it ends when its socket closes (the rehearsal closes it, or ends)
        self._proc, self._sock = spawn_server(_SPAWNED, [" " * _TITLE_ROOM], env=env)
        if self._proc is not None and self._sock is not None:
            self.pid = self._proc.pid
            try:
                self._sock.send(json.dumps(config).encode())
            except OSError:
                self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def serves(self, module: str) -> bool:
        return self._sock is not None and module in self.entries

    def spawn(self, module: str, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
              log: int) -> PodProcess | subprocess.Popen[bytes]:
        """``python -m MODULE ARGV`` in its own session, in ``cwd`` with exactly ``env``, its
        standard output and error on the descriptor ``log`` (the caller keeps and closes it)."""
        args = [sys.executable, "-m", module, *argv]
        if not self.serves(module):
            return subprocess.Popen(args, env=dict(env), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True)
        req = {"module": module, "argv": list(argv), "cwd": str(cwd), "env": dict(env),
               "ignored": ignored_signals()}
        with self._lock:
            if self._reader is None and not self._ready():
                return self.spawn(module, argv, cwd=cwd, env=env, log=log)
            assert self._sock is not None
            try:
                socket.send_fds(self._sock, [json.dumps(req).encode()], [log])
            except OSError as exc:
                raise RuntimeError(f"the pod server ended before starting {module}: {exc}") \
                    from None
            with self.exited:
                if not self.exited.wait_for(lambda: self._started or self._ended, 60):
                    raise RuntimeError(f"the pod server did not start {module} in 60 s")
                if not self._started:
                    raise RuntimeError(f"the pod server ended before starting {module}")
                pid = self._started.pop(0)
                proc = PodProcess(self, args, pid)
                self.forks += 1
                if pid in self._early:
                    proc.returncode = self._early.pop(pid)
                else:
                    self._procs[pid] = proc
        return proc

    def _ready(self) -> bool:
        """Wait for the server to have imported what it preloads, then read its replies in a
        thread of this process; False (and every start a ``python -m`` from now on) when it
        could not import them (a library missing, say)."""
        assert self._sock is not None
        try:
            ready = self._sock.recv(_MAX)
        except OSError:
            ready = b""
        if not ready:
            self.close()
            return False
        self._reader = threading.Thread(target=self._read, name="pod-server", daemon=True)
        self._reader.start()
        return True

    def _read(self) -> None:
        sock = self._sock
        assert sock is not None
        while True:
            try:
                msg = sock.recv(_MAX)
            except OSError:
                msg = b""
            with self.exited:
                if not msg:  # the server ended: nothing it started runs any more
                    self._ended = True
                    for proc in self._procs.values():
                        if proc.returncode is None:
                            proc.returncode = -signal.SIGKILL
                    self._procs.clear()
                    self.exited.notify_all()
                    return
                data = json.loads(msg)
                if "pid" in data:
                    self._started.append(int(data["pid"]))
                else:
                    pid, code = int(data["exit"]), int(data["code"])
                    ended = self._procs.pop(pid, None)
                    if ended is None:
                        self._early[pid] = code
                    else:
                        ended.returncode = code
                self.exited.notify_all()

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_WR)  # the server kills what runs, then ends
            except OSError:
                pass
        if self._proc is not None:
            if self._reader is None:
                # it never started anything (a rehearsal that stopped early, on bad input say):
                # no need to wait for it to finish importing
                self._proc.kill()
            self._proc.wait()
            self._proc = None
            self.pid = 0
        if self._reader is not None:
            self._reader.join(5)
        if self._sock is not None:
            self._sock.close()
            self._sock = None
