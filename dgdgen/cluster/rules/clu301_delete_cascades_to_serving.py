"""CLU301 delete-cascades-to-serving."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.rules import InvariantMeta, Tree, object_name

RULE = InvariantMeta(
    code="CLU301",
    slug="delete-cascades-to-serving",
    severity=Severity.ERROR,
    summary="Deleting an Argo CD Application or ApplicationSet would delete the serving DGDs it "
            "syncs.",
    rationale=(
        "An Application with the `resources-finalizer.argocd.argoproj.io` finalizer deletes "
        "every resource it manages when it is deleted (Argo CD's cascading delete), and an "
        "ApplicationSet deletes its Applications with it unless "
        "`spec.syncPolicy.preserveResourcesOnDeletion` is true (Argo CD v3.5.1 docs, "
        "operator-manual/applicationset/Application-Deletion.md). For a rollout that is every "
        "serving DGD, in every cluster of a fan-out: one `kubectl delete` of a GitOps object, "
        "or an ApplicationSet generator that stops listing a cluster, takes the model down."
    ),
    remediation=(
        "Leave the finalizer off the Applications (deleting one then leaves what it deployed "
        "running, to be removed on purpose) and set "
        "`spec.syncPolicy.preserveResourcesOnDeletion: true` on ApplicationSets."
    ),
    help="leave the finalizer off; preserve resources on ApplicationSet deletion",
    finding_of="the fourth review, finding 6: the ApplicationSet and Application carried "
               "resources-finalizer.argocd.argoproj.io without preserveResourcesOnDeletion",
)

FINALIZER = "resources-finalizer.argocd.argoproj.io"


def _finalizers(meta: Any) -> list[str]:
    raw = meta.get("finalizers") if isinstance(meta, Mapping) else None
    return [str(f) for f in raw] if isinstance(raw, list) else []


def _cascading(doc: Mapping[str, Any]) -> tuple[str, tuple[str | int, ...]] | None:
    kind = doc.get("kind")
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    if kind == "Application":
        if any(f.startswith(FINALIZER) for f in _finalizers(doc.get("metadata"))):
            return "carries the cascading-delete finalizer", ("metadata", "finalizers")
    elif kind == "ApplicationSet":
        policy = spec.get("syncPolicy") if isinstance(spec.get("syncPolicy"), Mapping) else {}
        assert isinstance(policy, Mapping)
        if policy.get("preserveResourcesOnDeletion") is not True:
            return (("deletes its Applications and their resources with it "
                    "(spec.syncPolicy.preserveResourcesOnDeletion is not true)"), ("spec",))
        tmpl = spec.get("template") if isinstance(spec.get("template"), Mapping) else {}
        assert isinstance(tmpl, Mapping)
        if any(f.startswith(FINALIZER) for f in _finalizers(tmpl.get("metadata"))):
            return ("gives its Applications the cascading-delete finalizer",
                    ("spec", "template", "metadata", "finalizers"))
    return None


def check(tree: Tree) -> Iterator[Finding]:
    seen: set[tuple[str, str, str]] = set()
    for state in tree.states:
        for key, doc in sorted(state.objects.items()):
            if key in seen or (hit := _cascading(doc)) is None:
                continue
            seen.add(key)
            what, path = hit
            loc = state.documents[key].location(path)
            yield RULE.finding(
                file=loc.file, line=loc.line, column=loc.column, object=object_name(key),
                key=key[2], message=f"{key[0]} {key[2]} {what}: deleting it deletes the "
                                    "serving DGDs it syncs",
            )
