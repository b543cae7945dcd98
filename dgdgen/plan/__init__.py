"""The planner: a pure function from a rollout's inputs to its ordered steps. No I/O, no YAML.

Model (docs/planning.md explains it with examples):

* Each generation has a *target* size ``T[k]`` per component (the stable's replicas; the
  candidate's after its replica overrides). Its serving capacity is the fraction of full traffic
  it can carry: ``min_k replicas[k] / T[k]`` over its worker components (aggregated, prefill,
  decode). Frontends and other components (planner, epp) run at their full count while the
  generation exists.
* At a step with candidate weight ``w`` the candidate runs ``ceil(w * T[k])`` replicas of each
  worker component (at least one while it exists) and the stable ``ceil((1 - w) * T[k])``.
  Rounding every component up from the same fraction keeps each generation's prefill:decode ratio
  within one replica of its target ratio.
* A step moves in four phases: *make room* (shrink the stable, only as far as `maxUnavailable`
  and `headroom` allow while it still carries the previous share), *scale up* the candidate,
  *shift* traffic, *scale down* the stable. The peak of replicas in use (after scale-up) must fit
  the surge budget; if it does not, the step is refused with the surge it would need.
* ``blue-green`` brings the candidate to full size at the first step and keeps the stable at full
  size until cleanup (rollback is then instant; it needs a 100 % surge budget).
* A generation that carries traffic keeps at least one replica of every worker component in
  every phase: the make-room phase may shrink the stable below its share by `headroom`, never to
  zero workers while it still has weight.
* Between *shift* and *scale down* a generation whose weight dropped to 0 **drains**: its
  frontend's in-flight requests finish (bounded by the request timeout, ``drain_seconds``) before
  its workers go. A generation that still serves part of the traffic cannot drain at its
  frontend (new requests keep arriving); the workers it loses finish their requests on SIGTERM.
* Rollback goes straight to the ``rollback`` state (the stable exactly as before the rollout,
  the candidate removed) wherever the surge budget holds that transition; only where it does not
  does it step back through the earliest forward step's replicas it can reach
  (``rollback_steps``), giving the stable all the traffic it can carry there
  (:func:`_rollback_path`). Each backward transition shifts first where the stable's running
  replicas can carry the share it gets back, and otherwise grows the stable only as far as the
  surge budget allows; a rollback the budget cannot hold is refused. Cleanup removes the stable
  once the candidate carries 100 %.

Why one module: the planner is one pure function; the forward steps, the rollback path, the
drains and the surge-budget checks all read and write the same per-state replica arithmetic and
keep the invariants above together. Apart, each part would import the others' private helpers.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dgdgen.errors import PlanError

ROLES_WORKER = ("aggregated", "prefill", "decode")


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class ComponentInput:
    name: str
    role: str  # frontend | aggregated | prefill | decode | other
    stable_replicas: int
    candidate_replicas: int
    stable_gpus: int  # per replica
    candidate_gpus: int

    @property
    def is_worker(self) -> bool:
        return self.role in ROLES_WORKER


@dataclass(frozen=True)
class StepInput:
    weight: int
    pause_seconds: int | None = None
    gate: str | None = None


@dataclass(frozen=True)
class Budget:
    """A count or a percentage of a component's replicas (``"25%"``)."""

    value: int | str

    def replicas(self, total: int, *, round_up: bool) -> int:
        if isinstance(self.value, int):
            return self.value
        pct = int(self.value.rstrip("%"))
        exact = pct * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)

    def fraction(self, totals: Sequence[int]) -> float:
        """As a fraction of capacity: a percentage directly; a count relative to the smallest
        component (the most conservative reading)."""
        if isinstance(self.value, int):
            positive = [t for t in totals if t > 0]
            return min(1.0, self.value / min(positive)) if positive else 0.0
        return int(self.value.rstrip("%")) / 100


@dataclass(frozen=True)
class PlanInput:
    rollout: str
    mode: str  # separate-dgd | worker-group | partition | in-place
    strategy: str  # canary | blue-green
    components: tuple[ComponentInput, ...]
    steps: tuple[StepInput, ...]
    max_surge: Budget = Budget("25%")
    max_unavailable: Budget = Budget(0)
    headroom: Budget = Budget(0)
    stable_revision: str = "stable"
    candidate_revision: str = "candidate"
    drain_seconds: int | None = None  # longest a leaving generation's requests may still run


# Modes with a frontend per generation: a generation that gets no new requests drains at its own
# frontend. In `partition` (and `in-place`) one frontend serves both revisions and its in-flight
# gauge carries only `model`, so there is nothing to wait on: the pods that go get their
# termination grace period instead (docs/planning.md).
DRAIN_MODES = ("separate-dgd", "worker-group")


