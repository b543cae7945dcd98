"""dgdgen render SPEC... -o DIR: write the manifests of a rollout."""

from __future__ import annotations

import argparse
import os
import sys

HELP = "write the manifests of every step (or one step) of a rollout"
DESCRIPTION = """\
Render the manifests of a rollout, one file per object, byte-identical on every run. By default
every state is written in its own directory:

  DIR/step-00/    baseline: the stable generation as before the rollout
  DIR/step-NN/    each step of the plan
  DIR/rollback/   all traffic back on the stable generation (identical to step-00)
  DIR/cleanup/    the candidate alone, the stable generation removed
  DIR/plan.json   the plan as data

With --step, only that state is written, directly into DIR. Every object is validated against the
upstream CRD schemas (strict) and their CEL rules before anything is written; the tree is
replaced atomically, so a failed or interrupted render leaves the previous one intact. With
several specs, each is written to DIR/<rollout name>/.

examples:
  dgdgen render examples/vllm-disagg-block-size/rollout.yaml -o out/
  dgdgen render rollout.yaml -o deploy/ --step 2
  dgdgen render rollout.yaml -o deploy/ --step rollback
"""


def _step(value: str) -> int | str:
    if value in ("rollback", "cleanup", "baseline"):
        return 0 if value == "baseline" else value
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a step number, 'baseline', 'rollback' or 'cleanup', got {value!r}"
        ) from None
    if n < 0:
        raise argparse.ArgumentTypeError("step numbers start at 0 (the baseline)")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs", nargs="+", metavar="SPEC", help="rollout spec file(s)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--step", type=_step, metavar="N", help="render one state: a step number, baseline, "
        "rollback or cleanup"
    )
    which.add_argument(
        "--all-steps", action="store_true", help="render every state (the default)"
    )
    p.add_argument(
        "--no-validate", action="store_true",
        help="skip validating the output against the CRD schemas (not recommended)",
    )
    p.add_argument(
        "--force", action="store_true",
        help="replace DIR even if it holds files not written by dgdgen render",
    )


def run(args: argparse.Namespace) -> int:
    from dgdgen.commands._common import progress
    from dgdgen.errors import InputError
    from dgdgen.output import all_files, state_files
    from dgdgen.pipeline import prepare
    from dgdgen.write import write_tree

    specs = list(args.specs)
    plans = [prepare(path) for path in progress(specs, "planning")]
    names = [p.plan.rollout for p in plans]
    if len(set(names)) != len(names):
        raise InputError("two specs share a rollout name; each needs its own output directory")
    files: dict[str, str] = {}
    for prepared in progress(plans, "rendering", ""):
        prefix = f"{prepared.plan.rollout}/" if len(plans) > 1 else ""
        if args.step is None:
            rendered = all_files(prepared, validate=not args.no_validate)
        else:
            try:
                state = prepared.plan.state(args.step)
            except KeyError:
                raise InputError(
                    f"the plan of {prepared.loaded.path} has steps 0..{len(prepared.plan.steps) - 1}"
                    f", rollback and cleanup; there is no step {args.step}"
                ) from None
            rendered = state_files(prepared, state, validate=not args.no_validate)
        files.update({prefix + k: v for k, v in rendered.items()})
    write_tree(args.output, files, force=args.force)
    sys.stderr.write(f"wrote {len(files)} file(s) to {os.path.relpath(args.output)}\n")
    return 0
