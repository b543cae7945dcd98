"""The rendered HAProxy health check sees a generation without workers (issue: a Dynamo
frontend's /health is 200 with zero workers).

The rendered haproxy.cfg of the sglang example's step 2 (both generations weighted) runs for real
in front of two real Dynamo frontends: the stable one with its workers, the candidate's with none
(its workers gone — crashed, evicted, or a rollback that shrank them first). The proxy must take
the workerless generation out of rotation, so every request lands on the stable and succeeds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from rehearse_support import REPO, require_runtime, short_workdir

from dgdgen import yamlio
from dgdgen.check.facts import dgd_facts
from dgdgen.model import dgd as dgdmod

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

STEP = REPO / "examples" / "sglang-disagg-transfer-backend" / "rendered" / "step-02"


def _scenario(cfg: str, stable: dict[str, Any]) -> dict[str, Any]:
    from dgdgen.rehearse.proxy import Proxy
    from dgdgen.runtime import client
    from dgdgen.runtime.mocker import mocker_invocation
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo
    from dgdgen.traffic.runtime import RuntimeApi

    with short_workdir("dgdgen-hc-") as work:
        model_dir = make_model_dir(work / "model")
        facts = dgd_facts(dgdmod.parse(stable))
        out: dict[str, Any] = {}
        with LocalDynamo(work) as rt:
            ns_old = dgdmod.dynamo_namespace("inference", stable["metadata"]["name"])
            fe_old = rt.frontend(ns_old)
            fe_new = rt.frontend("inference-mooncake-sglang-disagg")  # no workers
            workers = [rt.mocker(ns_old, mocker_invocation(c, model_dir=model_dir).args)
                       for c in facts.workers()]
            for fe in (fe_old, fe_new):
                rt.wait_frontend_up(fe)
            model = rt.wait_model_ready(fe_old, "Qwen/Qwen3-0.6B", workers=len(workers))["model"]
            proxy = Proxy(work)
            ports = {"sglang-disagg-fe": [fe_old.port], "mooncake-sglang-disagg-fe": [fe_new.port]}
            try:
                proxy.apply(proxy.adapt(cfg, lambda service: ports.get(service, [])))
                # `inter 2s fall 2`: two failed checks take the workerless generation's server down
                # (after 4-6 s; polled, so that a busy machine's slower checks are waited for)
                backend = next(line.split()[1] for line in cfg.splitlines()
                               if line.strip().startswith("backend "))
                api = RuntimeApi(proxy.admin_socket)
                deadline = time.monotonic() + 60
                while api.servers(backend)["mooncake"].up and time.monotonic() < deadline:
                    time.sleep(0.2)
                out["mooncake_down"] = not api.servers(backend)["mooncake"].up
                results = [client.request(proxy.port, model, stream=True, max_tokens=8)
                           for _ in range(20)]
            finally:
                proxy.stop()
            out["ok"] = sum(r.ok for r in results)
            out["served_by"] = sorted({r.served_by for r in results})
            out["statuses"] = sorted({r.status for r in results})
        return out


def test_a_generation_without_workers_leaves_rotation() -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    [path] = STEP.glob("configmap-qwen-sglang-haproxy-*.yaml")  # named after its content
    cm = yamlio.load_file(str(path))[0].data
    stable = yamlio.load_file(str(STEP / "dynamographdeployment-sglang-disagg.yaml"))[0].data
    assert isinstance(cm, dict) and isinstance(stable, dict)
    seen = run_isolated(_scenario, cm["data"]["haproxy.cfg"], stable, timeout=180)
    assert seen["mooncake_down"], seen
    assert seen["served_by"] == ["nixl"], seen
    assert seen["ok"] == 20, seen