# --------------------------------------------------------------------------- outputs


@dataclass(frozen=True)
class GenerationState:
    revision: str
    present: bool
    weight: int  # % of traffic
    replicas: dict[str, int]
    gpus: int
    capacity: float  # fraction of full traffic this generation can carry


@dataclass(frozen=True)
class PlanStep:
    index: int  # 0 = baseline; 1..n = rollout steps (rollback-step: the step it restores); -1 rollback; -2 cleanup
    kind: str  # baseline | step | rollback-step | rollback | cleanup
    label: str  # directory / display name
    stable: GenerationState
    candidate: GenerationState
    pause_seconds: int | None
    gate: str | None
    peak_replicas: dict[str, int] = field(default_factory=dict)  # both generations, at the peak
    peak_gpus: int = 0
    # above the larger generation's full size; in partition, above the stable as it runs today
    extra_gpus_peak: int = 0
    min_capacity: float = 1.0  # lowest total capacity during the transition into this step
    # Fewest replicas of any worker component of a generation while it carries traffic, over
    # every phase of the transition into this state (never 0: no traffic without workers).
    min_serving_workers: int = 0
    # Drain between shift and shrink: the leaving generation's in-flight requests finish (at most
    # this long, the request timeout) before its replicas go. None: nothing shrinks after a shift.
    drain_seconds: int | None = None
    shift_first: bool = False  # the weights move before any replica changes

    @property
    def weights(self) -> tuple[int, int]:
        return self.stable.weight, self.candidate.weight


@dataclass(frozen=True)
class Plan:
    rollout: str
    mode: str
    strategy: str
    stable_revision: str
    candidate_revision: str
    steps: tuple[PlanStep, ...]  # baseline first
    rollback: PlanStep
    cleanup: PlanStep
    surge_replicas: dict[str, int]
    unavailable_fraction: float
    headroom_fraction: float
    baseline_gpus: int
    notes: tuple[str, ...] = ()
    # Backward transitions from the last step: rollback_steps[i] restores step n-1-i (kind
    # "rollback-step", label rollback-NN, index = the step it restores); `rollback` ends them.
    rollback_steps: tuple[PlanStep, ...] = ()

    def all_states(self) -> tuple[PlanStep, ...]:
        return self.steps + self.rollback_steps + (self.rollback, self.cleanup)

    def rollback_from(self, index: int) -> tuple[PlanStep, ...]:
        """The states a rollback from step ``index`` applies, in order, ending with
        :attr:`rollback`: every backward transition stays within the surge budget."""
        between = [s for s in self.rollback_steps if s.index < index]
        return tuple(between) + (self.rollback,)

    def rollback_origin(self, state: PlanStep) -> PlanStep:
        """The forward step a rollback state's transition is planned from (its peak, order and
        capacity figures): the one before it on the path from the last step."""
        chain = self.rollback_steps
        last = len(self.steps) - 1
        if state.kind == "rollback":
            return self.steps[chain[-1].index if chain else last]
        i = next(k for k, b in enumerate(chain) if b.label == state.label)
        return self.steps[chain[i - 1].index if i else last]

    def state(self, selector: int | str) -> PlanStep:
        if selector in ("rollback", -1):
            return self.rollback
        if selector in ("cleanup", -2):
            return self.cleanup
        if isinstance(selector, int) and 0 <= selector < len(self.steps):
            return self.steps[selector]
        for back in self.rollback_steps:
            if selector == back.label:  # rollback-NN, the same spelling as its folder
                return back
        raise KeyError(selector)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- planning

DEFAULT_CANARY = (StepInput(10, 600), StepInput(50, 600), StepInput(100))
DEFAULT_BLUE_GREEN = (StepInput(0, 600, None), StepInput(100))


def _frac_replicas(fraction: float, total: int) -> int:
    # Guard float noise such as 0.1 * 30 = 3.0000000000000004.
    return math.ceil(round(fraction * total, 9))


