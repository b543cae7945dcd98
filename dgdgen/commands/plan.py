"""dgdgen plan SPEC: show the steps of a rollout."""

from __future__ import annotations

import argparse
import sys

HELP = "show the steps of a rollout: weights, replicas, GPUs, capacity, gates"
DESCRIPTION = """\
Expand a rollout spec into its plan and print it: for every step the traffic split between the
stable and candidate generations, the replicas of each component, the GPUs in use at the step's
peak (and above the stable's size), the capacity each generation has for its share, the bake
time and the gate; then the rollback and cleanup states.

formats:
  table     aligned text (default)
  json      the plan as data
  markdown  a pull-request summary with mermaid charts of weights and replicas per step

example:
  dgdgen plan examples/vllm-disagg-block-size/rollout.yaml --format markdown >> $GITHUB_STEP_SUMMARY
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument(
        "-f", "--format", choices=("table", "json", "markdown"), default="table",
        help="output format (default: table)",
    )


def run(args: argparse.Namespace) -> int:
    from dgdgen.pipeline import prepare
    from dgdgen.planreport import FORMATS

    prepared = prepare(args.spec)
    sys.stdout.write(FORMATS[args.format](prepared))
    return 0
