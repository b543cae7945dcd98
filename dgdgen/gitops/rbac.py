"""The service account of the rollout workflow and the least Kubernetes rights it needs: create
and watch AnalysisRuns and report task results in the rollout's namespace. Nothing on Argo CD's
Applications: ``patch`` on an Application is cluster-admin by another name (it can rewrite the
source and destination), and the workflow reaches Argo CD through its API with a token limited to
``applications, get|sync`` on this rollout's Applications (:mod:`dgdgen.gitops.argocd_api`,
:func:`dgdgen.gitops.argocd.argocd_rbac_cm_patch`). Git credentials come from a Secret, not RBAC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

MANAGED_BY = {"app.kubernetes.io/managed-by": "dgdgen"}


def objects(prepared: Prepared) -> list[dict[str, Any]]:
    g = prepared.loaded.spec.spec.gitops
    ns = prepared.loaded.spec.metadata.namespace
    sa = g.workflow.service_account_name
    meta = {"labels": dict(MANAGED_BY)}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": sa, "namespace": ns, **meta}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": sa, "namespace": ns, **meta},
         "rules": [
             # AnalysisRuns are created with generateName, so their names are not known in
             # advance: resourceNames cannot narrow these verbs (and an empty list would mean
             # every object, not none).
             {"apiGroups": ["argoproj.io"], "resources": ["analysisruns"],
              "verbs": ["create", "get", "list", "watch"]},
             # the Argo Workflows executor reports outputs through WorkflowTaskResults
             {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"],
              "verbs": ["create", "patch"]},
         ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": sa, "namespace": ns, **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
         "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]},
    ]
