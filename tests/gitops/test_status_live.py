"""`dgdgen status --live`: the health Argo CD gives each generation's DGD, from the DGDs as the
cluster returns them — the shipped health check (argo/dgd-health.lua) run in a real Lua 5.1 on
them, so the Ready reasons the release defines (`updating`, `insufficient_capacity` and its
bounded wait) reach the command line as they reach the sync. Every status sample of the Lua
tests reads the same through `status`; a real repository shows a waiting, a degraded and a
missing candidate; a bad live file is refused with exit 2."""

from __future__ import annotations

import copy
import datetime
import json
import re
from pathlib import Path
from typing import Any

import pytest
from gitops_support import Workspace, cli
from test_health_lua import SAMPLES, _obj

from dgdgen import yamlio
from dgdgen.gitops import live

pytest.importorskip("lupa.lua51")

CAPACITY_WAIT = 600  # argo/dgd-health.lua


def _expected(sample: dict[str, Any]) -> tuple[str, str]:
    """What Argo CD says of a sample now, with the open libraries, as a pattern: a timed wait
    is read against the real clock (every sample's lastTransitionTime and roll start are months
    ago: past the wait), so the seconds a message counts are today's, not the sample's."""
    timed = [c for c in sample.get("openlibs", []) if c["after"] >= CAPACITY_WAIT]
    if timed:
        text = re.escape(timed[-1]["message"].split(" (for ")[0])
        return timed[-1]["expect"], re.sub(r"for\\ \d+\\ s", r"for\\ \\d+\\ s", text)
    return sample["expect"], re.escape(sample["message"])


@pytest.mark.parametrize("sample", SAMPLES, ids=[s["name"] for s in SAMPLES])
def test_status_reads_every_sample_as_argocd_does(sample: dict[str, Any]) -> None:
    status, message = live.health(_obj(sample))
    expect, text = _expected(sample)
    assert status == expect, message
    assert re.search(text, message), message


def _rendered_dgds(into: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(into.rglob("*.yaml")):
        for doc in yamlio.load_file(str(path)):
            if isinstance(doc.data, dict) and doc.data.get("kind") == "DynamoGraphDeployment":
                out[doc.data["metadata"]["name"]] = doc.data
    return out


def _stamp(seconds_ago: int) -> str:
    t = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds_ago)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _ready(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the operator reports it once every component is ready."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["generation"] = 1
    services = obj["spec"]["services"]
    obj["status"] = {
        "state": "successful", "observedGeneration": 1,
        "conditions": [{"type": "Ready", "status": "True", "reason": "all_resources_are_ready",
                        "message": "All resources are ready",
                        "lastTransitionTime": _stamp(3600)}],
        "services": {n: {"replicas": s.get("replicas", 1), "updatedReplicas": s.get("replicas", 1),
                         "readyReplicas": s.get("replicas", 1),
                         "availableReplicas": s.get("replicas", 1)}
                     for n, s in services.items()},
    }
    return obj


def _waiting(obj: dict[str, Any], seconds_ago: int) -> dict[str, Any]:
    """The object with too few of its pods scheduled (Grove's insufficient_capacity)."""
    obj = _ready(obj)
    obj["status"]["state"] = "pending"
    obj["status"]["conditions"] = [{
        "type": "Ready", "status": "False", "reason": "insufficient_capacity",
        "message": "Component VllmDecodeWorker: 0/1 replicas scheduled (Unschedulable: 0/4 nodes "
                   "have nvidia.com/gpu)",
        "lastTransitionTime": _stamp(seconds_ago)}]
    return obj


def _status(ws: Workspace, live_file: Path, *extra: str) -> tuple[int, str, str]:
    r = cli("status", str(ws.spec), "--into", str(ws.into), "--live", str(live_file), *extra)
    return r.code, r.out, r.err


def test_live_status_tells_waiting_from_degraded_and_missing(ws: Workspace, tmp_path: Path) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into), "--commit").code == 0
    assert cli("promote", str(ws.spec), "--into", str(ws.into)).code == 0
    dgds = _rendered_dgds(ws.into)
    stable_name, cand_name = "vllm-v1-disagg-router", "bs32-vllm-v1-disagg-router"
    assert set(dgds) == {stable_name, cand_name}

    # kubectl's List, the candidate waiting for GPUs for a minute
    f = tmp_path / "live.yaml"
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        _ready(dgds[stable_name]), _waiting(dgds[cand_name], 60)]}))
    code, out, _ = _status(ws, f)
    assert code == 0
    assert f"live stable     {stable_name}: Healthy: All resources are ready" in out
    assert (f"live candidate  {cand_name}: Progressing: insufficient_capacity: Component "
            "VllmDecodeWorker: 0/1 replicas scheduled") in out
    assert "(waiting for capacity, 6" in out  # 60-61 s of 600

    # the same, waiting for more than the bound: Degraded, with the operator's reason
    f.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        _ready(dgds[stable_name]), _waiting(dgds[cand_name], 2 * CAPACITY_WAIT)]}))
    code, out, _ = _status(ws, f, "--format", "json")
    assert code == 0
    health = {h["generation"]: h for h in json.loads(out)["live"]}
    assert health["stable"]["health"] == "Healthy"
    assert health["candidate"]["health"] == "Degraded"
    assert health["candidate"]["message"].startswith(
        "insufficient_capacity: Component VllmDecodeWorker: 0/1 replicas scheduled")
    assert "more than 600 s" in health["candidate"]["message"]

    # a stream of objects (not a List) without the candidate: it is Missing
    f.write_text(yamlio_dump([_ready(dgds[stable_name])]))
    code, out, _ = _status(ws, f)
    assert code == 0
    assert f"live candidate  {cand_name}: Missing: not in the live file" in out


def yamlio_dump(objs: list[dict[str, Any]]) -> str:
    return "".join("---\n" + json.dumps(o) + "\n" for o in objs)


@pytest.mark.parametrize(("text", "error"), [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no DynamoGraphDeployment in it"),
    ("kind: [unclosed\n", "live.yaml:"),
    ("", "no DynamoGraphDeployment in it"),
])
def test_a_bad_live_file_is_refused(ws: Workspace, tmp_path: Path, text: str, error: str) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into), "--commit").code == 0
    f = tmp_path / "live.yaml"
    f.write_text(text)
    code, out, err = _status(ws, f)
    assert code == 2 and out == ""
    assert error in err and "Traceback" not in err


def test_a_live_file_that_is_not_a_file_is_refused(ws: Workspace, tmp_path: Path) -> None:
    assert cli("render", str(ws.spec), "--into", str(ws.into), "--commit").code == 0
    code, _, err = _status(ws, tmp_path)
    assert code == 2 and "is a directory" in err