def make_plan(inp: PlanInput) -> Plan:
    """Expand the inputs into the ordered plan, or raise :class:`PlanError` naming the field."""
    comps = inp.components
    if not any(c.is_worker for c in comps):
        raise PlanError(
            "the DGD has no worker component (aggregated, prefill or decode) to roll out",
            field=("spec", "stable"),
        )
    steps = inp.steps or (DEFAULT_BLUE_GREEN if inp.strategy == "blue-green" else DEFAULT_CANARY)
    if inp.mode == "in-place":
        if any(s.weight != 100 for s in steps) and inp.steps:
            raise PlanError(
                "an in-place rollout has no traffic steps (the operator replaces workers); "
                "leave `steps` empty or give one step with weight 100",
                field=("spec", "steps"),
            )
        steps = (StepInput(100, steps[-1].pause_seconds, steps[-1].gate),)
    _check_weights(steps)

    stable_T = {c.name: c.stable_replicas for c in comps}
    cand_T = {c.name: c.candidate_replicas for c in comps}
    workers = [c for c in comps if c.is_worker]
    for c in workers:
        if c.candidate_replicas == 0:
            raise PlanError(
                f"the candidate's {c.name} has 0 replicas: it could not take any traffic",
                field=("spec", "candidate", "components", c.name, "replicas"),
            )
    # Budgets are relative to the larger of the two generations' full sizes: a candidate that is
    # meant to be bigger grows into its size, and only what exceeds it is surge.
    surge = {c.name: inp.max_surge.replicas(_size(c), round_up=True) for c in workers}
    unavail = inp.max_unavailable.fraction([c.stable_replicas for c in workers])
    headroom = inp.headroom.fraction([c.stable_replicas for c in workers])

    def stable_state(w: int, *, full: bool = False, present: bool = True) -> GenerationState:
        reps: dict[str, int] = {}
        for c in comps:
            if not present:
                reps[c.name] = 0
            elif not c.is_worker or full or inp.strategy == "blue-green":
                reps[c.name] = c.stable_replicas
            else:
                reps[c.name] = _frac_replicas((100 - w) / 100, c.stable_replicas)
        return _state(inp.stable_revision, present, 100 - w if present else 0, reps, comps, stable_T, "stable")

    def cand_state(w: int, *, present: bool = True) -> GenerationState:
        reps: dict[str, int] = {}
        for c in comps:
            if not present:
                reps[c.name] = 0
            elif not c.is_worker or inp.strategy == "blue-green" or inp.mode == "in-place":
                reps[c.name] = c.candidate_replicas
            else:
                reps[c.name] = max(1, _frac_replicas(w / 100, c.candidate_replicas))
        return _state(inp.candidate_revision, present, w if present else 0, reps, comps, cand_T, "candidate")

    baseline_stable = stable_state(0, full=True)
    absent_cand = cand_state(0, present=False)
    baseline = PlanStep(
        0, "baseline", "step-00", baseline_stable, absent_cand, None, None,
        peak_replicas=dict(baseline_stable.replicas), peak_gpus=baseline_stable.gpus,
    )
    out = [baseline]
    prev_s, prev_c = baseline_stable, absent_cand
    for i, st in enumerate(steps, start=1):
        if inp.mode == "in-place":
            s_t = stable_state(100, present=False)
            c_t = cand_state(100)
            step = _in_place_step(i, st, prev_s, s_t, c_t, comps, surge, inp)
        else:
            s_t = stable_state(st.weight)
            c_t = cand_state(st.weight)
            step = _transition(i, st, prev_s, prev_c, s_t, c_t, comps, surge, unavail, headroom,
                               stable_T, inp)
        out.append(step)
        prev_s, prev_c = step.stable, step.candidate

    if steps[-1].weight != 100:
        raise PlanError(
            f"the last step sends {steps[-1].weight}% to the candidate; a rollout ends at 100 "
            "(add `- weight: 100`)",
            field=("spec", "steps", len(steps) - 1, "weight"),
        )
    last = out[-1]
    rollback_steps: list[PlanStep] = []
    if inp.mode == "in-place":
        # The operator rolls the DGD back the way it rolled it forward, bounded by the same
        # rolling-update annotations: one transition, at most the surge per component.
        rollback = dataclasses.replace(
            _in_place_step(-1, StepInput(0), last.candidate, baseline_stable, absent_cand,
                           comps, surge, inp),
            kind="rollback", label="rollback",
        )
    else:
        rollback, rollback_steps = _rollback_path(out, baseline_stable, absent_cand, comps, surge,
                                                  headroom, cand_T, inp)
    final_c = cand_state(100)
    cleanup = PlanStep(
        -2, "cleanup", "cleanup", stable_state(0, present=False), final_c, None, None,
        peak_replicas=dict(last.peak_replicas), peak_gpus=last.candidate.gpus + last.stable.gpus,
        extra_gpus_peak=max(0, last.candidate.gpus + last.stable.gpus
                            - _extra_base(comps, inp.mode)),
        # The stable goes: its frontend may still hold streams it took before the last step's
        # shift (a blue-green stable keeps every worker until here), so it drains first, as the
        # render's hook does (dgdgen.render.drain.leaving: a generation that goes drains).
        drain_seconds=(inp.drain_seconds if inp.mode in DRAIN_MODES and last.stable.present
                       else None),
    )
    if inp.mode == "worker-group":
        _check_one_wave(out, rollback_steps, rollback, cleanup, inp)
    notes = []
    if inp.mode != "in-place":
        notes.append(_rollback_note(len(out) - 1, rollback_steps, inp))
    if inp.mode == "partition":
        notes.append(
            "partition: both revisions share one frontend, which splits traffic between worker "
            "sets in proportion to their worker counts (measured on Dynamo 1.6.1, tests/check/test_runtime_truth.py), so the weights "
            "are carried by replica counts, not by a router"
        )
    return Plan(
        rollout=inp.rollout, mode=inp.mode, strategy=inp.strategy,
        stable_revision=inp.stable_revision, candidate_revision=inp.candidate_revision,
        steps=tuple(out), rollback=rollback, cleanup=cleanup, surge_replicas=surge,
        unavailable_fraction=unavail, headroom_fraction=headroom,
        baseline_gpus=baseline_stable.gpus, notes=tuple(notes),
        rollback_steps=tuple(rollback_steps),
    )


