"""CLU302 fan-out-moves-every-cluster-at-once."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dgdgen import yamlio
from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import Key
from dgdgen.cluster.rules import InvariantMeta, Tree, list_of, mapping_at, object_name
from dgdgen.cluster.transitions import State
from dgdgen.errors import DgdgenError

RULE = InvariantMeta(
    code="CLU302",
    slug="fan-out-moves-every-cluster-at-once",
    severity=Severity.ERROR,
    summary="One promotion commit would move two or more clusters at once: no canary cluster is "
            "synced and judged on its own metrics before the others move.",
    rationale=(
        "An ApplicationSet whose Applications sync automatically applies each commit of the "
        "rendered path to every cluster it lists as soon as Argo CD sees it (Argo CD v3.5.1 "
        "docs/user-guide/auto_sync.md). Each cluster's gate then judges a step every cluster "
        "already runs: a candidate that fails only under one region's traffic reaches all "
        "regions before any gate can stop it, and the rollback has to undo all of them. The "
        "same holds for a rollout workflow that syncs a later cluster wave before the earlier "
        "wave is synced, Healthy and its AnalysisRuns Successful."
    ),
    remediation=(
        "With two or more clusters, leave `syncPolicy.automated` off the ApplicationSet's "
        "template and move the clusters in waves (`spec.gitops.clusters[].wave`; by default "
        "the first listed cluster is the canary): the rollout workflow (`dgdgen argo`) syncs "
        "each wave at the commit and runs its AnalysisRuns before the next wave moves "
        "(docs/gitops.md, \"Several clusters\")."
    ),
    help="leave `automated` off; move the clusters in waves",
    finding_of="the fourth review, finding 6: multi-cluster fan-out, one commit moved every "
               "cluster at once (no canary cluster)",
)

CLUSTER = "{{.cluster}}"
LABEL_CLUSTER = "dgdgen.dev/cluster"



def _apps(appset: Mapping[str, Any]) -> list[str]:
    """The Applications a list-generator ApplicationSet generates, by the ``{{.cluster}}`` in
    its template's name (an element without a cluster counts under its position)."""
    name = str(mapping_at(appset, "spec", "template", "metadata").get("name", ""))
    out = []
    for gen in list_of(mapping_at(appset, "spec").get("generators")):
        for k, el in enumerate(list_of(mapping_at(gen, "list").get("elements"))):
            cluster = str(mapping_at(el).get("cluster", f"#{k}"))
            out.append(name.replace(CLUSTER, cluster) if CLUSTER in name else f"{name}#{k}")
    return out


def _clusters(appset: Mapping[str, Any]) -> list[str]:
    return [str(mapping_at(el).get("cluster")) for gen in list_of(mapping_at(appset, "spec").get("generators"))
            for el in list_of(mapping_at(gen, "list").get("elements"))]


def _commit(revision: str) -> str:
    """``{{steps.NAME.outputs.parameters.commit}}`` → ``the commit of NAME``."""
    inner = revision.strip("{} ")
    if inner.startswith("steps.") and inner.endswith(".outputs.parameters.commit"):
        return "the commit of " + inner.removeprefix("steps.").removesuffix(
            ".outputs.parameters.commit")
    return revision


@dataclass(frozen=True)
class _Node:
    group: int  # the step group: a group starts when the one before it ended
    path: tuple[str | int, ...]
    kind: str  # "sync", "wait" or "analysis"
    revision: str
    apps: tuple[str, ...]  # synced / waited on; for an analysis, the app of its cluster


def _params(node: Mapping[str, Any]) -> dict[str, str]:
    return {str(p.get("name")): str(p.get("value", "")) for p in
            list_of(mapping_at(node, "arguments").get("parameters")) if isinstance(p, Mapping)}


def _run_cluster(template: Mapping[str, Any]) -> str | None:
    manifest = mapping_at(template, "resource").get("manifest")
    if not isinstance(manifest, str):
        return None
    try:
        docs = yamlio.load_documents(manifest, "<manifest>")
    except DgdgenError:  # a hand-edited manifest that does not parse: not a cluster's run
        return None
    for d in docs:
        if isinstance(d.data, Mapping) and d.data.get("kind") == "AnalysisRun":
            cluster = mapping_at(d.data, "metadata", "labels").get(LABEL_CLUSTER)
            return str(cluster) if cluster is not None else None
    return None


