"""The endpoint picker rendered per InferencePool is the one the Gateway API Inference Extension
ships, configured for Dynamo frontends: the vendored chart and EPP sources are byte-identical to
upstream v1.5.0; the rendered objects carry what the chart templates render — RBAC rules,
arguments, ports, probes — and validate against the Kubernetes schemas; the plugins config is the
one docs/traffic.md documents, names only plugins and parameters the v1.5.0 EPP has, and scores on
the two gauges a Dynamo frontend exports (which the real frontend does export:
tests/rehearse/test_epp_frontend_metrics.py); resources and update strategy are dgdgen's, not the
chart's, each for the reason the docs give."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import yaml
from gen_support import REPO

from dgdgen import crd
from dgdgen.cluster import model
from dgdgen.model.dgd import Role
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import epp, render_state

VENDOR = REPO / "third_party" / epp.VENDORED
EXAMPLE = REPO / "examples" / "trtllm-disagg-v1beta1" / "rollout.yaml"


def _blob(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _text(name: str) -> str:
    return (VENDOR / name).read_text()


def _state_objects() -> list[dict[str, Any]]:
    p = prepare(str(EXAMPLE))
    return [m.obj for m in render_state(p, p.plan.steps[1])]


def _epp_objects() -> list[dict[str, Any]]:
    return [o for o in _state_objects()
            if o["metadata"].get("labels", {}).get("dgdgen.dev/role") == epp.ROLE]


def test_vendored_chart_is_the_upstream_release() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| `([0-9a-f]{40})` \| `([0-9a-f]{64})` \|$",
                      _text("SOURCE.md"), re.MULTILINE)
    files = sorted(p.name for p in VENDOR.iterdir() if p.name != "SOURCE.md")
    assert sorted(r[0] for r in rows) == files
    for name, _upstream, blob, sha in rows:
        assert _blob(VENDOR / name) == blob, name
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == sha, name
    assert "Apache License" in _text("LICENSE")
    values = yaml.safe_load(_text("inferencepool__values.yaml"))["inferenceExtension"]
    assert epp.IMAGE == "{registry}/{repository}:{tag}".format(**values["image"])


def _rules(text: str) -> set[tuple[str, str, str]]:
    """(group, resource, verb) of the flow-style rules a vendored RBAC template grants
    unconditionally (the monitoring ClusterRole, block style and disabled by default, is not
    matched)."""
    out = set()
    for g, r, v in re.findall(r"^- apiGroups: (\[.*\])\n  resources: (\[.*\])\n  verbs: (\[.*\])$",
                              text, re.MULTILINE):
        for group in yaml.safe_load(g):
            for res in yaml.safe_load(r):
                for verb in yaml.safe_load(v):
                    out.add((group, res, verb))
    return out


def test_rbac_is_what_the_chart_grants_and_bound_to_the_epp() -> None:
    objs = _epp_objects()
    want = (_rules(_text("inferencepool__templates__rbac.yaml"))
            | _rules(_text("epplib__templates___rbac.yaml")))
    assert ("", "pods", "watch") in want and ("inference.networking.k8s.io", "inferencepools",
                                              "list") in want
    deployments = [o for o in objs if o["kind"] == "Deployment"]
    assert len(deployments) == 2  # one per generation's pool
    for dep in deployments:
        account = dep["spec"]["template"]["spec"]["serviceAccountName"]
        bound = {b["roleRef"]["name"] for b in objs if b["kind"] == "RoleBinding"
                 and {"kind": "ServiceAccount", "name": account,
                      "namespace": dep["metadata"]["namespace"]} in b["subjects"]}
        granted = {(g, r, v) for role in objs if role["kind"] == "Role"
                   and role["metadata"]["name"] in bound for rule in role["rules"]
                   for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
        assert granted == want, dep["metadata"]["name"]
        assert [o for o in objs if o["kind"] == "ServiceAccount"
                and o["metadata"]["name"] == account]


def test_deployment_and_service_follow_the_chart() -> None:
    deployment_t = _text("epplib__templates___deployment.yaml")
    service_t = _text("epplib__templates___service.yaml")
    values = yaml.safe_load(_text("inferencepool__values.yaml"))["inferenceExtension"]
    objs = _epp_objects()
    for dep in (o for o in objs if o["kind"] == "Deployment"):
        c = dep["spec"]["template"]["spec"]["containers"][0]
        assert c["imagePullPolicy"] == values["image"]["pullPolicy"]
        assert dep["spec"]["replicas"] == values["replicas"]
        for flag in ("--pool-name", "--pool-namespace", "--pool-group", "--zap-encoder",
                     "--config-file", "--tracing=false"):
            assert f"- {flag}" in deployment_t and flag in c["args"], flag
        assert c["args"][c["args"].index("--v") + 1] == str(values["flags"]["v"])
        for port in c["ports"]:
            assert f"- name: {port['name']}\n              containerPort: {port['containerPort']}" \
                in deployment_t
        for probe in ("livenessProbe", "readinessProbe"):
            assert c[probe]["grpc"] == {"port": 9003, "service": "inference-extension"}
        assert "terminationGracePeriodSeconds: 130" in deployment_t
        assert dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 130
    for svc in (o for o in objs if o["kind"] == "Service"):
        names = [p["name"] for p in svc["spec"]["ports"]]
        assert names == ["grpc-ext-proc", "http-metrics"]
        assert all(f"- name: {n}" in service_t for n in names)
        assert svc["spec"]["ports"][0]["port"] == values["extProcPort"]


def test_resources_and_strategy_are_sized_for_stateless_scorers() -> None:
    """Not the chart's 4 CPU / 8 GiB and Recreate, which serve its prefix-cache scorer (not
    configured here): the spec's CPU and memory (memory limit = request), and a rolling update
    that starts the new picker before the old one stops."""
    values = yaml.safe_load(_text("inferencepool__values.yaml"))["inferenceExtension"]
    assert values["resources"]["requests"] == {"cpu": "4", "memory": "8Gi"}
    assert "type: Recreate" in _text("epplib__templates___deployment.yaml")
    deployments = [o for o in _epp_objects() if o["kind"] == "Deployment"]
    assert len(deployments) == 2
    for dep in deployments:
        c = dep["spec"]["template"]["spec"]["containers"][0]
        assert c["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"},
                                  "limits": {"memory": "512Mi"}}
        assert dep["spec"]["strategy"] == {
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    p = prepare(str(EXAMPLE))
    picker = p.loaded.spec.spec.traffic.inference_pool.endpoint_picker
    sized = [o for m in epp.objects("x-pool", "inference",
                                    picker.model_copy(update={"cpu": "2", "memory": "2Gi"}), {})
             for o in [m] if o["kind"] == "Deployment"]
    assert sized[0]["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    assert crd.validate(sized[0]) == []


def _config() -> dict[str, Any]:
    values = yaml.safe_load(_text("inferencepool__values.yaml"))["inferenceExtension"]
    (cm, *_rest) = [o for o in _epp_objects() if o["kind"] == "ConfigMap"]
    assert {c["data"][values["pluginsConfigFile"]] for c in [cm, *_rest]} == {epp.PLUGINS_CONFIG}
    parsed: dict[str, Any] = yaml.safe_load(cm["data"][values["pluginsConfigFile"]])
    return parsed


def test_plugins_config_is_the_documented_one() -> None:
    docs = (REPO / "docs" / "traffic.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", docs, re.DOTALL)]
    assert _config() in blocks, "docs/traffic.md must show the rendered EndpointPickerConfig"


def test_plugins_config_keeps_the_charts_frame() -> None:
    """Header, data source and profile name as the chart renders them; only the scorers and the
    extractor's parameters differ."""
    template = _text("epplib__templates___config.yaml")
    values = yaml.safe_load(_text("inferencepool__values.yaml"))["inferenceExtension"]
    cfg = _config()
    for line in ("apiVersion: inference.networking.x-k8s.io/v1alpha1", "kind: EndpointPickerConfig",
                 "- type: metrics-data-source", "- type: core-metrics-extractor",
                 "- name: default"):
        assert "    " + line in template, line
    (source,) = [p for p in cfg["plugins"] if p["type"] == "metrics-data-source"]
    src = values["metricsDataSource"]
    assert source["parameters"] == {k: src[k] for k in ("scheme", "path", "insecureSkipVerify")}
    assert [p["name"] for p in cfg["schedulingProfiles"]] == ["default"]


