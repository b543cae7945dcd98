"""`dgdgen diff OLD NEW`: classify the change between two DGD files."""

from __future__ import annotations

import argparse

from dgdgen.commands.check import add_output_arguments, emit, options

HELP = "classify the change between two DGD files (isolation required? which categories?)"
DESCRIPTION = """\
Compare two versions of a DGD file: NEW is checked as the head, OLD as its base. DGDs are
matched by namespace and name (a single DGD on each side is matched even when renamed). A
candidate rendered by `dgdgen render` beside its stable DGD is compared with it as a generation
isolated beside it, not as a rename: its categories are reported, no in-place rule fires.

example:
  dgdgen diff step-01/dynamographdeployment-app.yaml step-01/dynamographdeployment-r1a2b3c-app.yaml

The JSON report (`--format json`) has a top-level `isolation_required` (true or false; fail
safe, true also when a change cannot be decided: DGD205), the `categories` known to change
(mdc-checksum, kv-transfer, runtime-version), the ones assumed to change under `assumed`, the
risk grade, `findings` and per-DGD `verdicts` with every change. `--model-config DIR` (the
model's config.json) settles what the engine derives from the model's files.

exit codes: 0 clean, 1 findings at or above --fail-on, 2 bad input or usage, or nothing to
compare (OLD or NEW holds no DynamoGraphDeployment: a job pointed at the wrong path must not
pass).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the base version of the file")
    parser.add_argument("new", metavar="NEW", help="the new version of the file")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from dgdgen.check import engine, sources

    opts, fail_on = options(args, None)
    from dgdgen.dgd import is_dgd
    from dgdgen.errors import InputError, Location

    pair = sources.load_pair(args.old, args.new)
    for shown, docs in ((pair.file, pair.head), (sources._display(args.old), pair.base or [])):
        if not any(is_dgd(d.data) for d in docs):
            # "0 error(s)" would be a verdict about nothing (`dgdgen policy test` refuses too).
            raise InputError("holds no DynamoGraphDeployment: nothing to compare",
                             location=Location(shown))
    report = engine.run([pair], opts, sources.sibling_loader([args.new]))
    emit(report, args)
    return 1 if report.failing(fail_on) else 0
