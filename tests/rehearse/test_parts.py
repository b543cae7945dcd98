"""The rehearsal's parts that need no runtime: the scaled spec, the PodMonitor → scrape job
translation, the HAProxy adaptation, and the doc's flag table."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from rehearse_support import REPO, experiment_spec, netns_refusal

from dgdgen import yamlio
from dgdgen.rehearse.prometheus import scrape_jobs
from dgdgen.rehearse.proxy import Proxy
from dgdgen.rehearse.scale import write_scaled_spec
from dgdgen.runtime.mocker import flag_table_markdown
from dgdgen.runtime.procs import Proc

EXAMPLE = REPO / "examples" / "sglang-disagg-transfer-backend"


def _load(path: Path) -> dict:
    data = yamlio.load_file(str(path))[0].data
    assert isinstance(data, dict)
    return data


def test_scaled_spec_scales_every_duration_and_still_validates(tmp_path: Path) -> None:
    data = _load(EXAMPLE / "rollout.yaml")
    scaled = write_scaled_spec(data, EXAMPLE / "rollout.yaml", tmp_path, time_scale=0.02,
                               request_rate=20, min_requests=30)
    out = _load(scaled.path)
    assert [s.get("pause") for s in out["spec"]["steps"]] == ["12s", "12s", "24s", None]
    assert out["spec"]["analysis"]["window"] == "6s"
    assert out["spec"]["analysis"]["minRequests"] == 30
    assert {c.field for c in scaled.changes} >= {"spec.steps[0].pause", "spec.analysis.window"}
    assert data["spec"]["steps"][0]["pause"] == "10m"  # the original is untouched
    r = subprocess.run([sys.executable, "-m", "dgdgen", "validate", str(scaled.path)],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr


def _proc(name: str, kind: str, port: int, labels: dict[str, str]) -> Proc:
    p = Proc(name=name, kind=kind, namespace="inference-x", popen=None,  # type: ignore[arg-type]
             log_path=Path("/dev/null"), port=port if kind == "frontend" else 0,
             system_port=port if kind == "worker" else 0)
    p.labels = labels
    return p


def test_scrape_jobs_follow_the_rendered_podmonitors() -> None:
    pm = _load(EXAMPLE / "rendered" / "step-01" / "podmonitor-qwen-sglang-mooncake.yaml")
    match = pm["spec"]["selector"]["matchLabels"]
    fe = _proc("fe", "frontend", 20001, dict(match))
    other = _proc("fe2", "frontend", 20002, {k: f"{v}-other" for k, v in match.items()})
    worker = _proc("w", "worker", 20003, dict(match))  # matches, but has no `http` port
    jobs, targets = scrape_jobs([pm], [("inference", fe), ("inference", other),
                                       ("inference", worker), ("elsewhere", fe)], time_scale=0.02)
    assert len(jobs) == 1
    job = jobs[0]
    assert job["relabel_configs"] == [
        {"action": "replace", "target_label": "dgdgen_rollout", "replacement": "qwen-sglang"},
        {"action": "replace", "target_label": "dgdgen_generation", "replacement": "mooncake"},
    ]
    assert job["scrape_interval"] == "1000ms"  # 15s × 0.02 = 0.3 s, raised to the 1 s floor
    group = targets[job["file_sd_configs"][0]["files"][0]]
    assert [g["targets"] for g in group] == [["127.0.0.1:20001"]]
    assert group[0]["labels"]["namespace"] == "inference"


def _haproxy_config_map(state: Path) -> dict:
    """The state's HAProxy ConfigMap: immutable, named after its content."""
    [path] = state.glob("configmap-qwen-sglang-haproxy-*.yaml")
    cm = _load(path)
    assert cm["immutable"] is True
    return cm


