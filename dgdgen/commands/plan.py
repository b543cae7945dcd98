"""dgdgen plan SPEC: show the steps of a rollout."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

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
  svg       a picture: per state the traffic split on a percent scale, the replicas and GPUs
            of each generation on a GPU scale, the peak of each move against the surge budget
            line, the order of the moves with drain bounds, pauses, gates, bake times, the
            plan's notes, a legend naming each generation by its revision; rollback and cleanup
            set apart as the ends a rollout can reach
  png       the same picture as PNG (drawn from the SVG by rsvg-convert, librsvg); written to
            -o FILE or a pipe, refused (exit 2) when standard output is a terminal

example:
  dgdgen plan examples/vllm-disagg-block-size/rollout.yaml --format markdown >> $GITHUB_STEP_SUMMARY
  dgdgen plan examples/vllm-disagg-block-size/rollout.yaml --format svg -o plan.svg
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument(
        "-f", "--format", choices=("table", "json", "markdown", "svg", "png"), default="table",
        help="output format (default: table)",
    )
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (atomically) instead of standard output")


def run(args: argparse.Namespace) -> int:
    from dgdgen.pipeline.picture import png, svg
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.pipeline.report import FORMATS

    to_stdout = args.output is None or args.output == "-"
    if args.format == "png" and to_stdout and sys.stdout.isatty():
        # PNG bytes on a terminal are noise at best, escape sequences the terminal obeys at
        # worst; to a pipe or a file they are what was asked for
        from dgdgen.errors import InputError

        raise InputError(
            "--format png writes binary image data, and standard output is a terminal",
            hint=f"write it to a file: dgdgen plan {args.spec} --format png -o plan.png "
            "(or redirect: > plan.png)",
        )
    prepared = prepare(args.spec)
    _warn_images(prepared)
    if args.format == "png":
        data = png(prepared)
    else:
        data = {**FORMATS, "svg": svg}[args.format](prepared).encode("utf-8")
    if to_stdout:
        out = getattr(sys.stdout, "buffer", None)
        if out is not None:
            out.write(data)
            out.flush()
        else:  # a text-only stream (an embedding caller's StringIO): text formats as text
            sys.stdout.write(data.decode("utf-8", errors="replace"))
        return 0
    _write(args.output, data)
    return 0


def _write(path: str, data: bytes) -> None:
    """Whole or not at all, so a failed run leaves nothing half-written where the picture or
    table is expected (a device such as /dev/null is written through)."""
    from dgdgen.write import write_file

    write_file(path, data, what="plan output")


def _warn_images(prepared: Prepared) -> None:
    """The plan's notes are about the plan; an image its objects cannot pull is said on stderr
    (`dgdgen plan: warning: ...`), so every output format stays what it is."""
    import warnings

    from dgdgen.errors import InputWarning
    from dgdgen.render import images

    text = images.warning(prepared)
    if text is not None:
        warnings.warn(text, InputWarning, stacklevel=2)
