"""Preview before weight (``spec.traffic.preview``), on one bundled example per provider: with
``preview: {header: X-Dgd-Preview, value: "on"}`` and a first step ``{weight: 0, pause: 5m}``
the spec renders, `verify` accepts the tree, step-01 routes a request with the header to the
candidate alone while the public split is 100/0, and step-00 and rollback carry no preview.

For HAProxy this is proven on a real HAProxy running the rendered config against two fake
frontends (which name themselves in every response); for the HTTPRoute providers by the route's
rule, validated against the vendored Gateway API CRD with its CEL rules (no Gateway runs here;
the rehearsal's stand-in proves the routing: tests/rehearse/test_preview_rehearsal.py). Bad
input exits 2 with the field's file:line."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from gen_support import REPO, copy_example_inputs, run_cli
from haproxy_loopback import (
    HAProxy,
    Loopback,
    fake_frontends,
    free_port,
    haproxy_binary,
    stream_once,
)

from dgdgen import crd

PREVIEW = {"header": "X-Dgd-Preview", "value": "on"}
EXAMPLE_OF = {
    "gamma": "vllm-disagg-block-size",
    "gateway-api": "vllm-disagg-image-bump",
    "inference-pool": "trtllm-disagg-v1beta1",
    "haproxy": "sglang-disagg-transfer-backend",
}


def preview_spec(tmp: Path, example: str, preview: dict[str, Any] | None = None,
                 **traffic: Any) -> Path:
    """A copy of ``example`` with the preview and a first step of weight 0 (a 5-minute
    pause); ``traffic`` overrides keys of its spec.traffic."""
    src = REPO / "examples" / example
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "dgd.yaml", tmp / "dgd.yaml")
    copy_example_inputs(src, tmp)
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    data["spec"]["traffic"]["preview"] = dict(preview or PREVIEW)
    data["spec"]["traffic"].update(traffic)
    data["spec"]["steps"].insert(0, {"weight": 0, "pause": "5m"})
    (tmp / "rollout.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp / "rollout.yaml"


def _docs(folder: Path, kind: str) -> list[dict[str, Any]]:
    out = []
    for p in sorted(folder.glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(p.read_text()) if d and d.get("kind") == kind]
    return out


@pytest.mark.parametrize("provider", sorted(EXAMPLE_OF))
def test_preview_renders_verifies_and_routes_the_header_to_the_candidate_alone(
        provider: str, tmp_path: Path) -> None:
    from dgdgen.pipeline.prepare import prepare

    spec = preview_spec(tmp_path / "spec", EXAMPLE_OF[provider])
    out = tmp_path / "out"
    r = run_cli("render", str(spec), "-o", str(out))
    assert r.returncode == 0, r.stderr
    r = run_cli("verify", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    prepared = prepare(str(spec))
    plan = prepared.plan
    assert plan.steps[1].weights == (100, 0)
    if provider == "haproxy":
        texts = {s: _docs(out / s, "ConfigMap") for s in ("step-00", "step-01", "rollback")}
        cfg = {s: next(d["data"]["haproxy.cfg"] for d in docs if "haproxy.cfg" in d["data"])
               for s, docs in texts.items()}
        assert "acl preview req.hdr(X-Dgd-Preview) -m str on" in cfg["step-01"]
        assert "use_backend be_preview if preview" in cfg["step-01"]
        assert "preview" not in cfg["step-00"] and cfg["rollback"] == cfg["step-00"]
        return
    routes = {s: _docs(out / s, "HTTPRoute") for s in ("step-00", "step-01", "rollback")}
    (route,) = routes["step-01"]
    assert crd.validate(route) == []
    preview_rule, weighted = route["spec"]["rules"]
    (match,) = preview_rule["matches"]
    assert match["headers"] == [{"type": "Exact", "name": "X-Dgd-Preview", "value": "on"}]
    (ref,) = preview_rule["backendRefs"]
    cand = prepared.candidate_name
    assert ref["name"] in (f"{cand}-fe", f"{cand}-pool") and ref["weight"] == 1
    assert {r["name"]: r["weight"] for r in weighted["backendRefs"]} == {
        ref["name"].replace(cand, prepared.base_name): 100, ref["name"]: 0}
    assert "headers" not in str(weighted["matches"])
    for label in ("step-00", "rollback"):
        (r0,) = routes[label]
        assert len(r0["spec"]["rules"]) == 1 and "headers" not in str(r0["spec"]["rules"])
    # `on` is written quoted: a YAML 1.1 reader (sigs.k8s.io/yaml, PyYAML) keeps it a string
    assert "value: 'on'" in next((out / "step-01").glob("httproute-*.yaml")).read_text()


pytestmark_haproxy = pytest.mark.skipif(
    haproxy_binary() is None,
    reason="the haproxy binary is not installed (Debian package `haproxy`; CI installs it)",
)
REQUESTS = 30


def _through_haproxy(tmp: Path, spec: Path, label: str,
                     sends: list[dict[str, str]]) -> list[str | None]:
    """The generation that answered each of ``sends`` (the request headers of one request),
    in order, through a real HAProxy running state ``label``'s rendered config."""
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render import render_state
    from dgdgen.traffic.weights import state_backends

    prepared = prepare(str(spec))
    state = prepared.plan.state(label if label == "rollback" else int(label[5:]))
    (cm,) = [m for m in render_state(prepared, state) if m.kind == "ConfigMap"]
    backends = state_backends(prepared, state)
    ns = prepared.loaded.spec.metadata.namespace
    with fake_frontends([b.key for b in backends]) as ports:
        loop = Loopback(tmp=tmp, frontend_port=free_port(), stats_port=free_port(),
                        peer_port=free_port(),
                        servers={f"{b.service}.{ns}.svc.cluster.local:8000": ports[b.key]
                                 for b in backends})
        cfg = tmp / "haproxy.cfg"
        cfg.write_text(loop.adapt(cm.obj["data"]["haproxy.cfg"]))
        proxy = HAProxy(cfg, loop, tmp / "haproxy.log")
        proxy.start()
        try:
            async def load() -> list[str | None]:
                got = []
                for headers in sends:
                    st = await stream_once(loop.frontend_port, 2, 1, headers)
                    assert st.ok, (st.status, st.error)
                    got.append(st.backend)
                return got

            return asyncio.run(load())
        finally:
            proxy.stop()