def test_haproxy_adaptation_changes_only_cluster_bound_lines(tmp_path: Path) -> None:
    cm = _haproxy_config_map(EXAMPLE / "rendered" / "step-01")
    rendered = cm["data"]["haproxy.cfg"]
    proxy = Proxy(tmp_path)
    ports = {"sglang-disagg-fe": [21000]}
    adapted = proxy.adapt(rendered, lambda service: ports.get(service, []))
    assert "server nixl 127.0.0.1:21000 weight 190" in adapted
    assert "server mooncake 127.0.0.1:9 weight 10" in adapted  # no frontend yet: DOWN
    old, new = rendered.splitlines(), adapted.splitlines()
    added = [ln for ln in new if ln not in old]
    assert any("X-Dgdgen-Generation" in ln for ln in added)
    for ln in added:
        assert ln.strip().split()[0] in ("bind", "server", "stats", "server-state-file", "peer",
                                         "http-response"), ln
    assert len(new) == len(old) + 1


def test_a_service_with_several_frontends_spreads_over_all(tmp_path: Path) -> None:
    # kube-proxy: the Service's own port, each connection to the next frontend replica; the
    # rendered server keeps its name and weight, and HAProxy accepts the whole config
    import subprocess

    from dgdgen.rehearse.proxy import haproxy_binary

    cm = _haproxy_config_map(EXAMPLE / "rendered" / "step-01")
    proxy = Proxy(tmp_path)
    ports = {"sglang-disagg-fe": [21001, 21000], "mooncake-sglang-disagg-fe": [21002]}
    adapted = proxy.adapt(cm["data"]["haproxy.cfg"], lambda service: ports.get(service, []))
    svc = proxy.service_port("sglang-disagg-fe")
    assert svc is not None and proxy.service_port("mooncake-sglang-disagg-fe") is None
    assert f"server nixl 127.0.0.1:{svc} weight 190" in adapted
    assert "server mooncake 127.0.0.1:21002 weight 10" in adapted
    listen = adapted.split("listen svc-sglang-disagg-fe\n", 1)[1].splitlines()
    assert listen == [f"    bind 127.0.0.1:{svc}", "    balance roundrobin",
                      "    server sglang-disagg-fe-0 127.0.0.1:21000",
                      "    server sglang-disagg-fe-1 127.0.0.1:21001"]
    assert "    mode tcp" in adapted.split("listen svc-", 1)[0].rsplit("defaults", 1)[1]
    # the port is the Service's for the whole run: a reload keeps every server's address
    ports["sglang-disagg-fe"] = [21000, 21001, 21003]
    again = proxy.adapt(cm["data"]["haproxy.cfg"], lambda service: ports.get(service, []))
    assert f"server nixl 127.0.0.1:{svc} weight 190" in again
    assert "server sglang-disagg-fe-2 127.0.0.1:21003" in again
    # a stand-in backend's Service spreads the same way
    stand_in = proxy.stand_in([("bs16", 90, [21000, 21001]), ("bs32", 10, [21002])])
    assert f"server bs16 127.0.0.1:{proxy.service_port('bs16')} weight 90" in stand_in
    assert "server bs32 127.0.0.1:21002 weight 10" in stand_in
    binary = haproxy_binary()
    if binary is None:
        pytest.skip("haproxy not installed")
    for text in (adapted, stand_in):
        (tmp_path / "haproxy" / "run").mkdir(parents=True, exist_ok=True)
        cfg = tmp_path / "check.cfg"
        cfg.write_text(text)
        r = subprocess.run([binary, "-c", "-f", str(cfg)], capture_output=True, text=True,
                           check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        # no warning but the one a first start always has (no saved server state yet)
        warnings = [ln for ln in (r.stdout + r.stderr).splitlines()
                    if "[WARNING]" in ln and "server state file" not in ln]
        assert not warnings, warnings


def test_docs_list_the_carried_and_dropped_flags() -> None:
    doc = (REPO / "docs" / "rehearse.md").read_text()
    assert flag_table_markdown() in doc


def test_the_load_keeps_threads_for_its_requests_in_flight_within_a_bound() -> None:
    # Little's law: the rate times how long a request may take (a healthy one ~0.67 s, a
    # slowed candidate's ~2.8 s); with 16 threads a 40 requests/s load sent 22 a second and the
    # examples' gates were Inconclusive (tests/rehearse/test_examples_on_defaults.py proves the
    # rate kept). A small rate keeps a few threads, a huge one stops at the bound.
    from dgdgen.rehearse.load import IN_FLIGHT_SECONDS, MAX_CONCURRENCY, Load

    assert Load(1, "m", rate=40, t0=0.0).concurrency == 40 * IN_FLIGHT_SECONDS
    assert Load(1, "m", rate=0.5, t0=0.0).concurrency == 4
    assert Load(1, "m", rate=1000, t0=0.0).concurrency == MAX_CONCURRENCY
    assert Load(1, "m", rate=40, t0=0.0, concurrency=2).concurrency == 2


def test_failed_requests_are_listed_with_their_state() -> None:
    from types import SimpleNamespace

    from dgdgen.rehearse.load import Record
    from dgdgen.rehearse.report import failures, summary_lines
    from dgdgen.runtime.client import Outcome

    def rec(start: float, status: int, *, truncated: bool = False, error: str = "",
            served: str = "bs16", entry: str = "route") -> Record:
        return Record(start, Outcome(status=status, stream=True, tokens=0, ttft=None,
                                     duration=0.1, truncated=truncated, error=error,
                                     served_by=served), entry)

    states = [SimpleNamespace(label="step-00", started=0.0, traffic_moved=1.0, ended=10.0),
              SimpleNamespace(label="step-01", started=10.0, traffic_moved=11.0, ended=20.0)]
    out = SimpleNamespace(options=SimpleNamespace(settle=2.0), states=states, records=[
        rec(0.5, 200), rec(5.0, 503, served=""), rec(11.5, 200, truncated=True),
        rec(15.0, 0, error="connection refused", served=""), rec(25.0, 502), rec(16.0, 200)],
        out_of_mesh=[rec(14.0, 503, entry="out-of-mesh"), rec(14.5, 200, entry="out-of-mesh")],
        previewed=[])
    listed = failures(out)  # type: ignore[arg-type]
    assert [(f["t"], f["state"], f["status"], f["truncated"]) for f in listed] == [
        (5.0, "step-00", 503, False), (11.5, "step-01 (traffic moving)", 200, True),
        (14.0, "step-01", 503, False),
        (15.0, "step-01", 0, False), (25.0, "after the last state", 502, False)]
    lines = summary_lines({"states": [], "failures": listed})
    assert lines[3] == "  failed at 15.0 s in step-01: status 0 (connection refused)"
    assert lines[2] == "  failed at 14.0 s in step-01 (outside the mesh): status 503, served by bs16"
    assert lines[1] == "  failed at 11.5 s in step-01 (traffic moving): truncated, served by bs16"


def test_summary_lines_read_as_text_not_python_dicts() -> None:
    """The rehearse summary names each generation with its share; no Python dict reaches it."""
    from dgdgen.rehearse import inplace_report
    from dgdgen.rehearse.report import summary_lines

    lines = summary_lines({"states": [{
        "state": "step-01", "planned": {"bs16": 75, "bs32": 25},
        "observed": {"bs16": 74.12, "bs32": 25.88}, "splitErrorPoints": 0.88, "requests": 40,
        "failed": 0, "truncated": 0, "gate": "slo", "verdict": "Successful"}], "failures": []})
    assert lines == [("  step-01   planned bs16 75 % / bs32 25 %, observed bs16 74.12 % / "
                      "bs32 25.88 % (±0.88) requests 40 failed 0 truncated 0 gate slo: Successful")]
    lines = inplace_report.summary_lines({
        "served": {"stable": 30, "candidate": 10},
        "gaps": {"disaggregated": True, "totalSeconds": 0.41, "failed": 1, "windows": [{
            "start": 3.2, "end": 3.61, "seconds": 0.41, "kinds": ["no complete generation"],
            "failed": 1, "openedBy": "stop stable-prefill-0",
            "closedBy": "candidate-decode-0 available"}]},
        "segments": [{
            "start": 0.0, "end": 12.5, "workers": {"stable": 2, "candidate": 1},
            "expectedCandidatePercent": 33.3, "observedCandidatePercent": 25.0,
            "requests": 40}]})
    assert not any("{" in line or "'" in line for line in lines), lines
    assert "1 window, 0.41 s, 1 failed request in it" in lines[1], lines
    assert "opened by stop stable-prefill-0, closed by candidate-decode-0 available" in lines[2]
    assert "workers stable 2 / candidate 1, candidate 33.3 % of workers" in lines[3]


def _warnings(tmp: Path, example: str, rate: float, scale: float,
              min_requests: int | None) -> list[str]:
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.rehearse.run import Options, sample_warnings

    spec = REPO / "examples" / example / "rollout.yaml"
    original = prepare(str(spec))
    dest = tmp / f"{example}-{rate}-{scale}-{min_requests}"
    scaled = write_scaled_spec(original.loaded.document.data, spec, dest, time_scale=scale,
                               request_rate=rate, min_requests=min_requests)
    opts = Options(spec=spec, time_scale=scale, rate=rate, min_requests=min_requests)
    return sample_warnings(original, prepare(str(scaled.path)), opts)


def test_gates_that_cannot_collect_their_sample_are_named_before_the_run(tmp_path: Path) -> None:
    """At time scale 0.05 and 20 requests/s with the spec's own minimum sample (`--min-requests
    spec`) the transfer-backend example's 5 % step cannot collect its sample: the warning says
    so and offers a rate, a time scale and a minimum sample, and each of those, applied, clears
    the warning."""
    import re

    lines = _warnings(tmp_path, "sglang-disagg-transfer-backend", 20.0, 0.05, None)
    assert lines and all(line.startswith("warning: gate ") for line in lines), lines
    first = lines[0]
    assert "cannot collect its sample" in first and "Inconclusive" in first
    fixes = dict(re.findall(r"--(rate|time-scale|min-requests) ([0-9.]+)", first))
    assert set(fixes) == {"rate", "time-scale", "min-requests"}, first
    step = re.search(r"of step (\d+)", first)
    assert step is not None

    def cleared(rate: float, scale: float, mr: int | None) -> bool:
        return not any(f"of step {step.group(1)} " in line
                       for line in _warnings(tmp_path, "sglang-disagg-transfer-backend",
                                             rate, scale, mr))

    assert cleared(float(fixes["rate"]), 0.05, None)
    assert cleared(20.0, float(fixes["time-scale"]), None)
    assert cleared(20.0, 0.05, int(fixes["min-requests"]))
    # a healthy-enough setting for the example's other gates says nothing
    assert _warnings(tmp_path, "vllm-disagg-block-size", 25.0, 0.05, 150) == []


def _haproxy_or_skip() -> None:
    """HAProxy, in a private network namespace: Proxy takes its ports from dgdgen's port scan,
    which every process starts at the same port, so on the shared loopback a test beside another
    (another worker's, another suite's) would bind the other's ports. The rehearsal runs there too
    (dgdgen.runtime.netns)."""
    from dgdgen.rehearse.proxy import haproxy_binary

    if haproxy_binary() is None:
        pytest.skip("haproxy not installed")
    refusal = netns_refusal()
    if refusal:
        pytest.skip(f"no private network namespace here: {refusal}")


def _stopped_replica(tmp: str) -> list[int]:
    import urllib.request

    from http_support import Handler, serving

    from dgdgen.runtime.procs import free_port

    class Ok(Handler):
        def do_GET(self) -> None:
            self.reply(b"ok")

    closed = free_port()  # nothing listens here: the stopped replica
    proxy = Proxy(Path(tmp))
    statuses = []
    with serving(Ok) as live:
        try:
            proxy.apply(proxy.stand_in([("gen", 1, [int(live.rsplit(":", 1)[1]), closed])]))
            for _ in range(10):
                with urllib.request.urlopen(f"http://127.0.0.1:{proxy.port}/", timeout=10) as r:
                    statuses.append(r.status)
        finally:
            proxy.stop()
    return statuses


def test_a_stopped_replica_behind_a_service_loses_no_request(tmp_path: Path) -> None:
    # A replica stopped before the next config leaves the Service refuses its connections; they
    # go to another replica (kube-proxy takes a terminating pod out first). Half of these ten
    # requests would otherwise be sent to the closed port.
    from dgdgen.runtime.netns import run_isolated

    _haproxy_or_skip()
    assert run_isolated(_stopped_replica, str(tmp_path), timeout=120) == [200] * 10


def _reload_in_effect(tmp: str) -> dict[str, object]:
    import threading
    import urllib.request

    from http_support import Handler, serving

    from dgdgen.traffic.runtime import MasterCli

    entered, release = threading.Event(), threading.Event()

    class A(Handler):
        def do_GET(self) -> None:
            if self.path == "/hold":
                entered.set()
                release.wait(30)
            self.reply(b"a")

    class B(Handler):
        def do_GET(self) -> None:
            self.reply(b"b")

    def get(path: str) -> bytes:
        with urllib.request.urlopen(f"http://127.0.0.1:{proxy.port}{path}", timeout=30) as r:
            return r.read()

    out: dict[str, object] = {}
    proxy = Proxy(Path(tmp))
    with serving(A) as a, serving(B) as b:
        try:
            proxy.apply(proxy.stand_in([("a", 1, [int(a.rsplit(":", 1)[1])])]))
            held: list[bytes] = []
            holder = threading.Thread(target=lambda: held.append(get("/hold")))
            holder.start()
            entered.wait(30)
            current, old = MasterCli(proxy.master_socket).workers()
            before = set(current) | set(old)
            proxy.apply(proxy.stand_in([("b", 1, [int(b.rsplit(":", 1)[1])])]))
            # at once, no retry: the master answers and a worker on the new config is current
            current, _ = MasterCli(proxy.master_socket).workers()
            out["former still current"] = sorted(set(current) & before)
            out["after"] = [get("/") for _ in range(10)]
            out["drained while held"] = proxy.drain(0.3)
            release.set()
            holder.join(30)
            out["held"] = held
            out["drained after"] = proxy.drain(15)
        finally:
            release.set()
            proxy.stop()
    return out


def test_a_reload_is_in_effect_when_apply_returns(tmp_path: Path) -> None:
    # HAProxy 2.6 answers `reload` before its master re-executes; until then the former worker
    # accepts connections under the former config (a frontend Service switch that sent requests
    # to the stopped frontend). apply() returns once a worker on the new config is current, and
    # drain() once the former worker has finished the connection it holds.
    from dgdgen.runtime.netns import run_isolated

    _haproxy_or_skip()
    out = run_isolated(_reload_in_effect, str(tmp_path), timeout=120)
    assert out == {"former still current": [], "after": [b"b"] * 10,
                   "drained while held": False, "held": [b"a"], "drained after": True}, out


def test_an_experiment_without_samples_is_named_before_the_run_as_documented(
        tmp_path: Path) -> None:
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.rehearse.run import Options, experiment_warnings

    spec = experiment_spec(tmp_path)
    prepared = prepare(str(spec))
    (warning,) = experiment_warnings(prepared, Options(spec=spec))
    assert warning.startswith("warning: step 1 is an A/B experiment on 'user rating 1-5'")
    assert f"`{warning}`" in (REPO / "docs" / "rehearse.md").read_text()
    given = Options(spec=spec, experiment_samples=tmp_path / "ratings.jsonl")
    assert experiment_warnings(prepared, given) == []
    # a rollout without an experiment step has nothing to warn about
    plain = prepare(str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"))
    assert experiment_warnings(plain, Options(spec=spec)) == []


def test_a_disaggregated_namespace_is_routable_once_its_prefill_router_is_active(
        tmp_path: Path) -> None:
    """The readiness the rehearsal waits for beyond /ready's worker count: the frontend's log line
    that activates a namespace's prefill router (the 1.6.1 frontend's words, colour codes and
    all), for every namespace with prefill workers."""
    from dgdgen.runtime.routing import prefill_namespaces, prefill_routers_active

    log = tmp_path / "frontend.log"
    fe = Proc(name="fe", kind="frontend", namespace=None, popen=None,  # type: ignore[arg-type]
              log_path=log)
    ready = {"ready": True, "namespaces": {
        "ns-a": {"worker_types": {"decode": {"workers": 1}, "prefill": {"workers": 1}}},
        "ns-b": {"worker_types": {"decode": {"workers": 1}, "prefill": {"workers": 1}}},
        "ns-agg": {"worker_types": {"backend": {"workers": 1}}}}}
    assert prefill_namespaces(ready) == ["ns-a", "ns-b"]
    line = ("\x1b[2m2026-11-25T23:53:24.934242Z\x1b[0m \x1b[32m INFO\x1b[0m dynamo_llm::kv_router::"
            "prefill_router::activation: Prefill router target activated model_name=Qwen/Qwen3-0.6B"
            " \x1b[3mnamespace\x1b[0m\x1b[2m=\x1b[0m{ns} endpoint_id={ns}/prefill/generate\n")
    log.write_text(line.format(ns="ns-a"))
    assert not prefill_routers_active(fe, prefill_namespaces(ready))  # ns-b not yet
    assert prefill_routers_active(fe, ["ns-a"])
    log.write_text(line.format(ns="ns-a") + line.format(ns="ns-b"))
    assert prefill_routers_active(fe, prefill_namespaces(ready))
    assert prefill_routers_active(fe, [])  # an aggregated graph has no prefill router to wait for


def _deep_work_folder(deep: str) -> tuple[bool, str, bool]:
    import time

    from dgdgen.errors import DgdgenError
    from dgdgen.rehearse.proxy import SOCKET_PATH_MAX
    from dgdgen.traffic.runtime import MasterCli

    proxy = Proxy(Path(deep))
    short = (len(proxy.master_socket) <= SOCKET_PATH_MAX
             and len(proxy.admin_socket) <= SOCKET_PATH_MAX)
    try:
        assert proxy.apply(proxy.stand_in([("bs16", 100, [21000])]))
        # apply returns once HAProxy listens and its master socket is there; the master may still
        # refuse connections while it re-executes itself after forking its worker (what
        # Proxy._reload retries for), so ask until it answers
        deadline = time.monotonic() + 30
        while True:
            try:
                procs = MasterCli(proxy.master_socket).command("show proc")
                break
            except DgdgenError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        proxy.stop()
    return short, procs, proxy.run_dir.exists()


def test_a_frontend_log_names_each_window_before_a_prefill_router_is_active(
        tmp_path: Path) -> None:
    """The windows a report names (docs/rehearse.md, In place): from the moment the frontend has
    both worker sets of a disaggregated namespace to its prefill router's activation, a request
    routed there gets 503. Lines as the 1.6.1 frontend writes them (a rolling update's candidate
    namespace: decode set first); a namespace listed again after its prefill set went opens a new
    window; an aggregated namespace, or one active before its decode set came, has none."""
    from datetime import datetime

    from dgdgen.runtime.routing import prefill_router_windows

    def at(stamp: str) -> str:
        return f"\x1b[2m2026-11-29T19:08:{stamp}Z\x1b[0m \x1b[32m INFO\x1b[0m "

    def worker_set(stamp: str, what: str, ns: str, kind: str) -> str:
        component, endpoint = ("prefill", "") if kind == "prefill" else ("backend", "chat|completions")
        verb = "Adding worker set to" if what == "add" else "Removed worker set from"
        return (at(stamp) + f"\x1b[2mdynamo_llm::discovery::model\x1b[0m\x1b[2m:\x1b[0m {verb} model "
                "\x1b[3mmodel\x1b[0m\x1b[2m=\x1b[0mQwen/Qwen3-0.6B \x1b[3mnamespace\x1b[0m\x1b[2m=\x1b[0m"
                f'["{ns}","{component}","generate","{endpoint}","{kind}"]\n')

    def activated(stamp: str, ns: str) -> str:
        return (at(stamp) + "dynamo_llm::kv_router::prefill_router::activation: Prefill router "
                "target activated model_name=Qwen/Qwen3-0.6B \x1b[3mnamespace\x1b[0m\x1b[2m=\x1b[0m"
                f"{ns} endpoint_id={ns}/prefill/generate\n")

    log = tmp_path / "frontend.log"
    log.write_text("".join([
        worker_set("12.491073", "add", "old", "prefill"),
        activated("12.495000", "early"),  # not listed with both sets: no window
        worker_set("12.501509", "add", "old", "decode"),
        activated("12.505610", "old"),
        worker_set("13.000000", "add", "agg", "decode"),
        worker_set("20.362535", "add", "new", "decode"),
        "\x1b[2m2026-11-29T19:08:20.40Z\x1b[0m ERROR http response sent status=503\n",
        worker_set("20.398056", "add", "new", "prefill"),
        activated("20.522135", "new"),
        worker_set("20.683252", "remove", "old", "prefill"),
        worker_set("21.000000", "add", "old", "prefill"),
        activated("21.250000", "old"),
    ]))

    def t(stamp: str) -> float:
        return datetime.fromisoformat(f"2026-11-29T19:08:{stamp}+00:00").timestamp()

    assert prefill_router_windows(log) == [
        ("old", t("12.501509"), t("12.505610")),
        ("new", t("20.398056"), t("20.522135")),
        ("old", t("21.000000"), t("21.250000")),
    ]
    assert prefill_router_windows(tmp_path / "absent.log") == []


def test_a_deep_work_folder_gets_its_sockets_where_haproxy_takes_them(tmp_path: Path) -> None:
    """HAProxy refuses a socket path past 97 bytes: a work folder that deep (a newcomer's pytest
    temp folder held the no-loss rehearsal's) runs with its sockets in a private temp folder, the
    real HAProxy starts and answers on its master socket, and the folder goes with the proxy."""
    import shutil

    from dgdgen.rehearse.proxy import SOCKET_PATH_MAX
    from dgdgen.runtime.netns import run_isolated

    _haproxy_or_skip()
    deep = tmp_path / ("d" * 60) / "work"
    assert len(str(deep / "haproxy" / "run" / "master.sock")) > SOCKET_PATH_MAX
    short, procs, left = run_isolated(_deep_work_folder, str(deep), timeout=120)
    assert short
    assert "worker" in procs, procs
    assert not left
    # a folder short enough keeps its sockets where they were (pytest's own temp folder can be
    # too deep already under xdist, so the short one is made under the temp folder)
    short_work = Path(tempfile.mkdtemp(prefix="w-", dir=tempfile.gettempdir()))
    try:
        assert len(str(short_work / "haproxy" / "run" / "master.sock")) <= SOCKET_PATH_MAX
        shallow = Proxy(short_work)
        assert shallow.run_dir == short_work / "haproxy" / "run"
    finally:
        shutil.rmtree(short_work)


def test_processes_start_with_a_raised_open_file_limit(tmp_path: Path) -> None:
    """A shell's soft open-file limit is often 1024; the processes a rehearsal starts get 65,536
    (at most the hard limit), whatever the shell that started it had."""
    import resource

    from dgdgen.runtime.procs import OPEN_FILES_WANTED

    script = (
        "import resource, subprocess, sys\n"
        "from pathlib import Path\n"
        "from dgdgen.runtime.procs import LocalDynamo\n"
        f"d = LocalDynamo(Path({str(tmp_path)!r}))\n"
        "print(subprocess.run([sys.executable, '-c', 'import resource; "
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])'], capture_output=True, "
        "text=True, check=True).stdout.strip())\n")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = 256 if hard == resource.RLIM_INFINITY else min(256, hard)

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, preexec_fn=lower, cwd=REPO).stdout.strip()
    want = OPEN_FILES_WANTED if hard == resource.RLIM_INFINITY else min(OPEN_FILES_WANTED, hard)
    assert int(out) == max(low, want)


