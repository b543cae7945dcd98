"""Wait for a leaving generation's frontend to drain: its in-flight requests at 0, bounded by
the request timeout. Run by the drain hook Job (:mod:`dgdgen.render.drain`) between the wave that
moves the weights away and the wave that shrinks the generation, as
``python3 -m dgdgen.gitops.drain --url http://FRONTEND-SERVICE:8000/metrics --service NAME ...``.

The frontend's ``/metrics`` has the gauge ``dynamo_frontend_inflight_requests{model}``
(Dynamo ``lib/llm/src/http/service/metrics.rs``). The Service balances over the generation's
frontend pods, so one poll sees one pod: the frontend counts as drained after ``--zeros`` polls in
a row that all read 0 (the hook asks for four per frontend replica).

Unknown is not zero. A poll that gets no answer (connection refused or reset, timeout, DNS
failure, an HTTP error) says nothing about the requests a frontend holds — a frontend restarting
or briefly unreachable still may — so it breaks a run of zeros and the wait goes on. The one
other way to be drained is a Service with no serving endpoint left (no frontend pod that could
hold a request): with ``--service``, after a failed poll the Job reads the Service's
EndpointSlices from the Kubernetes API with its service-account token (a Role allowing
``get``/``list`` on ``endpointslices`` in the namespace). An API it cannot read is unknown too.

With ``--route``, the wait starts only once the route carries the new weights: the HTTPRoute's
status reports, for every parent, ``Accepted`` and ``ResolvedRefs`` True at the route's current
``metadata.generation`` (Gateway API: a condition's ``observedGeneration`` says which spec it
describes). Before that the Gateway may still route by the old weights and send the leaving
generation new requests, so an in-flight reading of 0 would mean nothing. A route that never gets
there within the timeout fails the Job (exit 1), and with it the sync: shrinking a generation the
route may still send traffic to would cut live requests.

With ``--l4-switch`` the generation left the traffic through an L4 switch — a Service selector
(the ``none`` provider's switch Service, the GAMMA parent for callers outside the mesh) — which
moves only *new* connections: kube-proxy and Cilium keep an established connection on its pod, so
a client with a pool of keep-alive connections goes on sending requests to the leaving frontend
after the switch. The Dynamo 1.6.1 frontend neither reports its connections nor closes idle ones
on SIGTERM: it answers the next request on such a connection 503 "Service is not ready"
(``tests/rehearse/test_pooled_connections.py``, on the real frontend). So in this mode the drain
reads every serving endpoint of ``--service`` from its EndpointSlices and polls each pod's
``/metrics`` directly, and a round counts as quiet only when every pod answers with nothing in
flight **and** no request started since the previous round
(``dynamo_frontend_requests_started_total``, ai-dynamo 1.6.1 ``prometheus_names.py``): a pooled connection that still
carries requests keeps the generation from counting as drained. If requests still arrive at the
timeout, the drain fails (exit 1) and with it the sync: the leaving generation is not shrunk
under clients it still serves.

After ``--timeout`` (the route's request timeout: any request still open then has been ended by
the gateway anyway) it stops waiting and says what it last knew. Exit 0 either way — the shrink
must not be blocked forever — except 1 when the route never accepted the new weights or, behind
an L4 switch, requests still arrive; 2 on bad usage. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METRIC = "dynamo_frontend_inflight_requests"
# Counter of the requests a frontend started (ai-dynamo 1.6.1 prometheus_names.py
# REQUESTS_STARTED_TOTAL; labels model, endpoint, request_type): it grows while a pooled
# connection still carries requests.
STARTED = "dynamo_frontend_requests_started_total"
# Where Kubernetes mounts a pod's service-account token, CA and namespace.
CREDENTIALS = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_LABEL = "kubernetes.io/service-name"  # EndpointSlice -> its Service


def inflight(text: str) -> float | None:
    """Sum of the in-flight gauge over its series in a Prometheus text exposition, or None when
    the metric is absent (a frontend that has served nothing yet)."""
    return _sum(text, METRIC)


def started(text: str) -> float:
    """Requests the frontend has started since it began (the counter summed over its series; 0
    when absent: it has served nothing yet)."""
    return _sum(text, STARTED) or 0.0


def _sum(text: str, metric: str) -> float | None:
    total: float | None = None
    for line in text.splitlines():
        if not line.startswith(metric):
            continue
        rest = line[len(metric):]
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


def poll(url: str, timeout: float) -> float | None:
    """In-flight requests of the frontend answering ``url``; None when nobody answered (unknown).
    A frontend that answers without the gauge has served nothing: 0."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # plain http, in-cluster
            body = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return inflight(body) or 0.0


