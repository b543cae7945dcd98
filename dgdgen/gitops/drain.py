"""Wait for a leaving generation's frontend to drain: its in-flight requests at 0, bounded by
the request timeout. Run by the drain hook Job (:mod:`dgdgen.render.drain`) between the wave that
moves the weights away and the wave that shrinks the generation, as
``python3 -m dgdgen.gitops.drain --url http://FRONTEND-SERVICE:8000/metrics ...``.

The frontend's ``/metrics`` has the gauge ``dynamo_frontend_inflight_requests{model}``
(facts/dynamo-runtime.md, Metrics). The Service balances over the generation's frontend pods,
so one poll sees one pod: the frontend counts as drained after ``--zeros`` polls in a row that
all read 0 (the hook asks for four per frontend replica). A frontend nobody can connect to has
nothing in flight. After ``--timeout`` (the route's request timeout: any request still open then
has been ended by the gateway anyway) it stops waiting and says so. Exit 0 either way — the
shrink must not be blocked forever — and 2 on bad usage. Standard library only.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence

METRIC = "dynamo_frontend_inflight_requests"


def inflight(text: str) -> float | None:
    """Sum of the in-flight gauge over its series in a Prometheus text exposition, or None when
    the metric is absent (a frontend that has served nothing yet)."""
    total: float | None = None
    for line in text.splitlines():
        if not line.startswith(METRIC):
            continue
        rest = line[len(METRIC):]
        if rest[:1] not in ("{", " "):
            continue  # another metric with this prefix
        if rest.startswith("{"):
            end = rest.rfind("}")
            if end < 0:
                continue
            rest = rest[end + 1:]
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        total = (total or 0.0) + value
    return total


def poll(url: str, timeout: float) -> float:
    """In-flight requests of the frontend answering ``url``; 0 when none answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # plain http, in-cluster
            body = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return 0.0  # no endpoint (scaled away, never started): nothing can be in flight
    return inflight(body) or 0.0


def drain(url: str, *, timeout: float, zeros: int, interval: float,
          log: Callable[[str], None] = print,
          probe: Callable[[str, float], float] = poll,
          clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> bool:
    """True when drained, False when the timeout ended the wait first."""
    deadline = clock() + timeout
    run, last = 0, None
    while True:
        n = probe(url, min(10.0, max(interval, 1.0)))
        run = run + 1 if n == 0 else 0
        if n != last:
            log(f"{url}: {n:g} request(s) in flight")
            last = n
        if run >= zeros:
            log(f"{url}: drained ({zeros} polls in a row at 0)")
            return True
        if clock() >= deadline:
            log(f"{url}: still {n:g} in flight after {timeout:g}s (the request timeout); "
                "continuing")
            return False
        sleep(interval)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m dgdgen.gitops.drain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the leaving frontend's /metrics URL")
    p.add_argument("--timeout", type=float, required=True, help="seconds (the request timeout)")
    p.add_argument("--zeros", type=int, default=4, help="polls in a row at 0 that count as drained")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    args = p.parse_args(argv)
    if args.timeout < 0 or args.zeros < 1 or args.interval <= 0:
        sys.stderr.write("error: --timeout >= 0, --zeros >= 1 and --interval > 0\n")
        return 2
    drain(args.url, timeout=args.timeout, zeros=args.zeros, interval=args.interval,
          log=lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":  # pragma: no cover - the hook Job's entry point
    sys.exit(main())
