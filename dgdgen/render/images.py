"""The images dgdgen's own rendered objects run, and the warning when one of them is the default
promotion image, which no registry publishes.

``spec.gitops.workflow.image`` defaults to ``ghcr.io/dgdgen/dgdgen-promote:<version>``, the tag
``docker build -f argo/Dockerfile`` is given in docs/gitops.md: every user builds and pushes their
own. A tree that runs that default pulls nothing: the drain hook Job stays ``ErrImagePull``, the
sync waits on it, and the rollout stops at its first drain (the quality gate's Job the same way,
the workflow at its first step). :func:`warning` says so once per spec (`render`, `plan`,
`validate`, `argo`), before the rollout runs; it goes away once the image is another one or is
pinned by digest (someone pushed it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dgdgen.render import analysis, drain, waves
from dgdgen.spec import PROMOTION_REPOSITORY

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

WORKFLOW_FIELD = ("spec", "gitops", "workflow", "image")
QUALITY_FIELD = ("spec", "analysis", "quality", "image")


def unpublished(image: str) -> bool:
    """Whether ``image`` is the default promotion image's repository without a digest."""
    if "@" in image:
        return False
    head, colon, tag = image.rpartition(":")  # a ':' before a '/' is a registry's port
    return (head if colon and "/" not in tag else image) == PROMOTION_REPOSITORY


def rendered(prepared: Prepared, *, workflow: bool = False
             ) -> list[tuple[tuple[str, ...], str, str]]:
    """(spec field, image, what runs it) of each promotion image the rollout's rendered objects
    run: the drain hooks' Jobs (in any state of the plan), the quality gate's Job; with
    ``workflow``, the Argo Workflows template (``dgdgen argo``)."""
    spec = prepared.loaded.spec.spec
    plan = prepared.plan
    users: list[str] = []
    if any(drain.leaving(prepared, st, waves.plan_previous(plan, st)) for st in plan.all_states()):
        users.append("the drain hook Jobs")
    if workflow:
        users.append("the workflow")
    out: list[tuple[tuple[str, ...], str, str]] = []
    if users:
        out.append((WORKFLOW_FIELD, spec.gitops.workflow.image, " and ".join(users)))
    if analysis.quality_job_rendered(prepared):
        assert spec.analysis.quality is not None
        out.append((QUALITY_FIELD, spec.analysis.quality.image, "the quality gate's Job"))
    return out


def warning(prepared: Prepared, *, workflow: bool = False) -> str | None:
    """One line naming every field whose image is the unpublished default, or None."""
    bad = [(f, image, who) for f, image, who in rendered(prepared, workflow=workflow)
           if unpublished(image)]
    if not bad:
        return None
    given = [f for f, _, _ in bad if _given(prepared, f)]
    where = prepared.loaded.location(given[0] if given else ("spec",))
    fields = " and ".join(".".join(f) for f, _, _ in bad)
    who = " and ".join(w for _, _, w in bad)
    return (
        f"{where}: {fields}: {bad[0][1]} is dgdgen's default promotion image, which no "
        f"registry publishes: {who} cannot pull it and the rollout stops there; build "
        f"argo/Dockerfile, push it, and set {'each' if len(bad) > 1 else 'it'} to "
        "REGISTRY/dgdgen-promote@sha256:<digest> (docs/gitops.md, \"The promotion image\")"
    )


def _given(prepared: Prepared, field: tuple[str, ...]) -> bool:
    """Whether the spec sets ``field`` (the quality gate's image is required once it is set)."""
    if field == WORKFLOW_FIELD:
        return "image" in prepared.loaded.spec.spec.gitops.workflow.model_fields_set
    return True
