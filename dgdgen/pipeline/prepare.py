"""spec → plan: the glue between the loaded spec (I/O edge) and the pure planner, plus the
isolation-mode decision for ``auto``."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from dgdgen import plan as planmod
from dgdgen.analysis.gates import check_clusters, check_gates
from dgdgen.check.classify import recommend, runtime_replaced, verdict
from dgdgen.check.context import roll_of_dgd
from dgdgen.check.facts import dgd_facts
from dgdgen.check.flags import NEWEST, normalize_release
from dgdgen.check.inplace import BOTH, RunBy, Target, roll_consequence
from dgdgen.crd import overlays
from dgdgen.errors import InputError, InputWarning, PlanError
from dgdgen.model import names
from dgdgen.model.dgd import ANN_MAX_SURGE
from dgdgen.model.generation import Generation, base_name, candidate_generation, stable_generation
from dgdgen.model.parallelism import needed
from dgdgen.plan.load import LoadedSpec, load_spec
from dgdgen.plan.prepared import Prepared
from dgdgen.render import frontends, grace, migration
from dgdgen.render.dgds import OVERLAY_PROPOSED
from dgdgen.spec import Isolation, parse_duration


def _plan_input(loaded: LoadedSpec, stable: Generation, cand: Generation, mode: str,
                steps: tuple[planmod.StepInput, ...]) -> planmod.PlanInput:
    body = loaded.spec.spec
    comps = []
    for name, sc in stable.dgd.components.items():
        cc = cand.dgd.components[name]
        comps.append(
            planmod.ComponentInput(
                name=name,
                role=sc.role.value,
                stable_replicas=stable.target_replicas[name],
                candidate_replicas=cand.target_replicas[name],
                stable_gpus=sc.gpus_per_replica,
                candidate_gpus=cc.gpus_per_replica,
            )
        )
    return planmod.PlanInput(
        rollout=loaded.spec.metadata.name,
        mode=mode,
        strategy=body.strategy.value,
        components=tuple(comps),
        steps=steps,
        max_surge=planmod.Budget(body.capacity.max_surge),
        max_unavailable=planmod.Budget(body.capacity.max_unavailable),
        headroom=planmod.Budget(body.capacity.headroom),
        stable_revision=stable.revision,
        candidate_revision=cand.revision,
        # A leaving generation drains for at most the route's whole-request timeout.
        drain_seconds=parse_duration(body.traffic.request_timeout),
    )


def prepare(path: str) -> Prepared:
    """Load a spec file and plan it. Raises :class:`InputError` (with location) on bad input."""
    loaded = load_spec(path)
    body = loaded.spec.spec
    check_gates(loaded)  # gate names are checked even while analysis is off
    stable = stable_generation(loaded.stable, body.stable.revision)
    cand = candidate_generation(stable, body.candidate, loaded.location)
    _warn_generated_revision(loaded, cand)
    _require_gpus_for_parallelism(loaded, cand)
    steps = tuple(
        planmod.StepInput(s.weight, parse_duration(s.pause) if s.pause else None, s.gate)
        for s in body.steps
    )
    mode = body.isolation.value
    reasons: tuple[str, ...] = ()
    if body.isolation in (Isolation.AUTO, Isolation.IN_PLACE):
        mode, auto_steps, reasons = decide_isolation(stable, cand, body.isolation.value,
                                                     target_of(loaded))
        if body.isolation is Isolation.IN_PLACE and mode != "in-place":
            raise InputError(
                "isolation: in-place is not allowed for this change: "
                + "; ".join(reasons)
                + ". Use separate-dgd (or auto)",
                location=loaded.location(("spec", "isolation")),
                field=("spec", "isolation"),
            )
        if not steps:
            steps = auto_steps
    require_operator_capabilities(loaded, mode)
    _warn_ungated(loaded, steps)
    try:
        plan = planmod.make_plan(_plan_input(loaded, stable, cand, mode, steps))
    except PlanError as exc:
        raise PlanError(
            exc.message, location=loaded.location(exc.field), field=exc.field, hint=exc.hint
        ) from None
    notes = reasons + _migration_notes(cand, mode) + _model_name_notes(stable, cand)
    notes += _grace_notes(loaded, stable, cand, plan) + _shrink_notes(stable, cand, plan)
    notes += _frontend_resource_notes(stable, cand, mode) + _roll_settings_notes(stable, mode)
    notes += _preview_notes(loaded, plan)
    if notes:
        plan = _with_notes(plan, notes)
    base, cand_name = _names(loaded, stable, cand, mode)
    prepared = Prepared(loaded, stable, cand, mode, plan, base, cand_name)
    check_clusters(prepared)  # each cluster of a fan-out gated on its own data, or refused
    return prepared


# The isolation modes that write a field proposed in ai-dynamo/dynamo#15214 (and in no released
# DGD CRD), with the operator capability the proposed-fields overlay names for that field.
PROPOSED_MODES = {"worker-group": "workerGroupName", "partition": "partition"}


def require_operator_capabilities(loaded: LoadedSpec, mode: str) -> None:
    """A proposed field reaches the output only when the spec states that the cluster's operator
    implements it (``spec.dynamo.operatorCapabilities``): a released operator's API server drops
    an undeclared field (or rejects the DGD), so a `worker-group` candidate would join the
    stable's pool and a `partition` would roll every replica at once. The stable DGD is checked
    too: one left by an earlier worker-group or partition rollout carries the fields, and
    rendering it re-emits them."""
    needs = overlays.load(OVERLAY_PROPOSED).capabilities()  # field -> capability
    have = set(loaded.spec.spec.dynamo.operator_capabilities)
    hint_field = "spec.dynamo.operatorCapabilities"
    if mode in PROPOSED_MODES:
        field_name = PROPOSED_MODES[mode]
        cap = needs[field_name]
        if cap not in have:
            where = ("spec", "isolation")
            raise InputError(
                f"isolation {mode!r} writes the per-component field `{field_name}`, which is "
                "proposed in Dynamo's DEP \"Revision-aware DGD rollout and release groups\" "
                "(ai-dynamo/dynamo#15214) and in no released DynamoGraphDeployment CRD: a released "
                "operator's API server drops it, so the rendered DGDs would not do what the plan "
                "says; this mode needs the operator capability " + repr(cap),
                location=loaded.location(where), field=where,
                hint=f"if this cluster's Dynamo operator implements the proposal, state it: "
                f"{hint_field}: [{cap}]; otherwise use isolation separate-dgd (released "
                "operators)",
            )
    stable = loaded.stable
    for comp in stable.components.values():
        node = stable.component_doc(comp.name)
        for field_name, cap in needs.items():
            if field_name in node and cap not in have:
                path = tuple(comp.path) + (field_name,)
                raise InputError(
                    f"the stable DGD sets `{field_name}`, a field proposed in ai-dynamo/dynamo"
                    "#15214 and in no released DynamoGraphDeployment CRD; the rendered DGDs would "
                    f"carry it, and it needs the operator capability {cap!r}",
                    location=stable.location(path), field=path,
                    hint=f"if this cluster's Dynamo operator implements the proposal, state it in "
                    f"the rollout spec: {hint_field}: [{cap}]",
                )


def _warn_generated_revision(loaded: LoadedSpec, cand: Generation) -> None:
    """Without `candidate.revision` the candidate is named by a hash of its DGD
    (:func:`dgdgen.model.generation.content_revision`): the same on every run, but any later edit of
    the candidate or of the stable DGD gives another name, i.e. mid-rollout a new generation
    (a new DGD in separate-dgd) instead of the one being rolled out."""
    import warnings

    from dgdgen.errors import InputWarning

    if loaded.spec.spec.candidate.revision is not None:
        return
    field = ("spec", "candidate")
    warnings.warn(InputWarning(
        f"{loaded.location(field)}: spec.candidate.revision: not set, so the candidate is named "
        f"{cand.revision!r}, a hash of its DGD; an edit of the candidate or of the stable DGD "
        "changes it, and mid-rollout that starts a new generation; set spec.candidate.revision "
        f"(e.g. `revision: {cand.revision}`, or a name of your own: 1-12 lower-case letters, "
        "digits, '-')"
    ), stacklevel=2)


def _warn_ungated(loaded: LoadedSpec, steps: tuple[planmod.StepInput, ...]) -> None:
    """`steps: []` with analysis enabled falls back to a default schedule whose steps name no
    gate: the rollout would run ungated although the spec asks for analysis."""

    body = loaded.spec.spec
    if body.steps or not body.analysis.enabled or any(s.gate for s in steps):
        return
    field = ("spec", "steps") if "steps" in loaded.document.data.get("spec", {}) else ("spec",)
    warnings.warn(InputWarning(
        f"{loaded.location(field)}: spec.steps: no steps given, so the default schedule is used "
        "and its steps name no gate: analysis is enabled but gates nothing; list the steps, "
        "each with `gate: slo` (or another gate)"
    ), stacklevel=2)


def _names(loaded: LoadedSpec, stable: Generation, cand: Generation, mode: str) -> tuple[str, str]:
    ns = loaded.spec.metadata.namespace
    if stable.dgd.namespace is not None and stable.dgd.namespace != ns:
        raise InputError(
            f"the stable DGD is in namespace {stable.dgd.namespace!r} but the rollout says "
            f"{ns!r}",
            location=loaded.location(("metadata", "namespace")),
            field=("metadata", "namespace"),
        )
    base = base_name(stable.dgd, stable.revision)
    if mode != "separate-dgd":
        return base, stable.dgd.name
    given = loaded.spec.spec.candidate.name
    field = ("spec", "candidate", "name") if given else ("spec", "candidate", "revision")
    cand_name = given or names.candidate_dgd_name(base, cand.revision)
    try:
        names.check_dgd_name(cand_name, list(cand.dgd.components), field)
        names.check_prefix_free(ns, {"stable": stable.dgd.name, "candidate": cand_name})
    except PlanError as exc:
        raise PlanError(
            exc.message, location=loaded.location(exc.field), field=exc.field
        ) from None
    return base, cand_name


def _migration_notes(cand: Generation, mode: str) -> tuple[str, ...]:
    """In-place, the operator drains old workers while the frontend keeps serving: requests in
    flight on a draining worker fail unless the frontend may migrate them (`--migration-limit` is a
    frontend flag, docs/planning.md). The checker reports the same hazard as DGD106; the plan
    says it before anything is rendered."""
    if mode != "in-place":
        return ()
    out = []
    for fe in dgd_facts(cand.dgd).frontends():
        s = fe.flags.get("--migration-limit")
        if s is None or s.value in (None, "0"):
            out.append(
                f"frontend {fe.name} has no --migration-limit: requests in flight on "
                "draining workers fail during the in-place roll (DGD106); set one with "
                f"spec.candidate.components.{fe.name}.args.set"
            )
    return tuple(out)


def _model_name_notes(stable: Generation, cand: Generation) -> tuple[str, ...]:
    """Clients name the model they call. A candidate that serves another name answers the
    stable's name with 404 (the frontend counts it as ``not_found``) from the moment traffic
    reaches it — what `dgdgen rehearse` showed on the blue/green example. Said before anything
    is rendered, so the switch is planned with the clients."""
    def names(gen: Generation) -> set[str]:
        return {w.served_model_name for w in dgd_facts(gen.dgd).workers()
                if w.served_model_name is not None}

    old, new = names(stable), names(cand)
    if not old or not new or old & new:
        return ()
    return ((
        f"the candidate serves {', '.join(sorted(new))} and the stable {', '.join(sorted(old))}: "
        "clients that name the stable's model get 404 from the candidate once traffic reaches "
        "it; move the clients to the new name with the switch, or keep the old name as a "
        "served alias"),
    )


def _grace_notes(loaded: LoadedSpec, stable: Generation, cand: Generation,
                 plan: planmod.Plan) -> tuple[str, ...]:
    """The stable's pods that stop while it still serves finish their requests on SIGTERM within
    their own termination grace period. dgdgen gives the candidate's frontends and workers one
    that covers the request timeout (dgdgen.render.grace) but never edits the running stable (that would
    restart it, and the pods it replaced would still stop on their old period): a stable whose
    period is shorter is said here, with the value to set before the rollout."""
    steps, comps = grace.stable_stops_while_serving(
        plan, grace.rolled_components(stable.dgd, cand.dgd))
    need = grace.required_seconds(loaded.spec.spec)
    short = grace.shortfalls(stable.dgd, need, comps)
    if not steps or not short:
        return ()
    where = ("extraPodSpec.terminationGracePeriodSeconds" if stable.dgd.version == "v1alpha1"
             else "podTemplate.spec.terminationGracePeriodSeconds")
    listed = ", ".join(f"{s.component} {s.seconds} s" + ("" if s.explicit else " (unset)")
                       for s in short)
    how = ("the operator replaces them under traffic" if plan.mode in ("in-place", "partition")
           else f"step(s) {', '.join(map(str, steps))}")
    head = (f"stable pods that stop while the stable still serves ({how}) get their own "
            f"termination grace period to finish their requests: {listed}, shorter than the "
            f"{need} s a request may need (traffic.requestTimeout + {grace.MARGIN_SECONDS} s): ")
    fix = (f"set {where}: {need} on them and roll that out first. "
           "The candidate's pods get it already")
    workers = {w.name for w in dgd_facts(stable.dgd).workers()}
    if all(s.component in workers for s in short) and not migration.unprotected(stable.dgd):
        # A worker killed mid-stream: the stable's frontends migrate the stream to another
        # worker and the client sees it whole (the 1.6.1 frontend's --migration-limit covers
        # "worker disconnects ... incomplete streams"; tests/rehearse/test_kill_migrates.py).
        return ((
            head + "a stream still running when it ends continues on another worker through the "
            "stable frontends' request migration (clients see it whole; its prompt is computed "
            f"again there). To let such streams finish where they are, {fix}"),
        )
    return ((
        head + "longer streams on them are cut. dgdgen does not edit the running stable (that "
        f"would restart it); {fix}"),
    )


def _shrink_notes(stable: Generation, cand: Generation, plan: planmod.Plan) -> tuple[str, ...]:
    """What protects each step that stops stable workers while the stable still serves. A worker
    stopping unregisters at once, but its frontend may have routed a request to it a moment
    before; that request gets HTTP 503 unless the frontend migrates it to another worker
    (dgdgen.render.migration; measured in docs/rehearse.md). dgdgen gives the candidate's frontends a
    migration limit but never edits the running stable (that would restart it), so a stable
    frontend without one is said here. In place the frontend is shared and the in-place note
    says it already."""
    if plan.mode == "in-place":
        return ()
    steps, comps = grace.stable_stops_while_serving(
        plan, grace.rolled_components(stable.dgd, cand.dgd))
    workers = {w.name for w in dgd_facts(stable.dgd).workers()}
    if not steps or not comps & workers:
        return ()
    at = f"step(s) {', '.join(map(str, steps))}"
    limits = migration.frontend_limits(stable.dgd)
    missing = [n for n, v in limits.items() if v <= 0]
    if missing:
        return ((
            f"{at} stop stable workers while the stable still serves; stable frontend(s) "
            f"{', '.join(missing)} have no request-migration limit, so a request routed to a "
            "worker as it stops gets HTTP 503. dgdgen does not edit the running stable (that "
            f"would restart it); set env {migration.ENV}: \"{migration.LIMIT}\" (or "
            f"{migration.FLAG} {migration.LIMIT}) on them and roll that out first. The "
            "candidate's frontends get it already"),
        )
    listed = ", ".join(f"{n} {migration.FLAG} {v}" for n, v in sorted(limits.items()))
    return ((
        f"{at} stop stable workers while the stable still serves: protected by the stable "
        f"frontends' request migration ({listed}: a request routed to a stopping worker moves "
        "to another) and by the workers finishing what they hold within their termination "
        "grace period; the candidate's frontends get "
        f"{migration.ENV}={migration.LIMIT} for its own shrinks"),
    )


def _frontend_resource_notes(stable: Generation, cand: Generation, mode: str
                             ) -> tuple[str, ...]:
    """Frontends that request no CPU or memory run as BestEffort pods: scheduled onto any node
    however full, and the first evicted under node pressure — which takes that generation's only
    entry point (its Service, pool or HAProxy server) away while it carries traffic. dgdgen does
    not invent a size (it depends on the request rate; the Dynamo 1.6.1 frontend idles near
    120 MiB RSS) and does not edit the running stable; it says so here (docs/traffic.md,
    Frontend readiness and resources)."""
    out = []
    # In-place and partition: one frontend serves both revisions (planning.md), said once.
    shared = mode in ("in-place", "partition")
    gens = (("shared", stable),) if shared else (("stable", stable), ("candidate", cand))
    for role, gen in gens:
        bare = frontends.frontends_without_requests(gen.dgd)
        if bare:
            where = ("resources.requests" if gen.dgd.version == "v1alpha1"
                     else "podTemplate.spec.containers[main].resources.requests")
            # the candidate's DGD is made from the stable's (no spec field sets resources): the
            # field to set is the stable's, which the candidate then copies
            where_dgd = ("the stable's DGD" if role != "candidate" else
                         "the stable's DGD (spec.stable.dgd), which the candidate's copies")
            entry = "both revisions' entry point" if shared else "the generation's entry point"
            who = ("frontend(s) {}, which serve both revisions," if shared
                   else f"{role} frontend(s) {{}}").format(", ".join(bare))
            out.append(
                f"{who} request no CPU or memory: BestEffort "
                "pods, placed on any node and evicted first under node pressure, taking "
                f"{entry} with them; "
                f"set {where} (cpu, memory) in {where_dgd}"
            )
    return tuple(out)


def _require_gpus_for_parallelism(loaded: LoadedSpec, cand: Generation) -> None:
    """Refuse a candidate whose engine parallelism needs more GPUs than its pods ask for (its
    pods would never start: CLU102), at the component's change in the spec — before any
    isolation is decided, so `auto` never calls such a change safe to roll in place."""
    for comp in dgd_facts(cand.dgd).workers():
        have = cand.dgd.components[comp.name].gpus_per_replica
        need = needed(cand.dgd.components[comp.name].backend,
                      {k: v.value or "" for k, v in comp.flags.items()})
        if not have or need is None or need <= have:
            continue
        field = ("spec", "candidate", "components", comp.name)
        raise InputError(
            f"the candidate's {comp.name} needs {need} GPU(s) per replica by its engine's "
            f"parallelism, but its pods ask for {have}: they would never become Ready",
            location=loaded.location(field), field=field,
            hint=f"give it the GPUs with the change: spec.candidate.components.{comp.name}."
            f"gpus: {need}",
        )


def _roll_settings_notes(stable: Generation, mode: str) -> tuple[str, ...]:
    """In place the way back is a roll that keeps the forward roll's surge settings (CLU201); a
    stable DGD without them has them added at rollback, and the operator's worker hash covers
    annotations: the next rollout's baseline, without them, would roll the workers once more."""
    if mode != "in-place":
        return ()
    bare = [c.name for c in stable.dgd.workers()
            if ANN_MAX_SURGE not in stable.dgd.doc_annotations(c.name)]
    if not bare:
        return ()
    return ((
        "the rollback state keeps the forward roll's nvidia.com/deployment-rolling-update-* "
        f"annotations on {', '.join(bare)} (the way back is a roll too); the operator's worker "
        "hash covers annotations, so a stable DGD without them rolls its workers once more when "
        "the next rollout starts from it: set them in spec.stable.dgd"),)


