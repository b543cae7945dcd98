"""Local Dynamo frontends and mocker workers as processes, the way the operator would run them.

Settings used (docs/rehearse.md, observed on Dynamo 1.6.1): file discovery (no etcd), the TCP
request plane and the ZMQ event plane (no NATS), every listener on 127.0.0.1, ``HOME`` in the
scratch folder (the model-card cache goes to ``$HOME/.cache/dynamo``) and ``HF_HUB_OFFLINE=1``.
A worker's ``/health`` stays 503 unless ``DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS`` names the
``generate`` endpoint, which the operator sets.

Run this inside a private network namespace (:mod:`dgdgen.runtime.netns`).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from dgdgen.runtime.podserver import PodProcess, PodServer

_PORTS = range(20000, 32000)
# Where this process starts looking: spread by its PID, so two processes that share a loopback
# (tests side by side outside a private network namespace) do not walk the same ports in the same
# order and hand one port to both between one's probe and its use.
_next_port = _PORTS.start + (os.getpid() * 7919) % len(_PORTS)
_handed_out = 0
# Seconds between two looks at a starting process (its health, the frontend's model list): each
# look is one loopback HTTP request, and every state waits for a few of them in a row.
POLL = 0.05


def free_port() -> int:
    """A free loopback port below 32768: Dynamo 1.6.1 reads ``DYN_SYSTEM_PORT`` as a signed 16-bit
    integer and refuses 53415 ("expected i16"), so ephemeral ports cannot be used for it."""
    global _next_port, _handed_out
    while _handed_out < len(_PORTS):
        port = _next_port
        _handed_out += 1
        _next_port = port + 1 if port + 1 < _PORTS.stop else _PORTS.start
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below 32000")


def http_get(port: int, path: str, timeout: float = 2.0) -> tuple[int, str]:
    """GET ``http://127.0.0.1:port/path``; (0, reason) when nothing answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    except OSError as exc:
        return 0, str(exc)
    finally:
        conn.close()


