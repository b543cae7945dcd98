"""What a platform engineer reading the rendered steps would check before applying them: each
test here pins one rollout-safety property of the rendered output (docs/planning.md,
docs/traffic.md, docs/analysis.md say what each one changes and why)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gen_support import REPO, copy_example_inputs
from dgdgen.model import dgd as dgdmod
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state


def _objects(prepared: Any, state: Any) -> dict[str, dict[str, Any]]:
    return {m.filename: m.obj for m in render_state(prepared, state)}


def _components(dgd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = dgd["spec"]
    if "services" in spec:
        return dict(spec["services"])
    return {c["name"]: c for c in spec["components"]}


# --------------------------------------------------------------------- partition


def test_partition_counts_replicas_kept_on_the_old_revision() -> None:
    """StatefulSet / CloneSet convention: ``partition`` = replicas that keep the OLD revision."""
    prepared = prepare(str(REPO / "examples/sglang-disagg-v1beta1-partition/rollout.yaml"))
    seen = 0
    for state in prepared.plan.steps[1:]:
        (dgd,) = [o for o in _objects(prepared, state).values()
                  if o["kind"] == "DynamoGraphDeployment"]
        for name, comp in _components(dgd).items():
            if name not in state.stable.replicas or "partition" not in comp:
                continue
            if name in ("prefill", "decode"):
                assert comp["partition"] == state.stable.replicas[name], (state.label, name)
                assert comp["replicas"] - comp["partition"] == state.candidate.replicas[name]
                seen += 1
            elif state.candidate.weight < 100:
                # the frontend stays on the old revision until the 100 % step
                assert comp["partition"] == comp["replicas"], (state.label, name)
    assert seen >= 2


# --------------------------------------------------------------------- GAMMA parent


def test_gamma_parent_service_selects_the_frontend_of_the_serving_generation() -> None:
    """The stable's while it has traffic, the candidate's once the stable has none (at the
    100 % step its workers are gone: CLU101), never both; in the shift wave."""
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    gamma = prepared.loaded.spec.spec.traffic.gamma
    assert gamma is not None and gamma.create_service
    from dgdgen.render.services import frontend_selector

    for state in prepared.plan.all_states():
        objs = _objects(prepared, state)
        svc = objs[f"service-{gamma.service}.yaml"]
        home = state.stable if state.stable.present and state.stable.weight > 0 else \
            state.candidate
        assert svc["spec"]["selector"] == frontend_selector(prepared, home.revision), state.label
        assert svc["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "1"
        # exactly the selector of that generation's own frontend Service, of no other
        own = [o for o in objs.values() if o["kind"] == "Service"
               and o["spec"]["selector"] == svc["spec"]["selector"] and o is not svc]
        assert len(own) == 1 and own[0]["metadata"]["labels"]["dgdgen.dev/generation"] == (
            home.revision)


# --------------------------------------------------------------------- PodMonitor labels


def test_pod_monitors_carry_the_default_selector_labels_and_validate_warns(tmp_path: Path) -> None:
    from gen_support import run_cli

    spec = REPO / "examples/vllm-disagg-v1beta1-worker-group/rollout.yaml"
    assert "monitorLabels" not in spec.read_text()
    prepared = prepare(str(spec))
    monitors = [o for o in _objects(prepared, prepared.plan.steps[1]).values()
                if o["kind"] == "PodMonitor"]
    assert monitors and all(
        m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors)
    r = run_cli("validate", str(spec))
    assert r.returncode == 0, r.stderr
    assert "warning: " in r.stderr and "spec.analysis.monitorLabels: not set" in r.stderr
    assert f"{spec}:" in r.stderr  # file:line of spec.analysis
    # given explicitly: no warning
    explicit = REPO / "examples/vllm-disagg-image-bump/rollout.yaml"
    assert "monitorLabels" in explicit.read_text()
    r = run_cli("validate", str(explicit))
    assert r.returncode == 0 and "monitorLabels" not in r.stderr, r.stderr


# --------------------------------------------------------------------- rollback budget, drain


def test_rollback_walks_back_within_the_surge_budget() -> None:
    """From the last step a one-shot rollback regrows the whole stable next to the whole
    candidate (+4 GPUs here against a +2 budget); the plan walks back step by step instead."""
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    plan = prepared.plan
    budget = max(s.extra_gpus_peak for s in plan.steps)
    surge = plan.surge_replicas
    sizes = {n: max(prepared.stable.target_replicas[n], prepared.candidate.target_replicas[n])
             for n in surge}
    last = len(plan.steps) - 1
    path = plan.rollback_from(last)
    # step 1 (25 %) keeps the stable at full size: never a rollback state (see below)
    assert [s.label for s in path] == ["rollback-02", "rollback"]
    for state in path:
        assert state.extra_gpus_peak <= budget, (state.label, state.extra_gpus_peak, budget)
        for name, extra in surge.items():
            assert state.peak_replicas[name] - sizes[name] <= extra, (state.label, name)
    one_shot = plan.rollback.stable.gpus + plan.steps[last].candidate.gpus - plan.baseline_gpus
    assert one_shot > budget  # the case the stepped rollback exists for


def test_rollback_moves_traffic_off_the_candidate_as_far_as_the_stable_carries_it() -> None:
    """Step 1 of the block-size example sends 25 % to the candidate with the stable still at full
    size: from step 2 the first rollback commit gives the stable all traffic at once (0 % on the
    candidate being rolled back), not step 1's 75/25 again. From step 3 the surge budget forces
    a stop at step 2's replicas, where the stable (half its size) takes 50 %, all it carries."""
    from dgdgen.plan import Budget, ComponentInput, PlanInput, StepInput, make_plan

    plan = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml")).plan
    assert plan.steps[1].stable.capacity == 1.0 and plan.steps[1].candidate.weight == 25
    for k in (1, 2):
        first = plan.rollback_from(k)[0]
        assert first.kind == "rollback" and first.candidate.weight == 0, (k, first.label)
    (back, final) = plan.rollback_from(3)
    assert back.label == "rollback-02" and back.stable.capacity == 0.5
    assert back.weights == (50, 50) and final.kind == "rollback"
    assert any("rollback from step 3 passes through rollback-02 (stable 50%)" in n
               and "from step 2 or earlier the rollback is one state" in n for n in plan.notes)

    # A rollback state carries what its stable can serve, not the forward step's share: at
    # ceil(0.7 * 10) = 7 of 10 replicas, the stable takes 70 % even where the forward step gave
    # it 65 %; and where the surge budget holds a rollback in one transition there is no
    # intermediate state at all.
    comps = (ComponentInput("F", "frontend", 1, 1, 0, 0), ComponentInput("W", "aggregated", 10,
                                                                         10, 1, 1))
    steps = (StepInput(35), StepInput(70), StepInput(100))
    tight = make_plan(PlanInput("r", "separate-dgd", "canary", comps, steps,
                                max_surge=Budget(4)))
    assert [(s.label, s.weights) for s in tight.rollback_steps] == [
        ("rollback-02", (30, 70)), ("rollback-01", (70, 30))]
    roomy = make_plan(PlanInput("r", "separate-dgd", "canary", comps, steps,
                                max_surge=Budget("100%")))
    assert roomy.rollback_steps == () and roomy.rollback_from(3) == (roomy.rollback,)