@dataclass(frozen=True)
class Reading:
    inflight: float
    started: float


def read_pod(url: str, timeout: float) -> Reading | None:
    """What one frontend pod holds and has started; None when it did not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # plain http, in-cluster
            body = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return Reading(inflight(body) or 0.0, started(body))


def serving_addresses(slices: Any, default_port: int) -> list[str]:
    """``host:port`` of every endpoint of an EndpointSliceList that may still hold a request
    (``conditions.serving`` not false), each slice's port being its only one, else the one named
    ``http``, else ``default_port``."""
    out: list[str] = []
    for item in slices.get("items") or []:
        ports = [p for p in item.get("ports") or [] if isinstance(p, dict)]
        named = [p for p in ports if p.get("name") == "http"]
        chosen = ports[0] if len(ports) == 1 else (named[0] if named else None)
        port = chosen.get("port") if chosen is not None else None
        port = port if isinstance(port, int) and 0 < port < 65536 else default_port
        for ep in item.get("endpoints") or []:
            cond = ep.get("conditions") or {}
            if cond.get("serving", cond.get("ready", True)) is False:
                continue
            for addr in ep.get("addresses") or []:
                if isinstance(addr, str) and addr:
                    host = f"[{addr}]" if ":" in addr else addr
                    out.append(f"{host}:{port}")
    return sorted(set(out))


def serving_endpoints(slices: Any) -> int:
    """Endpoints of an EndpointSliceList that may still hold a request: every endpoint whose
    ``conditions.serving`` is not false (unset means serving, discovery.k8s.io/v1)."""
    n = 0
    for item in slices.get("items") or []:
        for ep in item.get("endpoints") or []:
            cond = ep.get("conditions") or {}
            if cond.get("serving", cond.get("ready", True)) is not False:
                n += 1
    return n


def route_accepted(route: Any) -> str | None:
    """None when every parent of an HTTPRoute reports Accepted and ResolvedRefs True for its
    current generation; else what is missing."""
    if not isinstance(route, dict):
        return "no route"
    generation = (route.get("metadata") or {}).get("generation")
    parents = ((route.get("status") or {}).get("parents")) or []
    wanted = len(((route.get("spec") or {}).get("parentRefs")) or []) or 1
    if len(parents) < wanted:
        return f"{len(parents)} of {wanted} parent(s) report status"
    for parent in parents:
        name = ((parent.get("parentRef") or {}).get("name")) or "?"
        conditions = {c.get("type"): c for c in parent.get("conditions") or []}
        for kind in ("Accepted", "ResolvedRefs"):
            c = conditions.get(kind)
            if c is None:
                return f"parent {name}: no {kind} condition"
            if generation is not None and c.get("observedGeneration") != generation:
                return (f"parent {name}: {kind} is for generation "
                        f"{c.get('observedGeneration')}, the route is at {generation}")
            if c.get("status") != "True":
                return f"parent {name}: {kind} {c.get('status')} ({c.get('reason')})"
    return None


class Api:
    """The in-cluster Kubernetes API, read with the pod's service-account token."""

    def __init__(self, server: str | None, credentials: str) -> None:
        if server is None:
            host = os.environ.get("KUBERNETES_SERVICE_HOST")
            port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
            server = f"https://{'[' + host + ']' if host and ':' in host else host}:{port}" \
                if host else None
        self.server = server
        self.credentials = Path(credentials)

    def get(self, path: str, timeout: float) -> Any:
        """The JSON object at ``path``; None when the API cannot be read."""
        if self.server is None:
            return None
        try:
            token = (self.credentials / "token").read_text().strip()
        except OSError:
            return None
        url = self.server.rstrip("/") + path
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}",
                                                   "Accept": "application/json"})
        context = None
        if url.startswith("https:"):
            ca = self.credentials / "ca.crt"
            context = ssl.create_default_context(cafile=str(ca) if ca.exists() else None)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
                data = json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def slices(self, namespace: str, service: str, timeout: float) -> Any:
        """The EndpointSliceList of ``service``; None when the API cannot be read."""
        query = urllib.parse.urlencode({"labelSelector": f"{SERVICE_LABEL}={service}"})
        data = self.get(f"/apis/discovery.k8s.io/v1/namespaces/"
                        f"{urllib.parse.quote(namespace, safe='')}/endpointslices?{query}",
                        timeout)
        if data is None or data.get("kind", "EndpointSliceList") != "EndpointSliceList":
            return None
        return data

    def endpoints(self, namespace: str, service: str, timeout: float) -> int | None:
        """Serving endpoints of ``service``; None when the API cannot be read."""
        data = self.slices(namespace, service, timeout)
        return None if data is None else serving_endpoints(data)

    def addresses(self, namespace: str, service: str, port: int, timeout: float
                  ) -> list[str] | None:
        """``host:port`` of each serving endpoint of ``service``; None when unreadable."""
        data = self.slices(namespace, service, timeout)
        return None if data is None else serving_addresses(data, port)

    def route(self, namespace: str, name: str, timeout: float) -> Any:
        return self.get(f"/apis/gateway.networking.k8s.io/v1/namespaces/"
                        f"{urllib.parse.quote(namespace, safe='')}/httproutes/"
                        f"{urllib.parse.quote(name, safe='')}", timeout)