def http_json(port: int, path: str) -> dict[str, Any] | None:
    """A JSON object answered with 200, else None."""
    status, body = http_get(port, path)
    if status != 200:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _ns_pid(host_pid: int) -> int | None:
    """The innermost PID of a process given by its PID in /proc (``NSpid``, proc(5))."""
    try:
        with open(f"/proc/{host_pid}/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


def proc_pids(children: Iterable[int]) -> dict[int, int]:
    """The number under /proc of each of this process's children (or grandchildren), by the PID
    this process knows it by: the same, unless this process is the first of a PID namespace of
    its own (a rehearsal, :func:`dgdgen.runtime.netns.fork_first_process`) while /proc is the
    host's — then read off their ``NSpid``."""
    wanted = set(children)
    try:
        me = int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return {pid: pid for pid in wanted}
    if me == os.getpid():
        return {pid: pid for pid in wanted}
    out: dict[int, int] = {}
    # children, and their children: a pod server's forks (dgdgen.runtime.podserver)
    for host in [h for c in _host_children(me) for h in (c, *_host_children(c))]:
        ns = _ns_pid(host)
        if ns in wanted:
            out[ns] = host
    return out


def _host_children(host_pid: int) -> list[int]:
    """The children of a process, by their PIDs in /proc."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{host_pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{host_pid}/task/{task}/children", encoding="utf-8") as fh:
                out += [int(h) for h in fh.read().split()]
        except (OSError, ValueError):
            continue
    return out


def memory_kb(children: Iterable[int]) -> tuple[int, int, int]:
    """(RSS, PSS, processes counted) summed over this process's children given: RSS counts a
    page shared by several of them (the Dynamo core library, the interpreter) once in each, PSS
    splits it between them, so their PSS adds up to the memory they really take."""
    rss = pss = n = 0
    for host in proc_pids(children).values():
        try:
            with open(f"/proc/{host}/smaps_rollup", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except (OSError, ValueError):
            continue
        n += 1
    return rss, pss, n


def log_tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class Proc:
    """One local process: a frontend (``port``) or a worker (``system_port``)."""

    name: str
    kind: str  # "frontend" | "worker" | "server" (another HTTP server of the rehearsal's)
    namespace: str | None
    popen: subprocess.Popen[bytes] | PodProcess
    log_path: Path
    port: int = 0  # frontend HTTP port
    system_port: int = 0  # worker system (health, metrics) port
    labels: dict[str, str] = field(default_factory=dict)
    # the namespaces whose prefill router this frontend activated, read off its log so far, and
    # how far it was read (prefill_routers_active)
    prefill_routers: set[str] = field(default_factory=set)
    log_read: int = 0

    @property
    def metrics_port(self) -> int:
        return self.port if self.kind == "frontend" else self.system_port

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 15) -> str:
        return log_tail(self.log_path, lines)

    def exit_story(self, before: str = "") -> str:
        """"<name> exited with <code>[ before <what>]" and, when its log says why in a way the
        machine explains (:func:`limit_hint`), that first; then the log's tail."""
        tail = self.log_tail()
        where = f" before {before}" if before else ""
        hint = limit_hint(tail)
        return (f"{self.name} exited with {self.popen.returncode}{where}"
                + (f" ({hint})" if hint else "") + f":\n{tail}")


INOTIFY_LIMIT_FILE = "/proc/sys/fs/inotify/max_user_instances"


def limit_hint(log: str) -> str:
    """What a process's "Too many open files (os error 24)" means here. The open-file limit is
    raised before any start (:func:`raise_open_file_limit`); what a Dynamo 1.6.1 frontend then runs
    out of is inotify instances: it holds 10 (its file discovery backend's watches, counted in
    /proc/*/fd), and Linux caps a user's at fs.inotify.max_user_instances machine-wide (128 by
    default), so rehearsals side by side can exhaust them."""
    if "Too many open files" not in log:
        return ""
    try:
        with open(INOTIFY_LIMIT_FILE, encoding="ascii") as fh:
            limit = fh.read().strip()
    except OSError:
        limit = "unknown"
    return (f"out of inotify instances: each Dynamo frontend holds 10 and "
            f"fs.inotify.max_user_instances is {limit} for all of this user's processes; "
            "run fewer rehearsals at once, or `sysctl -w fs.inotify.max_user_instances=1024`")


class StartFailed(RuntimeError):
    """A local process did not become ready; the message carries its log tail."""


# A login shell's soft open-file limit is often 1024, below what a rehearsal's processes may hold
# together (sockets, logs, the runtime's watches); the soft limit is raised towards the hard one,
# as a program may (Go's runtime does so at start), so they are bounded by the machine, not by
# the shell that started the rehearsal. The processes it starts inherit the raised limit. (The
# "Too many open files" a frontend met in CI was the inotify limit: :func:`limit_hint`.)
OPEN_FILES_WANTED = 65536


def raise_open_file_limit(wanted: int = OPEN_FILES_WANTED) -> int:
    """Raise this process's soft RLIMIT_NOFILE towards ``wanted`` (never past the hard limit,
    never lowering it); returns the soft limit now in force (children inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def inherited_env() -> dict[str, str]:
    """What every local Dynamo process keeps of this process's environment: all but Dynamo's own
    settings (``DYN_*``, set per process) and ``PYTHONPATH``; offline model hubs."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DYN_", "VIRTUAL_ENV_PROMPT")) and k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


