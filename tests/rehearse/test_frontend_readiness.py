"""The readiness probe dgdgen renders on the candidate's frontends, asked of the real Dynamo 1.6.1
frontend: not ready (as the kubelet judges an HTTP probe: 200–399 passes) while no worker serves
the model, ready once one does, not ready again when the workers are gone — whereas the
operator's default ``/health`` passes throughout (the reason for the rendered probe)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from rehearse_support import REPO, require_runtime, short_workdir

from dgdgen.check.facts import dgd_facts
from dgdgen.model import dgd as dgdmod
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import dgds

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

EXAMPLE = REPO / "examples" / "vllm-disagg-image-bump" / "rollout.yaml"


def _passes(status: int) -> bool:
    return 200 <= status < 400  # the kubelet's HTTP probe success range


def _until(check: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = check()
        if out is not None:
            return out
        time.sleep(0.2)
    return None


def _scenario(candidate: dict[str, Any], path: str) -> dict[str, Any]:
    from dgdgen.runtime.mocker import mocker_invocation
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo, http_get

    with short_workdir("dgdgen-ready-") as work:
        model_dir = make_model_dir(work / "model")
        d = dgdmod.parse(candidate)
        ns = dgdmod.dynamo_namespace("inference", d.name)
        out: dict[str, Any] = {}
        with LocalDynamo(work) as rt:
            fe = rt.frontend(ns)
            rt.wait_frontend_up(fe)
            time.sleep(2)  # a discovery round: still no worker
            out["empty"] = (http_get(fe.port, path)[0], http_get(fe.port, "/health")[0])
            workers = [rt.mocker(ns, mocker_invocation(c, model_dir=model_dir).args)
                       for c in dgd_facts(d).workers()]
            out["served"] = _until(lambda: (s, http_get(fe.port, "/health")[0])
                                   if _passes(s := http_get(fe.port, path)[0]) else None)
            for w in workers:
                rt.stop(w)
            out["gone"] = _until(lambda: (s, http_get(fe.port, "/health")[0])
                                 if not _passes(s := http_get(fe.port, path)[0]) else None)
        return out


def test_rendered_probe_follows_the_model() -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    p = prepare(str(EXAMPLE))
    cand = dgds.candidate_dgd(p, p.plan.steps[1].candidate, p.candidate_name)
    (fe,) = list(cand.frontends())
    probe = cand.component_doc(fe.name)["readinessProbe"]
    path = probe["httpGet"]["path"]
    seen = run_isolated(_scenario, cand.doc, path, timeout=180)
    empty_probe, empty_health = seen["empty"]
    assert not _passes(empty_probe) and _passes(empty_health), seen
    assert seen["served"] is not None and seen["served"][0] == 200, seen
    assert seen["gone"] is not None and not _passes(seen["gone"][0]), seen
    assert _passes(seen["gone"][1]), seen  # /health still says ready without workers
