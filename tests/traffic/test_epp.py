"""The endpoint picker rendered per InferencePool is the one the Gateway API Inference Extension
ships: the vendored chart sources are byte-identical to upstream v1.5.0, and the rendered objects
carry what those templates render with the chart's default values — RBAC rules, arguments, ports,
resources, plugins config — and validate against the Kubernetes schemas."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import yaml
from gen_support import REPO

from dgdgen import crd
from dgdgen.pipeline import prepare
from dgdgen.render import epp, render_state

VENDOR = REPO / "templates" / epp.TEMPLATES
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
        assert c["resources"] == values["resources"]
        assert c["imagePullPolicy"] == values["image"]["pullPolicy"]
        assert dep["spec"]["replicas"] == values["replicas"]
        assert "type: Recreate" in deployment_t and dep["spec"]["strategy"] == {"type": "Recreate"}
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


def test_plugins_config_is_the_charts_default() -> None:
    template = _text("epplib__templates___config.yaml").splitlines()
    values = yaml.safe_load(_text("inferencepool__values.yaml"))["inferenceExtension"]
    src = values["metricsDataSource"]
    (cm, *_rest) = [o for o in _epp_objects() if o["kind"] == "ConfigMap"]
    text = cm["data"][values["pluginsConfigFile"]]
    for line in text.splitlines():
        key = line.strip().split(":")[0]
        if key in ("scheme", "path", "insecureSkipVerify"):
            # templated from values.yaml metricsDataSource
            assert yaml.safe_load(line.strip())[key] == src[key]
            continue
        assert "    " + line in template, line
    parsed = yaml.safe_load(text)
    assert parsed["kind"] == "EndpointPickerConfig"


def test_epp_objects_validate() -> None:
    objs = _epp_objects()
    assert {o["kind"] for o in objs} == {"ConfigMap", "Deployment", "Service", "ServiceAccount",
                                         "Role", "RoleBinding"}
    for o in objs:
        assert crd.known(o["apiVersion"], o["kind"]), o["kind"]
        assert crd.validate(o) == [], (o["kind"], o["metadata"]["name"])