def _const(source: str, name: str) -> str:
    m = re.search(rf"^\s*{name}\s*=\s*\"([^\"]+)\"", source, re.MULTILINE)
    assert m, name
    return m.group(1)


def test_plugins_are_ones_the_v150_epp_registers() -> None:
    runner = _text("cmd__epp__runner__runner.go")
    queue = _text("pkg__epp__framework__plugins__scheduling__scorer__queuedepth__queue.go")
    running = _text(
        "pkg__epp__framework__plugins__scheduling__scorer__runningrequests__runningrequest.go")
    factories = _text("pkg__epp__framework__plugins__datalayer__extractor__metrics__factories.go")
    registered = {
        _const(queue, "QueueScorerType"): "queuedepth.QueueScorerType",
        _const(running, "RunningRequestsSizeScorerType"):
            "runningrequests.RunningRequestsSizeScorerType",
        _const(factories, "MetricsExtractorType"): "extractormetrics.MetricsExtractorType",
    }
    cfg = _config()
    for plugin in cfg["plugins"]:
        if plugin["type"] == "metrics-data-source":
            continue  # the chart's own data source (test_plugins_config_keeps_the_charts_frame)
        assert f"fwkplugin.Register({registered[plugin['type']]}," in runner, plugin["type"]
    refs = [p["pluginRef"] for prof in cfg["schedulingProfiles"] for p in prof["plugins"]]
    assert sorted(refs) == ["queue-scorer", "running-requests-size-scorer"]
    # the chart's model-server scorers are gone: a Dynamo frontend feeds them nothing
    assert not {"kv-cache-utilization-scorer", "prefix-cache-scorer"} & {
        p["type"] for p in cfg["plugins"]}