def test_a_frontend_out_of_inotify_instances_is_explained() -> None:
    """The tail a Dynamo 1.6.1 frontend left when four rehearsals side by side used up the user's
    inotify instances (CI, 2026-11-29): the error names the limit and how to lift it."""
    from dgdgen.runtime.procs import limit_hint

    tail = ('    await run_input(runtime, "http", engine, frontend_route_extensions)\n'
            "Exception: Internal filesystem error: Too many open files (os error 24)\n")
    hint = limit_hint(tail)
    assert "fs.inotify.max_user_instances" in hint and "each Dynamo frontend holds 10" in hint
    assert limit_hint("Exception: address already in use") == ""


def test_dynamo_processes_capture_no_error_backtraces_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With RUST_BACKTRACE=1 inherited, every error the Rust core creates would capture a
    backtrace (2-3 MB more RSS per frontend, docs/rehearse.md "Memory"): the local processes get
    RUST_LIB_BACKTRACE=0, which leaves panics' backtraces on; a caller's own value is kept."""
    from dgdgen.runtime.procs import LocalDynamo

    monkeypatch.setenv("RUST_BACKTRACE", "1")
    monkeypatch.delenv("RUST_LIB_BACKTRACE", raising=False)
    env = LocalDynamo(tmp_path).base_env()
    assert env["RUST_LIB_BACKTRACE"] == "0" and env["RUST_BACKTRACE"] == "1"
    monkeypatch.setenv("RUST_LIB_BACKTRACE", "1")
    assert LocalDynamo(tmp_path).base_env()["RUST_LIB_BACKTRACE"] == "1"


def test_prometheus_starts_with_a_smaller_go_heap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prometheus runs with GOGC=25 and GOMAXPROCS=1 (about 7 MB less RSS, docs/rehearse.md
    "Memory") unless the caller's environment sets them; its other variables pass through."""
    from dgdgen.rehearse import prometheus as prom_mod

    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.setenv("GOMAXPROCS", "2")
    seen: dict[str, dict[str, str]] = {}

    class FakePopen:
        def __init__(self, argv: list[str], **kw: object) -> None:
            env = kw["env"]
            assert isinstance(env, dict)
            seen["env"] = env
            self.pid = 0

    monkeypatch.setattr(prom_mod.subprocess, "Popen", FakePopen)
    prom_mod.Prometheus(tmp_path, time_scale=0.05).start()
    env = seen["env"]
    assert env["GOGC"] == "25" and env["GOMAXPROCS"] == "2"
    assert env["PATH"] == prom_mod.os.environ["PATH"]
    assert prom_mod.prometheus_env({})["GOMAXPROCS"] == "1"


