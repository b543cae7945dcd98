"""CLU202 pods-stop-under-traffic."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping
from typing import Any

from dgdgen.check.findings import Finding, Severity
from dgdgen.check.suppress import parse_annotations
from dgdgen.cluster.model import Graph, PodSet, build, reaches
from dgdgen.cluster.rules import InvariantMeta, Tree, list_of, mapping_at, object_name
from dgdgen.cluster.transitions import State
from dgdgen.model.dgd import Role
from dgdgen.render import migration

RULE = InvariantMeta(
    code="CLU202",
    slug="pods-stop-under-traffic",
    severity=Severity.ERROR,
    summary="A transition stops frontend or worker pods of a generation that serves traffic, "
            "and neither a drain nor their termination grace covers the requests they hold.",
    rationale=(
        "A stopped pod gets SIGTERM, then SIGKILL after its `terminationGracePeriodSeconds` "
        "(unset: 30 s). A Dynamo frontend or worker finishes its in-flight requests on SIGTERM "
        "(observed on the 1.6.1 runtime, dgdgen/render/grace.py), but a request may run for the whole "
        "request bound (the route's `timeouts.request`, HAProxy's `timeout server`, the drain "
        "hook's timeout). A generation that leaves the traffic is drained first (a Sync hook "
        "waits until its frontend has nothing in flight); one that keeps serving while it "
        "shrinks has no drain, so only a grace at least as long as the request bound keeps its "
        "stopping pods from cutting requests off."
    ),
    remediation=(
        "Give the DGD's frontends and workers a `terminationGracePeriodSeconds` of at least the "
        "request bound (dgdgen gives the candidate's; the stable DGD is yours), shorten "
        "`traffic.requestTimeout`, or acknowledge the cut with a reason on the DGD: "
        "`metadata.annotations: {dgdgen.dev/ignore: \"CLU202: <why>\"}`."
    ),
    help="give pods a termination grace period of at least the request bound",
    finding_of="the fourth review, finding 8: a serving stable shrank under traffic with the "
               "default 30 s termination grace against a 610 s request bound, with only a note",
)

KUBERNETES_DEFAULT_GRACE = 30
_DURATION = re.compile(r"(\d+)(ms|s|m|h)")


def _seconds(text: str) -> int | None:
    parts = _DURATION.findall(text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        return None
    unit = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    return int(sum(int(n) * unit[u] for n, u in parts))


def request_bound(state: State) -> int | None:
    """The longest a request may run in ``state``: the largest route timeout, HAProxy server
    timeout or drain timeout rendered there; None when nothing bounds it."""
    found: list[int] = []
    for (kind, _ns, _name), doc in state.objects.items():
        if kind in ("HTTPRoute", "GRPCRoute"):
            for rule in list_of(mapping_at(doc, "spec").get("rules")):
                raw = mapping_at(rule, "timeouts").get("request")
                if isinstance(raw, str) and (s := _seconds(raw)) is not None and s > 0:
                    found.append(s)
        elif kind == "ConfigMap":
            cfg = mapping_at(doc, "data").get("haproxy.cfg")
            if isinstance(cfg, str):
                found += [int(m) for m in re.findall(r"^\s*timeout server (\d+)s", cfg, re.MULTILINE)]
    for job in state.hooks.values():
        for arg, val in _args(job).items():
            if arg == "--timeout" and val.isdigit():
                found.append(int(val))
    return max(found) if found else None


def _args(job: Mapping[str, Any]) -> dict[str, str]:
    return {a: b for a, b in itertools.pairwise(command_line(job)) if a.startswith("--")}


def command_line(job: Mapping[str, Any]) -> list[str]:
    """Every container's command and args of a Job, in order; what is not a list of strings
    (a mangled tree) is left out."""
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    tmpl = spec.get("template") if isinstance(spec, dict) else None
    pod = tmpl.get("spec") if isinstance(tmpl, dict) else None
    containers = pod.get("containers") if isinstance(pod, dict) else None
    out: list[str] = []
    for c in containers if isinstance(containers, list) else []:
        if not isinstance(c, dict):
            continue
        for part in (c.get("command"), c.get("args")):
            if isinstance(part, list):
                out += [str(x) for x in part]
    return out


def _drained(state: State, graph: Graph) -> set[tuple[str, str, str]]:
    """The generations a drain hook of ``state`` waits for (its Job's ``--service``)."""
    out: set[tuple[str, str, str]] = set()
    for (_kind, ns, _name), job in state.hooks.items():
        args = _args(job)
        if "--service" in args:
            svc_ns = args.get("--namespace", ns)
            out |= {p.generation for p in graph.service_pods(svc_ns, args["--service"])}
            out |= {p.generation for p in graph.selected(svc_ns, _selector(graph, svc_ns,
                                                                             args["--service"]))}
    return out


def _selector(graph: Graph, ns: str, name: str) -> dict[str, Any]:
    svc = graph.objects.get(("Service", ns, name)) or {}
    spec = svc.get("spec") if isinstance(svc.get("spec"), dict) else {}
    sel = spec.get("selector") if isinstance(spec, dict) else None
    return sel if isinstance(sel, dict) else {}


def _serving(graph: Graph) -> set[tuple[str, str, str]]:
    return {p.generation for r in reaches(graph) for p in r.frontends}


def _migrating(graph: Graph, pod: PodSet) -> bool:
    """Whether every frontend of ``pod``'s generation migrates a request whose worker stops."""
    key = ("DynamoGraphDeployment", pod.namespace, pod.dgd)
    limits = migration.frontend_limits(graph.dgds[key])
    fronts = [p.component for p in graph.generations()[pod.generation].frontends]
    return bool(fronts) and all(limits.get(f, 0) > 0 for f in fronts)


def _acknowledged(doc: Mapping[str, Any]) -> str | None:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(ann, dict):
        return None
    for s in parse_annotations({str(k): str(v) for k, v in ann.items()}):
        if s.reason and s.selector.upper() in (RULE.code, "CLU2", "CLU") or \
                s.selector.lower() == RULE.slug:
            return s.reason
    return None


def check(tree: Tree) -> Iterator[Finding]:
    for frm, to in tree.transitions:
        before, after = build(frm.objects), build(to.objects)
        serving_before, serving_after = _serving(before), _serving(after)
        drained = _drained(to, before) | _drained(to, after)
        bound = request_bound(to) or request_bound(frm)
        now = {(p.namespace, p.dgd, p.component): p for p in after.pods}
        for p in before.pods:
            if not (p.role is Role.FRONTEND or p.role.is_worker):
                continue
            left = now.get((p.namespace, p.dgd, p.component))
            stopped = p.replicas - (left.replicas if left is not None else 0)
            if stopped <= 0 or p.generation not in serving_before:
                continue
            key = ("DynamoGraphDeployment", p.namespace, p.dgd)
            doc = to.objects.get(key) or frm.objects.get(key) or {}
            if _acknowledged(doc) is not None:
                continue
            grace = p.grace_seconds if p.grace_seconds is not None else KUBERNETES_DEFAULT_GRACE
            state = to if key in to.documents else frm
            loc = state.documents[key].location(before.dgds[key].components[p.component].path)
            if p.generation in serving_after:
                if bound is None or grace >= bound:
                    continue
                if p.role.is_worker and _migrating(before, p):
                    continue  # its requests move to another worker of the generation
                message = (f"{frm.label} → {to.label}: {stopped} pod(s) of {p.name()} stop while "
                           f"its generation still serves traffic, with a termination grace of "
                           f"{grace} s against a request bound of {bound} s: requests running "
                           f"longer than {grace} s are cut off")
            elif p.generation not in drained:
                message = (f"{frm.label} → {to.label}: {stopped} pod(s) of {p.name()} stop as "
                           "its generation leaves the traffic, and no drain hook waits for its "
                           "in-flight requests first")
            else:
                continue
            yield RULE.finding(file=loc.file, line=loc.line, column=loc.column,
                               object=object_name(key),
                               key=f"{frm.label}|{to.label}|{p.name()}", message=message)