def _json_tags(source: str, struct: str) -> set[str]:
    body = re.search(rf"\b{struct} struct \{{(.*?)\n\t\}}", source, re.DOTALL)
    assert body, struct
    return set(re.findall(r'`json:"([A-Za-z]+)', body.group(1)))


def test_scorers_read_the_frontend_gauges() -> None:
    """The extractor's parameters are ones v1.5.0 parses; the engine is the default one; its
    queue spec feeds WaitingQueueSize, which `queue-scorer` reads, and its running spec feeds
    RunningRequestsSize, which `running-requests-size-scorer` reads — and those specs are the
    Dynamo frontend's gauges."""
    factories = _text("pkg__epp__framework__plugins__datalayer__extractor__metrics__factories.go")
    extractor = _text("pkg__epp__framework__plugins__datalayer__extractor__metrics__extractor.go")
    queue = _text("pkg__epp__framework__plugins__scheduling__scorer__queuedepth__queue.go")
    running = _text(
        "pkg__epp__framework__plugins__scheduling__scorer__runningrequests__runningrequest.go")
    (ex,) = [p for p in _config()["plugins"] if p["type"] == "core-metrics-extractor"]
    params = ex["parameters"]
    assert set(params) <= _json_tags(factories, "modelServerExtractorParams")
    (engine,) = params["engineConfigs"]
    assert set(engine) <= _json_tags(factories, "engineConfigParams")
    assert params["defaultEngine"] == engine["name"] == epp.ENGINE
    assert engine == {"name": epp.ENGINE, "queuedRequestsSpec": "dynamo_frontend_queued_requests",
                      "runningRequestsSpec": "dynamo_frontend_inflight_requests"}
    # factories.go: the spec fields become the mapping's Queue / Running
    assert "Queue:               engineConfig.QueuedRequestsSpec," in factories
    assert "Running:             engineConfig.RunningRequestsSpec," in factories
    # extractor.go: Queue fills WaitingQueueSize, Running fills RunningRequestsSize
    assert re.search(r"mapping\.TotalQueuedRequests.*?clone\.WaitingQueueSize =", extractor,
                     re.DOTALL)
    assert re.search(r"mapping\.TotalRunningRequests.*?clone\.RunningRequestsSize =", extractor,
                     re.DOTALL)
    assert "endpoint.GetMetrics().WaitingQueueSize" in queue
    assert "endpoint.GetMetrics().RunningRequestsSize" in running


def test_epp_objects_validate() -> None:
    objs = _epp_objects()
    assert {o["kind"] for o in objs} == {"ConfigMap", "Deployment", "Service", "ServiceAccount",
                                         "Role", "RoleBinding"}
    for o in objs:
        assert crd.known(o["apiVersion"], o["kind"]), o["kind"]
        assert crd.validate(o) == [], (o["kind"], o["metadata"]["name"])


def test_each_pool_selects_exactly_its_generations_frontends() -> None:
    """Through the cluster model (the operator's pod labels): in every step, each pool's
    endpoints are all the frontend pods of one generation's DGD and nothing else — no worker, no
    other generation, no endpoint-picker pod — and the route weights exactly those pools with the
    plan's shares."""
    p = prepare(str(EXAMPLE))
    for step in p.plan.steps:
        objs = [m.obj for m in render_state(p, step)]
        g = model.build({model.key_of(o): o for o in objs})
        pools = {k[2]: g.pool_pods(k[1], k[2]) for k in g.objects if k[0] == "InferencePool"}
        assert pools, step.index
        dgds = set()
        for name, pods in pools.items():
            (dgd,) = {pod.dgd for pod in pods}
            assert sorted(pods, key=lambda pod: pod.component) == sorted(
                (pod for pod in g.pods if pod.dgd == dgd and pod.role is Role.FRONTEND),
                key=lambda pod: pod.component), (step.index, name)
            assert name == f"{dgd}-pool"
            dgds.add(dgd)
        assert len(dgds) == len(pools)
        # the pickers' own pods carry none of the operator labels a pool selects on
        for dep in (o for o in objs if o["kind"] == "Deployment"
                    and o["metadata"]["labels"].get("dgdgen.dev/role") == epp.ROLE):
            labels = dep["spec"]["template"]["metadata"]["labels"]
            for pool in (o for o in objs if o["kind"] == "InferencePool"):
                sel = pool["spec"]["selector"]["matchLabels"]
                assert any(labels.get(k) != v for k, v in sel.items()), dep["metadata"]["name"]
        (route,) = [o for o in objs if o["kind"] == "HTTPRoute"]
        refs = {r["name"]: r["weight"] for r in route["spec"]["rules"][0]["backendRefs"]}
        assert set(refs) == set(pools)
        assert all(r["kind"] == "InferencePool" for r in route["spec"]["rules"][0]["backendRefs"])
        stable, candidate = f"{p.base_name}-pool", f"{p.candidate_name}-pool"
        want = {stable: step.stable.weight, candidate: step.candidate.weight}
        if not step.candidate.present:
            del want[candidate]  # step-00: the candidate does not exist yet
        assert refs == want, step.index
