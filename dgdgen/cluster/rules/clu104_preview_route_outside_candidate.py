"""CLU104 preview-route-outside-candidate."""

from __future__ import annotations

import re
from collections.abc import Iterator

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import Reach, reaches
from dgdgen.cluster.rules import InvariantMeta, Tree, object_name
from dgdgen.cluster.transitions import Moment

RULE = InvariantMeta(
    code="CLU104",
    slug="preview-route-outside-candidate",
    severity=Severity.ERROR,
    summary="A preview route (a request carrying a header or cookie value goes to one "
            "generation whatever the weights) reaches something other than one complete "
            "candidate generation, or exists in a baseline, rollback or cleanup state.",
    rationale=(
        "A preview lets a team, a smoke test or a gate reach the candidate through the public "
        "entry point before it takes any share of real traffic (spec.traffic.preview: an "
        "HTTPRoute rule with a header match, whose precedence over the weighted rule Gateway "
        "API v1.6.1 defines, or an HAProxy ACL selecting a backend). Its callers are told they "
        "see the candidate: a path that reaches a frontend without a complete set of workers "
        "fails every one of their requests (the Dynamo 1.6.1 frontend answers 404 or 503, "
        "docs/traffic.md), one that reaches the stable generation, or both, passes a probe or a "
        "quality gate on the wrong generation, and one left in the baseline, a rollback state "
        "or cleanup keeps sending users to a candidate being removed (or to nothing). So at "
        "every moment of every state and transition a preview path reaches the frontends of "
        "exactly one generation, which the baseline does not serve and which runs every "
        "worker role, and the baseline (step-00), rollback and cleanup states carry none."
    ),
    remediation=(
        "Render the preview rule only in the forward steps (dgdgen does: spec.traffic.preview), "
        "with the candidate's backend alone, in the shift wave, after the candidate's workers "
        "are ready."
    ),
    finding_of="preview before weight (spec.traffic.preview): the route a preview adds must "
               "never outlive the candidate nor reach the stable",
)

# The states that carry no preview: the baseline, the way back and cleanup.
_NO_PREVIEW = re.compile(r"^(step-0+|rollback(-\d+)?|cleanup)$")


def _stable_generations(tree: Tree) -> set[tuple[str, str, str]]:
    """The generations the baseline (step-00) serves at rest: a preview is never theirs."""
    base = next((s for s in tree.states if re.match(r"^step-0+$", s.label)), None)
    if base is None:
        return set()
    graph = tree.graph(next(m for m in _rest(tree, base.label)))
    return {fe.generation for r in reaches(graph) if not r.match for fe in r.frontends}


def _rest(tree: Tree, label: str) -> Iterator[Moment]:
    from dgdgen.cluster.transitions import moments

    for s in tree.states:
        if s.label == label:
            yield from moments(None, s)


def _violations(tree: Tree, moment: Moment, stable: set[tuple[str, str, str]]
                ) -> Iterator[tuple[Reach, str]]:
    graph = tree.graph(moment)
    gens = graph.generations()
    for reach in reaches(graph):
        if not reach.match:
            continue
        if moment.frm is None and _NO_PREVIEW.match(moment.to.label):
            kind = {"step": "the baseline", "rollback": "a rollback state",
                    "cleanup": "cleanup"}[moment.to.label.split("-")[0]]
            yield reach, (f"the candidate although this is {kind}: a preview route exists "
                          "only in the forward steps")
            continue
        reached = sorted({fe.generation for fe in reach.frontends})
        if not reached:
            yield reach, "no ready frontend at all: their requests fail"
            continue
        if len(reached) > 1:
            yield reach, ("the frontends of " + " and ".join(gens[g].label for g in reached)
                          + ": a preview reaches one generation")
            continue
        gen = gens[reached[0]]
        if reached[0] in stable:
            yield reach, (f"the stable generation {gen.label} (the baseline serves it), not a "
                          "candidate")
            continue
        missing = gen.missing()
        if missing and not (reach.checked and gen.worker_count() == 0):
            yield reach, (f"generation {gen.label}, which runs no {' and no '.join(missing)} "
                          "worker: their requests fail")


def check(tree: Tree) -> Iterator[Finding]:
    stable = _stable_generations(tree)
    seen: set[tuple[str, str, str]] = set()
    for moment in tree.moments():
        if moment.frm is None and moment.to.label in tree.quiet:
            continue
        where = moment.label.split(",")[0].removesuffix(" at rest")
        for reach, what in _violations(tree, moment, stable):
            if (where, reach.entry, what) in seen:
                continue
            seen.add((where, reach.entry, what))
            file, line, col = tree.where(moment, reach.via, reach.path)
            yield RULE.finding(
                file=file, line=line, column=col, object=object_name(reach.via),
                key=f"{where}|{reach.entry}|{what}",
                message=f"{moment.label}: {reach.entry} reach {what}",
            )
