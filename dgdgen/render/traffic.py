"""Traffic objects of one plan state: each generation's frontend gets its planned share of new
requests through the spec's provider (docs/traffic.md).

* ``gateway-api``: an HTTPRoute attached to a Gateway, weighted backendRefs to the frontend
  Services.
* ``gamma``: the same route attached to a Service (mesh), plus that Service.
* ``inference-pool``: one InferencePool per generation and an HTTPRoute splitting between them
  (the upstream GAIE rollout pattern: gateway-api-inference-extension v1.5.0
  site-src/guides/inferencepool-rollout.md).
* ``haproxy``: ConfigMap (``haproxy.cfg``), Deployment, Service and PodDisruptionBudget.

Weights come from :func:`dgdgen.traffic.weights.state_backends`, which refuses all-zero steps, too
many backends and shares above a generation's capacity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dgdgen.errors import InputError, PlanError
from dgdgen.model.generation import LABEL_GENERATION, LABEL_ROLE, LABEL_ROLLOUT
from dgdgen.render import epp as eppmod
from dgdgen.render.manifest import Manifest
from dgdgen.render.services import FRONTEND_PORT, MANAGED_BY, frontend_selector, service
from dgdgen.traffic import haproxy as hp
from dgdgen.traffic import preview, settings
from dgdgen.traffic.weights import Backend, routed, state_backends

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared

GATEWAY_API = "gateway.networking.k8s.io/v1"
INFERENCE_API = "inference.networking.k8s.io/v1"
INFERENCE_GROUP = "inference.networking.k8s.io"
ROLE = "traffic"
LABEL_MAX = 63


def _labels(prepared: Prepared, **extra: str) -> dict[str, str]:
    labels = dict(MANAGED_BY)
    labels[LABEL_ROLLOUT] = prepared.plan.rollout
    labels.update(extra)
    return labels


def _meta(prepared: Prepared, name: str, **labels: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": prepared.loaded.spec.metadata.namespace,
        "labels": _labels(prepared, **labels),
    }


def gateway_duration(seconds: int) -> str:
    """Seconds as a Gateway API duration (``^([0-9]{1,5}(h|m|s|ms)){1,4}$``): ``1h``, ``90s``."""
    if seconds == 0:
        return "0s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v)


def _timeouts(prepared: Prepared) -> dict[str, str]:
    from dgdgen.spec import parse_duration

    t = prepared.loaded.spec.spec.traffic
    # Long generations stream for minutes; an implementation default could cut them
    # (HTTPRoute v1.6.1 `timeouts`, schemas/crds/gateway-api): always explicit.
    out = {"request": gateway_duration(parse_duration(t.request_timeout))}
    if t.backend_request_timeout is not None:
        out["backendRequest"] = gateway_duration(parse_duration(t.backend_request_timeout))
    return out


def _route(prepared: Prepared, state: PlanStep, parent: dict[str, Any],
           refs: list[dict[str, Any]], *, hostnames: bool,
           candidate_ref: dict[str, Any] | None = None) -> Manifest:
    t = prepared.loaded.spec.spec.traffic
    spec: dict[str, Any] = {"parentRefs": [parent]}
    if hostnames and t.hostnames:
        spec["hostnames"] = list(t.hostnames)
    rules: list[dict[str, Any]] = []
    route = preview.of_state(prepared, state)
    if route is not None and candidate_ref is not None:
        # The preview: the header's value reaches the candidate's backend alone, whatever the
        # weights. A match with more headers takes precedence over the weighted rule (and the
        # first of equal rules within a route): Gateway API v1.6.1 HTTPRoute `rules[].matches`.
        rules.append({
            "matches": [{"path": {"type": "PathPrefix", "value": t.path},
                         "headers": [{"type": "Exact", "name": route.name,
                                      "value": route.value}]}],
            "backendRefs": [{**candidate_ref, "weight": 1}],
            "timeouts": _timeouts(prepared),
        })
    rules.append({
        "matches": [{"path": {"type": "PathPrefix", "value": t.path}}],
        "backendRefs": refs,
        "timeouts": _timeouts(prepared),
    })
    spec["rules"] = rules
    obj = {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": _meta(prepared, prepared.plan.rollout, **{LABEL_ROLE: ROLE}),
        "spec": spec,
    }
    return Manifest(obj)


def _gateway_parent(prepared: Prepared) -> dict[str, Any]:
    g = prepared.loaded.spec.spec.traffic.gateway
    parent: dict[str, Any] = {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                              "name": g.name}
    if g.namespace is not None:
        parent["namespace"] = g.namespace
    if g.section_name is not None:
        parent["sectionName"] = g.section_name
    if g.port is not None:
        parent["port"] = g.port
    return parent


def _service_ref(b: Backend) -> dict[str, Any]:
    # Services need `port` (CEL: "Must have port for Service reference"); weights are the plan's
    # integer percentages, relative as the API defines them (HTTPRoute v1.6.1 `weight`).
    return {"group": "", "kind": "Service", "name": b.service, "port": FRONTEND_PORT,
            "weight": b.weight}


def _service_refs(backends: Sequence[Backend]) -> list[dict[str, Any]]:
    return [_service_ref(b) for b in routed(backends)]


def _candidate(backends: Sequence[Backend]) -> Backend | None:
    return next((b for b in backends if b.role == "candidate" and b.serving), None)


def _candidate_service_ref(backends: Sequence[Backend]) -> dict[str, Any] | None:
    cand = _candidate(backends)
    return _service_ref(cand) if cand is not None else None


def render_gateway_api(prepared: Prepared, state: PlanStep,
                       backends: Sequence[Backend]) -> list[Manifest]:
    return [_route(prepared, state, _gateway_parent(prepared), _service_refs(backends),
                   hostnames=True, candidate_ref=_candidate_service_ref(backends))]


def render_gamma(prepared: Prepared, state: PlanStep,
                 backends: Sequence[Backend]) -> list[Manifest]:
    g = prepared.loaded.spec.spec.traffic.gamma
    taken = {b.service for b in backends}
    if g.service in taken:
        field = ("spec", "traffic", "gamma", "service")
        raise PlanError(
            f"the GAMMA Service {g.service!r} is also a generation's frontend Service; give the "
            "Service callers use its own name",
            location=prepared.loaded.location(field), field=field,
        )
    # `group: ""` spelled out: the field doc asks for the empty string (HTTPRoute v1.6.1).
    parent = {"group": "", "kind": "Service", "name": g.service, "port": g.port}
    # The preview rule applies to callers inside the mesh only: callers outside it follow the
    # parent Service's selector below, which reads no header (docs/traffic.md).
    out = [_route(prepared, state, parent, _service_refs(backends), hostnames=False,
                  candidate_ref=_candidate_service_ref(backends))]
    if g.create_service:
        # Callers outside the mesh bypass the route and reach the Service's own endpoints: it
        # selects one generation's frontend, never both (that would split those callers by pod
        # count instead of by the plan's weights) — the stable's while it has traffic, the
        # candidate's once the stable has none: at the 100 % step the stable's workers are gone,
        # and its frontend (Ready with no workers: `/health`) would answer 404/503 to every
        # caller the mesh does not capture (CLU101). It moves in the shift wave, with the route,
        # after the candidate's workers are ready.
        home = next((b for b in backends if b.role in ("stable", "shared") and b.present
                     and b.weight > 0),
                    next((b for b in backends if b.present and b.weight > 0),
                         next(b for b in backends if b.present)))
        svc = service(g.service, prepared.loaded.spec.metadata.namespace, prepared.plan.rollout,
                      home.revision, frontend_selector(prepared, home.revision))
        svc["spec"]["ports"][0]["port"] = g.port
        svc["metadata"]["labels"][LABEL_ROLE] = SWITCH_ROLE
        out.append(Manifest(svc))
    return out


def pool_name(b: Backend) -> str:
    return b.service.removesuffix("-fe") + "-pool"


def render_inference_pool(prepared: Prepared, state: PlanStep,
                          backends: Sequence[Backend]) -> list[Manifest]:
    from dgdgen.spec import InferencePoolSettings

    s = prepared.loaded.spec.spec.traffic.inference_pool or InferencePoolSettings.model_validate({})
    out: list[Manifest] = []
    refs = []
    candidate_ref: dict[str, Any] | None = None
    for b in routed(backends):
        name = pool_name(b)
        # The pool selects the generation's frontend pods, exactly as its Service does.
        selector = frontend_selector(prepared, b.revision)
        spec: dict[str, Any] = {
            "selector": {"matchLabels": selector},
            "targetPorts": [{"number": s.target_port}],
        }
        if s.app_protocol is not None:
            spec["appProtocol"] = s.app_protocol
        picker = s.endpoint_picker
        epp_name = eppmod.name(name, picker)
        if len(epp_name) > LABEL_MAX:
            field = ("spec", "traffic", "inferencePool", "endpointPicker", "nameSuffix")
            raise PlanError(
                f"endpoint picker Service name {epp_name!r} is longer than {LABEL_MAX} characters",
                location=prepared.loaded.location(field), field=field,
            )
        # the pool routes through the EPP rendered right here, never a Service nobody deploys
        spec["endpointPickerRef"] = {
            "group": "",
            "kind": "Service",
            "name": epp_name,
            "port": {"number": picker.port},
            "failureMode": picker.failure_mode,
        }
        labels = {LABEL_ROLE: ROLE}
        if b.revision is not None:
            labels[LABEL_GENERATION] = b.revision
        own = _labels(prepared, **({LABEL_GENERATION: b.revision} if b.revision else {}))
        out.extend(Manifest(o) for o in eppmod.objects(
            name, prepared.loaded.spec.metadata.namespace, picker, own))
        out.append(Manifest({
            "apiVersion": INFERENCE_API,
            "kind": "InferencePool",
            "metadata": _meta(prepared, name, **labels),
            "spec": spec,
        }))
        # InferencePool references take no port (GAIE v1.5.0 inferencepool-rollout.md).
        refs.append({"group": INFERENCE_GROUP, "kind": "InferencePool", "name": name,
                     "weight": b.weight})
        if b is _candidate(backends):
            candidate_ref = refs[-1]
    out.append(_route(prepared, state, _gateway_parent(prepared), refs, hostnames=True,
                      candidate_ref=candidate_ref))
    return out


def haproxy_name(prepared: Prepared) -> str:
    return f"{prepared.plan.rollout}-haproxy"


def render_haproxy(prepared: Prepared, state: PlanStep,
                   backends: Sequence[Backend]) -> list[Manifest]:
    from dgdgen.spec import parse_duration

    s = hp.settings(prepared)
    name = haproxy_name(prepared)
    cfg = hp.config_text(prepared, state, backends)
    select = {LABEL_ROLLOUT: prepared.plan.rollout, LABEL_ROLE: "haproxy"}
    labels = {LABEL_ROLE: "haproxy"}
    # Immutable, named after its content: a new config is a new ConfigMap and a new pod template,
    # so the proxy rolls and a pod still running keeps the config it started with (a mutable
    # one shared by old and new pods changes under the old ones, and the kubelet's refresh would
    # swap the file in an old pod at a moment of its own). The previous state's ConfigMap is
    # pruned last (PruneLast, waves.annotate), once the Deployment is Healthy: rolled. The new one
    # is created in the grow wave, before the shift wave points the Deployment at it.
    config_name = hp.config_map_name(name, cfg)
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(prepared, config_name, **labels),
        "immutable": True,
        "data": {hp.CONFIG_FILE: cfg},
    }
    grace = parse_duration(s.timeouts.hard_stop_after) + 10
    container: dict[str, Any] = {
        "name": "haproxy",
        "image": s.image,
        # master-worker (-W) with a master socket for hitless reloads; -db keeps it in the
        # foreground. The image's STOPSIGNAL SIGUSR1 is a soft stop (haproxy doc/management.txt).
        "args": ["-W", "-db", "-S", f"{hp.MASTER_SOCKET},mode,600",
                 "-f", f"{hp.CONFIG_DIR}/{hp.CONFIG_FILE}"],
        "ports": [
            {"name": "http", "containerPort": s.port, "protocol": "TCP"},
            {"name": "stats", "containerPort": hp.STATS_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": "stats"},
            "periodSeconds": 2,
            "failureThreshold": 2,
        },
        "livenessProbe": {
            "tcpSocket": {"port": "stats"},
            "periodSeconds": 10,
            "failureThreshold": 3,
        },
        # Leave the Service endpoints before the soft stop closes the listeners.
        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}},
        # A memory limit equal to the request: the proxy is never the first thing evicted, and
        # a leak cannot take the node's memory.
        "resources": {"requests": {"cpu": "250m", "memory": s.memory_limit},
                      "limits": {"memory": s.memory_limit}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": 99,  # the image's `haproxy` user (docker-library/haproxy 2.6/Dockerfile)
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": hp.CONFIG_DIR, "readOnly": True},
            {"name": "run", "mountPath": hp.RUN_DIR},
        ],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(prepared, name, **labels),
        "spec": {
            "replicas": s.replicas,
            "selector": {"matchLabels": select},
            "strategy": {"type": "RollingUpdate",
                         "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                "metadata": {
                    "labels": _labels(prepared, **labels),
                    # A new config (new weights in Git) changes the pod template: the proxy rolls.
                    "annotations": {hp.CHECKSUM_ANNOTATION: hp.checksum(cfg)},
                },
                "spec": {
                    "terminationGracePeriodSeconds": grace,
                    "automountServiceAccountToken": False,
                    # Pod Security Standards "restricted": the runtime's default seccomp profile.
                    "securityContext": {"runAsNonRoot": True,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    # Spread the replicas over nodes: one node going away must not take every
                    # proxy (and with it all traffic) at once.
                    "affinity": {"podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [{
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": dict(select)},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }],
                    }},
                    "containers": [container],
                    "volumes": [
                        {"name": "config", "configMap": {"name": config_name}},
                        {"name": "run", "emptyDir": {}},
                    ],
                },
            },
        },
    }
    svc_spec: dict[str, Any] = {
        "type": s.service_type,
        "selector": select,
        "ports": [{"name": "http", "port": s.port, "targetPort": "http", "protocol": "TCP",
                   "appProtocol": "http"}],
    }
    if prepared.loaded.spec.spec.traffic.sticky is not None:
        # Stick tables are per proxy replica: keep each client on one replica.
        svc_spec["sessionAffinity"] = "ClientIP"
    out = [
        Manifest(config_map),
        Manifest(deployment),
        Manifest({"apiVersion": "v1", "kind": "Service",
                  "metadata": _meta(prepared, name, **labels), "spec": svc_spec}),
    ]
    if s.replicas > 1:
        out.append(Manifest({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(prepared, name, **labels),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": select}},
        }))
    return out


PROVIDERS: dict[str, Callable[[Prepared, PlanStep, Sequence[Backend]], list[Manifest]]] = {
    "gateway-api": render_gateway_api,
    "gamma": render_gamma,
    "inference-pool": render_inference_pool,
    "haproxy": render_haproxy,
}


SWITCH_ROLE = "switch"
TWO_FRONTEND_MODES = ("separate-dgd", "worker-group")


def switch_name(prepared: Prepared) -> str:
    t = prepared.loaded.spec.spec.traffic
    return str(t.switch_service or prepared.loaded.spec.metadata.name)


def render_switch(prepared: Prepared, state: PlanStep,
                  backends: Sequence[Backend]) -> list[Manifest]:
    """Provider ``none`` with two frontends: no router can split between them, so the only real
    route is one Service whose selector points at the generation holding 100 %. Clients call it;
    it moves (in the shift wave) at the step that gives the candidate 100 %, and survives cleanup,
    which removes only the stable's own frontend Service. A state that would give both
    generations traffic is refused: with nothing to split, one of them would get its weight and
    no route."""
    loaded = prepared.loaded
    for i, step in enumerate(prepared.plan.steps[1:]):
        if 0 < step.candidate.weight < 100:
            field: tuple[str | int, ...] = ("spec", "steps", i, "weight")
            raise InputError(
                f"step {step.index} sends {step.candidate.weight}% to the candidate, but traffic "
                f"provider 'none' cannot split traffic between the two frontends of "
                f"{prepared.mode} isolation: the candidate would get weight and no route",
                location=loaded.location(field), field=field,
                hint="choose a traffic provider (gateway-api, gamma, inference-pool, haproxy), "
                "or give only steps of weight 0 and 100 (a switch of the Service "
                f"{switch_name(prepared)!r}, see docs/traffic.md)",
            )
    name = switch_name(prepared)
    if name in {b.service for b in backends}:
        field = ("spec", "traffic", "switchService")
        raise InputError(
            f"the switch Service {name!r} has the name of a generation's frontend Service",
            location=loaded.location(field), field=field,
            hint="set spec.traffic.switchService to another name",
        )
    (home,) = [b for b in backends if b.present and b.weight == 100]
    svc = service(name, loaded.spec.metadata.namespace, prepared.plan.rollout, home.revision,
                  frontend_selector(prepared, home.revision))
    svc["metadata"]["labels"][LABEL_ROLE] = SWITCH_ROLE
    return [Manifest(svc)]


def render(prepared: Prepared, state: PlanStep) -> Sequence[Manifest]:
    provider = prepared.loaded.spec.spec.traffic.provider.value
    fn = PROVIDERS.get(provider)
    preview.check(prepared)
    if fn is None:  # none
        settings.check(prepared.loaded)
        if prepared.mode in TWO_FRONTEND_MODES:
            return render_switch(prepared, state, state_backends(prepared, state))
        return []
    settings.check(prepared.loaded)
    return fn(prepared, state, state_backends(prepared, state))
