"""Rendered files of a prepared rollout: the mapping relative path → text that
:func:`dgdgen.write.write_tree` writes, and output validation against the vendored schemas."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dgdgen import yamlio
from dgdgen.errors import ValidationFailed
from dgdgen.render import PLAN_ORDER, render_state
from dgdgen.render.manifest import Manifest

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared


def deployed(manifests: list[Manifest]) -> list[Manifest]:
    """The objects a state's tree holds. AnalysisRuns only as Argo CD hooks
    (``analysis.hooks.enabled``: the sync succeeds only once the step's analysis is Successful;
    Inconclusive fails it, docs/analysis.md). A plain AnalysisRun in a synced tree would run once,
    when first applied, and never again; without hooks the WorkflowTemplate or
    ``dgdgen analyze --print-run`` creates each step's run instead."""
    from dgdgen.render.analysis import HOOK

    return [
        m for m in manifests
        if m.kind != "AnalysisRun" or HOOK in (m.obj["metadata"].get("annotations") or {})
    ]


def state_files(prepared: Prepared, state: PlanStep, previous: PlanStep | None | str = PLAN_ORDER,
                *, validate: bool = True) -> dict[str, str]:
    """The files of one state. Argo CD sync waves come from the transition ``previous`` →
    ``state`` (by default the state before it in plan order)."""
    manifests = deployed(render_state(prepared, state, previous))
    if validate:
        validate_manifests(manifests, where=state.label)
    return {m.filename: yamlio.dump(m.obj) for m in manifests}


def all_files(prepared: Prepared, *, validate: bool = True) -> dict[str, str]:
    """Every state in its own directory (step-00 … step-NN, rollback, cleanup) + plan.json."""
    files: dict[str, str] = {}
    for state in prepared.plan.all_states():
        for name, text in state_files(prepared, state, validate=validate).items():
            files[f"{state.label}/{name}"] = text
    files["plan.json"] = json.dumps(prepared.plan.to_dict(), indent=2) + "\n"
    return files


def validate_all(prepared: Prepared) -> None:
    """Validate every state's objects as :func:`all_files` would, without writing YAML text
    (``dgdgen validate``: dumping is most of a render's cost and checks nothing)."""
    for state in prepared.plan.all_states():
        validate_manifests(deployed(render_state(prepared, state, PLAN_ORDER)), where=state.label)


def validate_manifests(manifests: list[Manifest], *, where: str) -> None:
    """Every rendered object against its upstream schema (strict) and CEL rules."""
    from dgdgen import crd

    problems = []
    for m in manifests:
        for v in crd.validate(m.obj, overlays=m.overlays, reuse=True):
            problems.append(f"{where}/{m.filename}: {v}")
    if problems:
        raise ValidationFailed(problems)
