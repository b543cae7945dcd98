"""Does the frontend route to a disaggregated generation that has one role alone? Measured on the
real Dynamo 1.6.1 frontend with workers registering as the 1.6.1 backends do.

Every 1.6.1 backend registers a decode worker that needs a prefill peer and a prefill worker that
needs a decode peer (the model card's ``needs``, beside ``worker_type``): the first test reads
that in the installed wheel's sources. The runtime test then starts, behind one frontend that
selects worker namespaces by prefix (the operator's layout for an in-place roll):

* a generation with a decode worker alone — the old generation once its last prefill worker has
  gone, or a new one whose decode worker registered first;
* beside it a complete generation (a prefill and a decode worker), and a generation with a prefill
  worker alone;

with two kinds of worker: :mod:`dgdgen.runtime.answerer`, which registers exactly as the vLLM /
SGLang / TRT-LLM backends do (``register_model`` with ``WorkerType.Prefill`` + ``needs
[[Decode]]``, ``WorkerType.Decode`` + ``needs [[Prefill]]``), and the mocker.

What it shows, and what the messages say from it (``dgdgen.check.inplace`` NEEDS_ROUTING and
NO_COMPLETE, the rehearsal's gap report, CLU101 and the cluster model): an incomplete generation
is listed with its missing role and sent no request; alone, the model is not ready and every
request gets 503. docs/rehearse.md, "Incomplete generations", has the figures.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from dgdgen import runtime
from dgdgen.check.inplace import NEEDS_ROUTING, NO_COMPLETE

pytestmark = pytest.mark.runtime

if not runtime.available():  # pragma: no cover - CI installs it (and turns the skip into a failure)
    pytest.skip(f"needs the ai-dynamo {runtime.DYNAMO_VERSION} wheels: {runtime.missing()}",
                allow_module_level=True)

KINDS = ("answerer", "mocker")
REQUESTS = 24
PREFIX = "inference-needs"
SUFFIX = {"alone": "0ld0ld00", "complete": "4e704e70", "prefill": "9f119f11"}


def _wheel() -> Path:
    """The installed ``dynamo`` package (a namespace package: found through a subpackage,
    without importing the engines)."""
    import importlib.util

    spec = importlib.util.find_spec("dynamo.frontend")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parents[1]


# (file of the 1.6.1 wheel, what registers a decode worker's needs, a prefill worker's needs)
DECLARATIONS = (
    ("vllm/worker_factory.py", r"needs_set: list\[WorkerType\] = \[WorkerType\.Prefill\]",
     r"prefill_needs_set: list\[WorkerType\] = \[WorkerType\.Decode\]"),
    ("sglang/init_llm.py", r"decode_needs: list\[list\[WorkerType\]\] = \[\[WorkerType\.Prefill\]\]",
     r"worker_type=WorkerType\.Prefill,\s*needs=\[\[WorkerType\.Decode\]\]"),
    ("trtllm/workers/llm_worker.py",
     r"worker_type = WorkerType\.Decode\s*needs_set = \[WorkerType\.Prefill\]",
     (r"worker_type = WorkerType\.Prefill\s*needs_set(: list\[WorkerType\])? = "
      r"\[WorkerType\.Decode\]")),
)


@pytest.mark.parametrize(("file", "decode", "prefill"), DECLARATIONS,
                         ids=[d[0].split("/")[0] for d in DECLARATIONS])
def test_every_backend_declares_the_other_role_as_needed(file: str, decode: str,
                                                         prefill: str) -> None:
    text = (_wheel() / file).read_text(encoding="utf-8")
    assert re.search(decode, text), f"{file}: the decode worker's needs changed"
    assert re.search(prefill, text), f"{file}: the prefill worker's needs changed"
    assert re.search(r"\bneeds=", text), file


def test_the_answerer_registers_as_the_backends_do() -> None:
    text = (Path(__file__).parents[2] / "dgdgen" / "runtime" / "answerer.py").read_text()
    assert re.search(r"ModelType\.Prefill, WorkerType\.Prefill\s*\n\s*needs: .* = "
                     r"\[\[WorkerType\.Decode\]\]", text)
    assert re.search(r"WorkerType\.Decode\s*\n\s*needs = \[\[WorkerType\.Prefill\]\]", text)


def _args(model_dir: Path, model: str, mode: str) -> list[str]:
    return ["--model-path", str(model_dir), "--model-name", model, "--block-size", "16",
            "--disaggregation-mode", mode]


def _measure(work: str) -> dict[str, Any]:
    """Runs in a private network namespace (dgdgen.runtime.netns.run_isolated)."""
    from dgdgen.runtime import client, metrics
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo, http_get
    from dgdgen.runtime.routing import prefill_routers_active

    root = Path(work)
    model_dir = make_model_dir(root / "model")
    out: dict[str, Any] = {}
    with LocalDynamo(root) as rt:
        fe = rt.frontend(prefix=PREFIX)
        rt.wait_frontend_up(fe)
        for kind in KINDS:
            model = f"tiny-{kind}"
            start = rt.answerer if kind == "answerer" else rt.mocker

            def worker(gen: str, mode: str, kind: str = kind, model: str = model,
                       start: Any = start) -> Any:
                return start(PREFIX, _args(model_dir, model, mode), name=f"{kind}-{gen}-{mode}",
                             env={"DYN_NAMESPACE_WORKER_SUFFIX": SUFFIX[gen]})

            def ready(model: str = model) -> tuple[int, dict[str, Any]]:
                import json

                status, body = http_get(fe.port, f"/v1/models/{model}/ready")
                try:
                    data = json.loads(body)
                except ValueError:
                    data = {}
                return status, data if isinstance(data, dict) else {}

            def listed(*gens: str, model: str = model) -> dict[str, Any]:
                deadline = time.monotonic() + 30
                while True:
                    status, data = ready(model)
                    nss = data.get("namespaces") or {}
                    if all(f"{PREFIX}-{SUFFIX[g]}" in nss for g in gens):
                        return {"status": status, **data}
                    if time.monotonic() > deadline:
                        raise AssertionError(f"{model}: {gens} never listed: {status} {data}")
                    time.sleep(0.1)

            # 1. a decode worker alone: the model has no complete generation
            alone = worker("alone", "decode")
            rt.wait_worker_ready(alone)
            seen: dict[str, Any] = {"alone_ready": listed("alone")}
            seen["alone_models"] = http_get(fe.port, "/v1/models")[1]
            seen["alone_statuses"] = [client.request(fe.port, model, stream=i % 2 == 0,
                                                     max_tokens=4).status for i in range(6)]
            # 2. beside it a complete generation, and a prefill worker alone
            complete = [worker("complete", "prefill"), worker("complete", "decode")]
            lone_prefill = worker("prefill", "prefill")
            for w in (*complete, lone_prefill):
                rt.wait_worker_ready(w)
            deadline = time.monotonic() + 30
            while not (ready()[1].get("ready") and prefill_routers_active(
                    fe, [f"{PREFIX}-{SUFFIX['complete']}"])):
                assert time.monotonic() < deadline, ready()
                time.sleep(0.1)
            seen["beside_ready"] = listed("alone", "complete", "prefill")
            results = [client.request(fe.port, model, stream=i % 2 == 0, max_tokens=4)
                       for i in range(REQUESTS)]
            seen["beside_ok"] = sum(r.ok for r in results)
            seen["served"] = {"alone decode": metrics.worker_requests(alone),
                              "lone prefill": metrics.worker_requests(lone_prefill),
                              "complete prefill": metrics.worker_requests(complete[0]),
                              "complete decode": metrics.worker_requests(complete[1])}
            for w in (alone, *complete, lone_prefill):
                rt.stop(w)
            out[kind] = seen
    return out


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from dgdgen.runtime import RuntimeUnavailable
    from dgdgen.runtime.netns import run_isolated

    work = tmp_path_factory.mktemp("runtime-needs")
    try:
        result: dict[str, Any] = run_isolated(_measure, str(work), timeout=400)
    except RuntimeUnavailable as exc:  # pragma: no cover - CI runs as root
        pytest.skip(f"ai-dynamo runtime cannot run here: {exc}")
    return result


def _namespace(data: dict[str, Any], gen: str) -> dict[str, Any]:
    ns: dict[str, Any] = data["namespaces"][f"{PREFIX}-{SUFFIX[gen]}"]
    return ns


@pytest.mark.parametrize("kind", KINDS)
def test_a_generation_with_decode_workers_alone_is_not_ready(measured: dict[str, Any],
                                                             kind: str) -> None:
    seen = measured[kind]
    r = seen["alone_ready"]
    assert r["status"] == 503 and r["ready"] is False, r
    ns = _namespace(r, "alone")
    assert ns["ready"] is False and ns["missing_worker_types"] == ["prefill"], ns
    # the worker's card carries its needs, as the frontend read them
    assert ns["worker_types"]["decode"]["needs"] == [["prefill"]], ns
    assert f"tiny-{kind}" not in seen["alone_models"]
    # and every request gets 503: NO_COMPLETE's claim
    assert seen["alone_statuses"] == [503] * 6
    assert "every request gets 503" in NO_COMPLETE


@pytest.mark.parametrize("kind", KINDS)
def test_an_incomplete_generation_beside_a_complete_one_gets_no_request(
        measured: dict[str, Any], kind: str) -> None:
    seen = measured[kind]
    r = seen["beside_ready"]
    assert r["ready"] is True
    assert _namespace(r, "complete")["ready"] is True
    assert _namespace(r, "prefill")["missing_worker_types"] == ["decode"]
    assert _namespace(r, "prefill")["worker_types"]["prefill"]["needs"] == [["decode"]]
    assert _namespace(r, "alone")["missing_worker_types"] == ["prefill"]
    served = seen["served"]
    # every request served, all by the complete generation: NEEDS_ROUTING's claim
    assert seen["beside_ok"] == REQUESTS, seen
    assert served["alone decode"] == 0 and served["lone prefill"] == 0, served
    assert served["complete decode"] == REQUESTS, served
    assert "serve nothing" in NEEDS_ROUTING
