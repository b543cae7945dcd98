"""dgdgen argo SPEC -o DIR: the Argo CD and Argo Workflows objects of a rollout."""

from __future__ import annotations

import argparse
import os
import sys

HELP = "write the Argo CD Application(Set), argocd-cm health check and rollout WorkflowTemplate"
DESCRIPTION = """\
Write the objects that let Argo CD sync a rollout rendered into Git (`dgdgen render --into`) and
let Argo Workflows drive it, one file per object, each validated against the vendored CRDs:

  application-NAME.yaml        the rendered path, automated sync with prune and self-heal; an
                               ApplicationSet when spec.gitops.clusters lists clusters (two or
                               more: no automated sync, the workflow syncs wave by wave)
  appproject-NAME.yaml         with spec.gitops.appProject: only this repo and namespace
  argocd-cm-patch.yaml         the DGD health check (Lua), and the workflow's Argo CD account;
                               merge it into argocd-cm with
                               kubectl -n argocd patch configmap argocd-cm --type merge \\
                                 --patch-file argocd-cm-patch.yaml
  argocd-rbac-cm-patch.yaml    that account may get and sync this rollout's Applications, nothing
                               else (merge it into argocd-rbac-cm the same way)
  workflowtemplate-NAME.yaml   promote → per cluster wave: sync, wait for the sync operation at
                               that commit + Healthy, AnalysisRun(s) → record the gate → bake,
                               per step; rolls back on failure (needs hera)
  serviceaccount/role/rolebinding-*.yaml   what the workflow needs in Kubernetes
  configmap-dgdgen-cmp-plugin.yaml, repo-server-patch.yaml
                               with --plugin: Argo CD renders the spec itself (Config Management
                               Plugin); the Application then points at the spec's directory

Needs spec.gitops.repoUrl. See docs/gitops.md.

examples:
  dgdgen argo examples/vllm-disagg-block-size/rollout.yaml -o out/argo/
  dgdgen argo rollout.yaml -o argo/ --plugin
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory to write (replaced, as render -o replaces its folder)")
    p.add_argument("--plugin", action="store_true",
                   help="use the Config Management Plugin instead of the rendered directory")
    p.add_argument("--no-workflow", action="store_true",
                   help="skip the WorkflowTemplate (no hera needed)")
    p.add_argument("--force", action="store_true",
                   help="replace DIR even if it holds files no dgdgen write put there, or "
                   "lies inside an earlier output")


def run(args: argparse.Namespace) -> int:
    from dgdgen.gitops import argo_files
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.write import write_tree

    prepared = prepare(args.spec)
    files = argo_files.files(prepared, plugin=args.plugin, workflow=not args.no_workflow)
    write_tree(args.output, files, force=args.force)
    for note in argo_files.notes(prepared, workflow=not args.no_workflow):
        sys.stderr.write(note + "\n")
    sys.stderr.write(f"wrote {len(files)} file(s) to {os.path.relpath(args.output)}\n")
    return 0