def _rollback_path(
    out: Sequence[PlanStep], baseline_stable: GenerationState, absent_cand: GenerationState,
    comps: Sequence[ComponentInput], surge: Mapping[str, int], headroom: float,
    cand_T: Mapping[str, int], inp: PlanInput,
) -> tuple[PlanStep, list[PlanStep]]:
    """The rollback from the last step: straight to the ``rollback`` state (the stable at full
    size with all traffic) wherever the surge budget holds that transition; otherwise to the
    earliest step's replicas it does hold (``rollback-NN``), with the stable carrying all the
    traffic its replicas there can carry, and on from there. A forward step whose stable is at
    full size is never a rollback state: from it all traffic can go back at once. Each
    transition is planned from the forward step with the same replicas (the candidate carries
    its larger forward share there, so peaks are the larger of the two ways in), which keeps it
    valid for a rollback that starts at any earlier step (:meth:`Plan.rollback_from`)."""
    chain: list[PlanStep] = []
    cur = len(out) - 1
    while True:
        try:
            final = _backward(out[cur], baseline_stable, absent_cand, "rollback", -1, "rollback",
                              comps, surge, headroom, cand_T, inp)
            return final, chain
        except PlanError as direct:
            # earliest first: step back as little as the budget allows
            options = [j for j in range(1, cur) if out[j].stable.capacity < 1 - 1e-9]
            chosen = None
            for j in options:
                try:
                    chosen = _backward(out[cur], *_rollback_targets(out[j], inp), "rollback-step",
                                       j, f"rollback-{j:02d}", comps, surge, headroom, cand_T,
                                       inp)
                    break
                except PlanError:
                    if j == options[-1]:
                        raise
            if chosen is None:
                raise direct from None
            chain.append(chosen)
            cur = chosen.index


def _moves(before: GenerationState, now: GenerationState) -> tuple[list[str], list[str]]:
    """(components that grow, components that shrink) of one generation, as ``name a→b``."""
    up, down = [], []
    for name, was in before.replicas.items():
        n = now.replicas.get(name, 0) if now.present else 0
        w = was if before.present else 0
        if n > w:
            up.append(f"{name} {w}→{n}")
        elif n < w:
            down.append(f"{name} {w}→{n}")
    return up, down


