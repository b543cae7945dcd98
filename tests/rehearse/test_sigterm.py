"""What a Dynamo 1.6.1 frontend and worker do on SIGTERM, against the real runtime: the basis of
the termination grace period dgdgen renders (dgdgen.render.grace, docs/planning.md).

A pod that Kubernetes stops gets SIGTERM and is killed after its grace period. The claims:

* a frontend answers new requests with 503 at once, finishes the stream it is serving, and
  exits soon after it;
* a (mocker) worker finishes the stream it is serving and exits soon after it;

so a pod whose grace period covers the longest request plus dgdgen.render.grace.MARGIN_SECONDS loses
no stream, and one whose grace period is shorter than a stream cuts it (the process waits for the
stream, it is the kill that ends it).

The processes run in a private network namespace (dgdgen.runtime.netns.run_isolated).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest
from rehearse_support import require_runtime, short_workdir

from dgdgen.render.grace import MARGIN_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

NS = "inference-sigterm"
MODEL = "tiny"
TOKENS = 50  # ≈6 s at the slowed-down mocker's pace below
SIGTERM_AFTER = 1.5  # s into the stream


def _stream_through_sigterm(rt: Any, fe: Any, target: Any) -> dict[str, Any]:
    from dgdgen.runtime import client
    from dgdgen.runtime.procs import http_get

    got: dict[str, Any] = {}

    def stream() -> None:
        got["outcome"] = client.request(fe.port, MODEL, stream=True, max_tokens=TOKENS,
                                        timeout=120)
        got["end"] = time.monotonic()

    t = threading.Thread(target=stream)
    start = time.monotonic()
    t.start()
    time.sleep(SIGTERM_AFTER)
    os.killpg(target.popen.pid, signal.SIGTERM)
    sig = time.monotonic()
    out: dict[str, Any] = {}
    if target is fe:
        time.sleep(0.3)
        out["health_after"] = http_get(fe.port, "/health")[0]
        out["new_request_after"] = client.request(fe.port, MODEL, stream=True, max_tokens=4,
                                                  timeout=20).status
    while target.alive() and time.monotonic() - sig < 120:
        time.sleep(0.05)
    exited = time.monotonic()
    t.join(130)
    outcome = got["outcome"]
    out.update(
        ok=outcome.ok, truncated=outcome.truncated, tokens=outcome.tokens, error=outcome.error,
        stream_after_sigterm=round(got["end"] - sig, 2), exit_after_stream=round(exited - got["end"], 2),
        sigterm_into_stream=round(sig - start, 2), returncode=target.popen.returncode,
    )
    if target in rt.procs:
        rt.procs.remove(target)
    return out


def _observe(forked: bool) -> dict[str, Any]:
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.podserver import PodServer
    from dgdgen.runtime.procs import LocalDynamo, inherited_env

    with short_workdir("dgdgen-sigterm-") as work, PodServer(inherited_env()) as pods:
        assert pods.pid
        model_dir = make_model_dir(work / "model")
        # --speedup-ratio below 1 slows the mocker down: one stream lasts seconds
        args = ["--model-path", str(model_dir), "--model-name", MODEL, "--block-size", "16",
                "--speedup-ratio", "0.05"]
        out: dict[str, Any] = {}
        with LocalDynamo(work, pods=pods if forked else None) as rt:
            fe = rt.frontend(NS)
            w1 = rt.mocker(NS, args, name="w1")
            rt.wait_frontend_up(fe)
            rt.wait_worker_ready(w1)
            rt.wait_model_ready(fe, MODEL, workers=1)
            out["worker"] = _stream_through_sigterm(rt, fe, w1)
            w2 = rt.mocker(NS, args, name="w2")
            rt.wait_worker_ready(w2)
            rt.wait_model_ready(fe, MODEL, workers=1)
            out["frontend"] = _stream_through_sigterm(rt, fe, fe)
        return out


@pytest.mark.parametrize("forked", [False, True], ids=["fresh", "forked"])
def test_frontend_and_worker_finish_their_stream_on_sigterm_then_exit(forked: bool) -> None:
    """Fresh: started as `python -m`; forked: as the rehearsal starts them, from its pod server
    (dgdgen.runtime.podserver)."""
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    seen = run_isolated(_observe, forked, timeout=300)
    for kind in ("worker", "frontend"):
        s = seen[kind]
        # the stream was cut by nothing: it ran on for seconds after SIGTERM, to its end
        assert s["ok"] and not s["truncated"] and s["tokens"] == TOKENS, (kind, s)
        assert s["stream_after_sigterm"] > 2.0, (kind, s)
        # the process waited for it, then exited cleanly within the margin's exit allowance
        assert s["returncode"] == 0, (kind, s)
        assert -0.5 < s["exit_after_stream"] < MARGIN_SECONDS / 2, (kind, s)
    # the stopping frontend takes no new request (nothing new starts after SIGTERM)
    assert seen["frontend"]["health_after"] == 503, seen["frontend"]
    assert seen["frontend"]["new_request_after"] == 503, seen["frontend"]
