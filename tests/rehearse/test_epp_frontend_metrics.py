"""The gauges the rendered endpoint picker scores on, asked of the real Dynamo 1.6.1 frontend with a
mocker worker: the queue and running-request metric names of the EPP's plugins config are on the
frontend's ``/metrics`` (the HTTP port, the one the EPP scrapes), typed gauge and labelled by model;
the running one counts a stream while it is open and drops back to 0 when it ends; and none of the
vLLM names the chart's default config reads is there (why that config scored every frontend the
same)."""

from __future__ import annotations

import http.client
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from rehearse_support import require_runtime

from dgdgen.render import epp

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

MODEL = "Qwen/Qwen3-0.6B"
READY = "/v1/models/Qwen%2FQwen3-0.6B/ready"
CHART_DEFAULT_NAMES = ("vllm:num_requests_waiting", "vllm:num_requests_running",
                       "vllm:kv_cache_usage_perc")


def _families(text: str) -> dict[str, tuple[str, list[tuple[dict[str, str], float]]]]:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: (f.type, [(dict(s.labels), float(s.value)) for s in f.samples])
            for f in text_string_to_metric_families(text)}


def _scenario() -> dict[str, Any]:
    """The scenario in a private temp folder, removed with it (one was left per run)."""
    import shutil

    work = Path(tempfile.mkdtemp(prefix="dgdgen-epp-"))
    try:
        return _scenario_in(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _scenario_in(work: Path) -> dict[str, Any]:
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo, http_get

    model_dir = make_model_dir(work / "model")
    out: dict[str, Any] = {}
    with LocalDynamo(work) as rt:
        fe = rt.frontend("inference-epp")
        rt.wait_frontend_up(fe)
        rt.mocker("inference-epp", ["--model-path", str(model_dir), "--model-name", MODEL])
        deadline = time.monotonic() + 60
        while http_get(fe.port, READY)[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        out["ready"] = http_get(fe.port, READY)[0]

        opened = threading.Event()

        def stream() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", fe.port, timeout=60)
            body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                    "max_tokens": 400, "stream": True}
            conn.request("POST", "/v1/chat/completions", json.dumps(body),
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.readline()  # the first event: the stream is open
            opened.set()
            resp.read()

        t = threading.Thread(target=stream)
        t.start()
        opened.wait(30)
        out["during"] = http_get(fe.port, "/metrics")[1]
        t.join(60)
        out["after"] = http_get(fe.port, "/metrics")[1]
    return out


def test_the_picker_scores_gauges_the_frontend_exports() -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    (extractor,) = [p for p in yaml.safe_load(epp.PLUGINS_CONFIG)["plugins"]
                    if p["type"] == "core-metrics-extractor"]
    (engine,) = extractor["parameters"]["engineConfigs"]
    queued, running = engine["queuedRequestsSpec"], engine["runningRequestsSpec"]
    seen = run_isolated(_scenario, timeout=150)
    assert seen["ready"] == 200, seen["ready"]
    during, after = _families(seen["during"]), _families(seen["after"])
    for name in (queued, running):
        kind, samples = during[name]
        assert kind == "gauge", (name, kind)
        assert [labels for labels, _ in samples] == [{"model": MODEL}], (name, samples)
    assert during[running][1][0][1] == 1.0, during[running]
    assert after[running][1][0][1] == 0.0, after[running]
    assert after[queued][1][0][1] == 0.0, after[queued]
    assert not set(CHART_DEFAULT_NAMES) & set(during), sorted(during)
