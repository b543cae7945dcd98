"""Loopback harness for the HAProxy proofs: fake frontends, a real HAProxy started from a rendered
config (adapted to loopback by the rehearsal's own :func:`dgdgen.rehearse.proxy.adapt_config`), and
an asyncio streaming load generator."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from dgdgen.rehearse.proxy import haproxy_binary

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def fake_frontends(names: list[str], no_workers: frozenset[str] = frozenset()
                   ) -> Iterator[dict[str, int]]:
    """Start one fake frontend process per name (those in ``no_workers`` without workers);
    yields name → port."""
    procs = []
    ports = {}
    try:
        for name in names:
            port = free_port()
            extra = ["--no-workers"] if name in no_workers else []
            p = subprocess.Popen(
                [sys.executable, str(HERE / "fake_frontend.py"), name, str(port), *extra],
                stdout=subprocess.PIPE, text=True,
            )
            procs.append(p)
            assert p.stdout is not None
            line = p.stdout.readline()
            assert line.startswith("listening"), line
            ports[name] = port
        yield ports
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


@dataclass
class Loopback:
    """How a rendered config is adapted to loopback: addresses, ports and paths only."""

    tmp: Path
    frontend_port: int
    stats_port: int
    peer_port: int
    servers: dict[str, int]  # rendered "host:8000" address → loopback port

    @property
    def admin_socket(self) -> str:
        return str(self.tmp / "run" / "admin.sock")

    @property
    def master_socket(self) -> str:
        return str(self.tmp / "run" / "master.sock")

    def adapt(self, rendered: str) -> str:
        """The rendered config through the rehearsal's own loopback adaptation
        (:func:`dgdgen.rehearse.proxy.adapt_config`), without its observation header: every
        server must be one of ``servers`` and every bind, path and peer replacement must hit, and
        nothing else changes (checked line by line)."""
        from dgdgen.rehearse.proxy import adapt_config

        (self.tmp / "run").mkdir(parents=True, exist_ok=True)
        for old in ("bind :8000\n", "bind :8404\n", "/var/run/haproxy/"):
            assert old in rendered, f"rendered config has no {old!r}"
        mapped: set[str] = set()

        def address(addr: str) -> str:
            assert addr in self.servers, f"rendered server {addr!r} is not one of {self.servers}"
            mapped.add(addr)
            return f"127.0.0.1:{self.servers[addr]}"

        text = adapt_config(rendered, port=self.frontend_port, stats_port=self.stats_port,
                            peer_port=self.peer_port, run_dir=self.tmp / "run",
                            server_address=address, observe=False)
        assert mapped == set(self.servers), f"no server line for {set(self.servers) - mapped}"
        changed = [
            (a, b) for a, b in zip(rendered.splitlines(), text.splitlines(), strict=True) if a != b
        ]
        allowed = re.compile(r"^\s*(bind|server|stats socket|server-state-file|peer) ")
        for a, _ in changed:
            assert allowed.match(a), f"loopback adaptation touched {a!r}"
        return text


class HAProxy:
    """A real HAProxy in master-worker mode with a master socket (as the Deployment runs it)."""

    def __init__(self, config: Path, loop: Loopback, log: Path) -> None:
        self.config = config
        self.loop = loop
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        binary = haproxy_binary()
        assert binary
        self._log = open(self.log, "wb")  # noqa: SIM115 - open for the process lifetime
        self.proc = subprocess.Popen(
            [binary, "-W", "-db", "-S", f"{self.loop.master_socket},mode,600",
             "-f", str(self.config)],
            stdout=self._log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if os.path.exists(self.loop.admin_socket):
                try:
                    with socket.create_connection(("127.0.0.1", self.loop.frontend_port), 1):
                        return
                except OSError:
                    pass
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.05)
        raise AssertionError("haproxy did not start: " + self.log.read_text())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# --------------------------------------------------------------------------- load


@dataclass
class Stream:
    sent: float
    headers: float | None = None
    backend: str | None = None
    status: int | None = None
    events: int = 0
    done: bool = False
    complete: bool = False  # terminating zero-length chunk seen
    error: str | None = None
    delays_ms: list[float] = field(default_factory=list)
    tokens: int = 0

    @property
    def ok(self) -> bool:
        return (self.error is None and self.status == 200 and self.done and self.complete
                and self.events == self.tokens)


async def stream_once(port: int, tokens: int, interval_ms: int,
                      headers: dict[str, str] | None = None, *, on_headers: Callable[[], None]
                      | None = None) -> Stream:
    """One OpenAI-style streaming POST on a new connection; checks every event in order."""
    st = Stream(sent=time.monotonic(), tokens=tokens)
    body = json.dumps({"model": "qwen", "stream": True, "messages": []}).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError as exc:
        st.error = f"connect: {exc}"
        return st
    try:
        writer.write(
            (f"POST /v1/chat/completions HTTP/1.1\r\nHost: loopback\r\n"
             f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
             f"X-Tokens: {tokens}\r\nX-Interval-Ms: {interval_ms}\r\n{extra}"
             "Connection: close\r\n\r\n").encode() + body
        )
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        st.headers = time.monotonic()
        if on_headers is not None:
            on_headers()
        lines = head.decode("latin-1").split("\r\n")
        st.status = int(lines[0].split()[1])
        hdrs = {k.strip().lower(): v.strip() for k, v in
                (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
        st.backend = hdrs.get("x-backend")
        if hdrs.get("transfer-encoding", "").lower() != "chunked":
            st.error = f"not chunked: {hdrs}"
            return st
        buf = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                st.complete = True
                break
            data = await reader.readexactly(size + 2)
            now = time.monotonic_ns()
            buf += data[:-2]
            while b"\n\n" in buf:
                event, buf = buf.split(b"\n\n", 1)
                payload = event.decode()
                assert payload.startswith("data: "), payload
                payload = payload[len("data: "):]
                if payload == "[DONE]":
                    st.done = True
                    continue
                msg = json.loads(payload)
                if msg["i"] != st.events or st.done or msg["backend"] != st.backend:
                    st.error = f"out of order / mixed event {msg} after {st.events}"
                    return st
                st.events += 1
                st.delays_ms.append((now - msg["t"]) / 1e6)
    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
        st.error = f"{type(exc).__name__}: {exc}"
    finally:
        writer.close()
    return st


@dataclass
class Phase:
    name: str
    planned: dict[str, int]  # server → % of new requests
    disabled: set[str]
    apply_start: float = 0.0
    apply_end: float = 0.0
    next_apply_start: float = float("inf")
    in_flight_at_change: int = 0

    def counted(self, s: Stream) -> bool:
        # Only requests sent after this state was in effect and answered before the next change
        # began are attributed to it; requests during a change are checked but not counted.
        return (s.headers is not None and s.sent > self.apply_end
                and s.headers < self.next_apply_start)


class Load:
    """``concurrency`` workers, each streaming back to back on new connections."""

    def __init__(self, port: int, concurrency: int, tokens: int, interval_ms: int) -> None:
        self.port = port
        self.concurrency = concurrency
        self.tokens = tokens
        self.interval_ms = interval_ms
        self.streams: list[Stream] = []
        self.in_flight = 0
        self._stop = False
        self._tasks: list[asyncio.Task[None]] = []

    async def _worker(self) -> None:
        while not self._stop:
            self.in_flight += 1
            try:
                st = await stream_once(self.port, self.tokens, self.interval_ms)
            finally:
                self.in_flight -= 1
            self.streams.append(st)

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]

    async def stop(self) -> None:
        self._stop = True
        await asyncio.gather(*self._tasks)

    def count_since(self, t: float) -> int:
        return sum(1 for s in self.streams if s.sent > t and s.headers is not None)


def median_delay(streams: list[Stream]) -> float:
    return statistics.median(d for s in streams for d in s.delays_ms)


def quantile_delay(streams: list[Stream], q: float) -> float:
    delays = sorted(d for s in streams for d in s.delays_ms)
    return delays[min(len(delays) - 1, int(q * len(delays)))]


def reload_and_wait(master_socket: str, timeout: float = 15.0) -> None:
    """Hitless reload through the master CLI; returns once a new worker serves and every
    previous worker is soft-stopping (listeners closed) or gone."""
    from dgdgen.errors import InputError
    from dgdgen.traffic.runtime import MasterCli

    master = MasterCli(master_socket)
    before, _ = master.workers()
    master.reload()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:  # the master re-executes itself: its socket may blink
            current, _ = master.workers()
        except InputError:
            current = []
        if current and not set(current) & set(before):
            return
        time.sleep(0.01)
    raise AssertionError(f"no new HAProxy worker within {timeout}s")
