"""CLU101 incomplete-generation-reachable."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import Reach, reaches
from dgdgen.cluster.rules import InvariantMeta, Tree, object_name
from dgdgen.cluster.transitions import Moment

RULE = InvariantMeta(
    code="CLU101",
    slug="incomplete-generation-reachable",
    severity=Severity.ERROR,
    summary="A client path reaches a frontend whose generation runs no worker of a role it "
            "needs, at some moment of a state or of a transition between states.",
    rationale=(
        "A Dynamo frontend's readiness probe (`/health`) answers 200 with no workers, so a "
        "Service keeps a workerless frontend in its endpoints; the frontend then answers 404 "
        "(no workers for the model) or 503 (a disaggregated generation with prefill or decode "
        "workers alone: every backend declares the other role in its card's `needs`, and the "
        "frontend routes only to a generation whose needs are met) to every request it gets "
        "(observed on the Dynamo 1.6.1 frontend: docs/traffic.md, \"Frontend readiness and "
        "resources\"; tests/check/test_runtime_needs.py). A probe or health check on the "
        "model's ready path takes such a frontend out: it answers 404 without workers and 503 "
        "with one role alone. Every path a caller can take — a Gateway's route, a mesh route, a "
        "Service called directly (callers outside a GAMMA mesh follow the parent Service's "
        "selector, not the route), an InferencePool, HAProxy — must lead only to frontends "
        "whose generation has every worker role running, at every sync-wave boundary Argo CD "
        "passes through, not only once the state has settled."
    ),
    remediation=(
        "Point the path at the generation that serves (the parent or switch Service selects the "
        "frontend of the generation with the traffic), keep the leaving generation's workers "
        "until its paths have moved, or give the frontend a readiness probe on "
        "`/v1/models/{model}/ready`."
    ),
    help="point the path at the generation that serves, or keep its workers",
    finding_of="the fourth review, finding 1: at the 100 % step the GAMMA parent Service still "
               "selected the stable frontend, whose workers were scaled to 0",
)


def _violations(tree: Tree, moment: Moment) -> Iterator[tuple[Reach, str, str]]:
    """(path, what it reaches, the generation's missing roles) of every broken path."""
    graph = tree.graph(moment)
    gens = graph.generations()
    for reach in reaches(graph):
        if reach.match:
            continue  # a preview route: CLU104
        if not reach.frontends:
            yield reach, "no ready frontend at all", ""
        elif reach.checked and all(gens[fe.generation].missing() for fe in reach.frontends):
            # the ready-path check takes every one out: nothing is left to serve
            yield reach, ("no frontend whose generation is complete (its health check takes "
                          "every one out)"), ""
        for fe in reach.frontends:
            gen = gens[fe.generation]
            missing = gen.missing()
            if missing and not reach.checked:  # a ready-path check takes it out
                what = (f"frontend {fe.name()}, whose generation {gen.label} runs no "
                        f"{' and no '.join(missing)} worker")
                yield reach, what, gen.label


def check(tree: Tree) -> Iterator[Finding]:
    at_rest: dict[str, set[tuple[str, str]]] = {}
    seen: set[tuple[str, str, str]] = set()
    for moment in tree.moments():
        where = moment.label.split(",")[0].removesuffix(" at rest")
        for reach, what, gen in _violations(tree, moment):
            if moment.frm is None:
                at_rest.setdefault(moment.to.label, set()).add((reach.entry, gen))
                if moment.to.label in tree.quiet:
                    continue
            elif (reach.entry, gen) in at_rest.get(moment.frm.label, set()) | \
                    at_rest.get(moment.to.label, set()):
                continue  # the state's own finding says it
            if (where, reach.entry, gen) in seen:
                continue
            seen.add((where, reach.entry, gen))
            file, line, col = tree.where(moment, reach.via, reach.path)
            yield RULE.finding(
                file=file, line=line, column=col, object=object_name(reach.via),
                key=f"{where}|{reach.entry}|{gen}",
                message=f"{moment.label}: {reach.entry} reach {what}: their requests fail",
            )