def _preview_notes(loaded: LoadedSpec, plan: planmod.Plan) -> tuple[str, ...]:
    """What a preview (spec.traffic.preview) does and does not reach: where it starts and ends,
    the GAMMA callers outside the mesh it misses (a route feature: they follow the parent
    Service's selector), and the gates that keep the candidate's own Service when the public
    entry point is not known (docs/traffic.md, "Preview before weight")."""
    traffic = loaded.spec.spec.traffic
    p = traffic.preview
    if p is None:
        return ()
    value = p.value if p.value is not None else plan.candidate_revision
    what = (f"cookie {p.cookie}={value}" if p.cookie is not None
            else f"header {p.header}: {value}")
    out = [(f"preview: from step 1 until cleanup a request with {what} reaches the candidate "
            f"{plan.candidate_revision} alone, whatever the weights; the baseline, rollback and "
            "cleanup states carry no preview route")]
    if traffic.provider.value == "gamma" and traffic.gamma is not None:
        out.append(f"preview: a route feature, for callers inside the mesh only; callers outside "
                   f"it follow Service {traffic.gamma.service}'s selector, which reads no header "
                   "(the stable's frontend until the 100 % step)")
    analysis = loaded.spec.spec.analysis
    gated = analysis.enabled and (analysis.probe is not None or analysis.quality is not None)
    if gated and p.url is None and traffic.provider.value != "haproxy":
        out.append("preview: the probe and the quality gate call the candidate's own Service, "
                   "not the public entry point: set spec.traffic.preview.url (the Gateway's "
                   "address) to send them through it with the header")
    return tuple(out)


