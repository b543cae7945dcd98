"""Small rendered objects for the cluster model's tests: DGDs, Services, routes, pools, HAProxy."""

from __future__ import annotations

from typing import Any

NS = "inference"


def dgd(name: str, *, frontend: int = 1, decode: int | None = None, prefill: int | None = None,
        agg: int | None = None, ready_probe: bool = False, group: str | None = None,
        wave: str | None = None) -> dict[str, Any]:
    services: dict[str, Any] = {"Frontend": {"componentType": "frontend", "replicas": frontend}}
    if ready_probe:
        services["Frontend"]["readinessProbe"] = {
            "httpGet": {"path": "/v1/models/m/ready", "port": "http"}}

    def worker(mode: str | None, n: int) -> dict[str, Any]:
        args = ["--model", "m"] + (["--disaggregation-mode", mode] if mode else [])
        return {"componentType": "worker", "replicas": n, "extraPodSpec": {"mainContainer": {
            "command": ["python3", "-m", "dynamo.vllm"], "args": args}}}

    if decode is not None:
        services["Decode"] = worker("decode", decode)
    if prefill is not None:
        services["Prefill"] = worker("prefill", prefill)
    if agg is not None:
        services["Worker"] = worker(None, agg)
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if wave is not None:
        meta["annotations"] = {"argocd.argoproj.io/sync-wave": wave}
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
            "metadata": meta, "spec": {"services": services}}


def service(name: str, dgd_name: str, wave: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if wave is not None:
        meta["annotations"] = {"argocd.argoproj.io/sync-wave": wave}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"selector": {
        "nvidia.com/dynamo-graph-deployment-name": dgd_name,
        "nvidia.com/dynamo-component-type": "frontend"}, "ports": [{"port": 8000}]}}


def route(name: str, weights: dict[str, int], *, parent: str | None = None,
          wave: str | None = None, pool: bool = False) -> dict[str, Any]:
    parent_ref = ({"group": "", "kind": "Service", "name": parent} if parent else
                  {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"})
    refs = [({"group": "inference.networking.k8s.io", "kind": "InferencePool"} if pool else
             {"group": "", "kind": "Service"}) | {"name": n, "weight": w}
            for n, w in weights.items()]
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if wave is not None:
        meta["annotations"] = {"argocd.argoproj.io/sync-wave": wave}
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": meta,
            "spec": {"parentRefs": [parent_ref], "rules": [{"backendRefs": refs}]}}


def preview_route(name: str, weights: dict[str, int], preview: list[str], *,
                  header: str = "X-Dgd-Preview", value: str = "on") -> dict[str, Any]:
    """A route with a preview rule (a header match; backends ``preview``) ahead of the weighted
    rule, as dgdgen renders ``spec.traffic.preview``."""
    r = route(name, weights)
    refs = [{"group": "", "kind": "Service", "name": n, "weight": 1} for n in preview]
    r["spec"]["rules"].insert(0, {"matches": [{"path": {"type": "PathPrefix", "value": "/"},
                                               "headers": [{"name": header, "value": value}]}],
                                  "backendRefs": refs})
    return r


def pool(name: str, dgd_name: str) -> dict[str, Any]:
    return {"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"selector": {"matchLabels": {
                "nvidia.com/dynamo-graph-deployment-name": dgd_name,
                "nvidia.com/dynamo-component-type": "frontend"}}}}


def haproxy_config(servers: dict[str, int], *, ready_check: bool = True,
                   name: str = "proxy-cfg", preview: str | None = None) -> dict[str, Any]:
    """An HAProxy config over ``servers`` (Service → weight); with ``preview`` (a Service), as
    dgdgen renders a preview: a frontend whose header ACL selects a backend of that Service."""
    check = "option httpchk GET /v1/models/m/ready\n" if ready_check else \
        "option httpchk GET /health\n"
    lines = "".join(f"    server s{i} {svc}.{NS}.svc.cluster.local:8000 weight {w}\n"
                    for i, (svc, w) in enumerate(servers.items()))
    text = f"backend be\n    {check}{lines}"
    if preview is not None:
        text = ("frontend fe\n    bind :8000\n    acl preview req.hdr(X-Dgd-Preview) -m str on\n"
                "    use_backend be_preview if preview\n    default_backend be\n\n" + text
                + f"\nbackend be_preview\n    {check}"
                f"    server p {preview}.{NS}.svc.cluster.local:8000 weight 1\n")
    return {"apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
            "metadata": {"name": name, "namespace": NS},
            "data": {"haproxy.cfg": text}}


def proxy_deployment(config_map: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "proxy", "namespace": NS},
            "spec": {"template": {"spec": {
                "containers": [{"name": "haproxy", "image": "haproxy:2.6"}],
                "volumes": [{"name": "config", "configMap": {"name": config_map}},
                            {"name": "run", "emptyDir": {}}]}}}}


def haproxy(servers: dict[str, int], *, ready_check: bool = True, preview: str | None = None
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The proxy as dgdgen renders it: its ConfigMap and the Deployment that mounts it."""
    cfg = haproxy_config(servers, ready_check=ready_check, preview=preview)
    return cfg, proxy_deployment(cfg["metadata"]["name"])


def objects(*docs: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    from dgdgen.cluster.model import key_of

    return {key_of(d): d for d in docs}
