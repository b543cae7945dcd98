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
  svg       a picture: per state the traffic split, the replicas and GPUs of each generation,
            the peak of each move against the surge budget line, pauses, gates, bake times
  png       the same picture as PNG (drawn from the SVG by rsvg-convert, librsvg)

example:
  dgdgen plan examples/vllm-disagg-block-size/rollout.yaml --format markdown >> $GITHUB_STEP_SUMMARY
  dgdgen plan examples/vllm-disagg-block-size/rollout.yaml --format svg > plan.svg
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument(
        "-f", "--format", choices=("table", "json", "markdown", "svg", "png"), default="table",
        help="output format (default: table)",
    )


def run(args: argparse.Namespace) -> int:
    from dgdgen.pipeline import prepare
    from dgdgen.planreport import FORMATS

    prepared = prepare(args.spec)
    if args.format == "png":
        from dgdgen.planreport import png

        sys.stdout.buffer.write(png(prepared))
        return 0
    sys.stdout.write(FORMATS[args.format](prepared))
    return 0
