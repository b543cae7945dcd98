"""The service account of the rollout workflow and the least rights it needs: create and watch
AnalysisRuns and report task results in the rollout's namespace; get and patch (refresh) the
Argo CD Application in Argo CD's namespace. Git credentials come from a Secret, not from RBAC."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dgdgen.pipeline import Prepared

MANAGED_BY = {"app.kubernetes.io/managed-by": "dgdgen"}


def objects(prepared: Prepared) -> list[dict[str, Any]]:
    g = prepared.loaded.spec.spec.gitops
    ns = prepared.loaded.spec.metadata.namespace
    sa = g.workflow.service_account_name
    meta = {"labels": dict(MANAGED_BY)}

    def role(namespace: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": sa, "namespace": namespace, **meta}, "rules": rules}

    def binding(namespace: str) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": sa, "namespace": namespace, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
        }

    out = [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": sa, "namespace": ns, **meta}},
        role(ns, [
            {"apiGroups": ["argoproj.io"], "resources": ["analysisruns"],
             "verbs": ["create", "get", "list", "watch"]},
            # the Argo Workflows executor reports outputs through WorkflowTaskResults
            {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"],
             "verbs": ["create", "patch"]},
        ]),
        binding(ns),
    ]
    if g.argocd_namespace != ns:
        out += [
            role(g.argocd_namespace, [
                {"apiGroups": ["argoproj.io"], "resources": ["applications"],
                 "resourceNames": [prepared.plan.rollout] if not g.clusters else [],
                 "verbs": ["get", "list", "watch", "patch"]},
            ]),
            binding(g.argocd_namespace),
        ]
    else:
        out[1]["rules"].append({"apiGroups": ["argoproj.io"], "resources": ["applications"],
                                "verbs": ["get", "list", "watch", "patch"]})
    return out