def _check_one_wave(out: Sequence[PlanStep], rollback_steps: Sequence[PlanStep],
                    rollback: PlanStep, cleanup: PlanStep, inp: PlanInput) -> None:
    """Isolation ``worker-group`` holds both generations in ONE DGD, which Argo CD applies in one
    sync wave (dgdgen.render.waves): a transition that grows one group and shrinks the other
    cannot keep both orders — applied before the route it removes workers that still carry
    traffic, applied after it sends traffic to workers that do not exist yet. Such a spec is
    refused, naming the first transition (forward steps, then the rollback from each step, then
    cleanup). A blue-green rollout never needs one: the stable keeps every worker until cleanup
    (docs/planning.md, "worker-group: one DGD, one sync wave")."""
    last = len(out) - 1
    paths: list[tuple[str, int, Sequence[PlanStep]]] = [
        (f"step {i}", i, (out[i - 1], out[i])) for i in range(1, len(out))]
    rb = Plan(inp.rollout, inp.mode, inp.strategy, inp.stable_revision, inp.candidate_revision,
              tuple(out), rollback, cleanup, {}, 0.0, 0.0, 0, (), tuple(rollback_steps))
    paths += [(f"rolling back from step {k}", k, (out[k], *rb.rollback_from(k)))
              for k in range(1, len(out))]
    paths.append(("cleanup", last, (out[last], cleanup)))
    for what, k, path in paths:
        for before, now in itertools.pairwise(path):
            s_up, s_down = _moves(before.stable, now.stable)
            c_up, c_down = _moves(before.candidate, now.candidate)
            if not ((s_up or c_up) and (s_down or c_down)):
                continue
            grow, shrink = ((inp.stable_revision, s_up), (inp.candidate_revision, c_down)) \
                if s_up else ((inp.candidate_revision, c_up), (inp.stable_revision, s_down))
            into = "" if now.kind == "step" else f" (into state {now.label})"
            raise PlanError(
                f"isolation worker-group: {what}{into} grows group {grow[0]} "
                f"({', '.join(grow[1])}) and shrinks group {shrink[0]} "
                f"({', '.join(shrink[1])}) in the one DGD, which is applied in one sync wave: "
                "either the route sends traffic to workers that do not exist yet or a group "
                "loses workers while it still carries traffic. Use spec.strategy: blue-green "
                "(the stable group keeps its workers until cleanup) or spec.isolation: "
                "separate-dgd (a DGD per generation, each in its own wave)",
                field=("spec", "steps", k - 1),
            )


def _rollback_targets(fwd: PlanStep, inp: PlanInput) -> tuple[GenerationState, GenerationState]:
    """The generations of a rollback state that keeps forward step ``fwd``'s replicas: the
    stable takes all the traffic those replicas carry (its capacity, rounded down to a whole
    percent), not the share the forward step gave it — a rollback moves traffic off the
    candidate as fast as the stable can serve it. In ``partition`` the one frontend splits by
    worker counts, so the forward weights are what those replicas get."""
    if inp.mode == "partition":
        return fwd.stable, fwd.candidate
    share = min(100, math.floor(round(fwd.stable.capacity * 100, 9)))
    share = max(share, fwd.stable.weight)
    return (dataclasses.replace(fwd.stable, weight=share),
            dataclasses.replace(fwd.candidate, weight=100 - share))


def _rollback_note(last: int, chain: Sequence[PlanStep], inp: PlanInput) -> str:
    if not chain:
        return ("rollback: one state from every step: the stable returns to full size within "
                "capacity.maxSurge while the candidate still serves, then takes all traffic back")
    states = ", ".join(f"{b.label} (stable {b.stable.weight}%)" for b in chain)
    share = ("the most its replicas there carry" if inp.mode != "partition" else
             "its share of the worker counts")
    return (f"rollback from step {last} passes through {states}, each giving the stable {share}: "
            "regrowing the whole stable next to the candidate's replicas at once would exceed "
            f"capacity.maxSurge; from step {chain[-1].index} or earlier the rollback is one "
            "state")


def _size(c: ComponentInput) -> int:
    return max(c.stable_replicas, c.candidate_replicas)


def _full_gpus(comps: Sequence[ComponentInput]) -> int:
    return max(
        sum(c.stable_replicas * c.stable_gpus for c in comps),
        sum(c.candidate_replicas * c.candidate_gpus for c in comps),
    )


def _extra_base(comps: Sequence[ComponentInput], mode: str) -> int:
    """What a state's ``extra_gpus_peak`` is measured against. With a DGD per generation (or
    group), the larger generation's full size: a candidate meant to be bigger grows into its own
    size beside the stable, and only what exceeds it is surge. In ``partition`` the DGD that runs
    today is the one that rolls: each worker component's ``replicas`` becomes stable + candidate,
    so everything above the stable as it runs today (step 0) is what the roll adds to the
    cluster, a larger candidate's growth included (docs/planning.md)."""
    if mode == "partition":
        return sum(c.stable_replicas * c.stable_gpus for c in comps)
    return _full_gpus(comps)


def _check_weights(steps: Sequence[StepInput]) -> None:
    prev = 0
    for i, st in enumerate(steps):
        if not 0 <= st.weight <= 100:
            raise PlanError(f"weight {st.weight} is outside 0..100", field=("spec", "steps", i, "weight"))
        if st.weight < prev:
            raise PlanError(
                f"weight goes backwards ({prev}% → {st.weight}%); weights never decrease within a "
                "rollout (use `dgdgen rollback` to return traffic)",
                field=("spec", "steps", i, "weight"),
            )
        prev = st.weight