def test_plan_shows_rollback_gpus_and_the_drain(tmp_path: Path) -> None:
    from gen_support import run_cli

    r = run_cli("plan", str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line[:1].isalnum()}
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    for state in prepared.plan.rollback_steps:
        row = rows[f"rollback-{state.index:02d}"]
        assert f"{state.peak_gpus} (+{state.extra_gpus_peak})" in row
    assert f"{prepared.plan.rollback.peak_gpus} (+{prepared.plan.rollback.extra_gpus_peak})" in rows[
        "rollback"]
    # the step that empties the stable drains it (bounded by the request timeout) before it shrinks
    last = prepared.plan.steps[-1]
    assert last.drain_seconds == 30 * 60  # spec.traffic.requestTimeout: 30m
    assert "grow→shift→drain ≤30m→shrink" in rows[str(last.index)]


# --------------------------------------------------------------------- provider none


def _routed_generations(objects: dict[str, dict[str, Any]]) -> set[str]:
    """Generations some rendered route sends new requests to: HTTPRoute backendRefs with a
    weight (to a Service or an InferencePool), enabled HAProxy servers with a weight, or the
    provider-none switch Service; each resolved to the generation its target selects."""
    import re

    # a generation's own frontend Service: its selector, and which generation it is
    fronts = {tuple(sorted(o["spec"]["selector"].items())):
              o["metadata"]["labels"].get("dgdgen.dev/generation")
              for o in objects.values() if o["kind"] == "Service"
              and o["metadata"]["labels"].get("dgdgen.dev/role") != "switch"
              and o["metadata"]["name"].endswith("-fe")}

    def gen_of(selector: dict[str, str]) -> str | None:
        return fronts.get(tuple(sorted(selector.items())))

    by_service = {o["metadata"]["name"]: gen_of(o["spec"]["selector"])
                  for o in objects.values() if o["kind"] == "Service"}
    pools = {o["metadata"]["name"]: gen_of(o["spec"]["selector"]["matchLabels"])
             for o in objects.values() if o["kind"] == "InferencePool"}
    out: set[str] = set()
    for o in objects.values():
        if o["kind"] == "HTTPRoute":
            for ref in o["spec"]["rules"][0]["backendRefs"]:
                if ref.get("weight", 1) > 0:
                    target = (pools if ref["kind"] == "InferencePool" else by_service)[ref["name"]]
                    out.add(str(target))
        elif o["kind"] == "ConfigMap" and "haproxy.cfg" in o.get("data", {}):
            for m in re.finditer(r"^\s*server \S+ ([a-z0-9-]+)\.\S+ weight (\d+)( disabled)?$",
                                 o["data"]["haproxy.cfg"], re.M):
                if int(m.group(2)) > 0 and not m.group(3):
                    out.add(str(by_service[m.group(1)]))
        elif o["kind"] == "Service" and o["metadata"]["labels"].get("dgdgen.dev/role") == "switch":
            out.add(str(gen_of(o["spec"]["selector"])))
    return out