@pytestmark_haproxy
def test_real_haproxy_sends_the_header_to_the_candidate_at_100_0(tmp_path: Path) -> None:
    """step-01 (100/0): every request with the header on the candidate, none without it; a
    sticky client (X-Session-Id, the example's stick table) keeps its generation once the
    preview request is answered (the preview pins nobody). step-00 and rollback: the header
    follows the weights, as every request does."""
    from dgdgen.pipeline.prepare import prepare

    spec = preview_spec(tmp_path / "spec", EXAMPLE_OF["haproxy"])
    plan = prepare(str(spec)).plan
    stable, cand = plan.stable_revision, plan.candidate_revision
    on, other = {"X-Dgd-Preview": "on"}, {"X-Dgd-Preview": "off"}
    sends = [on, {}, other] * REQUESTS
    got = _through_haproxy(tmp_path / "s1", spec, "step-01", sends)
    assert got[0::3] == [cand] * REQUESTS, got
    assert got[1::3] + got[2::3] == [stable] * 2 * REQUESTS, got
    sticky = {"X-Session-Id": "user-1"}
    got = _through_haproxy(tmp_path / "s1b", spec, "step-01",
                           [sticky, {**sticky, **on}, sticky, {**sticky, **on}, sticky])
    assert got == [stable, cand, stable, cand, stable], got
    # a later step: the header still reaches the candidate alone, the rest follows 95/5
    got = _through_haproxy(tmp_path / "s2", spec, "step-02", [on] * REQUESTS)
    assert got == [cand] * REQUESTS, got
    for label in ("step-00", "rollback"):
        got = _through_haproxy(tmp_path / label, spec, label, [on] * REQUESTS)
        assert got == [stable] * REQUESTS, (label, got)


