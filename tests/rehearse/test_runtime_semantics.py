"""The checker's central claims, shown against the real Dynamo 1.6.1 frontend and mocker.

* An in-place checksum change (the block-size example's candidate rolled in place), both ways an
  operator can place it:
  - in ONE Dynamo namespace (Grove / LWS before 1.5, a pinned --endpoint, `--workers-run-by
    unmanaged`): the frontend rejects the new workers ("Rejected incompatible workers"), they
    serve 0 requests while their own health says ready — and `dgdgen diff` flags the change as
    DGD201 with exactly that consequence;
  - in the operator's hash-suffixed worker namespaces behind a prefix frontend (the default,
    Deployment-backed workers): nothing is rejected, old and new serve side by side — and DGD201's
    default text says so.
* Prefix selection: a frontend selecting namespaces by prefix (``DYN_NAMESPACE_PREFIX``) serves
  the workers of another DGD whose Dynamo namespace starts with its own — and `dgdgen check` flags
  the manifests that cause it (DGD101).

The processes run in a private network namespace (dgdgen.runtime.netns.run_isolated).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rehearse_support import REPO, require_runtime, short_workdir

from dgdgen import yamlio
from dgdgen.check.facts import dgd_facts
from dgdgen.model import dgd as dgdmod

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"
CANDIDATE = "bs32-vllm-v1-disagg-router"


def _doc(path: Path) -> dict[str, Any]:
    data = yamlio.load_file(str(path))[0].data
    assert isinstance(data, dict)
    return data


def _candidate_doc() -> dict[str, Any]:
    return _doc(EXAMPLE / "rendered" / "step-01" / f"dynamographdeployment-{CANDIDATE}.yaml")


def _workers(doc: dict[str, Any], model_dir: Path) -> list[tuple[str, tuple[str, ...]]]:
    from dgdgen.runtime.mocker import mocker_invocation

    facts = dgd_facts(dgdmod.parse(doc))
    return [(c.name, mocker_invocation(c, model_dir=model_dir).args) for c in facts.workers()]


def _in_place(stable: dict[str, Any], candidate: dict[str, Any],
              hashed: bool = False) -> dict[str, Any]:
    with short_workdir("dgdgen-inplace-") as work:
        from dgdgen.runtime import client, metrics
        from dgdgen.runtime.model import make_model_dir
        from dgdgen.runtime.procs import LocalDynamo
        from dgdgen.runtime.routing import count_ready_workers, prefill_routers_active

        model_dir = make_model_dir(work / "model")
        ns = dgdmod.dynamo_namespace("inference", stable["metadata"]["name"])
        out: dict[str, Any] = {}
        # The operator's layout: the frontend selects by prefix, each worker generation carries its
        # worker hash as DYN_NAMESPACE_WORKER_SUFFIX.
        old_env = {"DYN_NAMESPACE_WORKER_SUFFIX": "0ld0ld00"} if hashed else {}
        new_env = {"DYN_NAMESPACE_WORKER_SUFFIX": "4e704e70"} if hashed else {}
        with LocalDynamo(work) as rt:
            fe = rt.frontend(prefix=ns) if hashed else rt.frontend(ns)
            old = [rt.mocker(ns, args, env=old_env, name=f"old-{n}")
                   for n, args in _workers(stable, model_dir)]
            rt.wait_frontend_up(fe)
            for w in old:
                rt.wait_worker_ready(w)
            model = rt.wait_model_ready(fe, "Qwen/Qwen3-0.6B", workers=len(old))["model"]
            new = [rt.mocker(ns, args, env=new_env, name=f"new-{n}")
                   for n, args in _workers(candidate, model_dir)]
            out["new_health"] = [rt.wait_worker_ready(w)["status"] for w in new]
            # Hashed: wait until the frontend can route to both namespaces. It lists a namespace as
            # soon as one of its workers registers, and its /ready answer counts both worker types
            # a few milliseconds before it activates the namespace's prefill router ("Prefill
            # router target activated ... namespace=…" in its log): a disaggregated request it
            # routes there in between fails with 503 "no backend worker available" (seen 1 run in
            # about 30 on a loaded machine; the operator's roll meets the same window,
            # docs/rehearse.md). Two listed namespaces are not yet side-by-side serving.
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                if "Rejected incompatible workers" in fe.log_text():
                    break
                ready = rt.model_ready(fe, model) or {}
                if (hashed and len(ready.get("namespaces") or {}) == 2
                        and count_ready_workers(ready) >= len(old) + len(new)
                        and prefill_routers_active(fe, ready["namespaces"])):
                    break
                time.sleep(0.2)
            out["workers_counted"] = count_ready_workers(rt.model_ready(fe, model) or {})
            out["workers_started"] = len(old) + len(new)
            out["namespaces"] = sorted((rt.model_ready(fe, model) or {}).get("namespaces") or {})
            out["rejected_log"] = [ln for ln in fe.log_text().splitlines()
                                   if "Rejected incompatible workers" in ln]
            results = [client.request(fe.port, model, stream=i % 2 == 0, max_tokens=8)
                       for i in range(20)]
            out["ok"] = sum(r.ok for r in results)
            out["old_served"] = [metrics.worker_requests(w) for w in old]
            out["new_served"] = [metrics.worker_requests(w) for w in new]
        return out


def _dgd201_messages(tmp_path: Path, stable: dict[str, Any], candidate: dict[str, Any],
                     *extra: str) -> list[str]:
    """`dgdgen diff` of the same change applied in place (the candidate under the stable's
    name): DGD201's whole texts (the JSON details)."""
    in_place = copy.deepcopy(candidate)
    in_place["metadata"] = copy.deepcopy(stable["metadata"])
    (tmp_path / "old.yaml").write_text(yamlio.dump(stable))
    (tmp_path / "new.yaml").write_text(yamlio.dump(in_place))
    r = subprocess.run([sys.executable, "-m", "dgdgen", "diff", str(tmp_path / "old.yaml"),
                        str(tmp_path / "new.yaml"), "--format", "json", *extra],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 1, r.stderr
    return [f["details"] for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD201"]


def test_in_place_checksum_change_in_one_namespace_is_rejected_and_flagged(
        tmp_path: Path) -> None:
    """One shared Dynamo namespace (releases / backings without the worker-hash suffix)."""
    require_runtime()
    from dgdgen.check.inplace import HASHED_MDC, SHARED_MDC
    from dgdgen.runtime.netns import run_isolated

    stable = _doc(EXAMPLE / "dgd.yaml")
    candidate = _candidate_doc()
    seen = run_isolated(_in_place, stable, candidate, timeout=240)
    assert seen["rejected_log"], "the frontend never rejected the candidate's workers"
    assert all(h == "ready" for h in seen["new_health"])  # a readiness probe would pass
    assert seen["ok"] == 20
    assert sum(seen["old_served"]) >= 20 and sum(seen["new_served"]) == 0, seen

    messages = _dgd201_messages(tmp_path, stable, candidate, "--workers-run-by", "unmanaged")
    assert messages and all(SHARED_MDC["1.6"] in m and HASHED_MDC not in m for m in messages)


def test_in_place_checksum_change_in_hashed_namespaces_is_served_side_by_side_and_flagged(
        tmp_path: Path) -> None:
    """The operator's managed rolling update (the default target): nothing is rejected, both
    configurations serve the one model — ungated — and DGD201 says so."""
    require_runtime()
    from dgdgen.check.inplace import HASHED_MDC, SHARED_MDC
    from dgdgen.runtime.netns import run_isolated

    stable = _doc(EXAMPLE / "dgd.yaml")
    candidate = _candidate_doc()
    seen = run_isolated(_in_place, stable, candidate, True, timeout=240)
    assert not seen["rejected_log"], seen["rejected_log"]
    assert len(seen["namespaces"]) == 2, seen  # {ns}-0ld0ld00 and {ns}-4e704e70
    # prefill and decode of each configuration
    assert seen["workers_counted"] == seen["workers_started"] == 4, seen
    assert seen["ok"] == 20, seen
    assert sum(seen["old_served"]) > 0 and sum(seen["new_served"]) > 0, seen

    messages = _dgd201_messages(tmp_path, stable, candidate)
    assert messages and all(HASHED_MDC in m for m in messages), messages
    assert not any(t in m for m in messages for t in SHARED_MDC.values())


def _prefix(stable: dict[str, Any], other: dict[str, Any], prefix: str) -> dict[str, Any]:
    with short_workdir("dgdgen-prefix-") as work:
        from dgdgen.runtime import client, metrics
        from dgdgen.runtime.model import make_model_dir
        from dgdgen.runtime.procs import LocalDynamo

        model_dir = make_model_dir(work / "model")
        out: dict[str, Any] = {}
        with LocalDynamo(work) as rt:
            fe = rt.frontend(prefix=prefix)
            groups = {}
            for doc in (stable, other):
                ns = dgdmod.dynamo_namespace("inference", doc["metadata"]["name"])
                groups[ns] = [rt.mocker(ns, a, name=f"{ns}-{n}") for n, a in _workers(doc, model_dir)]
            rt.wait_frontend_up(fe)
            for ws in groups.values():
                for w in ws:
                    rt.wait_worker_ready(w)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                ready = rt.model_ready(fe, "Qwen/Qwen3-0.6B") or {}
                if len(ready.get("namespaces") or {}) == 2:
                    break
                time.sleep(0.2)
            out["namespaces"] = sorted((rt.model_ready(fe, "Qwen/Qwen3-0.6B") or {})
                                       .get("namespaces", {}))
            # The frontend lists a namespace as soon as its workers register; on a loaded machine
            # one request in 30 once failed right after that. Requests go out until three in a row
            # succeed (at most 30 s), then the 30 that are counted.
            out["warmup_failures"] = []
            streak, deadline = 0, time.monotonic() + 30
            while streak < 3 and time.monotonic() < deadline:
                r = client.request(fe.port, "Qwen/Qwen3-0.6B", stream=True, max_tokens=8)
                streak = streak + 1 if r.ok else 0
                if not r.ok:
                    out["warmup_failures"].append(r.as_dict())
            results = [client.request(fe.port, "Qwen/Qwen3-0.6B", stream=True, max_tokens=8)
                       for _ in range(30)]
            out["ok"] = sum(r.ok for r in results)
            out["failures"] = [r.as_dict() for r in results if not r.ok]
            out["served"] = {ns: sum(metrics.worker_requests(w) for w in ws)
                             for ns, ws in groups.items()}
        return out


def test_prefix_selection_crosses_generations_and_is_flagged(tmp_path: Path) -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    # `qwen`'s frontend selects Dynamo namespaces by prefix, and a DGD `qwen-canary` (another
    # checksum: block size 32) sits in the same Kubernetes namespace.
    stable = _doc(EXAMPLE / "dgd.yaml")
    stable["metadata"] = {"name": "qwen", "namespace": "inference"}
    envs = stable["spec"]["services"]["Frontend"].setdefault("envs", [])
    envs.append({"name": "DYN_NAMESPACE_PREFIX", "value": "inference-qwen"})
    canary = _candidate_doc()
    canary["metadata"] = {"name": "qwen-canary", "namespace": "inference"}
    prefix = next(e["value"] for e in envs if e["name"] == "DYN_NAMESPACE_PREFIX")
    seen = run_isolated(_prefix, stable, canary, prefix, timeout=240)
    assert seen["namespaces"] == ["inference-qwen", "inference-qwen-canary"], seen
    assert seen["ok"] == 30, seen
    assert all(n > 0 for n in seen["served"].values()), seen  # one model split across both

    (tmp_path / "qwen.yaml").write_text(yamlio.dump(stable))
    (tmp_path / "qwen-canary.yaml").write_text(yamlio.dump(canary))
    r = subprocess.run([sys.executable, "-m", "dgdgen", "check", str(tmp_path / "qwen.yaml"),
                        str(tmp_path / "qwen-canary.yaml"), "--format", "json"],
                       capture_output=True, text=True, cwd=tmp_path, check=False)
    codes = {f["code"] for f in json.loads(r.stdout)["findings"]}
    assert "DGD101" in codes, (codes, r.stderr)