class LocalDynamo:
    """Starts and stops local Dynamo processes sharing one discovery folder.

    Use as a context manager: every process still running is stopped on exit. The soft
    open-file limit is raised first (:func:`raise_open_file_limit`).
    """

    def __init__(self, workdir: Path, *, python: str | None = None,
                 pods: PodServer | None = None) -> None:
        raise_open_file_limit()
        self.workdir = workdir
        self.python = python or sys.executable
        self.procs: list[Proc] = []
        (workdir / "logs").mkdir(parents=True, exist_ok=True)
        (workdir / "home").mkdir(parents=True, exist_ok=True)
        (workdir / "kv").mkdir(parents=True, exist_ok=True)
        # The temp folder of every process started here: each Dynamo 1.6.1 frontend and worker
        # leaves a logging configuration ``tmpXXXXXXXX.json`` in its temp folder and never removes
        # it (``dynamo/runtime/logging.py``, a NamedTemporaryFile with delete=False;
        # dgdgen/runtime/scratch.py). Here it goes with the processes, on the way out.
        self.tmp = workdir / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self._counter = 0
        # ``pods``: the modules it serves start as forks of it (dgdgen.runtime.podserver), when
        # they run this interpreter; every other process as ``python -m``. Its owner closes it.
        self.pods = pods if self.python == sys.executable else None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.stop_all()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def base_env(self) -> dict[str, str]:
        env = inherited_env()
        env.update(
            HOME=str(self.workdir / "home"),
            TMPDIR=str(self.tmp),
            DYN_DISCOVERY_BACKEND="file",
            DYN_FILE_KV=str(self.workdir / "kv"),
            DYN_REQUEST_PLANE="tcp",
            DYN_EVENT_PLANE="zmq",
            DYN_TCP_RPC_HOST="127.0.0.1",
            DYN_TCP_RESPONSE_STREAM_HOST="127.0.0.1",
            DYN_SYSTEM_HOST="127.0.0.1",
            DYN_EVENT_PLANE_HOST="127.0.0.1",
        )
        # With RUST_BACKTRACE=1 (a developer's shell, CI) every error the Rust core creates also
        # captures a backtrace, which reads the library's unwind tables into the process: 2-3 MB
        # more RSS per frontend, nothing the rehearsal shows. RUST_LIB_BACKTRACE=0 turns off only
        # those captures; a panic still prints its backtrace (std::backtrace reads
        # RUST_LIB_BACKTRACE before RUST_BACKTRACE). A caller's own setting wins.
        env.setdefault("RUST_LIB_BACKTRACE", "0")
        return env

    def _spawn(
        self, name: str, kind: str, namespace: str | None, argv: list[str], env: dict[str, str]
    ) -> Proc:
        self._counter += 1
        log_path = self.workdir / "logs" / f"{self._counter:03d}-{name}.log"
        log = open(log_path, "wb")  # noqa: SIM115 - the child owns it
        popen: subprocess.Popen[bytes] | PodProcess
        try:
            if self.pods is not None and argv[1:2] == ["-m"] and self.pods.serves(argv[2]):
                popen = self.pods.spawn(argv[2], argv[3:], cwd=self.workdir, env=env,
                                        log=log.fileno())
            else:
                popen = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=self.workdir,
                    start_new_session=True,
                )
        finally:
            log.close()
        proc = Proc(name=name, kind=kind, namespace=namespace, popen=popen, log_path=log_path)
        self.procs.append(proc)
        return proc

    def frontend(
        self,
        namespace: str | None = None,
        *,
        prefix: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> Proc:
        """``python -m dynamo.frontend`` serving exactly ``namespace`` (``--namespace``), or every
        namespace starting with ``prefix`` (``DYN_NAMESPACE_PREFIX``), or every namespace."""
        port = free_port()
        full_env = self.base_env()
        if prefix is not None:
            full_env["DYN_NAMESPACE_PREFIX"] = prefix
        full_env.update(env or {})
        argv = [self.python, "-m", "dynamo.frontend", "--http-host", "127.0.0.1"]
        argv += ["--http-port", str(port)]
        if namespace is not None:
            argv += ["--namespace", namespace]
        argv += list(args)
        proc = self._spawn(name or f"frontend-{namespace or prefix or 'all'}", "frontend",
                           namespace, argv, full_env)
        proc.port = port
        return proc

    def server(self, name: str, module: str, args: Sequence[str]) -> Proc:
        """``python -m MODULE --port PORT ARGS``: another loopback HTTP server the rehearsal
        runs beside Dynamo (the stand-in judge), on a free port, logged and stopped with the
        others."""
        port = free_port()
        argv = [self.python, "-m", module, "--port", str(port), *args]
        proc = self._spawn(name, "server", None, argv, self.base_env())
        proc.port = port
        return proc

    def mocker(
        self,
        namespace: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> Proc:
        """``python -m dynamo.mocker ARGS`` registered in Dynamo namespace ``namespace``."""
        return self._worker("dynamo.mocker", namespace, args, env=env,
                            name=name or f"mocker-{namespace}")

    def answerer(
        self,
        namespace: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
    ) -> Proc:
        """``python -m dgdgen.runtime.answerer ARGS`` (the mocker's flags, plus ``--answers``,
        ``--wrong-fraction``, ``--seed``) registered in Dynamo namespace ``namespace``: a worker
        that answers each prompt deterministically (:mod:`dgdgen.runtime.answerer`)."""
        return self._worker("dgdgen.runtime.answerer", namespace, args, env=env,
                            name=name or f"answerer-{namespace}")

    def _worker(
        self, module: str, namespace: str, args: Sequence[str], *,
        env: Mapping[str, str] | None, name: str,
    ) -> Proc:
        system_port = free_port()
        full_env = self.base_env()
        full_env.update(env or {})
        full_env.update(
            DYN_NAMESPACE=namespace,
            DYN_SYSTEM_PORT=str(system_port),
            DYN_SYSTEM_USE_ENDPOINT_HEALTH_STATUS='["generate"]',
        )
        argv = [self.python, "-m", module, *args]
        proc = self._spawn(name, "worker", namespace, argv, full_env)
        proc.system_port = system_port
        return proc

    def _wait(self, proc: Proc, what: str, timeout: float, check: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = check()
            if result is not None:
                return result
            if not proc.alive():
                raise StartFailed(proc.exit_story(what))
            if time.monotonic() > deadline:
                raise StartFailed(f"{proc.name}: no {what} after {timeout:.0f} s:\n{proc.log_tail()}")
            time.sleep(POLL)

    def wait_frontend_up(self, proc: Proc, timeout: float = 30.0) -> None:
        self.wait_http(proc, "/health", timeout)

    def wait_http(self, proc: Proc, path: str, timeout: float = 30.0) -> None:
        """Wait until ``proc`` answers GET ``path`` on its port with 200."""

        def up() -> bool | None:
            status, _ = http_get(proc.port, path)
            return True if status == 200 else None

        self._wait(proc, f"HTTP {path} 200", timeout, up)

    def wait_worker_ready(self, proc: Proc, timeout: float = 30.0) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            data = http_json(proc.system_port, "/health")
            return data if data is not None and data.get("status") == "ready" else None

        result: dict[str, Any] = self._wait(proc, "ready /health", timeout, ready)
        return result

    def model_ready(self, proc: Proc, model: str) -> dict[str, Any] | None:
        """The frontend's ``/v1/models/{model}/ready`` answer when 200, else None."""
        return http_json(proc.port, f"/v1/models/{model}/ready")

    def wait_model_ready(
        self, proc: Proc, model: str, *, timeout: float = 30.0, workers: int | None = None
    ) -> dict[str, Any]:
        """Wait until the frontend serves ``model`` (with at least ``workers`` workers in all)."""

        from dgdgen.runtime.routing import count_ready_workers

        def ready() -> dict[str, Any] | None:
            data = self.model_ready(proc, model)
            if not data or not data.get("ready"):
                return None
            if workers is not None and count_ready_workers(data) < workers:
                return None
            return data

        result: dict[str, Any] = self._wait(proc, f"model {model!r} ready", timeout, ready)
        return result

    def stop(self, proc: Proc, grace: float = 10.0) -> int | None:
        """SIGTERM the process group, then SIGKILL after ``grace`` seconds."""
        if proc.alive():
            try:
                os.killpg(proc.popen.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.popen.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.popen.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.popen.wait(5)
        if proc in self.procs:
            self.procs.remove(proc)
        return proc.popen.returncode

    def stop_many(self, procs: Sequence[Proc], grace: float = 10.0) -> None:
        """Stop processes together, as Kubernetes terminates the pods of a scale-down or of a
        deleted object: SIGTERM to all at once, SIGKILL to those still running ``grace`` seconds
        later (one after the other, their grace periods would add up)."""
        for proc in procs:
            if proc.alive():
                try:
                    os.killpg(proc.popen.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + grace
        for proc in procs:
            self.stop(proc, grace=max(0.0, deadline - time.monotonic()))

    def stop_all(self, grace: float = 5.0) -> None:
        self.stop_many(list(self.procs), grace)
