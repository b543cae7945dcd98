"""The weight model: for one plan state, which backend (frontend Service) each generation has and
the share of new requests it gets.

The planner already sizes replicas so a generation's share fits its capacity; this is the last
check before anything routes traffic, because the failure modes are silent: a route with all
weights 0 has no defined behaviour, and a backend given more share than its ready capacity
returns 500/503 for the excess (Gateway API v1.6.1 HTTPRoute, backendRefs weight).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dgdgen.errors import PlanError
from dgdgen.model.names import frontend_service

if TYPE_CHECKING:
    from dgdgen.plan import GenerationState, PlanStep
    from dgdgen.plan.prepared import Prepared

# HTTPRoute `rules[].backendRefs` maxItems (Gateway API v1.6.1, schemas/crds/gateway-api).
MAX_BACKEND_REFS = 16
SHARED = "shared"  # the one backend of the single-frontend modes (partition, in-place)
_EPS = 1e-9


@dataclass(frozen=True)
class Backend:
    """One generation's entry point in one plan state."""

    key: str  # stable name for the backend: the generation's revision, or "shared"
    role: str  # stable | candidate | shared
    dgd: str  # the DGD that runs its frontend
    service: str  # its frontend Service (render/services.py)
    revision: str | None  # None for the shared frontend of partition / in-place
    weight: int  # % of new requests
    capacity: float  # fraction of full traffic its ready replicas can carry
    present: bool  # the generation exists in this state

    @property
    def serving(self) -> bool:
        """Whether it may receive any request at all, sticky ones included: it exists and has
        workers. A generation at weight 0 that still has capacity keeps its pinned clients."""
        return self.present and self.capacity > _EPS


def problem(backends: Sequence[Backend], *, headroom: float = 0.0,
            max_backends: int = MAX_BACKEND_REFS) -> str | None:
    """Why these weights must not be routed, or None. Pure; :func:`state_backends` raises it."""
    routed = [b for b in backends if b.present]
    if len(routed) > max_backends:
        return (
            f"{len(routed)} backends in one route rule, but an HTTPRoute rule holds at most "
            f"{max_backends} backendRefs"
        )
    if not routed or all(b.weight == 0 for b in routed):
        return (
            "every backend has weight 0: no generation would receive traffic (an all-zero "
            "HTTPRoute has no defined behaviour; HAProxy answers 503)"
        )
    if sum(b.weight for b in routed) != 100:
        return f"weights add up to {sum(b.weight for b in routed)}%, not 100%"
    for b in backends:
        if b.weight < 0 or b.weight > 100:
            return f"{b.role} weight {b.weight}% is outside 0..100"
        if b.weight and not b.present:
            return f"the {b.role} generation gets {b.weight}% but does not exist in this state"
        if b.weight / 100 > b.capacity + headroom + _EPS:
            return (
                f"the {b.role} generation ({b.key}) gets {b.weight}% of traffic but its ready "
                f"replicas carry only {b.capacity:.0%} (+{headroom:.0%} headroom): the excess "
                "would fail"
            )
    return None


def _service_of(prepared: Prepared, gen: GenerationState, dgd_name: str) -> tuple[str, str]:
    # Mirrors render/services.py: worker-group runs one Service per group in one DGD.
    if prepared.mode == "worker-group":
        dgd_name_svc = f"{prepared.stable.dgd.name}-{gen.revision}"
        return prepared.stable.dgd.name, frontend_service(dgd_name_svc)
    return dgd_name, frontend_service(dgd_name)


def state_backends(prepared: Prepared, state: PlanStep) -> tuple[Backend, ...]:
    """The backends of ``state`` (both generations, present or not, stable first), checked.

    Raises :class:`PlanError` located at the step's weight (or at ``spec.traffic.provider`` for
    the baseline, rollback and cleanup states) when :func:`problem` finds one.
    """
    if prepared.mode in ("partition", "in-place"):
        # One frontend serves both revisions; the split follows worker counts (plan notes).
        name = prepared.stable.dgd.name
        cap = state.stable.capacity + state.candidate.capacity
        backends: tuple[Backend, ...] = (
            Backend(SHARED, SHARED, name, frontend_service(name), None, 100, cap, True),
        )
    else:
        out = []
        for role, gen, dgd_name in (
            ("stable", state.stable, prepared.stable.dgd.name),
            ("candidate", state.candidate, prepared.candidate_name),
        ):
            dgd, svc = _service_of(prepared, gen, dgd_name)
            out.append(Backend(gen.revision, role, dgd, svc, gen.revision, gen.weight,
                               gen.capacity, gen.present))
        backends = tuple(out)
    why = problem(backends, headroom=prepared.plan.headroom_fraction)
    if why is not None:
        field: tuple[str | int, ...] = ("spec", "traffic", "provider")
        if state.kind == "step" and state.index > 0:
            field = ("spec", "steps", state.index - 1, "weight")
        raise PlanError(
            f"{state.label}: {why}", location=prepared.loaded.location(field), field=field
        )
    return backends


def routed(backends: Sequence[Backend]) -> list[Backend]:
    """The backends a route lists: the present generations (a reference to a Service that does
    not exist would make the route's references unresolved)."""
    return [b for b in backends if b.present]
