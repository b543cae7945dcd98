"""A bounded load through the proxy for the whole rehearsal: concurrent SSE streams and unary
requests at a fixed rate, each one recorded (when it started, the generation that served it —
from the proxy's observation header —, status, tokens, truncation, time to first token)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dgdgen.runtime.client import Outcome, request


@dataclass(frozen=True)
class Record:
    start: float  # seconds since the rehearsal started
    outcome: Outcome
    # the way in: the route, "out-of-mesh" (a GAMMA parent's selector), or "preview" (the route,
    # with the preview's header or cookie)
    entry: str = "route"
    # seconds it started after its time in the load's schedule (the rate's): a load that cannot
    # keep its rate (a busy machine, MAX_CONCURRENCY in flight) starts its requests ever later
    late: float = 0.0

    @property
    def generation(self) -> str:
        return self.outcome.served_by


# How long the load's requests may take, for the threads it needs (Little's law: rate × time in
# flight). A healthy disaggregated stream takes about 0.67 s — its first token at 0.52 s, after
# the rehearsal's simulated KV transfer (dgdgen.runtime.mocker.KV_TRANSFER_SECONDS), then 24
# tokens ~6 ms apart —, a candidate slowed down four times about 2.8 s: 3 s of requests keep the
# rate even when all of it goes to such a candidate (the in-place roll ends there). With 16
# threads a 40 requests/s load sent 22 a second, and the gates' samples came up short.
IN_FLIGHT_SECONDS = 3.0
# The bound: past this many requests in flight the load falls behind its rate rather than start
# more threads (an 85 requests/s load and up).
MAX_CONCURRENCY = 256


class Load:
    """``rate`` requests per second, at most ``concurrency`` in flight (by default enough for
    :data:`IN_FLIGHT_SECONDS` of requests), every ``unary_every``-th one unary (the rest stream).
    Stops on :meth:`stop`, or at ``max_seconds`` whatever happens."""

    def __init__(
        self,
        port: int,
        model: str,
        *,
        rate: float,
        t0: float,
        concurrency: int | None = None,
        unary_every: int = 4,
        max_tokens: int = 24,
        max_seconds: float = 3600.0,
        worker_ids: bool = False,
        entry: str = "route",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.entry = entry
        self.headers = dict(headers or {})  # sent with every request (a preview's header)
        self.port = port
        self.model = model
        self.rate = rate
        self.t0 = t0
        self.concurrency = (concurrency if concurrency is not None
                            else min(MAX_CONCURRENCY,
                                     max(4, math.ceil(rate * IN_FLIGHT_SECONDS))))
        self.unary_every = unary_every
        self.max_tokens = max_tokens
        self.max_seconds = max_seconds
        self.worker_ids = worker_ids  # ask the frontend which workers served each request
        self.records: list[Record] = []
        self._lock = threading.Lock()
        self._next = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._start = 0.0

    def start(self) -> None:
        self._start = time.monotonic()
        for i in range(self.concurrency):
            t = threading.Thread(target=self._worker, name=f"load-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def _take(self) -> tuple[int, float] | None:
        with self._lock:
            i = self._next
            self._next += 1
        at = self._start + i / self.rate
        if at - self._start > self.max_seconds:
            return None
        return i, at

    def _worker(self) -> None:
        while not self._stop.is_set():
            slot = self._take()
            if slot is None:
                return
            i, at = slot
            delay = at - time.monotonic()
            if delay > 0 and self._stop.wait(delay):
                return
            now = time.monotonic()
            started = now - self.t0
            outcome = request(self.port, self.model, stream=(i % self.unary_every != 0),
                              max_tokens=self.max_tokens, timeout=120.0,
                              worker_ids=self.worker_ids, headers=self.headers)
            with self._lock:
                self.records.append(Record(started, outcome, self.entry, max(0.0, now - at)))

    def stop(self, timeout: float = 130.0) -> None:
        """Send nothing more; wait for the requests in flight to finish."""
        self._stop.set()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def snapshot(self) -> list[Record]:
        with self._lock:
            return sorted(self.records, key=lambda r: r.start)


# Past this, a request started late enough that the load no longer kept its rate: the states'
# windows saw fewer requests than the rate promised (the report says so).
LATE_SECONDS = 1.0


def lateness(records: Sequence[Record]) -> dict[str, float | int]:
    """How far behind its schedule the load started its requests: the latest, the 99th
    percentile (nearest rank), and how many started more than :data:`LATE_SECONDS` late."""
    late = [r.late for r in records]
    return {"maxSeconds": round(max(late, default=0.0), 3),
            "p99Seconds": round(percentile(late, 0.99) or 0.0, 3),
            "over": sum(1 for v in late if v > LATE_SECONDS)}


def lateness_text(late: dict[str, Any], requests: int, rate: float) -> str:
    """Whether the load kept its rate (:func:`lateness`), in a sentence for a report."""
    if not late["over"]:
        return (f"The load kept its rate: every request started within {late['maxSeconds']:.2f} s "
                f"of its time in the rate's schedule (p99 {late['p99Seconds']:.2f} s).")
    return (f"**The load fell behind its rate**: {late['over']} of {requests} requests started "
            f"more than {LATE_SECONDS:g} s after their time in the rate's schedule (the latest "
            f"{late['maxSeconds']:.1f} s): this machine, or the bound of {MAX_CONCURRENCY} "
            f"requests in flight, did not keep {rate:g} requests/s, and the windows saw fewer "
            "requests than that rate gives.")


def lateness_lines(late: dict[str, Any] | None) -> list[str]:
    """The terminal summary's line when the load fell behind its rate; none when it kept it."""
    if not late or not late.get("over"):
        return []
    return [(f"  load fell behind its rate: {late['over']} requests started more than "
             f"{LATE_SECONDS:g} s late (the latest {late['maxSeconds']:.1f} s)")]


def itl(rec: Record) -> float | None:
    """A stream's mean inter-token latency as its client saw it."""
    o = rec.outcome
    if not o.stream or o.ttft is None or o.tokens < 2:
        return None
    return (o.duration - o.ttft) / (o.tokens - 1)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile (nearest rank) of ``values``; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def p95(values: Sequence[float]) -> float | None:
    """The 95th percentile (nearest rank) of ``values``; None for none."""
    return percentile(values, 0.95)


def worst_p95(records: list[Record], metric: Callable[[Record], float | None], *,
              window: float = 5.0, minimum: int = 10) -> float | None:
    """The worst p95 over consecutive ``window``-second stretches of request starts (stretches
    with fewer than ``minimum`` values are merged into the next)."""
    worst: float | None = None
    bucket: list[float] = []
    edge = None
    for r in sorted(records, key=lambda r: r.start):
        if edge is None:
            edge = r.start + window
        if r.start >= edge and len(bucket) >= minimum:
            v = p95(bucket)
            worst = v if worst is None or (v is not None and v > worst) else worst
            bucket, edge = [], r.start + window
        m = metric(r)
        if m is not None:
            bucket.append(m)
    if len(bucket) >= minimum or (worst is None and bucket):
        v = p95(bucket)
        worst = v if worst is None or (v is not None and v > worst) else worst
    return worst