def wait_route(read: Callable[[float], Any], *, deadline: float,
               log: Callable[[str], None] = print,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep, interval: float = 1.0) -> bool:
    """Wait until the route reports the new weights accepted; False at the deadline."""
    last: str | None = None
    while True:
        route = read(min(10.0, max(interval, 1.0)))
        missing = route_accepted(route) if route is not None else "route unreadable"
        if missing is None:
            log("route: Accepted and ResolvedRefs at its current generation")
            return True
        if missing != last:
            log(f"route: waiting ({missing})")
            last = missing
        if clock() >= deadline:
            log(f"route: not accepted at its current generation by the timeout ({missing}); "
                "not draining a generation the route may still send requests to")
            return False
        sleep(interval)


def drain(url: str, *, timeout: float, zeros: int, interval: float,
          log: Callable[[str], None] = print,
          probe: Callable[[str, float], float | None] = poll,
          endpoints: Callable[[float], int | None] | None = None,
          clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> bool:
    """True when drained (``zeros`` readings of 0 in a row, or no serving endpoint behind the
    Service), False when the timeout ended the wait first."""
    deadline = clock() + timeout
    run = 0
    last: str | None = None
    while True:
        wait = min(10.0, max(interval, 1.0))
        n = probe(url, wait)
        if n is None:
            run = 0
            left = endpoints(wait) if endpoints is not None else None
            if left == 0:
                log(f"{url}: no answer, and its Service has no serving endpoint: drained")
                return True
            seen = ("no answer (in flight unknown" + (
                f"; {left} serving endpoint(s)" if left is not None else "") + ")")
        else:
            run = run + 1 if n == 0 else 0
            seen = f"{n:g} request(s) in flight"
        if seen != last:
            log(f"{url}: {seen}")
            last = seen
        if run >= zeros:
            log(f"{url}: drained ({zeros} polls in a row at 0)")
            return True
        if clock() >= deadline:
            what = f"still {n:g} in flight" if n is not None else "in flight still unknown"
            log(f"{url}: {what} after {timeout:g}s (the request timeout); continuing")
            return False
        sleep(interval)


def drain_pods(addresses: Callable[[float], list[str] | None], *, timeout: float, quiet: int,
               interval: float, log: Callable[[str], None] = print,
               read: Callable[[str, float], Reading | None] = read_pod,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> bool:
    """Behind an L4 switch: True when ``quiet`` rounds in a row found every serving pod with
    nothing in flight and no request started since the round before (or no serving pod at all),
    False when requests still arrived or were in flight at the timeout."""
    deadline = clock() + timeout
    run = 0
    before: dict[str, float] = {}
    last: str | None = None
    seen = "nothing read yet"
    arriving = False  # requests started at a pod between the last two rounds that read it
    while True:
        wait = min(10.0, max(interval, 1.0))
        pods = addresses(wait)
        if pods is None:
            run, seen = 0, "its endpoints unreadable (in flight unknown)"
        elif not pods:
            log("no serving frontend pod left behind the Service: drained")
            return True
        else:
            readings = {a: read(f"http://{a}/metrics", wait) for a in pods}
            silent = [a for a, r in readings.items() if r is None]
            busy = sum(r.inflight for r in readings.values() if r is not None)
            arrived = sum(r.started - before[a] for a, r in readings.items()
                          if r is not None and a in before and r.started > before[a])
            # a pod first seen, or one whose counter went back (it restarted): no comparison
            new = [a for a, r in readings.items()
                   if r is not None and (a not in before or r.started < before[a])]
            before = {a: r.started for a, r in readings.items() if r is not None}
            arriving = arrived > 0
            quiet_round = not silent and not new and busy == 0 and arrived == 0
            run = run + 1 if quiet_round else 0
            seen = (f"{len(pods)} pod(s): {busy:g} in flight, {arrived:g} request(s) started "
                    "since the last round" + (f", {len(silent)} not answering" if silent else "")
                    + (" (first reading)" if new and not quiet_round else ""))
        if seen != last:
            log(seen)
            last = seen
        if run >= quiet:
            log(f"drained ({quiet} rounds in a row with nothing in flight and nothing arriving)")
            return True
        if clock() >= deadline:
            if arriving:
                log(f"after {timeout:g}s (the request timeout): {seen} — requests still reach "
                    "the leaving frontend over connections the L4 switch does not move (pooled "
                    "keep-alive clients); not shrinking a generation that still serves them. "
                    "Move those clients (restart them, or bound their connections' lifetime), "
                    "or use an L7 traffic provider, then sync again")
            else:
                log(f"after {timeout:g}s (the request timeout): {seen} — not drained; not "
                    "shrinking a generation whose frontend may still hold requests (no gateway "
                    "ends them behind an L4 switch)")
            return False
        sleep(interval)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m dgdgen.gitops.drain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True, help="the leaving frontend's /metrics URL")
    p.add_argument("--timeout", type=float, required=True, help="seconds (the request timeout)")
    p.add_argument("--zeros", type=int, default=4, help="polls in a row at 0 that count as drained")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    p.add_argument("--service", help="the frontend Service: drained too when it has no serving "
                   "endpoint (read from the Kubernetes API)")
    p.add_argument("--namespace", help="its namespace (default: the pod's own)")
    p.add_argument("--route", help="the HTTPRoute carrying the weights: wait until it reports "
                   "them Accepted/ResolvedRefs before draining")
    p.add_argument("--l4-switch", action="store_true",
                   help="the generation left through an L4 switch (a Service selector): poll "
                   "every serving pod of --service and count requests that still arrive over "
                   "pooled connections; fail (exit 1) if they still arrive at the timeout")
    p.add_argument("--api-server", help="Kubernetes API URL (default: the in-cluster one from "
                   "KUBERNETES_SERVICE_HOST/PORT)")
    p.add_argument("--credentials", default=CREDENTIALS,
                   help=f"directory with token, ca.crt, namespace (default {CREDENTIALS})")
    args = p.parse_args(argv)
    if args.timeout < 0 or args.zeros < 1 or args.interval <= 0:
        sys.stderr.write("error: --timeout >= 0, --zeros >= 1 and --interval > 0\n")
        return 2
    if args.l4_switch and not args.service:
        sys.stderr.write("error: --l4-switch needs --service (its pods are read from the "
                         "Service's EndpointSlices)\n")
        return 2
    endpoints: Callable[[float], int | None] | None = None
    api = Api(args.api_server, args.credentials)
    namespace = args.namespace
    if (args.service or args.route) and namespace is None:
        try:
            namespace = (Path(args.credentials) / "namespace").read_text().strip()
        except OSError:
            sys.stderr.write("error: --namespace is needed outside a pod\n")
            return 2
    ns = str(namespace)
    if args.service:
        service = args.service
        endpoints = lambda t: api.endpoints(ns, service, t)
    started = time.monotonic()
    if args.route:
        route = args.route
        if not wait_route(lambda t: api.route(ns, route, t), deadline=started + args.timeout,
                          log=lambda m: print(m, flush=True), interval=args.interval):
            return 1
        left = max(0.0, args.timeout - (time.monotonic() - started))
        args.timeout = left
    if args.l4_switch:
        port = urllib.parse.urlsplit(args.url).port or 80
        service = args.service
        ok = drain_pods(lambda t: api.addresses(ns, service, port, t), timeout=args.timeout,
                        quiet=args.zeros, interval=args.interval,
                        log=lambda m: print(m, flush=True))
        return 0 if ok else 1
    drain(args.url, timeout=args.timeout, zeros=args.zeros, interval=args.interval,
          endpoints=endpoints, log=lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":  # pragma: no cover - the hook Job's entry point
    sys.exit(main())
