"""Argo CD objects for a rollout rendered into Git: an ``Application`` (or an ``ApplicationSet``
over several clusters) for the rendered path, an optional ``AppProject``, the ``argocd-cm`` patch
that installs the DGD health check, and the Config Management Plugin (``plugin.yaml`` in a
ConfigMap plus the argocd-repo-server sidecar patch) for letting Argo CD run ``dgdgen render``.

Plain dicts, validated against the vendored Argo CD CRDs like every rendered object
(facts/argo.md §3.1).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dgdgen import resources, yamlio
from dgdgen.errors import InputError
from dgdgen.generation import LABEL_ROLLOUT

if TYPE_CHECKING:
    from dgdgen.pipeline import Prepared
    from dgdgen.spec import GitOps

HEALTH_KEY = "resource.customizations.health.nvidia.com_DynamoGraphDeployment"
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


def _sync_policy(prepared: Prepared) -> dict[str, Any]:
    g = _gitops(prepared)
    policy: dict[str, Any] = {}
    if g.auto_sync:
        # A promotion commit is the whole deployment action: prune removes the generation a
        # rollback or cleanup dropped, selfHeal undoes hand edits in the cluster.
        policy["automated"] = {"prune": True, "selfHeal": True}
    policy["syncOptions"] = [
        # DGDs are large; server-side apply avoids the 256 KB last-applied annotation
        # (facts/argo.md §3.3).
        "ServerSideApply=true",
        "ApplyOutOfSyncOnly=true",
    ]
    policy["retry"] = {
        "limit": 5,
        "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"},
    }
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
            # delete the app's resources with it (Argo CD's cascading-delete finalizer)
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
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
    rendered path: a promotion commit moves every cluster one step."""
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
            "template": {
                "metadata": {
                    "name": "{{.cluster}}-" + prepared.plan.rollout,
                    "labels": labels,
                    "finalizers": ["resources-finalizer.argocd.argoproj.io"],
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


def app_project(prepared: Prepared) -> dict[str, Any]:
    """Allows only this repository and the rollout's namespace(s); no cluster-scoped kinds."""
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
            "namespaceResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }


def argocd_cm_patch(prepared: Prepared) -> dict[str, Any]:
    """The keys to merge into ``argocd-cm`` (apply with ``kubectl patch --type merge``, never
    ``kubectl apply``: the ConfigMap belongs to the Argo CD installation)."""
    g = _gitops(prepared)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": g.argocd_namespace,
            "labels": {"app.kubernetes.io/name": "argocd-cm",
                       "app.kubernetes.io/part-of": "argocd"},
        },
        "data": {HEALTH_KEY: health_lua()},
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
