"""The endpoint picker (EPP) of each generation's InferencePool, as the Gateway API Inference
Extension ships it: the objects its ``inferencepool`` Helm chart (v1.5.0) renders for the EPP with
the chart's default values and ``provider.name: none`` — plugins ConfigMap, Deployment, Service,
ServiceAccount, Roles and RoleBindings. The chart sources are vendored in
``templates/gaie-epp-v1.5.0/`` (source, version, licence and blob ids in its ``SOURCE.md``); each
object below names the template it follows.

One EPP per pool, named as the chart names it (``{release}-epp``, the release being the pool):
an EPP serves exactly one pool (``--pool-name``), and the upstream rollout guide deploys one per
pool. Rendered with the pool, in the grow wave, so it is Ready before the route gives its pool
weight; it goes with its pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen.generation import LABEL_ROLE

if TYPE_CHECKING:
    from dgdgen.spec import EndpointPicker

VERSION = "v1.5.0"
IMAGE = f"registry.k8s.io/gateway-api-inference-extension/epp:{VERSION}"
TEMPLATES = f"gaie-epp-{VERSION}"
POOL_GROUP = "inference.networking.k8s.io"
ROLE = "epp"  # the dgdgen.dev/role label of every EPP object
HEALTH_PORT = 9003
METRICS_PORT = 9090
PLUGINS_FILE = "default-plugins.yaml"

# epplib/templates/_config.yaml with the default values (modelServerType vllm, protocol http, no
# parser, no latency predictor): the plugins and the one scheduling profile.
PLUGINS_CONFIG = """\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
- type: metrics-data-source
  parameters:
    scheme: "http"
    path: "/metrics"
    insecureSkipVerify: true
- type: core-metrics-extractor
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
"""


def name(pool: str, epp: EndpointPicker) -> str:
    return pool + epp.name_suffix


def objects(pool: str, namespace: str, epp: EndpointPicker,
            labels: dict[str, str]) -> list[dict[str, Any]]:
    """The EPP of InferencePool ``pool``; ``labels`` are dgdgen's own (rollout, generation)."""
    n = name(pool, epp)
    # _helpers.tpl: labels, selectorLabels (InferencePool mode), modeLabels
    chart = {"app.kubernetes.io/name": n, "app.kubernetes.io/version": "0.0.0"}
    select = {"inferencepool": n}
    mode = {"inference.networking.k8s.io/igw-mode": "inferencepool"}
    own = {**labels, LABEL_ROLE: ROLE}

    def meta(obj_name: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
        return {"name": obj_name, "namespace": namespace,
                "labels": {**own, **chart, **(extra or {})}}

    config_map = {  # epplib/templates/_config.yaml
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(n),
        "data": {PLUGINS_FILE: PLUGINS_CONFIG},
    }
    container = {  # epplib/templates/_deployment.yaml, container "epp"
        "name": "epp",
        "image": epp.image,
        "imagePullPolicy": "Always",  # inferencepool/values.yaml image.pullPolicy
        "args": [
            "--pool-name", pool,
            "--pool-namespace", namespace,
            "--pool-group", POOL_GROUP,
            "--zap-encoder", "json",
            "--config-file", f"/config/{PLUGINS_FILE}",
            "--v", "1",  # values flags.v
            "--tracing=false",
        ],
        # values.yaml inferenceExtension.resources: "validated with scale testing at high QPS"
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"},
                      "limits": {"memory": "16Gi"}},
        "ports": [
            {"name": "grpc", "containerPort": epp.port},
            {"name": "grpc-health", "containerPort": HEALTH_PORT},
            {"name": "metrics", "containerPort": METRICS_PORT},
        ],
        "livenessProbe": {"grpc": {"port": HEALTH_PORT, "service": "inference-extension"},
                          "initialDelaySeconds": 5, "periodSeconds": 10},
        "readinessProbe": {"grpc": {"port": HEALTH_PORT, "service": "inference-extension"},
                           "periodSeconds": 2},
        "env": [
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "volumeMounts": [{"name": "plugins-config-volume", "mountPath": "/config"}],
    }
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(n, mode),
        "spec": {
            "replicas": 1,
            # the chart's reason: one active replica keeps the prefix-cache scorer's state; the
            # old one is killed at once so the new one takes over
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": dict(select)},
            "template": {
                "metadata": {"labels": {**own, **select, **mode}},
                "spec": {
                    "serviceAccountName": n,
                    "terminationGracePeriodSeconds": 130,
                    "containers": [container],
                    "volumes": [{"name": "plugins-config-volume", "configMap": {"name": n}}],
                },
            },
        },
    }
    service = {  # epplib/templates/_service.yaml
        "apiVersion": "v1", "kind": "Service", "metadata": meta(n),
        "spec": {
            "selector": dict(select),
            "ports": [
                {"name": "grpc-ext-proc", "protocol": "TCP", "port": epp.port},
                {"name": "http-metrics", "protocol": "TCP", "port": METRICS_PORT},
            ],
            "type": "ClusterIP",
        },
    }
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(n)}

    def role(role_name: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": meta(role_name), "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": meta(role_name),
             "subjects": [{"kind": "ServiceAccount", "name": n, "namespace": namespace}],
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                         "name": role_name}},
        ]

    read = ["get", "watch", "list"]
    return [
        config_map, deployment, service, account,
        # inferencepool/templates/rbac.yaml
        *role(f"{n}-non-sa", [
            {"apiGroups": ["inference.networking.x-k8s.io"],
             "resources": ["inferenceobjectives", "inferencemodelrewrites"], "verbs": read},
            {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": list(read)},
        ]),
        # epplib/templates/_rbac.yaml (monitoring disabled: no ClusterRole)
        *role(f"{n}-sa", [{"apiGroups": [""], "resources": ["pods"], "verbs": list(read)}]),
    ]
