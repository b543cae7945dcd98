"""A spec loaded and planned: the value the stages past planning share (render, traffic, analysis,
GitOps, the plan report, the rehearsal). It lives below all of them and below the orchestrator
that builds it (``dgdgen.pipeline.prepare.prepare``), so none of them imports the orchestrator."""

from __future__ import annotations

from dataclasses import dataclass

from dgdgen import plan as planmod
from dgdgen.errors import InputError
from dgdgen.model.generation import Generation
from dgdgen.plan.load import LoadedSpec


@dataclass(frozen=True)
class Prepared:
    loaded: LoadedSpec
    stable: Generation
    candidate: Generation
    mode: str
    plan: planmod.Plan
    base_name: str
    candidate_name: str  # the candidate DGD's name (the stable's name in single-DGD modes)

    def state(self, selector: int | str) -> planmod.PlanStep:
        """The plan state a command named (a step number, ``rollback`` or ``cleanup``); an unknown
        one is bad input that lists the states there are."""
        try:
            return self.plan.state(selector)
        except KeyError:
            raise InputError(unknown_state(self.plan, selector, self.loaded.path)) from None


def unknown_state(plan: planmod.Plan, selector: object, path: str) -> str:
    backs = "".join(f"{s.label}, " for s in reversed(plan.rollback_steps))
    return (f"the plan of {path} has steps 0..{len(plan.steps) - 1}, {backs}rollback and "
            f"cleanup; there is no step {selector}")
