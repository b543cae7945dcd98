"""dgdgen experiment SPEC --samples FILE: decide the A/B experiment of the step gated
`experiment`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from dgdgen.commands import _gitops

if TYPE_CHECKING:
    from dgdgen.analysis.experiment import Decision
    from dgdgen.plan.load import LoadedSpec

HELP = "decide an A/B experiment step (Mann-Whitney U) from its samples"
DESCRIPTION = """\
Decide the experiment step (the step whose gate is `experiment`, spec.analysis.experiment):
read one value per user or request from --samples (JSON Lines: {"generation": REVISION or
"stable"/"candidate", "value": NUMBER}), and, once both generations reached the sample sized
from minimumDetectableEffect and the step's split, decide with a two-sided Mann-Whitney U test:
candidate-better, no-difference or stable-better, with the win rate and the rank-biserial effect
size. Before that the decision is `undecided` (the sample is fixed in advance: deciding on an
early look would inflate the error rate).

exit codes: 0 the gate passes (candidate-better, or no-difference with onNoDifference: promote),
1 it fails, 2 bad input, 3 undecided.

With --record PATH the decision is recorded as the step's gate result in the rendered Git tree
(one commit, like `dgdgen gate`); `dgdgen promote` or `dgdgen rollback` then carries it in a
Dgdgen-Experiment trailer, and `dgdgen status` shows it.

examples:
  dgdgen experiment rollout.yaml --samples ratings.jsonl
  dgdgen experiment rollout.yaml --samples ratings.jsonl --record deploy/qwen
"""

EXIT_FAILED = 1
EXIT_UNDECIDED = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument("--samples", required=True, metavar="FILE",
                   help="JSON Lines, one {generation, value} per user or request")
    p.add_argument("--record", metavar="PATH",
                   help="record the decision as the step's gate result in the Git tree at PATH")
    p.add_argument("--push", action="store_true", help="with --record: push the commit")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: the decision for a person; json: the same as data (default: text)")


def read_samples(path: str, stable: str, candidate: str, *, flag: str = "--samples"
                 ) -> tuple[list[float], list[float]]:
    """(stable values, candidate values); one clear error at file:line for a bad line (``flag``:
    the option that named the file, in the error). The file is read as every input is (a
    regular file, up to the input size limit), one typed object a line."""
    from pathlib import Path

    from dgdgen.analysis.scorers import jsonl_objects
    from dgdgen.errors import InputError

    out: dict[str, list[float]] = {"stable": [], "candidate": []}
    names = {stable: "stable", candidate: "candidate", "stable": "stable",
             "candidate": "candidate"}
    try:
        for _n, where, doc in jsonl_objects(Path(path), None, "exactly `generation` and `value`"):
            if set(doc) != {"generation", "value"}:
                raise InputError("expected an object with exactly `generation` and `value`",
                                 location=where)
            gen, value = doc["generation"], doc["value"]
            if not isinstance(gen, str) or gen not in names:
                raise InputError(f"expected {stable!r}, {candidate!r}, 'stable' or "
                                 f"'candidate', got {json_shown(gen)}", location=where,
                                 field=("generation",))
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not _finite(value):
                raise InputError(f"expected a finite number, got {json_shown(value)}",
                                 location=where, field=("value",))
            out[names[gen]].append(float(value))
    except InputError as exc:
        if exc.location is None or exc.location.line is None:  # the file itself
            raise InputError(f"{flag}: {exc.message}", location=exc.location,
                             hint=exc.hint) from None
        raise
    for role, values in out.items():
        if not values:
            raise InputError(f"{flag}: {path} has no value of the {role} generation")
    return out["stable"], out["candidate"]


def _finite(value: float) -> bool:
    """Whether a JSON number is a finite float (an integer too wide for one is not)."""
    import math

    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def json_shown(value: object) -> str:
    """A value of a samples line as the line wrote it, cut short."""
    import json

    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def result_of(loaded: LoadedSpec, d: Decision) -> str:
    from dgdgen.analysis import experiment as ex

    cfg = loaded.spec.spec.analysis.experiment
    assert cfg is not None
    if d.decision == ex.UNDECIDED:
        return "inconclusive"
    if d.decision == ex.NO_DIFFERENCE:
        return "passed" if cfg.on_no_difference == "promote" else "failed"
    return "passed" if d.decision == ex.CANDIDATE_BETTER else "failed"


def run(args: argparse.Namespace) -> int:
    # --record: the premise before the imports (see commands._gitops.premise)
    early = _gitops.premise(args.record) if args.record else None
    import json

    from dgdgen.analysis import experiment as ex
    from dgdgen.analysis.gates import EXPERIMENT, experiment_share
    from dgdgen.errors import InputError
    from dgdgen.pipeline.prepare import prepare

    prepared = prepare(args.spec)
    loaded = prepared.loaded
    cfg = loaded.spec.spec.analysis.experiment
    steps = [s for s in prepared.plan.steps if s.kind == "step" and s.gate == EXPERIMENT]
    if cfg is None or not steps:
        raise InputError("the rollout has no experiment step (a step with gate: experiment and "
                         "spec.analysis.experiment)",
                         location=loaded.location(("spec", "steps")), field=("spec", "steps"))
    state = steps[0]
    target = None
    if args.record:
        from dgdgen.gitops import target as gitops_target

        target = gitops_target.open_target(args.spec, args.record, early=early)
        if target.top is None:
            raise InputError(f"--record: {target.into} is not inside a Git work tree")
        _idx, cur, _prev = gitops_target.current(target)
        if cur.index != state.index or cur.kind != "step":
            raise InputError(f"--record: {target.rel} is at {cur.label}, not the experiment "
                             f"step {state.index}")
    stable, candidate = read_samples(args.samples, state.stable.revision,
                                     state.candidate.revision)
    d = ex.decide(stable, candidate, mde=cfg.minimum_detectable_effect,
                  candidate_share=experiment_share(state, cfg), better=cfg.better,
                  alpha=cfg.alpha,
                  power=cfg.power)
    result = result_of(loaded, d)
    if args.format == "json":
        sys.stdout.write(json.dumps({
            "step": state.index, "metric": cfg.metric, "better": cfg.better,
            "decision": d.decision, "gate": result, "winRate": d.win_rate, "effect": d.effect,
            "u": d.u, "pValue": d.p_value, "stable": {"n": d.n_stable, "needed": d.needed_stable},
            "candidate": {"n": d.n_candidate, "needed": d.needed_candidate},
        }, indent=2) + "\n")
    else:
        sys.stdout.write(
            f"step {state.index} experiment: {cfg.metric} ({cfg.better} is better), candidate "
            f"{state.candidate.revision} at {state.candidate.weight}% vs stable "
            f"{state.stable.revision}\n{d.summary()}\ngate: {result}\n")
    if target is not None:
        from dgdgen.gitops import actions

        out = actions.record_gate(target, result, step=state.index,
                                  message=f"experiment {d.summary()}", push=args.push)
        sys.stderr.write(out.message if out.message.endswith("\n") else out.message + "\n")
    if result == "passed":
        return 0
    return EXIT_UNDECIDED if result == "inconclusive" else EXIT_FAILED