def test_every_generation_with_weight_has_a_route_in_every_state() -> None:
    from gen_support import EXAMPLES

    checked = 0
    for example in EXAMPLES:
        prepared = prepare(str(example / "rollout.yaml"))
        if prepared.mode not in ("separate-dgd", "worker-group"):
            continue  # one shared frontend: replica counts carry the split
        for state in prepared.plan.all_states():
            routed = _routed_generations(_objects(prepared, state))
            for gen in (state.stable, state.candidate):
                if gen.weight > 0:
                    assert gen.revision in routed, (example.name, state.label, gen.revision)
                    checked += 1
    assert checked > 20


def test_provider_none_switches_one_service_and_keeps_it_through_cleanup() -> None:
    prepared = prepare(str(REPO / "examples/vllm-agg-blue-green/rollout.yaml"))
    assert prepared.loaded.spec.spec.traffic.provider.value == "none"
    for state in prepared.plan.all_states():
        objs = _objects(prepared, state)
        switch = objs[f"service-{prepared.loaded.spec.metadata.name}.yaml"]
        home = state.candidate if state.candidate.weight == 100 else state.stable
        assert _routed_generations(objs) == {home.revision}, state.label
        # it moves with the weights, after the growing generation is ready
        assert switch["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "1"


def test_provider_none_refuses_a_split_between_two_frontends(tmp_path: Path) -> None:
    import yaml
    from gen_support import run_cli

    src = REPO / "examples/vllm-disagg-v1beta1-worker-group"
    (tmp_path / "dgd.yaml").write_text((src / "dgd.yaml").read_text())
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    data["spec"].pop("traffic")
    spec = tmp_path / "rollout.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run_cli("validate", str(spec))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "spec.steps[0].weight" in r.stderr and "cannot split traffic" in r.stderr
    assert f"{spec}:" in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------- probe Job, HAProxy


def _probe_job(prepared: Any) -> dict[str, Any]:
    for state in prepared.plan.steps:
        for o in _objects(prepared, state).values():
            if o["kind"] == "AnalysisRun":
                for m in o["spec"]["metrics"]:
                    if "job" in m["provider"]:
                        return dict(m["provider"]["job"])
    raise AssertionError("no probe job rendered")


def _run_probe(job: dict[str, Any], answers: dict[str, str]) -> tuple[int, list[dict[str, Any]]]:
    """Run the rendered probe container's command (python3 -c SCRIPT, with its env) against a
    loopback OpenAI-style endpoint that records each request body and answers like a reasoning
    model: ``answers[prompt]``, preceded by a thinking preamble unless the request sets
    ``chat_template_kwargs.enable_thinking: false``."""
    import os
    import subprocess
    import sys

    from http_support import Handler, serving

    bodies: list[dict[str, Any]] = []

    class Model(Handler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.read_json()
            bodies.append(body)
            reply = answers[body["messages"][-1]["content"]]
            if (body.get("chat_template_kwargs") or {}).get("enable_thinking") is not False:
                reply = "<think>\nthe user wants a short answer\n</think>\n\n" + reply
            self.reply_json({"choices": [{"message": {"content": reply}}]})

    with serving(Model) as url:
        (container,) = job["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        env["PROBE_URL"] = url
        assert container["command"][:2] == ["python3", "-c"]
        r = subprocess.run([sys.executable, "-c", container["command"][2]],
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    return r.returncode, bodies


def test_probe_disables_thinking_and_matches_the_answer() -> None:
    prepared = prepare(str(REPO / "examples/vllm-agg-blue-green/rollout.yaml"))
    probe = prepared.loaded.spec.spec.analysis.probe
    assert probe is not None and probe.match == "prefix"
    right = {p.prompt: p.expected for p in probe.prompts}
    job = _probe_job(prepared)
    code, bodies = _run_probe(job, right)
    assert len(bodies) == len(right)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in bodies)
    assert code == 0  # the answers come first, so the prefix match passes
    wrong = {p: "no" for p in right}
    code, _ = _run_probe(job, wrong)
    assert code == 1  # and a wrong answer still fails
    # with thinking allowed (probe.thinking: true) the preamble comes first: the match fails
    (container,) = job["spec"]["template"]["spec"]["containers"]
    for e in container["env"]:
        if e["name"] == "PROBE_THINKING":
            e["value"] = "true"
    code, bodies = _run_probe(job, right)
    assert code == 1 and "chat_template_kwargs" not in bodies[0]


def test_probe_job_is_restricted_and_bounded() -> None:
    prepared = prepare(str(REPO / "examples/vllm-agg-blue-green/rollout.yaml"))
    pod = _probe_job(prepared)["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}
    assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]


def test_haproxy_deployment_is_restricted_bounded_and_spread() -> None:
    prepared = prepare(str(REPO / "examples/sglang-disagg-transfer-backend/rollout.yaml"))
    objs = _objects(prepared, prepared.plan.steps[1])
    (dep,) = [o for o in objs.values() if o["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert c["resources"]["limits"]["memory"] == "512Mi"
    term = pod["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]


def _variant(tmp: Path, example: str, edit: Any) -> Path:
    import yaml

    src = REPO / "examples" / example
    (tmp / "dgd.yaml").write_text((src / "dgd.yaml").read_text())
    copy_example_inputs(src, tmp)
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    edit(data["spec"])
    out = tmp / "rollout.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def test_cluster_domain_is_a_setting(tmp_path: Path) -> None:
    spec = _variant(tmp_path, "sglang-disagg-transfer-backend",
                    lambda s: s.__setitem__("clusterDomain", "corp.internal"))
    prepared = prepare(str(spec))
    objs = _objects(prepared, prepared.plan.steps[1])
    (cm,) = [o for o in objs.values() if o["kind"] == "ConfigMap"]
    assert ".svc.corp.internal:8000" in cm["data"]["haproxy.cfg"]
    assert "cluster.local" not in cm["data"]["haproxy.cfg"]


def test_probe_url_follows_the_cluster_domain(tmp_path: Path) -> None:
    spec = _variant(tmp_path, "vllm-agg-blue-green",
                    lambda s: s.__setitem__("clusterDomain", "corp.internal"))
    prepared = prepare(str(spec))
    runs = [o for st in prepared.plan.steps for o in _objects(prepared, st).values()
            if o["kind"] == "AnalysisRun"]
    urls = [a["value"] for r in runs for a in r["spec"]["args"] if a["name"] == "candidate-url"]
    assert urls and all(u.endswith(".svc.corp.internal:8000") for u in urls)


def test_require_image_digests(tmp_path: Path) -> None:
    from gen_support import run_cli

    spec = _variant(tmp_path, "vllm-agg-blue-green",
                    lambda s: s.__setitem__("requireImageDigests", True))
    r = run_cli("validate", str(spec))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "is not pinned by digest" in r.stderr and f"{spec}:" in r.stderr
    digest = "@sha256:" + "0" * 64

    def pinned(s: Any) -> None:
        s["requireImageDigests"] = True
        s["analysis"]["probe"]["image"] = "python:3.12-slim" + digest
        s.setdefault("gitops", {}).setdefault("workflow", {})["image"] = "ghcr.io/x/y" + digest

    (tmp_path / "ok").mkdir()
    r = run_cli("validate", str(_variant(tmp_path / "ok", "vllm-agg-blue-green", pinned)))
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------- satisfiable gates


def test_every_gate_window_can_reach_its_minimum_request_count() -> None:
    """At the expected request rate and each step's share, the window of every AnalysisRun and
    of every AnalysisTemplate (as rendered, args defaults) collects at least min-requests."""
    import math

    from gen_support import EXAMPLES

    from dgdgen.spec import parse_duration

    checked = 0
    for example in EXAMPLES:
        prepared = prepare(str(example / "rollout.yaml"))
        a = prepared.loaded.spec.spec.analysis
        if not a.enabled or not a.expected_request_rate:
            continue
        for state in prepared.plan.steps:
            objs = _objects(prepared, state).values()
            w = state.candidate.weight / 100
            for o in objs:
                if o["kind"] not in ("AnalysisRun", "AnalysisTemplate"):
                    continue
                args = {x["name"]: x.get("value") for x in o["spec"]["args"]}
                if "window" not in args:
                    continue
                gate = o["metadata"]["labels"]["dgdgen.dev/gate"]
                shares = [s.candidate.weight / 100 for s in prepared.plan.steps
                          if s.gate == gate and 0 < s.candidate.weight < 100]
                if o["kind"] == "AnalysisRun":
                    shares = [w]
                relative = "stable" in args
                for share in shares:
                    share = min(share, 1 - share) if relative else share
                    seen = a.expected_request_rate * share * parse_duration(args["window"])
                    assert math.floor(seen + 1e-6) >= int(args["min-requests"]), (
                        example.name, state.label, o["kind"], o["metadata"].get("name"),
                        args["window"], share, args["min-requests"])
                    checked += 1
    assert checked >= 10


# --------------------------------------------------------------------- InferencePool EPP


def test_every_inference_pool_routes_through_a_rendered_endpoint_picker(tmp_path: Path) -> None:
    """Never a pool pointing at nothing: in every state, with the example's settings and with
    none at all, each pool's endpointPickerRef names a Service rendered in that same state, on
    a port it serves, and that Service and its Deployment are Ready (earlier wave) before the
    route gives the pool weight."""
    def drop_epp(s: Any) -> None:
        del s["traffic"]["inferencePool"]["endpointPicker"]

    for spec in (REPO / "examples/trtllm-disagg-v1beta1/rollout.yaml",
                 _variant(tmp_path, "trtllm-disagg-v1beta1", drop_epp)):
        prepared = prepare(str(spec))
        checked = 0
        for state in prepared.plan.all_states():
            objs = list(_objects(prepared, state).values())
            pools = [o for o in objs if o["kind"] == "InferencePool"]
            (route,) = [o for o in objs if o["kind"] == "HTTPRoute"]
            route_wave = int(route["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
            for pool in pools:
                ref = pool["spec"]["endpointPickerRef"]
                (svc,) = [o for o in objs if o["kind"] == "Service"
                          and o["metadata"]["name"] == ref["name"]]
                assert ref["port"]["number"] in [p["port"] for p in svc["spec"]["ports"]]
                (dep,) = [o for o in objs if o["kind"] == "Deployment"
                          and o["metadata"]["name"] == ref["name"]]
                pod_labels = dep["spec"]["template"]["metadata"]["labels"]
                assert svc["spec"]["selector"].items() <= pod_labels.items()
                args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
                assert args[args.index("--pool-name") + 1] == pool["metadata"]["name"]
                for o in (pool, svc, dep):
                    wave = int(o["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
                    assert wave < route_wave, (state.label, o["kind"])
                checked += 1
        assert checked >= 8


# --------------------------------------------------------------------- no churn at step 0


def _without_namespace(doc: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    import copy

    out = copy.deepcopy(doc)
    if "namespace" not in source.get("metadata", {}):
        out["metadata"].pop("namespace", None)
    # Argo CD's own sync annotations on the DGD object: read by Argo CD only; the operator copies
    # only its own annotations (e.g. nvidia.com/enable-metrics) from a DGD to its components, so
    # they reach no pod template (ai-dynamo/dynamo deploy/operator/internal/dynamo/graph.go).
    anns = out["metadata"].get("annotations", {})
    for key in [k for k in anns if k.startswith("argocd.argoproj.io/")]:
        del anns[key]
    if "annotations" in out["metadata"] and not anns and "annotations" not in source["metadata"]:
        del out["metadata"]["annotations"]
    return out


def test_step_0_and_rollback_leave_the_running_stable_dgd_exactly_as_it_is() -> None:
    """Nothing is added to the serving generation (a label on the frontend's pod template
    restarts it); rollback restores every original annotation — in place, where the way back is
    a roll, plus the forward roll's surge settings on the workers (CLU201). The
    worker-group example was left out, and its step 0 and rollback wrote the capability
    annotation of the proposed worker groups into the running stable DGD."""
    from gen_support import EXAMPLES

    for example in EXAMPLES:
        prepared = prepare(str(example / "rollout.yaml"))
        source = prepared.stable.dgd.doc
        for state in (prepared.plan.steps[0], prepared.plan.rollback):
            (dgd,) = [o for o in _objects(prepared, state).values()
                      if o["kind"] == "DynamoGraphDeployment"]
            if prepared.mode == "in-place" and state.kind == "rollback":
                dgd = _without_roll_settings(dgd)
            assert _without_namespace(dgd, source) == source, (example.name, state.label)


def _without_roll_settings(doc: dict[str, Any]) -> dict[str, Any]:
    import copy

    from dgdgen.model.dgd import ANN_MAX_SURGE, ANN_MAX_UNAVAILABLE

    out = copy.deepcopy(doc)
    d = dgdmod.parse(out)
    for comp in d.workers():
        ann = d.doc_annotations(comp.name)
        for key in (ANN_MAX_SURGE, ANN_MAX_UNAVAILABLE):
            ann.pop(key, None)
        if not ann:
            d.component_doc(comp.name).pop("annotations", None)
    return out


def test_frontend_services_select_the_labels_the_operator_sets() -> None:
    from dgdgen.render.services import OP_LABEL_COMPONENT_TYPE, OP_LABEL_DGD

    prepared = prepare(str(REPO / "examples/vllm-disagg-image-bump/rollout.yaml"))
    objs = _objects(prepared, prepared.plan.steps[1])
    dgds = {o["metadata"]["name"] for o in objs.values() if o["kind"] == "DynamoGraphDeployment"}
    fronts = [o for o in objs.values() if o["kind"] == "Service"
              and o["metadata"]["name"].endswith("-fe")]
    assert {f["spec"]["selector"][OP_LABEL_DGD] for f in fronts} == dgds
    assert all(f["spec"]["selector"][OP_LABEL_COMPONENT_TYPE] == "frontend" for f in fronts)


def test_rollback_states_apply_in_the_backward_order() -> None:
    """A backward transition's waves: the stable regrows first (grow), the weights move (shift),
    the candidate shrinks last (shrink, after the drain wave)."""
    from dgdgen.render import waves

    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    wave = "argocd.argoproj.io/sync-wave"
    checked = 0
    for state in prepared.plan.rollback_steps:
        above = prepared.plan.steps[state.index + 1]
        objs = _objects(prepared, state)
        stable = objs[f"dynamographdeployment-{prepared.stable.dgd.name}.yaml"]
        cand = objs[f"dynamographdeployment-{prepared.candidate_name}.yaml"]
        (route,) = [o for o in objs.values() if o["kind"] == "HTTPRoute"]
        grows = any(state.stable.replicas[k] > above.stable.replicas[k]
                    for k in state.stable.replicas)
        shrinks = any(state.candidate.replicas[k] < above.candidate.replicas[k]
                      for k in state.candidate.replicas)
        assert route["metadata"]["annotations"][wave] == waves.SHIFT
        if grows:
            assert stable["metadata"]["annotations"][wave] == waves.GROW, state.label
        if shrinks:
            assert cand["metadata"]["annotations"][wave] == waves.SHRINK, state.label
        checked += grows + shrinks
    assert checked >= 2
