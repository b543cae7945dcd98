"""CLU203 l4-drain-ignores-pooled-clients."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import Key, build, reaches
from dgdgen.cluster.rules import InvariantMeta, Tree, object_name
from dgdgen.cluster.rules.clu202_pods_stop_under_traffic import _args, _selector, command_line
from dgdgen.cluster.transitions import State
from dgdgen.model.dgd import Role

RULE = InvariantMeta(
    code="CLU203",
    slug="l4-drain-ignores-pooled-clients",
    severity=Severity.ERROR,
    summary="A generation that callers reached through an L4 switch (a Service's selector) "
            "stops its pods after a drain that does not count the requests still arriving over "
            "pooled connections.",
    rationale=(
        "A Service's selector — the `none` provider's switch Service, the GAMMA parent for "
        "callers outside the mesh — moves only new TCP connections: kube-proxy (iptables, IPVS) "
        "and Cilium keep an established connection on the pod it was opened to, so a client "
        "with a pool of keep-alive connections goes on sending to the leaving frontend after "
        "the switch. Between its requests that frontend has nothing in flight, so a drain that "
        "waits for the in-flight gauge calls it drained while the client still uses it; and on "
        "SIGTERM the Dynamo 1.6.1 frontend does not close the idle pooled connection but "
        "answers its next request 503 \"Service is not ready\" (tests/rehearse/"
        "test_pooled_connections.py, on the real frontend). The drain of such a generation must "
        "count what still arrives at each of its pods (`--l4-switch`) and fail rather than let "
        "the shrink cut those clients off."
    ),
    remediation=(
        "Render the drain with `--l4-switch` (dgdgen does for the `none` and `gamma` "
        "providers), or move pooled clients with an L7 provider (`gateway-api`, `gamma` inside "
        "the mesh, `inference-pool`, `haproxy`), which picks a backend per request."
    ),
    help="render the drain with `--l4-switch`, or use an L7 provider",
    finding_of="the fourth review, finding 5: the switch Service and the GAMMA parent moved only "
               "new connections, and the drain called the old generation drained after four "
               "idle polls while pooled clients still used it",
)


def _l4_reached(state: State) -> dict[tuple[str, str, str], Key]:
    """Each generation an L4 switch selects in ``state``, with that switch."""
    out: dict[tuple[str, str, str], Key] = {}
    for r in reaches(build(state.objects)):
        if r.l4:
            for p in r.frontends:
                out.setdefault(p.generation, r.via)
    return out


def _switched_until(tree: Tree) -> dict[str, dict[tuple[str, str, str], Key]]:
    """For each state of the tree, by label: the generations an L4 switch selected in it or in
    a state the rollout passed through before it (a client may have opened its connection in
    any of them). One graph per state: linear in the tree."""
    out: dict[str, dict[tuple[str, str, str], Key]] = {}
    seen: dict[tuple[str, str, str], Key] = {}
    for state in tree.states:
        for gen, via in _l4_reached(state).items():
            seen.setdefault(gen, via)
        out[state.label] = dict(seen)
    return out


def check(tree: Tree) -> Iterator[Finding]:
    until = _switched_until(tree)
    for frm, to in tree.transitions:
        # a GitOps move's pair knows only the state it leaves and the one it makes
        switched = until[tree.states[-1].label] if tree.pairs is not None else \
            until.get(frm.label, {})
        if not switched:
            continue
        before, after = build(frm.objects), build(to.objects)
        serving_after = {p.generation for r in reaches(after) for p in r.frontends}
        hooks: dict[tuple[str, str, str], list[tuple[Key, bool]]] = {}
        for key, job in sorted(to.hooks.items()):
            args = _args(job)
            if "--service" not in args:
                continue
            ns = args.get("--namespace", key[1])
            pods = before.service_pods(ns, args["--service"]) + tuple(
                before.selected(ns, _selector(before, ns, args["--service"])))
            for gen in {p.generation for p in pods}:
                hooks.setdefault(gen, []).append((key, "--l4-switch" in command_line(job)))
        now = {(p.namespace, p.dgd, p.component): p for p in after.pods}
        reported: set[tuple[str, str, str]] = set()
        for p in before.pods:
            gen = p.generation
            if gen in reported or gen not in switched or gen in serving_after or not (
                    p.role is Role.FRONTEND or p.role.is_worker):
                continue
            left = now.get((p.namespace, p.dgd, p.component))
            if p.replicas - (left.replicas if left is not None else 0) <= 0:
                continue
            drains = hooks.get(gen, [])
            if not drains or any(l4 for _k, l4 in drains):
                continue  # no drain at all is CLU202's finding
            key = drains[0][0]
            loc = to.hook_documents[key].location(("spec", "template", "spec", "containers"))
            reported.add(gen)
            yield RULE.finding(
                file=loc.file, line=loc.line, column=loc.column, object=object_name(key),
                key=f"{frm.label}|{to.label}|{'/'.join(gen)}",
                message=(f"{frm.label} → {to.label}: {p.dgd}'s pods stop after the drain "
                         f"{object_name(key)}, which waits only for in-flight requests, while "
                         f"callers reached it through the L4 switch {object_name(switched[gen])}:"
                         " pooled keep-alive clients still on it are cut off (503)"))
