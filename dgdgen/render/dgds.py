"""The DynamoGraphDeployments of one plan state, for every isolation mode, in the CRD version of
the input. Only the fields a mode must change are touched; the rest of each document is kept as
the stable (or candidate) generation has it."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dgdgen.model import dgd as dgdmod
from dgdgen.model.generation import ANN_BASE_NAME, ANN_REVISION
from dgdgen.render import frontends, grace, migration
from dgdgen.render.manifest import Manifest

if TYPE_CHECKING:
    from dgdgen.plan import GenerationState, PlanStep
    from dgdgen.plan.prepared import Prepared

OVERLAY_PROPOSED = "dgd-proposed-rollout-fields"
# Capabilities an operator needs for the opt-in modes (DEP, Dynamo issue #15214); printed by
# `dgdgen plan` and recorded on the DGD so a reviewer sees it.
CAPABILITY = {
    "worker-group": "dgd-worker-groups (per-component workerGroupName; proposed in Dynamo "
    "DEP #15214, in no released CRD)",
    "partition": "dgd-partitioned-rollout (per-component partition with ControllerRevision "
    "revisions; proposed in Dynamo DEP #15214, in no released CRD)",
}
ANN_CAPABILITY = "dgdgen.dev/requires-operator-capability"


def render(prepared: Prepared, state: PlanStep) -> Sequence[Manifest]:
    out = []
    for m in _MODES[prepared.mode](prepared, state):
        # A stable left by a worker-group or partition rollout carries the proposed fields in
        # any mode (allowed only with the spec's opt-in, pipeline.require_operator_capabilities).
        if OVERLAY_PROPOSED not in m.overlays and _has_proposed_fields(m.obj):
            m = dataclasses.replace(m, overlays=m.overlays + (OVERLAY_PROPOSED,))
        out.append(m)
    return out


def _has_proposed_fields(doc: dict[str, Any]) -> bool:
    from dgdgen.crd import overlays

    fields = overlays.load(OVERLAY_PROPOSED).capabilities()
    spec = doc.get("spec") or {}
    comps = spec.get("components") or list((spec.get("services") or {}).values())
    return any(isinstance(c, dict) and any(f in c for f in fields) for c in comps)


# --------------------------------------------------------------------------- helpers


def _set_replicas(d: dgdmod.Dgd, replicas: dict[str, int]) -> None:
    for name, comp in d.components.items():
        want = replicas[name]
        node = d.component_doc(name)
        if "replicas" in node or want != comp.replicas:
            node["replicas"] = want
    d.refresh()


def _namespaced(d: dgdmod.Dgd, namespace: str) -> None:
    d.doc.setdefault("metadata", {})["namespace"] = namespace
    meta = d.doc["metadata"]
    # keep metadata keys in a conventional order: name, namespace, then the rest
    ordered = {k: meta[k] for k in ("name", "namespace") if k in meta}
    ordered.update({k: v for k, v in meta.items() if k not in ordered})
    d.doc["metadata"] = ordered


def _annotate(d: dgdmod.Dgd, items: dict[str, str]) -> None:
    meta = d.doc.setdefault("metadata", {})
    anns = meta.setdefault("annotations", {})
    anns.update(items)


def stable_dgd(prepared: Prepared, gen: GenerationState) -> dgdmod.Dgd:
    d = prepared.stable.dgd.copy()
    _set_replicas(d, gen.replicas)
    _namespaced(d, prepared.loaded.spec.metadata.namespace)
    return d


# Built once per plan, kept for the plan last rendered: every state copies it (rebuilding it per
# state made a render cost the number of states times the DGD's size, twice over).
_template: tuple[Prepared, dgdmod.Dgd] | None = None


def _candidate_template(prepared: Prepared) -> dgdmod.Dgd:
    """:func:`_build_candidate_template`, once per plan; a copy the caller may edit."""
    global _template
    if _template is None or _template[0] is not prepared:
        _template = (prepared, _build_candidate_template(prepared))
    return _template[1].copy()


def _build_candidate_template(prepared: Prepared) -> dgdmod.Dgd:
    """The candidate's DGD with the termination grace period its frontends and workers need:
    pods it loses while serving (a rollback step, the operator's roll) finish their streams on
    SIGTERM, for up to the request timeout (:mod:`dgdgen.render.grace`). Where one DGD carries both
    generations (in place, partitioned) only the components the candidate replaces anyway get
    it: a changed template rolls the pods. The stable's template is never changed: that would
    restart its serving pods, and the pods replaced would still stop within their old grace
    period (the plan notes a stable whose grace period is short). Its frontends get a request
    migration limit for the same reason (:mod:`dgdgen.render.migration`)."""
    d = prepared.candidate.dgd.copy()
    only = (grace.rolled_components(prepared.stable.dgd, prepared.candidate.dgd)
            if prepared.mode in ("in-place", "partition") else None)
    grace.apply(d, grace.required_seconds(prepared.loaded.spec.spec), only)
    # its frontends migrate a request routed to a worker that is stopping (dgdgen.render.migration)
    migration.apply(d, only)
    if prepared.mode in ("separate-dgd", "worker-group"):
        # ready only while its model is served, not on /health (dgdgen.render.frontends)
        frontends.apply(d)
    return d


def candidate_dgd(prepared: Prepared, gen: GenerationState, name: str) -> dgdmod.Dgd:
    d = _candidate_template(prepared)
    d.doc["metadata"]["name"] = name
    _annotate(d, {ANN_REVISION: prepared.candidate.revision, ANN_BASE_NAME: prepared.base_name})
    _set_replicas(d, gen.replicas)
    _namespaced(d, prepared.loaded.spec.metadata.namespace)
    return d


# --------------------------------------------------------------------------- modes


def _separate(prepared: Prepared, state: PlanStep) -> list[Manifest]:
    out = []
    if state.stable.present:
        out.append(Manifest(stable_dgd(prepared, state.stable).doc))
    if state.candidate.present:
        out.append(Manifest(candidate_dgd(prepared, state.candidate, prepared.candidate_name).doc))
    return out


def group_component_name(name: str, revision: str) -> str:
    return f"{name}-{revision}"


def _worker_group(prepared: Prepared, state: PlanStep) -> list[Manifest]:
    """One DGD; every component once per generation, the candidate's copies in their own worker
    group (the proposed ``workerGroupName``: the operator appends a per-group hash to the Dynamo
    namespace, so each group's frontend sees only its own workers). The stable's components are
    kept exactly as they run, in the group they already have (none: the default group): naming
    their group now would change their Dynamo namespace and restart the serving generation.
    Without a candidate (the baseline and rollback) the DGD is the stable's exactly: no
    proposed field and no capability annotation is written into the running stable."""
    if not state.candidate.present:
        return [Manifest(stable_dgd(prepared, state.stable).doc)]
    # The stable DGD is the shell (metadata, graph-wide spec); its component list is rebuilt.
    d = prepared.stable.dgd.copy()
    _namespaced(d, prepared.loaded.spec.metadata.namespace)
    entries: list[tuple[str, dict[str, Any]]] = []
    for gen, source, suffix in (
        (state.stable, prepared.stable.dgd, False),
        (state.candidate, _candidate_template(prepared), True),
    ):
        if not gen.present:
            continue
        src = source.copy()
        _set_replicas(src, gen.replicas)
        for name in src.components:
            node = copy.deepcopy(src.component_doc(name))
            if suffix:
                node["workerGroupName"] = gen.revision
            new_name = group_component_name(name, gen.revision) if suffix else name
            entries.append((new_name, node))
    if d.version == "v1alpha1":
        d.doc["spec"]["services"] = {n: node for n, node in entries}
    else:
        items = []
        for n, node in entries:
            node = dict(node)
            node["name"] = n
            items.append(node)
        d.doc["spec"]["components"] = items
    _annotate(d, {ANN_CAPABILITY: CAPABILITY["worker-group"]})
    return [Manifest(d.doc, overlays=(OVERLAY_PROPOSED,))]


def _candidate_under_stable_name(prepared: Prepared) -> dgdmod.Dgd:
    """The candidate's template in the stable DGD (single-DGD modes): one frontend Service
    selects the shared frontend, so its pods carry no generation label."""
    d = _candidate_template(prepared)
    d.doc["metadata"]["name"] = prepared.stable.dgd.name
    _namespaced(d, prepared.loaded.spec.metadata.namespace)
    return d


def _partition(prepared: Prepared, state: PlanStep) -> list[Manifest]:
    """One DGD carrying the candidate template; per component ``partition`` = replicas kept on the
    OLD revision, the Kubernetes convention of StatefulSet ``rollingUpdate.partition`` and
    OpenKruise CloneSet ``partition``: ordinals below ``partition`` keep the old revision, the
    ``replicas - partition`` above it run the new one (via ControllerRevisions)."""
    if state.kind in ("baseline", "rollback"):
        return [Manifest(stable_dgd(prepared, state.stable).doc)]
    d = _candidate_under_stable_name(prepared)
    total = {n: state.stable.replicas[n] + state.candidate.replicas[n] for n in d.components}
    for name, comp in d.components.items():
        node = d.component_doc(name)
        if comp.is_worker:
            node["replicas"] = total[name]
            if state.kind != "cleanup":
                node["partition"] = state.stable.replicas[name]
        else:
            node["replicas"] = prepared.candidate.target_replicas[name]
            if state.candidate.weight < 100:
                # non-serving components keep every replica on the old revision until the 100 % step
                node["partition"] = node["replicas"]
    d.refresh()
    _annotate(d, {ANN_CAPABILITY: CAPABILITY["partition"], ANN_REVISION: prepared.candidate.revision})
    return [Manifest(d.doc, overlays=(OVERLAY_PROPOSED,) if state.kind != "cleanup" else ())]


def in_place(prepared: Prepared, state: PlanStep) -> list[Manifest]:
    """The stable DGD updated with the candidate's changes and the operator's rolling-update
    annotations per worker component (ai-dynamo/dynamo #6110)."""
    if state.kind == "baseline":
        return [Manifest(stable_dgd(prepared, state.stable).doc)]
    if state.kind == "rollback":
        # The way back is a roll too (the candidate's pods are replaced by the stable's): it keeps
        # the surge and unavailability the forward roll used, or the operator would fall back to
        # its 25 %/25 % defaults — the capacity dip the forward roll avoided (CLU201).
        d = stable_dgd(prepared, state.stable)
        _roll_settings(d, prepared)
        return [Manifest(d.doc)]
    d = _candidate_under_stable_name(prepared)
    _roll_settings(d, prepared)
    return [Manifest(d.doc)]


def _roll_settings(d: dgdmod.Dgd, prepared: Prepared) -> None:
    """The operator's rolling-update annotations on every worker component of ``d``: at most
    ``capacity.maxSurge`` new and ``maxUnavailable`` missing pods per component."""
    cap = prepared.loaded.spec.spec.capacity
    for comp in list(d.workers()):
        anns = d.component_annotations(comp.name)
        anns[dgdmod.ANN_MAX_SURGE] = str(cap.max_surge)
        anns[dgdmod.ANN_MAX_UNAVAILABLE] = str(cap.max_unavailable)
    d.refresh()


_MODES = {
    "separate-dgd": _separate,
    "worker-group": _worker_group,
    "partition": _partition,
    "in-place": in_place,
}
