"""The drain behind an L4 switch (the ``none`` provider's switch Service, the GAMMA parent for
callers outside the mesh): a Service selector moves only new connections, so pooled keep-alive
clients go on sending to the leaving frontend. The drain reads each serving pod of the leaving
frontend's Service and counts what still *arrives* (``dynamo_frontend_requests_started_total``),
not only what is in flight, and fails rather than let the shrink cut those clients off.

The Kubernetes API is a loopback stand-in (no API server runs here) with the discovery.k8s.io/v1
EndpointSliceList shape; the frontend pods are loopback /metrics endpoints with the Dynamo 1.6.1
exposition. The same drain against the real frontend and a real pooled client is in
tests/rehearse/test_pooled_connections.py."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from http_support import Handler, serving
from test_drain import _api, _job_command, _no_cluster_env, _with

from dgdgen.gitops.drain import Reading, drain_pods, serving_addresses, started


def _expo(inflight: int, started_total: int) -> str:
    return (
        "# TYPE dynamo_frontend_inflight_requests gauge\n"
        f'dynamo_frontend_inflight_requests{{model="Qwen/Qwen3-0.6B"}} {inflight}\n'
        "# TYPE dynamo_frontend_requests_started_total counter\n"
        'dynamo_frontend_requests_started_total{endpoint="chat_completions",'
        f'model="Qwen/Qwen3-0.6B",request_type="stream"}} {started_total}\n'
        'dynamo_frontend_requests_started_total{endpoint="completions",'
        'model="Qwen/Qwen3-0.6B",request_type="unary"} 3\n'
    )


def test_started_sums_the_counter() -> None:
    assert started(_expo(0, 7)) == 10
    assert started("dynamo_frontend_inflight_requests 0\n") == 0


def test_addresses_are_the_serving_endpoints_with_their_port() -> None:
    slices = {"items": [
        {"ports": [{"name": "http", "port": 8000}],
         "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"serving": True}},
                       {"addresses": ["10.0.0.2"], "conditions": {"serving": False}},
                       {"addresses": ["fd00::3"], "conditions": {}}]},
        {"ports": [{"name": "metrics", "port": 9090}, {"name": "http", "port": 8080}],
         "endpoints": [{"addresses": ["10.0.1.1"], "conditions": {"ready": True}}]},
    ]}
    assert serving_addresses(slices, 8000) == ["10.0.0.1:8000", "10.0.1.1:8080", "[fd00::3]:8000"]


def _run(pods: list[list[str]], readings: dict[str, list[Reading | None]], *, timeout: float,
         quiet: int = 3) -> tuple[bool, list[str], float]:
    t = [0.0]
    log: list[str] = []

    def read(url: str, _t: float) -> Reading | None:
        series = readings[url.removeprefix("http://").removesuffix("/metrics")]
        return series.pop(0) if len(series) > 1 else series[0]

    ok = drain_pods(lambda _t: pods.pop(0) if len(pods) > 1 else pods[0], timeout=timeout,
                    quiet=quiet, interval=1, log=log.append, read=read, clock=lambda: t[0],
                    sleep=lambda s: t.__setitem__(0, t[0] + s))
    return ok, log, t[0]


def test_requests_still_arriving_with_nothing_in_flight_are_not_drained() -> None:
    """A pooled client between requests: in flight reads 0 at every poll, but requests keep
    starting. The in-flight-only drain would call this drained; this one fails at the timeout."""
    busy = [Reading(0, n) for n in range(0, 100, 2)]
    ok, log, took = _run([["10.0.0.1:8000"]], {"10.0.0.1:8000": busy}, timeout=20)
    assert not ok
    assert took == 20
    assert "requests still reach the leaving frontend over connections the L4 switch does not " \
           "move" in log[-1]
    assert "2 request(s) started since the last round" in log[-1]


def test_quiet_rounds_over_every_pod_drain() -> None:
    a, b = "10.0.0.1:8000", "10.0.0.2:8000"
    # b is busy until its fourth reading, then nothing arrives and nothing is in flight
    readings: dict[str, list[Reading | None]] = {
        a: [Reading(0, 5)],
        b: [Reading(1, 8), Reading(0, 9), Reading(0, 9), Reading(0, 10), Reading(0, 10)],
    }
    ok, log, took = _run([[a, b]], readings, timeout=100)
    assert ok, log
    # rounds 1 (first reading), 2 (b: 1 arrived), 3 (quiet), 4 (b: 1 arrived), 5–7 quiet
    assert took == 6
    assert log[-1].startswith("drained (3 rounds in a row")


def test_a_pod_that_does_not_answer_or_a_new_pod_breaks_the_run() -> None:
    a, b = "10.0.0.1:8000", "10.0.0.2:8000"
    pods = [[a], [a], [a, b], [a, b], [a, b], [a, b]]
    readings: dict[str, list[Reading | None]] = {a: [Reading(0, 1), None, Reading(0, 1)],
                                                 b: [Reading(0, 4)]}
    ok, _log, took = _run(pods, readings, timeout=100)
    # 1 first reading, 2 a silent, 3 b first seen, 4–6 quiet
    assert ok and took == 5


def test_unreadable_endpoints_are_unknown_and_no_pod_left_is_drained() -> None:
    t = [0.0]
    log: list[str] = []
    answers: list[list[str] | None] = [None, None, []]
    ok = drain_pods(lambda _t: answers.pop(0), timeout=100, quiet=3, interval=1,
                    log=log.append, read=lambda _u, _t: None, clock=lambda: t[0],
                    sleep=lambda s: t.__setitem__(0, t[0] + s))
    assert ok and t[0] == 2
    assert log == ["its endpoints unreadable (in flight unknown)",
                   "no serving frontend pod left behind the Service: drained"]


@contextmanager
def _pod(step: int) -> Iterator[str]:
    """A frontend pod's /metrics: nothing in flight, the started counter growing by ``step`` at
    every read. Yields its ``host:port``."""
    count = [0]

    class H(Handler):
        def do_GET(self) -> None:
            count[0] += step
            self.reply(_expo(0, count[0]).encode(), content_type="text/plain; version=0.0.4")

    with serving(H) as url:
        yield url.removeprefix("http://")


def _slice_at(service: str, address: str) -> dict[str, Any]:
    host, port = address.rsplit(":", 1)
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": f"{service}-x", "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": int(port)}],
            "endpoints": [{"addresses": [host], "conditions": {"ready": True, "serving": True}}]}


def _cli(tmp_path: Path, step: int, timeout: str) -> subprocess.CompletedProcess[str]:
    creds = tmp_path / "sa"
    creds.mkdir(exist_ok=True)
    (creds / "token").write_text("tok\n")
    cmd = _job_command(tmp_path)
    assert "--l4-switch" in cmd  # the example's GAMMA parent: callers outside the mesh
    service = cmd[cmd.index("--service") + 1]
    with _pod(step) as pod, _api([_slice_at(service, pod)]) as (api, _seen):
        return subprocess.run(_with(cmd, l4=True, timeout=timeout)
                              + ["--api-server", api, "--credentials", str(creds)],
                              capture_output=True, text=True, timeout=120, check=False,
                              env=_no_cluster_env())


def test_the_rendered_l4_drain_fails_while_requests_still_arrive(tmp_path: Path) -> None:
    started_at = time.monotonic()
    r = _cli(tmp_path, 1, "1.5")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "not shrinking a generation that still serves them" in r.stdout
    assert time.monotonic() - started_at < 60


def test_the_rendered_l4_drain_passes_when_nothing_arrives(tmp_path: Path) -> None:
    r = _cli(tmp_path, 0, "60")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "drained (4 rounds in a row" in r.stdout


def test_l4_needs_the_service() -> None:
    import sys
    r = subprocess.run([sys.executable, "-m", "dgdgen.gitops.drain", "--url", "http://x/metrics",
                        "--timeout", "1", "--l4-switch"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 2 and "--l4-switch needs --service" in r.stderr


def test_a_pod_whose_counter_went_back_restarted_and_is_read_afresh() -> None:
    a = "10.0.0.1:8000"
    ok, _log, took = _run([[a]], {a: [Reading(0, 5), Reading(0, 1), Reading(0, 1)]},
                          timeout=100)
    # 1 first reading, 2 went back (a restart: no comparison), 3-5 quiet
    assert ok and took == 4


def test_at_the_bound_without_arrivals_the_message_does_not_blame_pooled_clients() -> None:
    a = "10.0.0.1:8000"
    ok, log, _took = _run([[a]], {a: [Reading(2, 7)]}, timeout=5)
    assert not ok
    assert "2 in flight" in log[-1] and "not drained" in log[-1]
    assert "pooled" not in log[-1]