def test_a_load_that_falls_behind_its_rate_says_so(tmp_path: Path) -> None:
    """One thread against a server that answers in 0.3 s cannot send 20 requests/s: request i
    starts at least 0.25 × i s after its time in the schedule (each waits for the one before),
    and the report and the console say the load fell behind, with the count."""
    import http.server
    import threading
    import time

    from dgdgen.rehearse import inplace_report
    from dgdgen.rehearse.load import LATE_SECONDS, Load, lateness, lateness_text
    from dgdgen.rehearse.report import summary_lines

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the standard library's name
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(0.3)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        load = Load(server.server_address[1], "m", rate=20, t0=time.monotonic(), concurrency=1)
        load.start()
        deadline = time.monotonic() + 60
        while len(load.snapshot()) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        load.stop()
    finally:
        server.shutdown()
        server.server_close()
    recs = load.snapshot()
    assert len(recs) >= 8
    for i, r in enumerate(recs):
        assert r.late >= 0.25 * i - 0.05, (i, r.late)
    late = lateness(recs)
    assert late["over"] >= sum(1 for i in range(len(recs)) if 0.25 * i - 0.05 > LATE_SECONDS)
    assert late["over"] >= 3 and late["maxSeconds"] >= 0.25 * (len(recs) - 1) - 0.05
    data = {"loadLate": late, "requests": len(recs), "requestRate": 20.0, "states": [],
            "failures": []}
    assert lateness_text(late, len(recs), 20).startswith(
        f"**The load fell behind its rate**: {late['over']} of {len(recs)} requests started "
        "more than 1 s after")
    line = f"  load fell behind its rate: {late['over']} requests started more than 1 s late"
    assert summary_lines(data)[0].startswith(line)
    # the in-place rehearsal's summary says it first too
    assert inplace_report.summary_lines({**data, "served": {}, "gaps": {"disaggregated": False},
                                         "segments": []})[0].startswith(line)


def test_a_load_that_kept_its_rate_says_how_close() -> None:
    from dgdgen.rehearse.load import Record, lateness, lateness_text
    from dgdgen.rehearse.report import summary_lines
    from dgdgen.runtime.client import Outcome

    ok = Outcome(status=200, stream=True, tokens=3, ttft=0.1, duration=0.2, truncated=False)
    recs = [Record(i / 10, ok, late=0.001 * i) for i in range(200)]
    late = lateness(recs)
    assert late == {"maxSeconds": 0.199, "p99Seconds": 0.197, "over": 0}
    data = {"loadLate": late, "requests": 200, "requestRate": 10.0, "states": [], "failures": []}
    assert lateness_text(late, 200, 10) == ("The load kept its rate: every request started "
                                            "within 0.20 s of its time in the rate's schedule "
                                            "(p99 0.20 s).")
    assert summary_lines(data) == []