def _with_notes(plan: planmod.Plan, notes: tuple[str, ...]) -> planmod.Plan:
    return dataclasses.replace(plan, notes=plan.notes + notes)


def target_of(loaded: LoadedSpec) -> Any:
    """The spec's Dynamo release and worker backing (an unknown release: exit 2 at its line)."""
    dyn = loaded.spec.spec.dynamo
    field = ("spec", "dynamo", "version")
    try:
        release = normalize_release(dyn.version)
    except InputError as exc:
        raise InputError(exc.message, location=loaded.location(field), field=field,
                         hint=exc.hint) from None
    return Target(release, RunBy(dyn.workers_run_by))


def decide_isolation(
    stable: Generation, cand: Generation, requested: str, target: Any = None,
) -> tuple[str, tuple[planmod.StepInput, ...], tuple[str, ...]]:
    """Ask the checker whether stable → candidate needs isolation, and take the mode and step
    schedule its risk grade recommends (:func:`dgdgen.check.classify.recommend`).

    Returns (mode, default steps, reasons). ``in-place`` is chosen only when the checker finds no
    isolation-demanding change.
    """
    if target is None:
        target = Target(NEWEST)
    v = verdict(stable.dgd, cand.dgd, dynamo_version=target.release)
    rec = recommend(v)
    mode = "in-place" if rec.isolation == "in-place" else "separate-dgd"
    grade = v.risk.value
    reasons = (
        f"{requested}: the checker grades the change {grade} and chooses {mode} ({rec.reason})",
    ) + tuple(f"{requested}: {r}" for r in v.reasons)
    # What the operator would do with it in place, from the checker's one model (the same text
    # as DGD201-DGD203 for this release and worker backing).
    facts = dgd_facts(cand.dgd)
    roll = roll_of_dgd(target, facts)
    replaced = runtime_replaced(v.changes, facts) or BOTH
    for category in sorted({c.category for c in v.changes if c.demands_isolation},
                           key=lambda c: c.value):
        rename = any(c.category is category and c.field == "--served-model-name"
                     for c in v.changes)
        effect = roll_consequence(category, roll, rename=rename, replaced=replaced)
        reasons += ((f"{requested}: {category.value} applied in place on {target.describe()}: "
                    f"{effect}"),)
    hold = parse_duration(rec.hold) or None
    steps = tuple(
        planmod.StepInput(w, hold if w < 100 else None) for w in rec.steps
    )
    return mode, steps, reasons


def in_place_roll(prepared: Prepared) -> Any:
    """How the operator would roll the candidate's workers in place on the spec's Dynamo release
    and worker backing (``spec.dynamo``): hash-suffixed or shared worker namespaces, and why
    (dgdgen.check.inplace; the rehearsal plays it)."""
    return roll_of_dgd(target_of(prepared.loaded), dgd_facts(prepared.candidate.dgd))
