"""Drain between shift and shrink: the rendered hook Job sits in its own wave between the weights
moving and the leaving generation shrinking, points at that generation's frontend Service, is
bounded by the request timeout; its command, run for real against a loopback /metrics endpoint,
waits until nothing is in flight."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gitops_support import EXAMPLE
from http_support import Handler, serving

from dgdgen import crd, yamlio
from dgdgen.gitops.drain import drain, inflight
from dgdgen.pipeline.files import state_files
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import waves

REPO = Path(__file__).resolve().parents[2]
WAVE = "argocd.argoproj.io/sync-wave"

# the frontend's exposition as Dynamo 1.6.1 writes it (label `model` only: ai-dynamo 1.6.1
# prometheus_names.py; docs/analysis.md)
EXPOSITION = """# HELP dynamo_frontend_inflight_requests Number of inflight requests
# TYPE dynamo_frontend_inflight_requests gauge
dynamo_frontend_inflight_requests{model="Qwen/Qwen3-0.6B"} {a}
dynamo_frontend_inflight_requests{model="other"} {b}
# HELP dynamo_frontend_inflight_requests_total not the gauge
dynamo_frontend_inflight_requests_total{model="x"} 99
dynamo_frontend_queued_requests{model="Qwen/Qwen3-0.6B"} 5
"""


def _expo(a: int, b: int) -> str:
    return EXPOSITION.replace("{a}", str(a)).replace("{b}", str(b))


def _docs(files: dict[str, str]) -> list[dict[str, Any]]:
    return [d.data for name, text in sorted(files.items()) if name.endswith(".yaml")
            for d in yamlio.load_documents(text, name)]


def test_inflight_sums_the_gauge_only() -> None:
    assert inflight(_expo(3, 2)) == 5
    assert inflight(_expo(0, 0)) == 0
    assert inflight("dynamo_frontend_queued_requests 4\n") is None


def test_drain_wave_sits_between_shift_and_shrink() -> None:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    assert int(waves.SHIFT) < int(waves.DRAIN) < int(waves.SHRINK)
    seen = 0
    for i in range(1, len(p.plan.steps)):
        state, before = p.plan.steps[i], p.plan.steps[i - 1]
        docs = _docs(state_files(p, state, before))
        jobs = [d for d in docs if d["kind"] == "Job"]
        emptied = {g.revision for g, b in ((state.stable, before.stable),
                                           (state.candidate, before.candidate))
                   if g.weight == 0 < b.weight}
        shrinking = [d for d in docs if d["kind"] == "DynamoGraphDeployment"
                     and d["metadata"]["annotations"][WAVE] == waves.SHRINK
                     and d["metadata"]["annotations"].get("dgdgen.dev/revision",
                                                          p.plan.stable_revision) in emptied]
        # a drain exactly when a generation whose weight dropped to 0 shrinks (one still
        # serving part of the traffic never reaches 0 in flight at its frontend)
        assert bool(jobs) == bool(shrinking), state.label
        for job in jobs:
            seen += 1
            anns = job["metadata"]["annotations"]
            assert anns["argocd.argoproj.io/hook"] == "Sync" and anns[WAVE] == waves.DRAIN
            routes = [d for d in docs if d["metadata"]["annotations"].get(WAVE) == waves.SHIFT]
            assert routes, "the weights move in the same commit, one wave earlier"
            cmd = job["spec"]["template"]["spec"]["containers"][0]["command"]
            url = cmd[cmd.index("--url") + 1]
            services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
            host = url.split("//")[1].split(".")[0]
            assert host in services  # the leaving generation's own frontend Service
            gen = job["metadata"]["labels"]["dgdgen.dev/generation"]
            svc = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == host)
            assert svc["metadata"]["labels"]["dgdgen.dev/generation"] == gen == p.plan.stable_revision
            # bounded by the route's request timeout (the example: 30m)
            assert cmd[cmd.index("--timeout") + 1] == "1800"
            if crd.known("batch/v1", "Job"):
                assert crd.validate(job) == []
    assert seen >= 1
    cleanup = _docs(state_files(p, p.plan.cleanup, p.plan.steps[-1]))
    assert [d["kind"] for d in cleanup].count("Job") == 1  # the stable goes: it drains first
    rollback = _docs(state_files(p, p.plan.rollback, None))
    assert "Job" not in [d["kind"] for d in rollback]  # the `-o` render: no transition
    # a rollback from a step drains the candidate it removes before the prune
    back = _docs(state_files(p, p.plan.rollback, p.plan.steps[1]))
    (job,) = [d for d in back if d["kind"] == "Job"]
    assert job["metadata"]["labels"]["dgdgen.dev/generation"] == p.plan.candidate_revision


def test_no_drain_with_a_shared_frontend() -> None:
    p = prepare(str(REPO / "examples" / "sglang-disagg-v1beta1-partition" / "rollout.yaml"))
    for state in p.plan.all_states():
        assert "Job" not in [d["kind"] for d in _docs(state_files(p, state))], state.label


@contextmanager
def _frontend(series: list[int]) -> Iterator[tuple[str, list[int]]]:
    """A loopback /metrics endpoint whose in-flight gauge follows ``series`` (last value
    repeats); yields (url, served values)."""
    served: list[int] = []

    class H(Handler):
        def do_GET(self) -> None:
            n = series.pop(0) if len(series) > 1 else series[0]
            served.append(n)
            self.reply(_expo(n, 0).encode(), content_type="text/plain; version=0.0.4")

    with serving(H) as url:
        yield f"{url}/metrics", served


def _job_command(tmp_path: Path) -> list[str]:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    last = len(p.plan.steps) - 1  # the step that empties the stable
    docs = _docs(state_files(p, p.plan.steps[last], p.plan.steps[last - 1]))
    job = next(d for d in docs if d["kind"] == "Job")
    cmd: list[str] = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert cmd[:3] == ["python3", "-m", "dgdgen.gitops.drain"]
    return [sys.executable, *cmd[1:]]


def _with(cmd: list[str], *, route: bool = False, l4: bool = False, **values: str) -> list[str]:
    """The command with ``values`` replaced; without its ``--route`` wait unless ``route`` (the
    tests of the route wait are below), and polling through the Service unless ``l4`` (the
    example's GAMMA parent is an L4 switch for callers outside the mesh: tests of the per-pod
    drain are in test_drain_l4.py)."""
    out = list(cmd)
    for k, v in values.items():
        out[out.index(f"--{k}") + 1] = v
    if not route:
        i = out.index("--route")
        del out[i:i + 2]
    if not l4:
        out.remove("--l4-switch")
    return out + ["--interval", "0.05"]


def test_the_rendered_command_waits_until_nothing_is_in_flight(tmp_path: Path) -> None:
    cmd = _job_command(tmp_path)
    with _frontend([3, 2, 0, 1, 0, 0, 0, 0]) as (url, served):
        started = time.monotonic()
        r = subprocess.run(_with(cmd, url=url), capture_output=True, text=True, timeout=120,
                           check=False)
    assert r.returncode == 0, r.stderr
    assert "drained (4 polls in a row at 0)" in r.stdout
    # a 0 followed by a busy reading does not count: four zeros in a row, after the last 1
    assert served[-5:] == [1, 0, 0, 0, 0]
    assert time.monotonic() - started < 60


def test_the_drain_is_bounded_by_the_timeout(tmp_path: Path) -> None:
    cmd = _job_command(tmp_path)
    with _frontend([2]) as (url, _served):
        r = subprocess.run(_with(cmd, url=url, timeout="0.5"), capture_output=True, text=True,
                           timeout=120, check=False)
    assert r.returncode == 0
    assert "still 2 in flight after 0.5s (the request timeout); continuing" in r.stdout


def _no_cluster_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}


def test_an_unreachable_frontend_is_unknown_not_zero(tmp_path: Path) -> None:
    """Nothing listening (the issue's `--url http://127.0.0.1:9/metrics`) and no Kubernetes API
    to ask: the drain is unknown, never "drained"; it waits for the whole timeout."""
    with _frontend([0]) as (url, _served):
        dead = url  # the server stops below: nothing listens on this port any more
    cmd = _with(_job_command(tmp_path), url=dead, timeout="1.5")
    cmd += ["--credentials", str(tmp_path / "none")]
    started = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False,
                       env=_no_cluster_env())
    took = time.monotonic() - started
    assert r.returncode == 0, r.stderr
    assert "drained" not in r.stdout, r.stdout
    assert "no answer (in flight unknown)" in r.stdout
    assert "in flight still unknown after 1.5s (the request timeout); continuing" in r.stdout
    assert took >= 1.5


def test_a_reading_lost_between_zeros_breaks_the_run() -> None:
    """0, no answer, 0, 0, 0: the unknown reading in between does not count as a zero."""
    readings: list[float | None] = [0, None, 0, 0, 0, 0]
    log: list[str] = []
    t = [0.0]
    done = drain("u", timeout=100, zeros=4, interval=1, log=log.append,
                 probe=lambda _u, _t: readings.pop(0), clock=lambda: t[0],
                 sleep=lambda s: t.__setitem__(0, t[0] + s))
    assert done and readings == [] and t[0] == 5.0  # six polls: the last four are the run


@contextmanager
def _api(slices: list[dict[str, Any]], routes: list[dict[str, Any]] | None = None
         ) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """The Kubernetes API's EndpointSlice list and HTTPRoute get endpoints. A stand-in: no
    Kubernetes API server runs on this machine; the answers have the discovery.k8s.io/v1
    EndpointSliceList and gateway.networking.k8s.io/v1 HTTPRoute shapes (``routes``: one per
    read, the last repeating). Yields (URL, [(path?query, Authorization)])."""
    seen: list[tuple[str, str]] = []

    class H(Handler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization", "")))
            if "/httproutes/" in self.path and routes:
                self.reply_json(routes.pop(0) if len(routes) > 1 else routes[0])
            else:
                self.reply_json({"apiVersion": "discovery.k8s.io/v1",
                                 "kind": "EndpointSliceList", "metadata": {}, "items": slices})

    with serving(H) as url:
        yield url, seen


def _slice(service: str, *serving: bool) -> dict[str, Any]:
    obj = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": f"{service}-abcde", "namespace": "inference",
                     "labels": {"kubernetes.io/service-name": service}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8000, "protocol": "TCP"}],
        "endpoints": [{"addresses": [f"10.0.0.{i + 1}"],
                       "conditions": {"ready": s, "serving": s, "terminating": not s}}
                      for i, s in enumerate(serving)],
    }
    return obj


def _api_run(tmp_path: Path, slices: list[dict[str, Any]], timeout: str
             ) -> tuple[subprocess.CompletedProcess[str], float, list[tuple[str, str]]]:
    creds = tmp_path / "sa"
    creds.mkdir(exist_ok=True)
    (creds / "token").write_text("tok-123\n")
    cmd = _job_command(tmp_path)
    service = cmd[cmd.index("--service") + 1]
    with _frontend([0]) as (url, _served):
        dead = url
    with _api([_slice(service, *s) for s in slices]) as (api, seen):
        started = time.monotonic()
        r = subprocess.run(_with(cmd, url=dead, timeout=timeout)
                           + ["--api-server", api, "--credentials", str(creds)],
                           capture_output=True, text=True, timeout=120, check=False,
                           env=_no_cluster_env())
        took = time.monotonic() - started
    return r, took, seen


def test_a_service_without_serving_endpoints_is_drained(tmp_path: Path) -> None:
    # every frontend pod gone, or only terminating ones that no longer serve
    for slices in ([], [()], [(False,)]):
        r, took, seen = _api_run(tmp_path, slices, "60")
        assert r.returncode == 0, r.stderr
        assert "its Service has no serving endpoint: drained" in r.stdout, (slices, r.stdout)
        assert took < 30
        path, auth = seen[0]
        cmd = _job_command(tmp_path)
        service, ns = cmd[cmd.index("--service") + 1], cmd[cmd.index("--namespace") + 1]
        assert path == (f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?"
                        f"labelSelector=kubernetes.io%2Fservice-name%3D{service}")
        assert auth == "Bearer tok-123"


def test_a_service_with_a_serving_endpoint_is_not_drained_by_no_answer(tmp_path: Path) -> None:
    r, took, _seen = _api_run(tmp_path, [(False, True)], "1.5")
    assert "drained" not in r.stdout, r.stdout
    assert "no answer (in flight unknown; 1 serving endpoint(s))" in r.stdout
    assert took >= 1.5


def test_the_drain_job_may_read_endpointslices_and_nothing_else(tmp_path: Path) -> None:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    last = len(p.plan.steps) - 1
    docs = _docs(state_files(p, p.plan.steps[last], p.plan.steps[last - 1]))
    job = next(d for d in docs if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    account = pod["serviceAccountName"]
    assert pod["automountServiceAccountToken"] is True
    by_kind = {d["kind"]: d for d in docs
               if d["kind"] in ("ServiceAccount", "Role", "RoleBinding")
               and d["metadata"]["name"] == account}
    assert set(by_kind) == {"ServiceAccount", "Role", "RoleBinding"}
    role, binding = by_kind["Role"], by_kind["RoleBinding"]
    cmd = job["spec"]["template"]["spec"]["containers"][0]["command"]
    route = cmd[cmd.index("--route") + 1]
    assert route in [d["metadata"]["name"] for d in docs if d["kind"] == "HTTPRoute"]
    assert role["rules"] == [
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
         "verbs": ["get", "list"]},
        {"apiGroups": ["gateway.networking.k8s.io"], "resources": ["httproutes"],
         "resourceNames": [route], "verbs": ["get"]}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                  "name": role["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account,
                                    "namespace": job["metadata"]["namespace"]}]
    for obj in by_kind.values():
        anns = obj["metadata"]["annotations"]
        # created in the Job's own wave, before it (Argo CD orders a wave's hooks by kind)
        assert anns["argocd.argoproj.io/hook"] == "Sync" and anns[WAVE] == waves.DRAIN
        if crd.known(obj["apiVersion"], obj["kind"]):
            assert crd.validate(obj) == [], obj["kind"]
    # no drain, no account
    first = _docs(state_files(p, p.plan.steps[1], p.plan.steps[0]))
    if "Job" not in [d["kind"] for d in first]:
        assert "RoleBinding" not in [d["kind"] for d in first]


def test_shared_frontend_skip_is_the_only_mode_skip() -> None:
    """Every example with a frontend per generation renders a drain somewhere in its rollout."""
    for ex in sorted((REPO / "examples").iterdir()):
        if not (ex / "rollout.yaml").exists():
            continue
        p = prepare(str(ex / "rollout.yaml"))
        kinds = [d["kind"] for s in p.plan.all_states() for d in _docs(state_files(p, s))]
        if p.mode in ("separate-dgd", "worker-group"):
            assert "Job" in kinds, ex.name
        else:
            assert "Job" not in kinds, ex.name



def _route_doc(tmp_path: Path, generation: int, observed: int, accepted: str = "True"
               ) -> dict[str, Any]:
    """The rendered HTTPRoute of the draining step, as the API returns it with a status."""
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    last = len(p.plan.steps) - 1
    docs = _docs(state_files(p, p.plan.steps[last], p.plan.steps[last - 1]))
    route = copy.deepcopy(next(d for d in docs if d["kind"] == "HTTPRoute"))
    route["status"] = {"parents": [{
        "parentRef": ref, "controllerName": "example.com/gateway",
        "conditions": [{"type": t, "status": accepted if t == "Accepted" else "True",
                        "reason": t if accepted == "True" else "NotAllowedByListeners",
                        "message": "", "observedGeneration": observed,
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}
                       for t in ("Accepted", "ResolvedRefs")],
    } for ref in route["spec"]["parentRefs"]]}
    assert crd.validate(route) == []  # spec and status as the HTTPRoute CRD defines them
    route["metadata"]["generation"] = generation
    return route


def _route_run(tmp_path: Path, routes: list[dict[str, Any]], timeout: str
               ) -> tuple[subprocess.CompletedProcess[str], list[int], list[str]]:
    creds = tmp_path / "sa"
    creds.mkdir(exist_ok=True)
    (creds / "token").write_text("tok\n")
    cmd = _job_command(tmp_path)
    with _frontend([0]) as (url, served), _api([], routes) as (api, seen):
        r = subprocess.run(_with(cmd, route=True, url=url, timeout=timeout)
                           + ["--api-server", api, "--credentials", str(creds)],
                           capture_output=True, text=True, timeout=120, check=False,
                           env=_no_cluster_env())
    return r, served, [path for path, _auth in seen]


def test_the_drain_waits_for_the_route_to_accept_the_new_weights(tmp_path: Path) -> None:
    stale = _route_doc(tmp_path, generation=3, observed=2)  # still the old weights' status
    fresh = _route_doc(tmp_path, generation=3, observed=3)
    r, served, paths = _route_run(tmp_path, [stale, stale, stale, fresh], "60")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "route: waiting (parent " in out and "is for generation 2, the route is at 3" in out
    assert out.index("route: Accepted and ResolvedRefs") < out.index("request(s) in flight")
    assert "drained (4 polls in a row at 0)" in out
    route_reads = [p for p in paths if "/httproutes/" in p]
    assert len(route_reads) == 4  # the frontend was polled only after the fourth read
    assert len(served) == 4
    ns = _job_command(tmp_path)[_job_command(tmp_path).index("--namespace") + 1]
    assert route_reads[0] == (f"/apis/gateway.networking.k8s.io/v1/namespaces/{ns}/httproutes/"
                              f"{fresh['metadata']['name']}")


def test_a_route_that_never_accepts_fails_the_hook(tmp_path: Path) -> None:
    refused = _route_doc(tmp_path, generation=3, observed=3, accepted="False")
    r, served, _paths = _route_run(tmp_path, [refused], "1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Accepted False (NotAllowedByListeners)" in r.stdout
    assert "not draining a generation the route may still send requests to" in r.stdout
    assert served == []  # no in-flight reading means anything while the route is not in force
