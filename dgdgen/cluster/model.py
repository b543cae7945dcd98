"""The serving graph of a set of rendered objects: which pods the DGDs imply, which of them each
Service, route, InferencePool and HAProxy backend reaches, and whether the frontends reached have
a complete set of workers behind them.

It reads only rendered objects (no plan, no spec), so it checks what a cluster will really be
given. What it assumes of the cluster, each from a recorded fact:

* The Dynamo operator labels every component pod with ``nvidia.com/dynamo-graph-deployment-name``
  (the DGD), ``nvidia.com/dynamo-component-type`` (its type) and ``nvidia.com/dynamo-component``
  (its name), plus the pod template's own labels (ai-dynamo/dynamo
  ``deploy/operator/internal/consts/consts.go``; :mod:`dgdgen.render.services`).
* A frontend's readiness probe is the operator's ``/health``, which answers 200 with no workers
  at all (observed on the Dynamo 1.6.1 frontend: docs/traffic.md, "Frontend readiness"):
  a Service keeps a workerless frontend in its endpoints. Only a probe on
  ``/v1/models/{model}/ready`` (404 without workers) takes it out.
* A frontend routes to the workers of its own Dynamo namespace: the workers of its DGD, and of
  its worker group where the proposed ``workerGroupName`` splits one DGD. A disaggregated graph
  serves only while both its prefill and its decode workers run: on the 1.6.1 runtime a
  generation with prefill workers alone, or decode workers alone, answers 503 to every request
  (the in-place rehearsal, docs/rehearse.md).
* HAProxy's health check on the ready path marks a frontend with no workers DOWN
  (``option httpchk GET /v1/models/…/ready``), not one with workers of one role only.
* Callers inside a GAMMA mesh follow the route's weights; callers outside it (and every caller of
  a plain Service) follow the parent Service's selector — kube-proxy does not read HTTPRoutes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dgdgen.errors import DgdgenError
from dgdgen.model.dgd import Dgd, Role, is_dgd, parse

OP_LABEL_DGD = "nvidia.com/dynamo-graph-deployment-name"
OP_LABEL_COMPONENT_TYPE = "nvidia.com/dynamo-component-type"
OP_LABEL_COMPONENT = "nvidia.com/dynamo-component"
GATEWAY_GROUP = "gateway.networking.k8s.io"
INFERENCE_GROUPS = ("inference.networking.k8s.io", "inference.networking.x-k8s.io")
READY_PATH = re.compile(r"^/v1/models/[^/]+/ready$")

HANDLE_SUFFIX = "-fe"  # a generation's own frontend Service, the handle routes point at
Key = tuple[str, str, str]  # (kind, namespace, name)


def key_of(doc: Mapping[str, Any]) -> Key:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    return (str(doc.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", "")))


@dataclass(frozen=True, eq=False)  # identity: one value per component and DGD document
class PodSet:
    """The pods of one DGD component."""

    namespace: str
    dgd: str
    component: str
    role: Role
    replicas: int
    group: str  # the worker group ("" for the DGD's own)
    labels: Mapping[str, str]
    ready_probe: bool = False  # a frontend whose readiness needs workers (the ready path)
    gpus: int = 0
    grace_seconds: int | None = None

    @property
    def generation(self) -> tuple[str, str, str]:
        return (self.namespace, self.dgd, self.group)

    def name(self) -> str:
        return f"{self.dgd}/{self.component}"


@dataclass(frozen=True)
class Generation:
    """A frontend group and the workers it routes to (one Dynamo namespace)."""

    namespace: str
    dgd: str
    group: str
    frontends: tuple[PodSet, ...]
    workers: tuple[PodSet, ...]

    @property
    def label(self) -> str:
        return self.dgd + (f" (worker group {self.group})" if self.group else "")

    def missing(self) -> list[str]:
        """The worker roles this generation has but runs no replica of (empty: complete)."""
        roles: dict[Role, int] = {}
        for w in self.workers:
            roles[w.role] = roles.get(w.role, 0) + w.replicas
        if not roles:
            return ["any worker"]
        return [r.value for r, n in sorted(roles.items(), key=lambda kv: kv[0].value) if n <= 0]

    def worker_count(self) -> int:
        return sum(w.replicas for w in self.workers)


@dataclass(frozen=True)
class Reach:
    """One way a caller gets in, and the frontends it reaches with a share > 0."""

    entry: str  # e.g. "out-of-mesh callers of Service inference/qwen-router"
    via: Key  # the object that decides it (for file:line)
    frontends: tuple[PodSet, ...]
    # frontends a health check takes out of rotation when their generation has no workers
    checked: bool = False
    path: tuple[str | int, ...] = ("spec",)  # the field of ``via`` that decides it
    # an L4 switch (a Service's selector): it moves new connections only, pooled keep-alive
    # clients stay on the frontend they connected to (docs/traffic.md, "Pooled connections")
    l4: bool = False
    # what a request must carry to take this path ("header X-Dgd-Preview: on"): a preview route
    # (a route rule's header match, an HAProxy ACL); empty for the path every request takes
    match: str = ""


@dataclass
class Graph:
    objects: dict[Key, dict[str, Any]]
    pods: list[PodSet] = field(default_factory=list)
    dgds: dict[Key, Dgd] = field(default_factory=dict)

    def generations(self) -> dict[tuple[str, str, str], Generation]:
        fronts: dict[tuple[str, str, str], list[PodSet]] = {}
        workers: dict[tuple[str, str, str], list[PodSet]] = {}
        for p in self.pods:
            if p.role is Role.FRONTEND:
                fronts.setdefault(p.generation, []).append(p)
            elif p.role.is_worker:
                workers.setdefault(p.generation, []).append(p)
        return {k: Generation(k[0], k[1], k[2], tuple(fronts.get(k, ())), tuple(workers.get(k, ())))
                for k in sorted(set(fronts) | set(workers))}

    def generation_of(self, pod: PodSet) -> Generation:
        return self.generations()[pod.generation]

    def selected(self, namespace: str, selector: Mapping[str, Any]) -> list[PodSet]:
        """The pods of DGD components a label selector matches (an empty selector: none, as a
        Service without a selector has no endpoints of its own)."""
        if not selector:
            return []
        return [p for p in self.pods if p.namespace == namespace
                and all(p.labels.get(str(k)) == str(v) for k, v in selector.items())]

    def endpoints(self, pods: Iterable[PodSet]) -> tuple[PodSet, ...]:
        """The frontends among ``pods`` that are Ready, so a Service sends them traffic."""
        out = []
        for p in pods:
            if p.role is not Role.FRONTEND or p.replicas <= 0:
                continue
            if p.ready_probe and self.generation_of(p).worker_count() <= 0:
                continue
            out.append(p)
        return tuple(out)

    def service_pods(self, namespace: str, name: str) -> tuple[PodSet, ...]:
        svc = self.objects.get(("Service", namespace, name))
        if svc is None:
            return ()
        spec = svc.get("spec") if isinstance(svc.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        sel = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
        assert isinstance(sel, dict)
        return self.endpoints(self.selected(namespace, sel))

    def pool_pods(self, namespace: str, name: str) -> tuple[PodSet, ...]:
        pool = next((o for k, o in self.objects.items()
                     if k[0] == "InferencePool" and k[1] == namespace and k[2] == name), None)
        if pool is None:
            return ()
        spec = pool.get("spec") if isinstance(pool.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        sel = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
        assert isinstance(sel, dict)
        match = sel.get("matchLabels") if isinstance(sel.get("matchLabels"), dict) else sel
        assert isinstance(match, dict)
        return self.endpoints(self.selected(namespace, match))


def _ready_probe(dgd: Dgd, name: str) -> bool:
    """Whether the component's readiness probe waits for workers (the model's ready path): the
    main container's probe, else the component's own (v1alpha1 components carry one, which the
    operator uses instead of its ``/health`` default; dgdgen.render.frontends)."""
    main = dgd.main_container(name) or {}
    probe = main.get("readinessProbe") if isinstance(main, dict) else None
    if probe is None:
        probe = dgd.component_doc(name).get("readinessProbe")
    get = probe.get("httpGet") if isinstance(probe, dict) else None
    path = get.get("path") if isinstance(get, dict) else None
    return isinstance(path, str) and bool(READY_PATH.match(path))


def pods_of(dgd: Dgd) -> list[PodSet]:
    ns = dgd.namespace or ""
    out = []
    for name, comp in sorted(dgd.components.items()):
        doc = dgd.component_doc(name)
        group = doc.get("workerGroupName") if isinstance(doc, dict) else None
        labels = {str(k): str(v) for k, v in dgd.pod_labels(name).items()}
        labels.update({OP_LABEL_DGD: dgd.name, OP_LABEL_COMPONENT_TYPE: comp.type.lower(),
                       OP_LABEL_COMPONENT: name})
        out.append(PodSet(ns, dgd.name, name, comp.role, comp.replicas,
                          group if isinstance(group, str) else "", labels,
                          comp.role is Role.FRONTEND and _ready_probe(dgd, name),
                          comp.gpus_per_replica, comp.grace_seconds))
    return out


_PARSED: dict[int, tuple[Mapping[str, Any], Dgd | None, list[PodSet]]] = {}


def _parsed(doc: Mapping[str, Any]) -> tuple[Dgd | None, list[PodSet]]:
    """A DGD document parsed once per process however many moments share it (keyed by the
    document itself, which the cache keeps alive). One that does not parse is None: the schema
    check reports it, and the model serves nothing from it."""
    hit = _PARSED.get(id(doc))
    if hit is None or hit[0] is not doc:
        try:
            dgd: Dgd | None = parse(doc)
        except DgdgenError:
            dgd = None
        hit = _PARSED[id(doc)] = (doc, dgd, pods_of(dgd) if dgd is not None else [])
    return hit[1], hit[2]


def forget() -> None:
    """Drop the parsed DGDs (a run over one tree is over)."""
    _PARSED.clear()


def dgd_of(doc: Mapping[str, Any]) -> Dgd | None:
    """The DGD a rendered document holds, or None (not a DGD, or one that does not parse)."""
    return _parsed(doc)[0] if is_dgd(doc) else None


def build(objects: Mapping[Key, dict[str, Any]]) -> Graph:
    """The graph of one moment."""
    g = Graph(dict(objects))
    for key, doc in sorted(objects.items()):
        if is_dgd(doc):
            dgd, pods = _parsed(doc)
            if dgd is not None:
                g.dgds[key] = dgd
                g.pods.extend(pods)
    return g


# --------------------------------------------------------------------------- client paths


def _weight(ref: Mapping[str, Any]) -> int:
    w = ref.get("weight", 1)
    return w if isinstance(w, int) and not isinstance(w, bool) else 1


def rule_match(rule: Mapping[str, Any]) -> str:
    """What a request must carry to take an HTTPRoute rule beyond its path: its header (query
    parameter, method) matches, e.g. ``header X-Dgd-Preview: on``; empty for a rule that every
    request of the path takes. A rule with several matches is taken by a request that meets any
    of them: one without such a condition makes it a rule for every request."""
    named = ""
    for m in _list(rule.get("matches")):
        if not isinstance(m, dict):
            continue
        asks = [f"header {h.get('name')}: {h.get('value')}" for h in _list(m.get("headers"))
                if isinstance(h, dict)]
        asks += [f"query {q.get('name')}={q.get('value')}" for q in _list(m.get("queryParams"))
                 if isinstance(q, dict)]
        if isinstance(m.get("method"), str):
            asks.append(f"method {m['method']}")
        if not asks:
            return ""
        named = named or ", ".join(asks)
    return named


def _route_backends(g: Graph, route: Mapping[str, Any], namespace: str,
                    match: str | None = None) -> tuple[PodSet, ...]:
    """The frontends a route sends requests to with weight > 0: through its rules every request
    takes (``match`` None), or through the rules that ask for ``match``."""
    spec = route.get("spec") if isinstance(route.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    out: list[PodSet] = []
    for rule in _list(spec.get("rules")):
        if not isinstance(rule, dict):
            continue
        if rule_match(rule) != (match or ""):
            continue
        for ref in _list(rule.get("backendRefs")):
            if not isinstance(ref, dict) or _weight(ref) <= 0:
                continue
            ns = str(ref.get("namespace") or namespace)
            group, kind = ref.get("group", "") or "", ref.get("kind", "Service")
            if group == "" and kind == "Service":
                out.extend(g.service_pods(ns, str(ref.get("name"))))
            elif group in INFERENCE_GROUPS and kind == "InferencePool":
                out.extend(g.pool_pods(ns, str(ref.get("name"))))
    return tuple(dict.fromkeys(out))


_SERVER = re.compile(r"^\s*server\s+\S+\s+([^\s:]+)(?::\d+)?\s*(.*)$")
_CHECK = re.compile(r"^\s*option\s+httpchk\s+(?:GET\s+)?(\S+)")


_ACL_MATCH = re.compile(r"^req\.(hdr|cook)\(([^)]*)\)\s+-m\s+str\s+(\S+)$")


def _acl_match(acl: str) -> str:
    """An ACL's test as a request match: ``req.hdr(X) -m str on`` → ``header X: on``,
    ``req.cook(C) -m str on`` → ``cookie C=on``; anything else as written."""
    m = _ACL_MATCH.match(acl.strip())
    if m is None:
        return acl.strip()
    kind, name, value = m.groups()
    return f"header {name}: {value}" if kind == "hdr" else f"cookie {name}={value}"


def _haproxy_paths(g: Graph, cfg: str) -> tuple[list[tuple[str, tuple[PodSet, ...]]], bool]:
    """The ways through an HAProxy configuration: ("", the frontends of the default backend)
    for every request, and (match, frontends) for each ``use_backend … if ACL`` (a preview);
    each backend's frontends those of its servers with weight > 0 and not ``disabled``. And
    whether its health check takes a frontend without workers out of rotation. A config with
    no ``default_backend`` (not one dgdgen renders) is read as one path over every server."""
    checked = False
    section, name = "", ""
    servers: dict[str, list[PodSet]] = {}
    acls: dict[str, str] = {}
    uses: list[tuple[str, str]] = []  # (backend, condition)
    default: str | None = None
    every: list[PodSet] = []
    for line in cfg.splitlines():
        if line and not line[0].isspace() and not line.lstrip().startswith("#"):
            words = line.split()
            section, name = words[0], (words[1] if len(words) > 1 else "")
            continue
        m = _CHECK.match(line)
        if m and READY_PATH.match(m.group(1).split("?")[0]):
            checked = True
        words = line.split()
        if section == "frontend" and words:
            if words[0] == "acl" and len(words) > 2:
                acls[words[1]] = line.split(None, 2)[2]
            elif words[0] == "use_backend" and len(words) > 3 and words[2] == "if":
                uses.append((words[1], " ".join(words[3:])))
            elif words[0] == "default_backend" and len(words) > 1:
                default = words[1]
        m = _SERVER.match(line)
        if not m:
            continue
        rest = m.group(2)
        w = re.search(r"\bweight\s+(\d+)", rest)
        if (w is not None and int(w.group(1)) == 0) or re.search(r"\bdisabled\b", rest):
            continue
        host = m.group(1).split(".")
        if len(host) >= 2:
            pods = g.service_pods(host[1], host[0])
            every.extend(pods)
            if section == "backend":
                servers.setdefault(name, []).extend(pods)
    if default is None:
        return [("", tuple(dict.fromkeys(every)))], checked
    paths = [("", tuple(dict.fromkeys(servers.get(default, []))))]
    for backend, cond in uses:
        match = " ".join(_acl_match(acls.get(c, c)) for c in cond.split())
        paths.append((match, tuple(dict.fromkeys(servers.get(backend, [])))))
    return paths, checked


def reaches(g: Graph) -> Iterator[Reach]:
    """Every way in: routes (gateway and mesh callers), the Services callers use directly
    (GAMMA parents, switch Services: not a route's, pool's or proxy's backend), HAProxy — and,
    where the objects render no way in at all (no traffic provider: callers use what the
    operator creates), each frontend's own operator Service (``{dgd}-{component}``)."""
    found = list(_rendered_reaches(g))
    yield from found
    if found:
        return
    for p in g.pods:
        if p.role is Role.FRONTEND:
            yield Reach(f"callers of the operator's Service {p.namespace}/{p.dgd}-"
                        f"{p.component.lower()}", ("DynamoGraphDeployment", p.namespace, p.dgd),
                        g.endpoints([p]))


def _list(value: object) -> list[Any]:
    """A list field of an object a pull request may have mangled: anything else reads as empty."""
    return value if isinstance(value, list) else []


def mounted_config_maps(objects: Mapping[Key, Mapping[str, Any]]
                        ) -> set[tuple[str, str]]:
    """(namespace, name) of each ConfigMap a Deployment's pod template mounts as a volume: the
    config its pods run. dgdgen's HAProxy ConfigMap is immutable and named after its content, so
    while a transition has not pruned the previous one (PruneLast) two hold a ``haproxy.cfg``;
    only the one the Deployment names is the proxy's (docs/traffic.md)."""
    out: set[tuple[str, str]] = set()
    for (kind, ns, _name), doc in objects.items():
        if kind != "Deployment":
            continue
        spec = doc.get("spec")
        tmpl = spec.get("template") if isinstance(spec, dict) else None
        pod = tmpl.get("spec") if isinstance(tmpl, dict) else None
        volumes = pod.get("volumes") if isinstance(pod, dict) else None
        for v in volumes if isinstance(volumes, list) else []:
            cm = v.get("configMap") if isinstance(v, dict) else None
            if isinstance(cm, dict) and isinstance(cm.get("name"), str):
                out.add((ns, cm["name"]))
    return out


def _rendered_reaches(g: Graph) -> Iterator[Reach]:
    backends: set[tuple[str, str]] = set()
    parents: set[tuple[str, str]] = set()
    mounted = mounted_config_maps(g.objects)
    for (kind, ns, name), doc in sorted(g.objects.items()):
        if kind in ("HTTPRoute", "GRPCRoute"):
            spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
            assert isinstance(spec, dict)
            for rule in _list(spec.get("rules")):
                for ref in _list(rule.get("backendRefs")) if isinstance(rule, dict) else []:
                    if isinstance(ref, dict) and (ref.get("group", "") or "") == "" and \
                            ref.get("kind", "Service") == "Service":
                        backends.add((str(ref.get("namespace") or ns), str(ref.get("name"))))
            for p in _list(spec.get("parentRefs")):
                if not isinstance(p, dict):
                    continue
                pns = str(p.get("namespace") or ns)
                if (p.get("group", GATEWAY_GROUP) or "") == "" and p.get("kind") == "Service":
                    parents.add((pns, str(p.get("name"))))
                    who = f"mesh callers of Service {pns}/{p.get('name')}"
                else:
                    who = f"callers through {p.get('kind', 'Gateway')} {pns}/{p.get('name')}"
                yield Reach(f"{who} ({kind} {ns}/{name})", (kind, ns, name),
                            _route_backends(g, doc, ns), path=("spec", "rules"))
                matches = dict.fromkeys(rule_match(r) for r in _list(spec.get("rules"))
                                        if isinstance(r, dict))
                for match in (m for m in matches if m):
                    yield Reach(f"{who} with {match} ({kind} {ns}/{name})", (kind, ns, name),
                                _route_backends(g, doc, ns, match), path=("spec", "rules"),
                                match=match)
        elif kind == "ConfigMap":
            data = doc.get("data") if isinstance(doc.get("data"), dict) else {}
            assert isinstance(data, dict)
            cfg = data.get("haproxy.cfg")
            if isinstance(cfg, str):
                paths, checked = _haproxy_paths(g, cfg)
                for line in cfg.splitlines():
                    m = _SERVER.match(line)
                    if m and len(m.group(1).split(".")) >= 2:
                        h = m.group(1).split(".")
                        backends.add((h[1], h[0]))
                if (ns, name) not in mounted:  # a config no proxy pod runs (yet, or any more)
                    continue
                for match, pods in paths:
                    yield Reach(f"callers through HAProxy{f' with {match}' if match else ''} "
                                f"(ConfigMap {ns}/{name})", (kind, ns, name), pods, checked,
                                path=("data", "haproxy.cfg"), match=match)
    for (kind, ns, name), doc in sorted(g.objects.items()):
        if kind != "Service" or ((ns, name) in backends and (ns, name) not in parents):
            continue
        pods = g.service_pods(ns, name)
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        sel = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
        if not pods and (ns, name) not in parents and not (
                isinstance(sel, dict) and OP_LABEL_DGD in sel):
            continue  # selects no DGD pods by design (an endpoint picker's, a proxy's Service)
        if (ns, name) not in parents and name.endswith(HANDLE_SUFFIX) \
                and len({p.generation for p in pods}) <= 1:
            continue  # one generation's own handle (`<dgd>-fe`): it lives and goes with it
        who = "out-of-mesh callers of" if (ns, name) in parents else "callers of"
        yield Reach(f"{who} Service {ns}/{name}", (kind, ns, name), pods,
                    path=("spec", "selector"), l4=True)