@pytest.mark.parametrize(("example", "preview", "traffic", "field", "says"), [
    ("vllm-disagg-image-bump", {"header": "X Preview"}, {}, "spec.traffic.preview",
     "is not an HTTP field name (RFC 9110 token"),
    ("vllm-disagg-image-bump", {"header": "Connection"}, {}, "spec.traffic.preview",
     "cannot select a preview: a proxy removes or consumes it"),
    ("vllm-disagg-image-bump", {"header": "Cookie"}, {}, "spec.traffic.preview",
     "use `cookie: NAME`"),
    ("vllm-disagg-image-bump", {"header": "X-A", "value": "a b"}, {}, "spec.traffic.preview",
     "expected 1-256 letters, digits or ._~+/=:@-"),
    ("vllm-disagg-image-bump", {"header": "X-A", "cookie": "c"}, {}, "spec.traffic.preview",
     "give exactly one of `header` or `cookie`"),
    ("vllm-disagg-image-bump", {"cookie": "preview"}, {}, "spec.traffic.preview.cookie",
     "provider 'gateway-api' cannot match a cookie"),
    ("vllm-disagg-block-size", {"header": "X-Dgd-Preview"},
     {"provider": "none", "gamma": None}, "spec.traffic.preview",
     "traffic provider 'none' renders no router that reads requests"),
    ("sglang-disagg-v1beta1-partition", {"header": "X-Dgd-Preview"}, None,
     "spec.traffic.preview", "in isolation 'partition' one frontend serves both revisions"),
    ("sglang-disagg-transfer-backend", {"header": "x-session-id"}, {},
     "spec.traffic.preview.header", "is also the sticky key"),
])
def test_bad_preview_exits_2_with_the_field(tmp_path: Path, example: str,
                                            preview: dict[str, Any],
                                            traffic: dict[str, Any] | None, field: str,
                                            says: str) -> None:
    src = REPO / "examples" / example
    tmp = tmp_path / "spec"
    tmp.mkdir()
    shutil.copy(src / "dgd.yaml", tmp / "dgd.yaml")
    copy_example_inputs(src, tmp)
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    t = data["spec"].setdefault("traffic", {}) if traffic is None else data["spec"]["traffic"]
    for k, v in (traffic or {}).items():
        if v is None:
            t.pop(k, None)
        else:
            t[k] = v
    t["preview"] = preview
    (tmp / "rollout.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    r = run_cli("render", str(tmp / "rollout.yaml"), "-o", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and says in r.stderr, r.stderr
    assert f"{tmp / 'rollout.yaml'}:" in r.stderr and field in r.stderr, r.stderr
    assert not out.exists()


@pytestmark_haproxy
def test_the_rehearsal_gateway_stand_in_follows_the_route_preview_rule(tmp_path: Path) -> None:
    """`dgdgen rehearse` plays a Gateway with an HAProxy built from the route: its preview rule
    (read by route_preview, the weighted rule by route_backends) reaches the candidate alone
    while the weighted rule gives it 0, and the header's other values follow the weights."""
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.rehearse.proxy import Proxy, route_backends, route_preview
    from dgdgen.render import render_state

    spec = preview_spec(tmp_path / "spec", EXAMPLE_OF["gateway-api"])
    prepared = prepare(str(spec))
    stable, cand = prepared.plan.stable_revision, prepared.plan.candidate_revision
    objects = {(m.kind, m.name): m.obj for m in render_state(prepared, prepared.plan.steps[1])}
    with fake_frontends([stable, cand]) as ports:
        by_service = {f"{prepared.base_name}-fe": stable, f"{prepared.candidate_name}-fe": cand}

        def of_service(name: str) -> list[Any]:
            return [type("P", (), {"port": ports[by_service[name]]})()]

        main = route_backends(objects, of_service, lambda labels: [])
        rule = route_preview(objects, of_service, lambda labels: [])
        assert main is not None and rule is not None
        assert [(n, w) for n, w, _ in main] == [(f"{prepared.base_name}-fe", 100),
                                                (f"{prepared.candidate_name}-fe", 0)]
        header, value, backends = rule
        assert (header, value) == ("X-Dgd-Preview", "on")
        proxy = Proxy(tmp_path / "work")
        try:
            proxy.apply(proxy.stand_in(
                [(by_service[n], w, [p.port for p in procs]) for n, w, procs in main],
                preview=(header, value, [(by_service[n], [p.port for p in procs])
                                         for n, _, procs in backends])))

            async def load() -> list[str | None]:
                got = []
                for headers in [{"X-Dgd-Preview": "on"}, {"X-Dgd-Preview": "no"}, {}] * 10:
                    st = await stream_once(proxy.port, 2, 1, headers)
                    assert st.ok, (st.status, st.error)
                    got.append(st.backend)
                return got

            got = asyncio.run(load())
        finally:
            proxy.stop()
    assert got[0::3] == [cand] * 10 and got[1::3] + got[2::3] == [stable] * 20, got


@pytestmark_haproxy
def test_the_probe_reaches_the_candidate_through_the_proxy_with_the_header(
        tmp_path: Path) -> None:
    """The blue/green example over HAProxy with a preview: its probe gate (at the 0 % step)
    calls the proxy's Service with the header. Run as rendered against a real HAProxy with
    step-01's config, it reaches the candidate, which answers right, while the stable answers
    wrong: it passes. Without the header (the control) the same probe reaches the stable and
    fails — so the probe tests the candidate only because the preview routes it there."""
    import os
    import subprocess
    import sys

    from http_support import Handler, serving

    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render import render_state
    from dgdgen.traffic.weights import state_backends

    src = REPO / "examples" / "vllm-agg-blue-green"
    tmp = tmp_path / "spec"
    tmp.mkdir()
    shutil.copy(src / "dgd.yaml", tmp / "dgd.yaml")
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    data["spec"]["traffic"] = {"provider": "haproxy", "preview": dict(PREVIEW), "haproxy": {
        "healthCheck": {"path": "/v1/models/Qwen%2FQwen3-1.7B/ready"}}}
    (tmp / "rollout.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    prepared = prepare(str(tmp / "rollout.yaml"))
    state = prepared.plan.steps[1]
    assert state.weights == (100, 0) and state.gate == "smoke"
    objs = render_state(prepared, state)
    (cm,) = [m for m in objs if m.kind == "ConfigMap"]
    (run,) = [m.obj for m in objs if m.kind == "AnalysisRun"]
    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    assert args["candidate-url"] == "http://qwen-agg-haproxy.inference.svc.cluster.local:8000"
    (metric,) = run["spec"]["metrics"]
    (container,) = metric["provider"]["job"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["PROBE_URL"] == "{{args.candidate-url}}"
    assert env["PROBE_HEADERS"] == '{"X-Dgd-Preview": "on"}'
    probe = prepared.loaded.spec.spec.analysis.probe
    right = {p.prompt: p.expected for p in probe.prompts}
    seen: dict[str, list[str | None]] = {"stable": [], "candidate": []}

    def model(who: str) -> type[Handler]:
        class Model(Handler):
            def do_GET(self) -> None:  # the health check
                self.reply_json({"ready": True})

            def do_POST(self) -> None:
                body = self.read_json()
                seen[who].append(self.headers.get("X-Dgd-Preview"))
                reply = right[body["messages"][-1]["content"]] if who == "candidate" else "no"
                self.reply_json({"choices": [{"message": {"content": reply}}]})
        return Model

    ns = prepared.loaded.spec.metadata.namespace
    backends = {b.role: b for b in state_backends(prepared, state)}
    with serving(model("stable")) as stable_url, serving(model("candidate")) as cand_url:
        loop = Loopback(tmp=tmp_path / "proxy", frontend_port=free_port(),
                        stats_port=free_port(), peer_port=free_port(), servers={
                            f"{backends[r].service}.{ns}.svc.cluster.local:8000":
                            int(u.rsplit(":", 1)[1])
                            for r, u in (("stable", stable_url), ("candidate", cand_url))})
        cfg = tmp_path / "proxy" / "haproxy.cfg"
        cfg.parent.mkdir(parents=True, exist_ok=True)
        cfg.write_text(loop.adapt(cm.obj["data"]["haproxy.cfg"]))
        proxy = HAProxy(cfg, loop, tmp_path / "proxy" / "haproxy.log")
        proxy.start()
        try:
            def probe_run(extra: dict[str, str]) -> int:
                e = {**os.environ, **env, "PROBE_URL": f"http://127.0.0.1:{loop.frontend_port}",
                     **extra}
                return subprocess.run([sys.executable, "-c", container["command"][2]], env=e,
                                      capture_output=True, text=True, timeout=60,
                                      check=False).returncode

            assert probe_run({}) == 0
            assert seen == {"stable": [], "candidate": ["on"] * len(right)}, seen
            assert probe_run({"PROBE_HEADERS": "{}"}) == 1  # the control: the stable answers
            assert len(seen["stable"]) == len(right), seen
        finally:
            proxy.stop()


def test_the_quality_gate_sends_the_header_to_the_entry_point(tmp_path: Path) -> None:
    """The InferencePool example's quality gate with `preview.url` (the Gateway's address): the
    rendered Job calls that URL for the candidate with the header, the stable at its own
    Service; the gate's own module, run as rendered, sends the header to the candidate only."""
    import contextlib
    import io

    from http_support import Handler, serving

    from dgdgen.analysis import quality_gate
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render import render_state

    spec = preview_spec(tmp_path / "spec", EXAMPLE_OF["inference-pool"],
                        preview={**PREVIEW, "url": "http://gateway.example.com"})
    prepared = prepare(str(spec))
    state = next(s for s in prepared.plan.steps if s.gate)
    (run,) = [m.obj for m in render_state(prepared, state) if m.kind == "AnalysisRun"]
    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    assert args["candidate-url"] == "http://gateway.example.com"
    assert args["stable-url"].startswith(f"http://{prepared.base_name}-fe.")
    (metric,) = [m for m in run["spec"]["metrics"] if m["name"] == "quality"]
    (container,) = metric["provider"]["job"]["spec"]["template"]["spec"]["containers"]
    cmd = container["command"]
    assert cmd[cmd.index("--candidate-header") + 1] == "X-Dgd-Preview: on"
    seen: dict[str, list[str | None]] = {"stable": [], "candidate": []}

    def model(who: str) -> type[Handler]:
        class Model(Handler):
            def do_POST(self) -> None:
                self.read_json()
                seen[who].append(self.headers.get("X-Dgd-Preview"))
                self.reply_json({"choices": [{"message": {"content": "Paris"},
                                              "finish_reason": "stop"}],
                                 "usage": {"completion_tokens": 1}})
        return Model

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "capital of France?", "reference": "Paris"}\n' * 3)
    with serving(model("stable")) as s_url, serving(model("candidate")) as c_url:
        argv = [{"{{args.stable-url}}": s_url, "{{args.candidate-url}}": c_url}.get(a, a)
                for a in cmd[3:]]
        argv[argv.index("--prompts") + 1] = str(prompts)
        with contextlib.redirect_stdout(io.StringIO()):
            quality_gate.main(argv)
    assert seen == {"stable": [None] * 3, "candidate": ["on"] * 3}, seen


def _cohort_spec(tmp: Path, example: str, *, weight: int = 0,
                 experiment: dict[str, Any] | None = None,
                 preview: dict[str, Any] | None = None) -> Path:
    src = REPO / "examples" / example
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "dgd.yaml", tmp / "dgd.yaml")
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    data["spec"]["steps"] = [{"weight": weight, "gate": "experiment"}, {"weight": 100}]
    data["spec"]["analysis"]["experiment"] = experiment or {
        "metric": "user rating 1-5", "minimumDetectableEffect": 0.1, "cohorts": "preview",
        "cohortShare": 0.2}
    if preview is not None:
        data["spec"]["traffic"]["preview"] = preview
    (tmp / "rollout.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp / "rollout.yaml"


@pytest.mark.parametrize("example", ["vllm-disagg-image-bump", "sglang-disagg-transfer-backend"])
def test_an_experiment_assigns_its_cohorts_by_the_preview_value(tmp_path: Path,
                                                                example: str) -> None:
    """Cohorts by header: the experiment step has no public share, the users who send the
    value form the candidate's cohort (sticky by construction, also over an HTTPRoute and over
    HAProxy without a stick table's help), and the sample is sized by cohortShare (80/20:
    328 stable and 82 candidate units at mde 0.1, docs/analysis.md); the decision is as with
    weights."""
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.pipeline.report import experiment_plan

    spec = _cohort_spec(tmp_path / "spec", example,
                        preview={"header": "X-Dgd-Cohort", "value": "b"})
    prepared = prepare(str(spec))
    (e,) = experiment_plan(prepared)
    assert (e["candidateWeight"], e["stableSamples"], e["candidateSamples"]) == (0, 328, 82)
    assert e["sticky"].startswith("cohorts by the preview: users who send header "
                                  "X-Dgd-Cohort: b see the candidate (expected 20% of them)")
    r = run_cli("plan", str(spec))
    assert r.returncode == 0, r.stderr
    assert "both generations held at 100/0 (the public split; the candidate's cohort is the " \
        "preview's) until 328 stable and 82 candidate samples" in r.stdout, r.stdout
    samples = tmp_path / "samples.jsonl"
    plan = prepared.plan
    samples.write_text("".join(
        f'{{"generation": "{plan.stable_revision}", "value": {1 + i % 3}}}\n' for i in range(328))
        + "".join(f'{{"generation": "{plan.candidate_revision}", "value": {3 + i % 3}}}\n'
                  for i in range(82)))
    r = run_cli("experiment", str(spec), "--samples", str(samples))
    assert r.returncode == 0 and "candidate-better" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize(("weight", "experiment", "preview", "field", "says"), [
    (0, None, None, "spec.analysis.experiment.cohorts", "need spec.traffic.preview"),
    (20, None, {"header": "X-Dgd-Cohort"}, "spec.steps[0].weight",
     "weight 20 would add others at random"),
    (0, {"metric": "m", "minimumDetectableEffect": 0.1, "cohorts": "preview"},
     {"header": "X-Dgd-Cohort"}, "spec.analysis.experiment", "need cohortShare"),
])
def test_bad_preview_cohorts_exit_2(tmp_path: Path, weight: int, experiment: Any,
                                    preview: Any, field: str, says: str) -> None:
    spec = _cohort_spec(tmp_path / "spec", "vllm-disagg-image-bump", weight=weight,
                        experiment=experiment, preview=preview)
    r = run_cli("validate", str(spec))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert says in r.stderr and field in r.stderr and f"{spec}:" in r.stderr, r.stderr


@pytestmark_haproxy
def test_the_runtime_api_takes_the_preview_out_with_a_fast_rollback(tmp_path: Path) -> None:
    """`dgdgen traffic set-weights --step rollback` on a proxy running step-01: the runtime API
    cannot remove the ACL, so it puts the preview's server in maintenance — a request with the
    header gets 503 until the rollback's config is loaded, never the candidate being rolled
    back; `--step 2` brings it back."""
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render import render_state
    from dgdgen.traffic.weights import state_backends

    spec = preview_spec(tmp_path / "spec", EXAMPLE_OF["haproxy"])
    prepared = prepare(str(spec))
    state = prepared.plan.steps[1]
    (cm,) = [m for m in render_state(prepared, state) if m.kind == "ConfigMap"]
    backends = state_backends(prepared, state)
    ns = prepared.loaded.spec.metadata.namespace
    cand = prepared.plan.candidate_revision
    with fake_frontends([b.key for b in backends]) as ports:
        loop = Loopback(tmp=tmp_path / "p", frontend_port=free_port(), stats_port=free_port(),
                        peer_port=free_port(),
                        servers={f"{b.service}.{ns}.svc.cluster.local:8000": ports[b.key]
                                 for b in backends})
        cfg = tmp_path / "p" / "haproxy.cfg"
        cfg.write_text(loop.adapt(cm.obj["data"]["haproxy.cfg"]))
        proxy = HAProxy(cfg, loop, tmp_path / "p" / "haproxy.log")
        proxy.start()
        try:
            async def send(n: int) -> list[tuple[int, str | None]]:
                out = []
                for _ in range(n):
                    st = await stream_once(loop.frontend_port, 2, 1, {"X-Dgd-Preview": "on"})
                    out.append((st.status, st.backend))
                return out

            assert asyncio.run(send(4)) == [(200, cand)] * 4
            r = run_cli("traffic", "set-weights", str(spec), "--step", "rollback", "--socket",
                        loop.admin_socket)
            assert r.returncode == 0, r.stderr
            assert "set server be_preview/" + cand + " state maint" in r.stdout, r.stdout
            got = asyncio.run(send(4))
            assert all(status == 503 for status, _ in got), got
            r = run_cli("traffic", "set-weights", str(spec), "--step", "2", "--socket",
                        loop.admin_socket)
            assert r.returncode == 0 and f"set server be_preview/{cand} state ready" in r.stdout
            assert asyncio.run(send(4)) == [(200, cand)] * 4
        finally:
            proxy.stop()
