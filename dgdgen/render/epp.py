"""The endpoint picker (EPP) of each generation's InferencePool: the Gateway API Inference
Extension v1.5.0 EPP, as its ``inferencepool`` Helm chart renders it with ``provider.name: none``
— plugins ConfigMap, Deployment, Service, ServiceAccount, Roles and RoleBindings — with scorers
that read what a Dynamo frontend exports (its queue and in-flight gauges) instead of the chart's
model-server scorers, and resources sized for them. The chart and plugin sources are vendored in
``third_party/gaie-epp-v1.5.0/`` (source, version, licence and blob ids in its ``SOURCE.md``); each
object below names the template it follows, and every departure says why.

Why not Dynamo's own EPP (the DGD ``epp`` component): its operator-made InferencePool selects a
DGD's worker pods, each running a frontend sidecar in direct mode, not the generation's frontends;
docs/dynamo-epp.md has the evidence and what adopting it would take.

One EPP per pool, named as the chart names it (``{release}-epp``, the release being the pool):
an EPP serves exactly one pool (``--pool-name``), and the upstream rollout guide deploys one per
pool. Rendered with the pool, in the grow wave, so it is Ready before the route gives its pool
weight; it goes with its pool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen.model.generation import LABEL_ROLE

if TYPE_CHECKING:
    from dgdgen.spec import EndpointPicker

VERSION = "v1.5.0"
IMAGE = f"registry.k8s.io/gateway-api-inference-extension/epp:{VERSION}"
VENDORED = f"gaie-epp-{VERSION}"  # third_party/gaie-epp-v1.5.0/
POOL_GROUP = "inference.networking.k8s.io"
ROLE = "epp"  # the dgdgen.dev/role label of every EPP object
HEALTH_PORT = 9003
METRICS_PORT = 9090
PLUGINS_FILE = "default-plugins.yaml"

# Which queue and running-request gauges the EPP reads. The pool's endpoints are a generation's
# Dynamo frontends, not model servers: they export none of the vLLM / SGLang / TRT-LLM metrics the
# chart's default plugins read (`vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`, ...), so
# those scorers would see 0 everywhere. The Dynamo 1.6.1 frontend exports, on its HTTP port's
# /metrics (the port the EPP scrapes: the pool's target port), the gauges below, labelled by model
# (tests/rehearse/test_epp_frontend_metrics.py reads them from the real frontend).
ENGINE = "dynamo-frontend"
QUEUED_METRIC = "dynamo_frontend_queued_requests"  # "Number of requests in HTTP processing queue"
RUNNING_METRIC = "dynamo_frontend_inflight_requests"  # "Number of inflight requests"

# The chart's config (epplib/templates/_config.yaml) with its scorers replaced by ones that mean
# something for a Dynamo frontend. The v1.5.0 `core-metrics-extractor` takes per-engine metric
# specs (`engineConfigs`, extractor/metrics/factories.go): one engine, the Dynamo frontend, as the
# default, its queue and running specs the frontend's gauges, its KV-cache, LoRA and cache-info
# specs left empty (disabled). `queue-scorer` scores the shortest queue highest (WaitingQueueSize,
# from the queue spec), `running-requests-size-scorer` the fewest in-flight requests
# (RunningRequestsSize, from the running spec) — both registered by the v1.5.0 runner. Dropped:
# `kv-cache-utilization-scorer` (a frontend has no KV cache; KV-aware worker choice is the Dynamo
# router's, behind each frontend) and `prefix-cache-scorer` (the frontends of a generation share
# its workers and every frontend's KV router sees all their KV events, so sending a prefix back
# to the same frontend buys nothing — and its index was what the chart's 8 GiB was for).
PLUGINS_CONFIG = f"""\
apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: running-requests-size-scorer
- type: metrics-data-source
  parameters:
    scheme: "http"
    path: "/metrics"
    insecureSkipVerify: true
- type: core-metrics-extractor
  parameters:
    defaultEngine: "{ENGINE}"
    engineConfigs:
    - name: "{ENGINE}"
      queuedRequestsSpec: "{QUEUED_METRIC}"
      runningRequestsSpec: "{RUNNING_METRIC}"
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 1
  - pluginRef: running-requests-size-scorer
    weight: 1
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
        # Not the chart's 4 CPU / 8 GiB (values.yaml: "validated with scale testing at high QPS"
        # with its prefix-cache scorer, whose index is most of that memory): with two stateless
        # scorers over a handful of frontends the EPP needs far less. A memory limit equal to the
        # request, so the picker is not evicted first; both set per spec (docs/traffic.md).
        "resources": {"requests": {"cpu": epp.cpu, "memory": epp.memory},
                      "limits": {"memory": epp.memory}},
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
            # The chart's Recreate keeps one prefix-cache index; these scorers hold no state, so
            # the new picker starts before the old one stops and the pool is never without one.
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
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
