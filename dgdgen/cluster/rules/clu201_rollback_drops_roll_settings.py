"""CLU201 rollback-drops-roll-settings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import dgd_of
from dgdgen.cluster.rules import InvariantMeta, Tree, object_name
from dgdgen.model.dgd import Dgd

RULE = InvariantMeta(
    code="CLU201",
    slug="rollback-drops-roll-settings",
    severity=Severity.ERROR,
    summary="A rollback state drops (or changes) the roll settings of the state it leaves, for a "
            "component whose pods the way back replaces.",
    rationale=(
        "Where one DGD carries both generations (in place), the way back is a roll of the "
        "operator like the way forward: the candidate's pods are replaced by the stable's. The "
        "operator reads the per-component annotations `nvidia.com/deployment-rolling-update-"
        "max-surge` / `-max-unavailable` (and `nvidia.com/deployment-strategy`) of the DGD it is "
        "given; without them it rolls with its defaults, 25 % surge and 25 % unavailable "
        "(ai-dynamo/dynamo PR #6110, the operator's rolling-update guide) — the capacity dip "
        "the forward roll avoided, at the moment a rollback is needed most."
    ),
    remediation=(
        "Carry the forward state's roll settings into the rollback state's DGD (dgdgen's "
        "in-place rollback does), or set them in the stable DGD itself."
    ),
    help="carry the roll settings into the rollback state's DGD",
    finding_of="the fourth review, finding 4: the in-place rollback state dropped the "
               "rolling-update annotations the forward state added",
)

PREFIXES = ("nvidia.com/deployment-rolling-update-", "nvidia.com/deployment-strategy",
            "nvidia.com/grove-update-strategy")


def _annotations(node: Mapping[str, Any], version: str) -> dict[str, str]:
    if version == "v1alpha1":
        raw = node.get("annotations")
    else:
        tmpl = node.get("podTemplate")
        meta = tmpl.get("metadata") if isinstance(tmpl, dict) else None
        raw = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items() if str(k).startswith(PREFIXES)}


def _definition(node: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A component apart from its replica counts and roll settings: what decides its pods."""
    out = {k: v for k, v in node.items() if k not in ("replicas", "partition", "annotations")}
    if version != "v1alpha1" and isinstance(out.get("podTemplate"), dict):
        tmpl = dict(out["podTemplate"])
        if isinstance(tmpl.get("metadata"), dict):
            tmpl["metadata"] = {k: v for k, v in tmpl["metadata"].items() if k != "annotations"}
        out["podTemplate"] = tmpl
    return out


def _settings(dgd: Dgd, name: str) -> tuple[dict[str, str], dict[str, Any]]:
    node = dgd.component_doc(name)
    return _annotations(node, dgd.version), _definition(node, dgd.version)


def check(tree: Tree) -> Iterator[Finding]:
    for frm, to in tree.transitions:
        if not (to.label == "rollback" or to.label.startswith("rollback-")):
            continue
        for key, new in sorted(to.objects.items()):
            old = frm.objects.get(key)
            a, b = dgd_of(old) if old is not None else None, dgd_of(new)
            if a is None or b is None:
                continue
            for name in sorted(set(a.components) & set(b.components)):
                if not a.components[name].is_worker:
                    continue
                (kept, before), (got, after) = _settings(a, name), _settings(b, name)
                if before == after or kept == got or not kept:
                    continue
                lost = {k: v for k, v in kept.items() if got.get(k) != v}
                loc = to.documents[key].location(b.components[name].path)
                yield RULE.finding(
                    file=loc.file, line=loc.line, column=loc.column, object=object_name(key),
                    key=f"{frm.label}|{to.label}|{name}",
                    message=f"{frm.label} → {to.label}: component {name} rolls back without "
                            "the roll settings the forward roll used ("
                            + ", ".join(f"{k}: {v!r}" for k, v in sorted(lost.items()))
                            + "): the operator replaces its pods with its defaults "
                            "(25 % surge, 25 % unavailable)",
                )