def _state(
    revision: str, present: bool, weight: int, reps: dict[str, int],
    comps: Sequence[ComponentInput], targets: Mapping[str, int], which: str,
) -> GenerationState:
    gpus = sum(
        reps[c.name] * (c.stable_gpus if which == "stable" else c.candidate_gpus) for c in comps
    )
    return GenerationState(revision, present, weight, reps, gpus, capacity(reps, comps, targets) if present else 0.0)


def capacity(reps: Mapping[str, int], comps: Sequence[ComponentInput], targets: Mapping[str, int]) -> float:
    """Fraction of full traffic a generation can carry: its scarcest worker component."""
    fracs = [reps[c.name] / targets[c.name] for c in comps if c.is_worker and targets[c.name] > 0]
    if any(reps[c.name] == 0 for c in comps if c.role == "frontend"):
        return 0.0
    return min(fracs) if fracs else 0.0


def _transition(
    index: int, st: StepInput, prev_s: GenerationState, prev_c: GenerationState,
    s_t: GenerationState, c_t: GenerationState, comps: Sequence[ComponentInput],
    surge: Mapping[str, int], unavail: float, headroom: float, stable_T: Mapping[str, int],
    inp: PlanInput,
) -> PlanStep:
    # Phase 1, make room: the stable may shrink below its current share by `headroom`, and total
    # capacity may dip by `maxUnavailable`, before the candidate grows.
    prev_share = prev_s.weight / 100
    floor_frac = max(prev_share - headroom, (1 - unavail) - prev_c.capacity, 0.0)
    room = _room(comps, prev_s, s_t, floor_frac, stable_T, inp.strategy)
    room_cap = capacity(room, comps, stable_T) if prev_s.present else 0.0
    # Phase 2, scale up: the peak.
    peak = {c.name: room[c.name] + c_t.replicas[c.name] for c in comps}
    peak_gpus = sum(room[c.name] * c.stable_gpus + c_t.replicas[c.name] * c.candidate_gpus
                    for c in comps)
    if inp.mode == "partition":
        peak, peak_gpus = _partition_peak((prev_s, prev_c), (s_t, c_t), comps)
    over = next(_over_surge(peak, comps, surge), None)
    if over is not None:
        c, extra = over
        raise PlanError(
            f"step {index} ({prev_c.weight}% → {st.weight}%) needs {extra} extra {c.name} "
            f"replica(s) at its peak ({c_t.replicas[c.name]} candidate while the stable still "
            f"runs {room[c.name]}), but capacity.maxSurge allows {surge[c.name]}: the surge "
            "budget is too small to make progress. Raise capacity.maxSurge, allow "
            "capacity.maxUnavailable together with capacity.headroom, or add smaller steps",
            field=("spec", "steps", index - 1, "weight"),
        )
    min_cap = min(room_cap + prev_c.capacity, s_t.capacity + c_t.capacity)
    serving = [room] if prev_s.weight else []
    serving += [c_t.replicas] if prev_c.weight or c_t.weight else []
    serving += [s_t.replicas] if s_t.weight else []
    shrinks = any(s_t.replicas[c.name] < room[c.name] for c in comps)
    return _move(
        PlanStep(index, "step", f"step-{index:02d}", s_t, c_t, st.pause_seconds, st.gate),
        peak, peak_gpus, min_cap, serving, comps, inp,
        leaving=(prev_s.weight, s_t.weight, shrinks),
    )


def _move(step: PlanStep, peak: dict[str, int], peak_gpus: int, min_cap: float,
          serving: Sequence[Mapping[str, int]], comps: Sequence[ComponentInput], inp: PlanInput,
          *, leaving: tuple[int, int, bool], shift_first: bool = False) -> PlanStep:
    """``step`` (a forward or a rollback transition between two separate generations) with its
    peak, capacity and drain; ``leaving`` is the weight before and after, and whether it shrinks,
    of the generation that gives up traffic (the stable forward, the candidate on the way back)."""
    before, after, shrinks = leaving
    return dataclasses.replace(
        step, peak_replicas=peak, peak_gpus=peak_gpus,
        extra_gpus_peak=max(0, peak_gpus - _extra_base(comps, inp.mode)), min_capacity=min_cap,
        min_serving_workers=_min_workers([r for r in serving if r], comps),
        # A frontend's in-flight count reaches 0 only once it gets no new requests: a leaving
        # generation drains when its weight drops to 0 (a generation still serving part of the
        # traffic never would); workers it loses while serving finish their requests on SIGTERM
        # (docs/planning.md, shown by `dgdgen rehearse`).
        drain_seconds=(inp.drain_seconds if shrinks and after == 0 < before
                       and inp.mode in DRAIN_MODES else None),
        shift_first=shift_first,
    )


