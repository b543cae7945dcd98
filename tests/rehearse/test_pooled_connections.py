"""Pooled keep-alive clients behind an L4 switch, against the real Dynamo 1.6.1 frontend: the
basis of the drain's ``--l4-switch`` mode (dgdgen.gitops.drain, docs/traffic.md "Pooled
connections").

A Service selector moves only new connections, so after "0/100" a client with a pool of
keep-alive connections goes on sending to the leaving frontend. Observed here:

* between its requests that frontend has nothing in flight, so a drain that waits only for the
  in-flight gauge calls it drained while the client is still using it;
* the drain that also counts the requests that start at each pod does not, and does once the
  client stops;
* on SIGTERM the frontend does not close the idle pooled connection: it answers the next
  request on it 503 "Service is not ready" — so shrinking a generation under pooled clients
  fails their requests, it does not move them.

The processes run in a private network namespace (dgdgen.runtime.netns.run_isolated).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time
from typing import Any

import pytest
from rehearse_support import require_runtime, short_workdir

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

NS = "inference-pooled"
MODEL = "tiny"


def _ask(conn: http.client.HTTPConnection) -> tuple[int, str]:
    body = json.dumps({"model": MODEL, "max_tokens": 2,
                       "messages": [{"role": "user", "content": "hi"}]})
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, r.read().decode("utf-8", "replace")


def _observe() -> dict[str, Any]:
    from dgdgen.gitops.drain import drain, drain_pods
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo

    with short_workdir("dgdgen-pooled-") as work:
        model_dir = make_model_dir(work / "model")
        out: dict[str, Any] = {}
        with LocalDynamo(work) as rt:
            fe = rt.frontend(NS)
            w = rt.mocker(NS, ["--model-path", str(model_dir), "--model-name", MODEL,
                               "--block-size", "16"], name="w1")
            rt.wait_frontend_up(fe)
            rt.wait_worker_ready(w)
            rt.wait_model_ready(fe, MODEL, workers=1)
            pod = f"127.0.0.1:{fe.port}"

            # one pooled client: a request every 0.1 s on one keep-alive connection
            stop = threading.Event()
            statuses: list[int] = []
            pooled = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=30)

            def client() -> None:
                while not stop.is_set():
                    statuses.append(_ask(pooled)[0])
                    time.sleep(0.1)

            t = threading.Thread(target=client)
            t.start()
            log_old: list[str] = []
            out["in_flight_only_drained"] = drain(f"http://{pod}/metrics", timeout=30, zeros=4,
                                                  interval=0.2, log=log_old.append)
            log_l4: list[str] = []
            start = time.monotonic()
            out["l4_drained_while_used"] = drain_pods(lambda _t: [pod], timeout=5, quiet=4,
                                                      interval=1.0, log=log_l4.append)
            out["l4_took"] = time.monotonic() - start
            out["l4_log"] = log_l4
            stop.set()
            t.join(30)
            out["client_statuses"] = sorted(set(statuses))
            out["client_requests"] = len(statuses)
            out["l4_drained_after"] = drain_pods(lambda _t: [pod], timeout=30, quiet=4,
                                                 interval=0.5, log=[].append)

            # SIGTERM with the pooled connection idle, and one long stream keeping the process up
            idle = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=30)
            out["idle_first"] = _ask(idle)[0]
            slow = rt.mocker(NS, ["--model-path", str(model_dir), "--model-name", MODEL,
                                  "--block-size", "16", "--speedup-ratio", "0.05"], name="w2")
            rt.wait_worker_ready(slow)
            rt.wait_model_ready(fe, MODEL, workers=2)
            rt.stop(w)  # the slow worker alone serves the stream that keeps the frontend up
            long = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=120)
            body = json.dumps({"model": MODEL, "max_tokens": 40, "stream": True,
                               "messages": [{"role": "user", "content": "hi"}]})
            streamed: dict[str, int] = {}

            def stream() -> None:
                long.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                r = long.getresponse()
                r.read()
                streamed["status"] = r.status

            s = threading.Thread(target=stream)
            s.start()
            time.sleep(1.0)
            os.killpg(fe.popen.pid, signal.SIGTERM)
            time.sleep(0.5)
            sock = idle.sock
            assert sock is not None
            sock.setblocking(False)
            try:
                out["idle_closed_by_frontend"] = sock.recv(1) == b""
            except BlockingIOError:
                out["idle_closed_by_frontend"] = False
            sock.setblocking(True)
            out["idle_after_sigterm"] = _ask(idle)
            s.join(120)
            out["stream_status"] = streamed.get("status")
            if fe in rt.procs:
                rt.procs.remove(fe)
        return out


def test_pooled_clients_stay_on_the_leaving_frontend_and_only_the_l4_drain_sees_them() -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    seen = run_isolated(_observe, timeout=300)
    assert seen["client_statuses"] == [200] and seen["client_requests"] > 10, seen
    # the in-flight gauge reads 0 between the pooled client's requests: "drained" — wrongly
    assert seen["in_flight_only_drained"] is True, seen
    # counting what arrives at the pod: not drained while the client sends, for the whole timeout
    assert seen["l4_drained_while_used"] is False, seen
    assert seen["l4_took"] >= 5, seen
    assert "not shrinking a generation that still serves them" in seen["l4_log"][-1], seen
    # and drained once the client stops
    assert seen["l4_drained_after"] is True, seen
    # SIGTERM: the idle pooled connection stays open and its next request fails 503
    assert seen["idle_first"] == 200, seen
    assert seen["idle_closed_by_frontend"] is False, seen
    assert seen["idle_after_sigterm"][0] == 503, seen
    assert "Service is not ready" in seen["idle_after_sigterm"][1], seen
    assert seen["stream_status"] == 200, seen
