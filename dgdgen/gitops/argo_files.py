"""All Argo objects of a rollout as files (``dgdgen argo``), validated before anything is
written."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen import yamlio
from dgdgen.errors import InputError
from dgdgen.gitops import argocd, rbac

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared


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


def notes(prepared: Prepared, *, workflow: bool = True) -> list[str]:
    """Warnings about the objects written (not errors: the objects are valid)."""
    from dgdgen.render import images

    image = prepared.loaded.spec.spec.gitops.workflow.image
    out = []
    default = images.warning(prepared, workflow=workflow)
    if default is not None:  # says how to pin it, too
        out.append(f"warning: {default}")
    elif workflow and "@sha256:" not in image:
        out.append(f"warning: spec.gitops.workflow.image {image!r} is not pinned by digest: the "
                   "workflow runs whatever the tag points to when a pod pulls it (pin it as "
                   "NAME@sha256:DIGEST)")
    return out


def files(prepared: Prepared, *, plugin: bool = False, workflow: bool = True) -> dict[str, str]:
    from dgdgen.pipeline.files import validate_manifests
    from dgdgen.render.manifest import Manifest

    objs = objects(prepared, plugin=plugin, workflow=workflow)
    patches = {"argocd-cm-patch.yaml": argocd.argocd_cm_patch(prepared, workflow=workflow)}
    if workflow:
        patches["argocd-rbac-cm-patch.yaml"] = argocd.argocd_rbac_cm_patch(prepared)
    validate_manifests([Manifest(o) for o in objs + list(patches.values())], where="argo")
    out = {_filename(o): yamlio.dump(o) for o in objs}
    out.update({name: yamlio.dump(o) for name, o in patches.items()})
    if plugin:
        out["repo-server-patch.yaml"] = argocd.repo_server_patch(prepared)
    return out