def _nodes(wf: Mapping[str, Any], app_of: Mapping[str, str]) -> list[_Node]:
    """The entrypoint's sync, wait and per-cluster analysis steps, in order; an analysis
    belongs to the commit of the sync or wait before it."""
    spec = mapping_at(wf, "spec")
    templates = [t for t in list_of(spec.get("templates")) if isinstance(t, Mapping)]
    by_name = {str(t.get("name")): t for t in templates}
    entry = str(spec.get("entrypoint", ""))
    ti = next((k for k, t in enumerate(templates) if t.get("name") == entry), None)
    if ti is None:
        return []
    out: list[_Node] = []
    revision = ""
    for gi, group in enumerate(list_of(templates[ti].get("steps"))):
        for ni, node in enumerate(list_of(group)):
            if not isinstance(node, Mapping):
                continue
            path: tuple[str | int, ...] = ("spec", "templates", ti, "steps", gi, ni)
            p = _params(node)
            if "apps" in p and "revision" in p:
                revision = p["revision"]
                out.append(_Node(gi, path, "sync", revision, tuple(p["apps"].split(","))))
            elif "app" in p and "revision" in p:
                revision = p["revision"]
                out.append(_Node(gi, path, "wait", revision, (p["app"],)))
            else:
                cluster = _run_cluster(by_name.get(str(node.get("template")), {}))
                if cluster is not None and cluster in app_of and revision:
                    out.append(_Node(gi, path, "analysis", revision, (app_of[cluster],)))
    return out


def _unordered(nodes: list[_Node], apps: list[str]) -> Iterator[tuple[_Node, str]]:
    """Where the workflow moves a later wave of a commit before the earlier one is synced,
    Healthy and analysed — or moves every cluster in its first sync."""
    for revision in dict.fromkeys(n.revision for n in nodes):
        mine = [n for n in nodes if n.revision == revision]
        syncs = [n for n in mine if n.kind == "sync"]
        if not syncs:
            continue
        first = syncs[0]
        if set(apps) <= set(first.apps):
            yield first, (f"syncs all {len(apps)} clusters' Applications at {_commit(revision)} "
                          "in one step: no canary wave moves and is judged first")
            continue
        moved: set[str] = set()
        for k, (before, after) in enumerate(itertools.pairwise(syncs)):
            moved |= set(before.apps)
            waited = {a for n in mine if n.kind == "wait" and n.group < after.group
                      for a in n.apps}
            late = [n for n in mine if n.kind == "analysis" and n.apps[0] in moved
                    and n.group >= after.group]
            missing = sorted(moved - waited)
            if missing:
                yield after, (f"syncs wave {k + 2} ({', '.join(after.apps)}) at "
                              f"{_commit(revision)} before {', '.join(missing)} is synced and Healthy")
            elif late:
                yield after, (f"syncs wave {k + 2} ({', '.join(after.apps)}) at "
                              f"{_commit(revision)} before the AnalysisRun of {', '.join(n.apps[0] for n in late)} "
                              "has passed")


def _findings(state: State) -> Iterator[tuple[Key, tuple[str | int, ...], str]]:
    appsets = {k: d for k, d in state.objects.items() if d.get("kind") == "ApplicationSet"}
    flows = {k: d for k, d in state.objects.items()
             if d.get("kind") in ("WorkflowTemplate", "Workflow")}
    for key, appset in sorted(appsets.items()):
        apps = _apps(appset)
        if len(apps) < 2:
            continue
        policy = mapping_at(appset, "spec", "template", "spec", "syncPolicy")
        if "automated" in policy:
            yield key, ("spec", "template", "spec", "syncPolicy", "automated"), (
                f"ApplicationSet {key[2]} syncs its {len(apps)} clusters' Applications "
                "automatically: one promotion commit moves every cluster at once, and each "
                "cluster's gate judges a step all of them already run")
            continue
        app_of = dict(zip(_clusters(appset), apps, strict=False))
        for wkey, wf in sorted(flows.items()):
            for node, what in _unordered(_nodes(wf, app_of), apps):
                yield wkey, node.path, f"{wkey[0]} {wkey[2]} {what}"


def check(tree: Tree) -> Iterator[Finding]:
    seen: set[tuple[Key, tuple[str | int, ...]]] = set()
    for state in tree.states:
        for key, path, message in _findings(state):
            if (key, path) in seen:
                continue
            seen.add((key, path))
            loc = state.documents[key].location(path)
            yield RULE.finding(file=loc.file, line=loc.line, column=loc.column,
                               object=object_name(key), key=key[2], message=message)