def _room(comps: Sequence[ComponentInput], now: GenerationState, target: GenerationState,
          floor_frac: float, full: Mapping[str, int], strategy: str) -> dict[str, int]:
    """The replicas the leaving generation keeps while the other one grows (forward: the
    stable; rollback: the candidate). A worker shrinks towards its ``target`` but not below
    ``floor_frac`` of its ``full`` size and never grows; while the generation still has weight
    it keeps a worker of every component (headroom lets it run short of its share, never carry
    traffic with nobody to serve it). Frontends, and every component of a blue-green switch,
    keep what they run."""
    keep = 1 if now.weight > 0 else 0
    room: dict[str, int] = {}
    for c in comps:
        if c.is_worker and strategy != "blue-green":
            room[c.name] = min(now.replicas[c.name], max(
                target.replicas[c.name], _frac_replicas(floor_frac, full[c.name]), keep))
        else:
            room[c.name] = now.replicas[c.name]
    return room


def _over_surge(peak: Mapping[str, int], comps: Sequence[ComponentInput],
                surge: Mapping[str, int]) -> Iterator[tuple[ComponentInput, int]]:
    """Worker components whose ``peak`` runs more replicas beyond their full size than the
    surge budget allows, with that number (forward and rollback transitions alike)."""
    for c in comps:
        extra = peak[c.name] - _size(c)
        if c.is_worker and extra > surge[c.name]:
            yield c, extra


def _min_workers(states: Sequence[Mapping[str, int]], comps: Sequence[ComponentInput]) -> int:
    counts = [r[c.name] for r in states for c in comps if c.is_worker]
    return min(counts) if counts else 0


def _backward(
    frm: PlanStep, to_s: GenerationState, to_c: GenerationState, kind: str, index: int,
    label: str, comps: Sequence[ComponentInput], surge: Mapping[str, int], headroom: float,
    cand_T: Mapping[str, int], inp: PlanInput,
) -> PlanStep:
    """One backward (rollback) transition ``frm`` → (``to_s``, ``to_c``): the stable regains
    weight, the candidate gives it up.

    Shift first when the stable's running replicas carry the share it gets back (within
    `headroom`): weights move, the candidate drains and shrinks, then the stable grows — no
    replica beyond the two states. Otherwise the candidate first makes room (it may run short of
    its share by `headroom`, keeping a worker of every component while it has weight), the stable
    grows, the weights move, the candidate drains and shrinks. A peak above the surge budget is
    refused: the rollout could not be rolled back on a cluster sized to the budget."""
    s0, c0 = frm.stable, frm.candidate
    shift_first = to_s.weight / 100 <= s0.capacity + headroom + 1e-9 and (
        s0.capacity > 0 or to_s.weight == 0)
    if shift_first:
        peak = {c.name: max(s0.replicas[c.name] + c0.replicas[c.name],
                            s0.replicas[c.name] + to_c.replicas[c.name],
                            to_s.replicas[c.name] + to_c.replicas[c.name]) for c in comps}
        serving = ([s0.replicas] if to_s.weight else []) + ([to_c.replicas] if to_c.weight else [])
        min_cap = min(s0.capacity + c0.capacity, to_s.capacity + to_c.capacity,
                      s0.capacity + to_c.capacity)
    else:
        floor_frac = max(c0.weight / 100 - headroom, 0.0)
        room = _room(comps, c0, to_c, floor_frac, cand_T, inp.strategy)
        peak = {c.name: to_s.replicas[c.name] + room[c.name] for c in comps}
        serving = [room] + ([to_s.replicas] if to_s.weight else [])
        room_cap = capacity(room, comps, cand_T) if c0.present else 0.0
        min_cap = min(s0.capacity + room_cap, to_s.capacity + to_c.capacity)
    peak_gpus = _backward_gpus(peak, s0, to_s, shift_first, comps)
    if inp.mode == "partition":
        peak, peak_gpus = _partition_peak((s0, c0), (to_s, to_c), comps)
    over = next(_over_surge(peak, comps, surge), None)
    if over is not None:
        c, extra = over
        raise PlanError(
            f"rolling back from step {frm.index} ({c0.weight}% → {to_c.weight}%) needs "
            f"{extra} extra {c.name} replica(s) at its peak (the stable back to "
            f"{to_s.replicas[c.name]} while the candidate still runs "
            f"{peak[c.name] - to_s.replicas[c.name]}), but capacity.maxSurge allows "
            f"{surge[c.name]}: on a cluster sized to the surge budget this rollback could "
            "not proceed. Raise capacity.maxSurge, allow capacity.headroom, or add smaller "
            "steps",
            field=("spec", "steps", frm.index - 1, "weight"),
        )
    shrinks = any(to_c.replicas[c.name] < c0.replicas[c.name] for c in comps) or (
        c0.present and not to_c.present)
    return _move(PlanStep(index, kind, label, to_s, to_c, None, None), peak, peak_gpus, min_cap,
                 serving, comps, inp, leaving=(c0.weight, to_c.weight, shrinks),
                 shift_first=shift_first)


