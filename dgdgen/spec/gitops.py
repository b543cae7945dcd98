"""The rollout spec's ``gitops``: the deploy repository, the clusters and their waves, and the
promotion workflow (docs/gitops.md).

No ``from __future__ import annotations`` here, as in every module of the spec: with it, pydantic
compiles and evaluates each annotation from its text when a model is built.
"""

import re

from pydantic import Field, field_validator

from dgdgen.spec.base import DNS1123_LABEL, PROMOTION_IMAGE, Duration, Image, SpecModel


class Cluster(SpecModel):
    """One destination of the ApplicationSet (a list-generator element)."""

    name: str = Field(description="Cluster name as registered in Argo CD (also names the app).")
    server: str | None = Field(
        None, description="API server URL; default: the cluster registered under `name`."
    )
    namespace: str | None = Field(
        None, description="Namespace on this cluster (default: metadata.namespace)."
    )
    wave: int | None = Field(
        None, ge=1, description="The cluster wave this cluster moves in: the rollout workflow "
        "syncs each promotion commit to wave 1 (the canary), waits for it and runs its "
        "AnalysisRuns, and only then moves wave 2, and so on. Default: 1 for the first listed "
        "cluster, 2 for every other one (docs/gitops.md, \"Several clusters\")."
    )

    @field_validator("name")
    @classmethod
    def _label(cls, v: str) -> str:
        if len(v) > 40 or not DNS1123_LABEL.match(v):
            raise ValueError(f"must be a DNS-1123 label of at most 40 characters, got {v!r}")
        return v


def cluster_waves(clusters: list[Cluster]) -> list[tuple[int, Cluster]]:
    """(wave, cluster) for every cluster in the order the spec lists them: its ``wave``, else 1
    for the first listed cluster (the canary) and 2 for every other one."""
    return [(c.wave if c.wave is not None else (1 if i == 0 else 2), c)
            for i, c in enumerate(clusters)]


class Workflow(SpecModel):
    """The Argo Workflows ``WorkflowTemplate`` that drives the rollout in-cluster."""

    image: Image = Field(
        PROMOTION_IMAGE,
        description="Promotion image: dgdgen and git, built from argo/Dockerfile (the drain "
        "hooks' Jobs and the workflow run it). The default names an image that is not "
        "published: build and push it, then set this to it pinned by digest "
        "(`registry/dgdgen-promote@sha256:<64 hex>`); `render`, `plan`, `validate` and `argo` warn "
        "while the default is used, `dgdgen argo` also when the image is a tag only.",
    )
    service_account_name: str = Field(
        "dgdgen-rollout", description="Service account of the workflow's pods (create/get "
        "AnalysisRuns in the rollout's namespace; nothing on Argo CD's Applications)."
    )
    argocd_server: str | None = Field(
        None, description="Argo CD API server the workflow asks (refresh, wait, terminate a "
        "sync). Default: https://argocd-server.<argocdNamespace>.svc.<spec.clusterDomain>."
    )
    argocd_token_secret: str = Field(
        "dgdgen-argocd", description="Secret (in the rollout's namespace) with key `token`: an "
        "API token of the Argo CD account `dgdgen argo` declares (applications get and sync on "
        "this rollout's Applications only)."
    )
    wait_timeout: Duration = Field(
        "2h", description="How long the workflow waits for one commit to be synced, Healthy "
        "and (with analysis hooks) analysed, per Application."
    )
    git_secret: str = Field(
        "dgdgen-git", description="Secret with the Git push credentials: keys `username` and "
        "`password` (a token) for HTTPS remotes."
    )
    spec_path: str | None = Field(
        None, description="Path of this rollout spec inside the Git repository (default: its "
        "path relative to the work tree it is in)."
    )
    cleanup: bool = Field(
        True, description="Remove the old generation after the last step succeeds."
    )


class GitOps(SpecModel):
    """Where the rendered manifests live in Git and how Argo CD picks them up."""

    repo_url: str | None = Field(
        None, description="Git URL Argo CD pulls the rendered manifests from (Application "
        "`source.repoURL`). Needed by `dgdgen argo`."
    )
    path: str | None = Field(
        None, description="Directory of the rendered manifests inside that repository (also the "
        "default of `--into`). Default: deploy/<metadata.name>."
    )
    branch: str | None = Field(
        None, description="Branch that promotion commits are pushed to (default: the checked-out "
        "branch)."
    )
    target_revision: str | None = Field(
        None, description="Revision Argo CD syncs (default: `branch`, else HEAD)."
    )
    remote: str = Field("origin", description="Git remote that `--push` pushes to.")
    commit_author: str | None = Field(
        None, description="Author of promotion commits, `Name <email>` (default: git's "
        "configured identity, else `dgdgen <dgdgen@localhost>`)."
    )
    project: str = Field("default", description="Argo CD project of the Applications.")
    app_project: bool = Field(
        False, description="Also emit an AppProject named `project` that allows only this "
        "repository and the rollout's namespace."
    )
    argocd_namespace: str = Field("argocd", description="Namespace Argo CD runs in.")
    auto_sync: bool = Field(
        True, description="Automated sync with prune and self-heal: a promotion commit is the "
        "whole deployment action."
    )
    clusters: list[Cluster] = Field(
        default_factory=list, description="Clusters for an ApplicationSet (one Application per "
        "cluster). Empty: a single Application on the cluster Argo CD runs in."
    )
    workflow: Workflow = Field(default_factory=Workflow)

    @field_validator("clusters")
    @classmethod
    def _waves(cls, v: list[Cluster]) -> list[Cluster]:
        seen: dict[str, int] = {}
        for i, c in enumerate(v):
            if c.name in seen:
                raise ValueError(f"clusters[{i}] and clusters[{seen[c.name]}] are both named "
                                 f"{c.name!r}: each cluster is one Application, named after it")
            seen[c.name] = i
        waves = cluster_waves(v)
        used = sorted({w for w, _ in waves})
        if used and used != list(range(1, used[-1] + 1)):
            missing = sorted(set(range(1, used[-1] + 1)) - set(used))
            raise ValueError(
                "cluster waves count 1, 2, 3 … without a gap (wave 1 is the canary), got "
                f"waves {', '.join(map(str, used))}: no cluster is in wave "
                f"{', '.join(map(str, missing))}")
        if len(v) > 1 and len(used) == 1:
            raise ValueError(
                f"all {len(v)} clusters are in wave 1, so one commit would move every cluster "
                "at once: put the canary cluster(s) in wave 1 and the others in wave 2 (or leave "
                "`wave` out: the first listed cluster is the canary)")
        return v

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("/") or ".." in v.split("/") or v.strip("/") == ""):
            raise ValueError(f"a path inside the repository (relative, no '..'), got {v!r}")
        if v is not None and any(p.lower() == ".git" for p in v.split("/")):
            # git's own folder: its hooks run code, and nothing there is a work tree
            raise ValueError(f"a path of the work tree, not inside .git, got {v!r}")
        return v

    @field_validator("commit_author")
    @classmethod
    def _author(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[^<>]+ <[^<>\s]+>$", v):
            raise ValueError(f"expected `Name <email>`, got {v!r}")
        return v


