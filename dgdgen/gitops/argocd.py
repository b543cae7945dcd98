"""Argo CD objects for a rollout rendered into Git: an ``Application`` (or an ``ApplicationSet``
over several clusters) for the rendered path, an optional ``AppProject``, the ``argocd-cm`` patch
that installs the DGD health check, and the Config Management Plugin (``plugin.yaml`` in a
ConfigMap plus the argocd-repo-server sidecar patch) for letting Argo CD run ``dgdgen render``.

Plain dicts, validated against the vendored Argo CD CRDs like every rendered object
(schemas/crds/argo-cd: Argo CD v3.5.1's CRDs).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dgdgen import resources, yamlio
from dgdgen.errors import InputError
from dgdgen.model.generation import LABEL_ROLLOUT
from dgdgen.spec import cluster_waves

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared
    from dgdgen.spec import GitOps

HEALTH_KEY = "resource.customizations.health.nvidia.com_DynamoGraphDeployment"
OPEN_LIBS_KEY = "resource.customizations.useOpenLibs.nvidia.com_DynamoGraphDeployment"
IN_CLUSTER = "https://kubernetes.default.svc"
PLUGIN_NAME = "dgdgen"
MANAGED_BY = {"app.kubernetes.io/managed-by": "dgdgen"}


def health_lua() -> str:
    return resources.read_text("argo", "dgd-health.lua")


def _gitops(prepared: Prepared) -> GitOps:
    g: GitOps = prepared.loaded.spec.spec.gitops
    return g


def _repo_url(prepared: Prepared) -> str:
    url = _gitops(prepared).repo_url
    if not url:
        field = ("spec", "gitops", "repoUrl")
        raise InputError(
            "the Argo CD objects need the Git URL Argo CD pulls from",
            location=prepared.loaded.location(("spec", "gitops")),
            field=field,
            hint="add spec.gitops.repoUrl, e.g. https://github.com/ORG/deploy.git",
        )
    return url


def rendered_path(prepared: Prepared) -> str:
    return _gitops(prepared).path or f"deploy/{prepared.plan.rollout}"


def target_revision(prepared: Prepared) -> str:
    g = _gitops(prepared)
    return g.target_revision or g.branch or "HEAD"


def spec_repo_path(prepared: Prepared) -> str:
    """Where the rollout spec sits inside its repository (for the plugin and the workflow)."""
    g = _gitops(prepared)
    if g.workflow.spec_path:
        return g.workflow.spec_path
    from dgdgen.gitops import repo

    path = os.path.abspath(prepared.loaded.path)
    top = repo.toplevel(os.path.dirname(path))
    return os.path.relpath(path, top) if top else os.path.basename(path)


def _labels(prepared: Prepared) -> dict[str, str]:
    labels = dict(MANAGED_BY)
    labels[LABEL_ROLLOUT] = prepared.plan.rollout
    return labels


def _source(prepared: Prepared, plugin: bool) -> dict[str, Any]:
    if plugin:
        spec_path = spec_repo_path(prepared)
        return {
            "repoURL": _repo_url(prepared),
            "targetRevision": target_revision(prepared),
            "path": os.path.dirname(spec_path) or ".",
            "plugin": {
                "name": PLUGIN_NAME,
                "env": [
                    {"name": "DGDGEN_SPEC", "value": os.path.basename(spec_path)},
                    {"name": "DGDGEN_STATE",
                     "value": os.path.relpath(rendered_path(prepared),
                                              os.path.dirname(spec_path) or ".")},
                ],
            },
        }
    return {
        "repoURL": _repo_url(prepared),
        "targetRevision": target_revision(prepared),
        "path": rendered_path(prepared),
        # Only the rendered manifests: the index (.dgdgen-index) has no YAML suffix, and nothing
        # below the directory is dgdgen's.
        "directory": {"recurse": False},
    }


def syncs_automatically(prepared: Prepared) -> bool:
    """Whether Argo CD syncs a commit by itself. Not with two or more clusters: automated sync
    would move every cluster on one commit, and the canary cluster would be judged only after
    the others already run the step. There the rollout workflow (or a person, docs/gitops.md)
    syncs each cluster wave at the commit, and self-heal (undoing hand edits at once) is traded
    for the ordered waves."""
    g = _gitops(prepared)
    return bool(g.auto_sync) and len(g.clusters) < 2


def waves(prepared: Prepared) -> list[list[str]]:
    """The Applications of this rollout by cluster wave, wave 1 (the canary) first, each in the
    order the spec lists its clusters: the one Application alone without ``gitops.clusters``."""
    g = _gitops(prepared)
    if not g.clusters:
        return [[prepared.plan.rollout]]
    by: dict[int, list[str]] = {}
    for w, c in cluster_waves(g.clusters):
        by.setdefault(w, []).append(f"{c.name}-{prepared.plan.rollout}")
    return [by[w] for w in sorted(by)]


def _sync_policy(prepared: Prepared) -> dict[str, Any]:
    policy: dict[str, Any] = {}
    if syncs_automatically(prepared):
        # A promotion commit is the whole deployment action: prune removes the generation a
        # rollback or cleanup dropped, selfHeal undoes hand edits in the cluster.
        policy["automated"] = {"prune": True, "selfHeal": True}
    policy["syncOptions"] = [
        # DGDs are large; server-side apply avoids the 256 KB last-applied annotation
        # (Argo CD v3.5.1 docs/user-guide/sync-options.md).
        "ServerSideApply=true",
        "ApplyOutOfSyncOnly=true",
    ]
    if not prepared.loaded.spec.spec.analysis.hooks.enabled:
        # Transient apply errors are retried; `refresh: true` makes each retry sync the newest
        # commit, so a rollback pushed meanwhile is what the next attempt applies.
        policy["retry"] = {
            "limit": 5,
            "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"},
            "refresh": True,
        }
    # With analysis hooks there is no retry: a retried sync re-creates the PostSync AnalysisRun,
    # so a failed gate would be measured again until it passes, and each attempt holds the
    # operation (and any rollback commit) for the run's whole duration. A failed sync stays
    # failed; automated sync does not re-attempt the same commit, and the next commit (the
    # rollback) syncs at once.
    return policy


def application(prepared: Prepared, *, plugin: bool = False) -> dict[str, Any]:
    g = _gitops(prepared)
    ns = prepared.loaded.spec.metadata.namespace
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": prepared.plan.rollout,
            "namespace": g.argocd_namespace,
            "labels": _labels(prepared),
            # No cascading-delete finalizer: deleting the Application must not delete the
            # serving DGDs it synced (CLU301); remove a rollout's objects on purpose.
        },
        "spec": {
            "project": g.project,
            "source": _source(prepared, plugin),
            "destination": {"server": IN_CLUSTER, "namespace": ns},
            "syncPolicy": _sync_policy(prepared),
        },
    }


def application_set(prepared: Prepared, *, plugin: bool = False) -> dict[str, Any]:
    """One Application per ``gitops.clusters`` entry (a list generator), all syncing the same
    rendered path. With two or more clusters the template has no automated sync (see
    :func:`syncs_automatically`): a promotion commit moves no cluster until its wave is synced
    (:func:`waves`)."""
    g = _gitops(prepared)
    ns = prepared.loaded.spec.metadata.namespace
    by_server = all(c.server for c in g.clusters)
    elements = []
    for c in g.clusters:
        el = {"cluster": c.name, "namespace": c.namespace or ns}
        if by_server:
            el["server"] = str(c.server)
        elements.append(el)
    destination = (
        {"server": "{{.server}}", "namespace": "{{.namespace}}"} if by_server
        else {"name": "{{.cluster}}", "namespace": "{{.namespace}}"}
    )
    labels = _labels(prepared)
    labels["dgdgen.dev/cluster"] = "{{.cluster}}"
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {
            "name": prepared.plan.rollout,
            "namespace": g.argocd_namespace,
            "labels": _labels(prepared),
        },
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            # deleting the ApplicationSet (or a cluster leaving the list) leaves what its
            # Applications deployed running in every cluster (CLU301)
            "syncPolicy": {"preserveResourcesOnDeletion": True},
            "template": {
                "metadata": {
                    "name": "{{.cluster}}-" + prepared.plan.rollout,
                    "labels": labels,
                },
                "spec": {
                    "project": g.project,
                    "source": _source(prepared, plugin),
                    "destination": destination,
                    "syncPolicy": _sync_policy(prepared),
                },
            },
        },
    }


def app_names(prepared: Prepared) -> list[str]:
    """The Applications of this rollout, in the order the workflow moves them: the one
    Application, or one per ``gitops.clusters`` entry, wave by wave (:func:`waves`)."""
    return [app for wave in waves(prepared) for app in wave]


def manual_sync_note(prepared: Prepared, commit: str, *, pushed: bool, step: int | None,
                     all_at_once: bool = False) -> str | None:
    """What a person who runs a GitOps move by hand must do when Argo CD does not sync the
    commit by itself (:func:`syncs_automatically`): the ``argocd app sync`` commands, wave by
    wave (``all_at_once``: a rollback, every cluster in one sync). None when Argo CD syncs it."""
    if syncs_automatically(prepared):
        return None
    g = _gitops(prepared)
    ws = [app_names(prepared)] if all_at_once else waves(prepared)
    head = "" if pushed else "push it, then "
    if len(g.clusters) > 1:
        what = (f"cluster waves: Argo CD syncs none of the {len(g.clusters)} clusters by itself "
                "(spec.gitops.clusters), so this commit moves no cluster until each wave is "
                f"synced; {head}")
    else:
        what = f"spec.gitops.autoSync is off: this commit moves nothing until it is synced; {head}"
    parts = []
    for w, apps in enumerate(ws, 1):
        names = " ".join(apps)
        cmd = (f"`argocd app sync {names} --revision {commit} --prune` and "
               f"`argocd app wait {names} --operation --sync --health`")
        if step is not None and g.clusters and prepared.loaded.spec.spec.analysis.enabled \
                and w < len(ws):
            cmd += " and its gate, cluster by cluster (" + ", ".join(
                f"`dgdgen analyze {os.path.relpath(prepared.loaded.path)} --step {step} "
                f"--cluster {a.removesuffix('-' + prepared.plan.rollout)}`" for a in apps) + ")"
        parts.append((f"wave {w}: " if len(ws) > 1 else "") + cmd)
    order = "; only when a wave passed, " if len(ws) > 1 else ""
    return what + order.join(parts) + (
        " (every cluster at once: the way back)" if all_at_once and len(g.clusters) > 1 else "")


def written_kinds(prepared: Prepared) -> list[tuple[str, str]]:
    """(API group, kind) of every object any state of the rollout writes into Git, sorted."""
    from dgdgen.pipeline.files import deployed
    from dgdgen.render import render_state

    kinds: set[tuple[str, str]] = set()
    for state in prepared.plan.all_states():
        for m in deployed(render_state(prepared, state)):
            api = str(m.obj["apiVersion"])
            kinds.add((api.rpartition("/")[0], str(m.obj["kind"])))
    return sorted(kinds)


def app_project(prepared: Prepared) -> dict[str, Any]:
    """Allows only this repository, the rollout's namespace(s) and the kinds its states write;
    no cluster-scoped kinds. A kind not listed (a Secret, a ClusterRoleBinding) cannot be synced
    by an Application of this project even if someone commits it to the rendered path (the drain
    hook's and the endpoint pickers' accounts bring Role and RoleBinding into the list: see
    docs/gitops.md)."""
    g = _gitops(prepared)
    ns = prepared.loaded.spec.metadata.namespace
    destinations: list[dict[str, str]] = []
    if g.clusters:
        for c in g.clusters:
            d = {"namespace": c.namespace or ns}
            d.update({"server": c.server} if c.server else {"name": c.name})
            destinations.append(d)
    else:
        destinations.append({"server": IN_CLUSTER, "namespace": ns})
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": g.project, "namespace": g.argocd_namespace,
                     "labels": _labels(prepared)},
        "spec": {
            "description": f"dgdgen rollout {prepared.plan.rollout}",
            "sourceRepos": [_repo_url(prepared)],
            "destinations": destinations,
            "clusterResourceWhitelist": [],
            "namespaceResourceWhitelist": [{"group": grp, "kind": kind}
                                           for grp, kind in written_kinds(prepared)],
        },
    }


def account(prepared: Prepared) -> str:
    """The Argo CD local account whose API token the rollout workflow uses."""
    return f"dgdgen-{prepared.plan.rollout}"


def argocd_server(prepared: Prepared) -> str:
    g = _gitops(prepared)
    if g.workflow.argocd_server:
        return str(g.workflow.argocd_server)
    return (f"https://argocd-server.{g.argocd_namespace}.svc."
            f"{prepared.loaded.spec.spec.cluster_domain}")


def argocd_cm_patch(prepared: Prepared, *, workflow: bool = False) -> dict[str, Any]:
    """The keys to merge into ``argocd-cm`` (apply with ``kubectl patch --type merge``, never
    ``kubectl apply``: the ConfigMap belongs to the Argo CD installation). With the workflow:
    also the local account it authenticates as (API keys only, no UI login)."""
    g = _gitops(prepared)
    # the health check times an `insufficient_capacity` wait (os.time, os.date, string.match:
    # argo/dgd-health.lua), which Argo CD's health sandbox gives only with open libraries
    data = {HEALTH_KEY: health_lua(), OPEN_LIBS_KEY: "true"}
    if workflow:
        data[f"accounts.{account(prepared)}"] = "apiKey"
        data[f"accounts.{account(prepared)}.enabled"] = "true"
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": g.argocd_namespace,
            "labels": {"app.kubernetes.io/name": "argocd-cm",
                       "app.kubernetes.io/part-of": "argocd"},
        },
        "data": data,
    }


def argocd_rbac_cm_patch(prepared: Prepared) -> dict[str, Any]:
    """The workflow account's Argo CD RBAC: ``get`` (read, refresh) and ``sync`` (terminate a
    running operation) on exactly this rollout's Applications — nothing else, no wildcard. A
    ``policy.<name>.csv`` key of its own, which Argo CD adds to ``policy.csv``, so merging it
    leaves the installation's policy alone."""
    g = _gitops(prepared)
    role = f"role:{account(prepared)}"
    lines = [f"# dgdgen rollout {prepared.plan.rollout}: what its workflow may do in Argo CD"]
    for app in app_names(prepared):
        for action in ("get", "sync"):
            lines.append(f"p, {role}, applications, {action}, {g.project}/{app}, allow")
    lines.append(f"g, {account(prepared)}, {role}")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-rbac-cm",
            "namespace": g.argocd_namespace,
            "labels": {"app.kubernetes.io/name": "argocd-rbac-cm",
                       "app.kubernetes.io/part-of": "argocd"},
        },
        "data": {f"policy.{account(prepared)}.csv": "\n".join(lines) + "\n"},
    }


def plugin_configmap(prepared: Prepared) -> dict[str, Any]:
    g = _gitops(prepared)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "dgdgen-cmp-plugin", "namespace": g.argocd_namespace,
                     "labels": dict(MANAGED_BY)},
        "data": {"plugin.yaml": resources.read_text("argo", "plugin.yaml")},
    }


def repo_server_patch(prepared: Prepared) -> str:
    """The argocd-repo-server sidecar (a strategic-merge patch), with the promotion image."""
    text = resources.read_text("argo", "repo-server-patch.yaml")
    return text.replace("IMAGE", _gitops(prepared).workflow.image)


def objects(prepared: Prepared, *, plugin: bool = False) -> list[dict[str, Any]]:
    """The Argo CD custom resources (validated against the vendored CRDs by the caller)."""
    g = _gitops(prepared)
    out = [application_set(prepared, plugin=plugin) if g.clusters
           else application(prepared, plugin=plugin)]
    if g.app_project:
        out.append(app_project(prepared))
    return out


def dump(obj: dict[str, Any]) -> str:
    return yamlio.dump(obj)
