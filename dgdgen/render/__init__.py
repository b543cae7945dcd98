"""plan → manifests. Each renderer in :data:`RENDERERS` turns one plan state into objects; the
result is a sorted list of :class:`Manifest` (one object per file, deterministic names)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dgdgen.render.manifest import Manifest

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared


Renderer = Callable[["Prepared", "PlanStep"], Sequence[Manifest]]


def renderers() -> list[Renderer]:
    from dgdgen.render import analysis, dgds, services, traffic

    return [dgds.render, services.render, analysis.render, traffic.render]


PLAN_ORDER = "plan-order"


def render_state(
    prepared: Prepared, state: PlanStep, previous: PlanStep | None | str = PLAN_ORDER
) -> list[Manifest]:
    """Every object of ``state``. Argo CD sync waves are decided from the transition ``previous``
    → ``state`` (:mod:`dgdgen.render.waves`); by default ``previous`` is the state before it in
    plan order, ``None`` means "from nothing"."""
    from dgdgen.render import drain, waves

    out: list[Manifest] = []
    for fn in renderers():
        out.extend(fn(prepared, state))
    before = waves.plan_previous(prepared.plan, state) if isinstance(previous, str) else previous
    out = waves.annotate(prepared, state, before, out)
    out += drain.render(prepared, state, before)  # hooks: their wave is their own
    names = [m.filename for m in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise AssertionError(f"two objects render to the same file: {', '.join(dupes)}")
    return sorted(out, key=lambda m: m.filename)