def _partition_dgd(state: tuple[GenerationState, GenerationState], c: ComponentInput
                   ) -> tuple[int, int]:
    """(old, new) revision replicas of component ``c`` in the one DGD a partition rollout
    renders for a state (dgdgen.render.dgds._partition): a worker runs stable + candidate; any
    other component runs the candidate's count, on the old revision until the candidate has all
    the traffic; the baseline and rollback are the stable's own DGD."""
    s, cand = state
    if c.is_worker:
        return s.replicas[c.name], cand.replicas[c.name]
    if not cand.present:
        return s.replicas[c.name], 0
    n = c.candidate_replicas
    return (n, 0) if cand.weight < 100 else (0, n)


def _partition_peak(before: tuple[GenerationState, GenerationState],
                    after: tuple[GenerationState, GenerationState],
                    comps: Sequence[ComponentInput]) -> tuple[dict[str, int], int]:
    """Peak replicas and GPUs of a partition transition. The rendered DGD asks for no more
    replicas of a component than it had before or has after (its ``replicas`` is stable +
    candidate); the operator moves ordinals from the old revision to the new one inside that
    count, as a StatefulSet partition does (each ordinal is replaced, none added). So per
    component at most max(before, after) pods run, of which at most the larger old count is
    old and the larger new count new; the GPUs bound takes the hungrier revision first."""
    peak: dict[str, int] = {}
    gpus = 0
    for c in comps:
        ob, nb = _partition_dgd(before, c)
        oa, na = _partition_dgd(after, c)
        total = max(ob + nb, oa + na)
        peak[c.name] = total
        order = [(max(ob, oa), c.stable_gpus), (max(nb, na), c.candidate_gpus)]
        left = total
        for n, g in sorted(order, key=lambda t: -t[1]):
            take = min(n, left)
            gpus += take * g
            left -= take
    return peak, gpus


def _backward_gpus(peak: Mapping[str, int], s0: GenerationState, to_s: GenerationState,
                   shift_first: bool, comps: Sequence[ComponentInput]) -> int:
    """GPUs at the peak of a backward transition: the stable's part at its larger size, the rest
    the candidate's."""
    total = 0
    for c in comps:
        stable = max(s0.replicas[c.name], to_s.replicas[c.name]) if not shift_first else (
            min(peak[c.name], max(s0.replicas[c.name], to_s.replicas[c.name])))
        stable = min(stable, peak[c.name])
        total += stable * c.stable_gpus + (peak[c.name] - stable) * c.candidate_gpus
    return total


def _in_place_step(
    index: int, st: StepInput, prev_s: GenerationState, s_t: GenerationState,
    c_t: GenerationState, comps: Sequence[ComponentInput], surge: Mapping[str, int],
    inp: PlanInput,
) -> PlanStep:
    # The operator replaces workers itself, bounded by the rolling-update annotations that the
    # renderer writes from the same budgets (ai-dynamo/dynamo #6110): at most `surge` extra replicas
    # per component at any time.
    peak = {c.name: c.stable_replicas + (surge[c.name] if c.is_worker else 0) for c in comps}
    peak_gpus = sum(peak[c.name] * max(c.stable_gpus, c.candidate_gpus) for c in comps)
    baseline_gpus = _full_gpus(comps)
    return PlanStep(
        index, "step", f"step-{index:02d}", s_t, c_t, st.pause_seconds, st.gate,
        peak_replicas=peak, peak_gpus=peak_gpus, extra_gpus_peak=max(0, peak_gpus - baseline_gpus),
        min_capacity=1.0 - inp.max_unavailable.fraction([c.stable_replicas for c in comps if c.is_worker]),
        # the operator keeps all but maxUnavailable (rounded down) of each component serving
        min_serving_workers=min(
            (c.stable_replicas - inp.max_unavailable.replicas(c.stable_replicas, round_up=False)
             for c in comps if c.is_worker), default=0),
        # No drain to wait for: old and new workers share one frontend, and the operator replaces
        # them pod by pod (their own termination grace period covers in-flight requests).
    )
