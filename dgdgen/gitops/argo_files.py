"""All Argo objects of a rollout as files (``dgdgen argo``), validated before anything is
written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen import yamlio
from dgdgen.errors import InputError
from dgdgen.gitops import argocd, rbac

if TYPE_CHECKING:
    from dgdgen.pipeline import Prepared


def _filename(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    if obj["kind"] in ("Role", "RoleBinding"):  # one per namespace, same name
        return f"{str(obj['kind']).lower()}-{meta['namespace']}-{meta['name']}.yaml"
    return f"{str(obj['kind']).lower()}-{meta['name']}.yaml"


def objects(prepared: Prepared, *, plugin: bool = False, workflow: bool = True
            ) -> list[dict[str, Any]]:
    out = argocd.objects(prepared, plugin=plugin)
    if workflow:
        try:
            from dgdgen.gitops.workflow import workflow_template
        except ImportError:  # pragma: no cover - depends on the environment
            raise InputError("the WorkflowTemplate is built with hera, which is not installed",
                             hint="pip install 'dgdgen[argo]', or pass --no-workflow") from None
        try:
            out.append(workflow_template(prepared))
        except ImportError:
            raise InputError("the WorkflowTemplate is built with hera, which is not installed",
                             hint="pip install 'dgdgen[argo]', or pass --no-workflow") from None
        out += rbac.objects(prepared)
    if plugin:
        out.append(argocd.plugin_configmap(prepared))
    return out


def files(prepared: Prepared, *, plugin: bool = False, workflow: bool = True) -> dict[str, str]:
    from dgdgen.output import validate_manifests
    from dgdgen.render import Manifest

    objs = objects(prepared, plugin=plugin, workflow=workflow)
    cm = argocd.argocd_cm_patch(prepared)
    validate_manifests([Manifest(o) for o in objs + [cm]], where="argo")
    out = {_filename(o): yamlio.dump(o) for o in objs}
    out["argocd-cm-patch.yaml"] = yamlio.dump(cm)
    if plugin:
        out["repo-server-patch.yaml"] = argocd.repo_server_patch(prepared)
    return out
