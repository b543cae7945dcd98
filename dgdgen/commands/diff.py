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
    from dgdgen.errors import InputError, Location
    from dgdgen.model.dgd import is_dgd

    pair = sources.load_pair(args.old, args.new)
    sides = (("OLD", sources._display(args.old), pair.base or []), ("NEW", pair.file, pair.head))
    specs = [(name, shown) for name, shown, docs in sides if any(_is_spec(d.data) for d in docs)]
    if specs:
        # A newcomer's first guess: "what does my edit of the rollout spec change?"
        if len(specs) == 2:
            what = (f"OLD {sides[0][1]} and NEW {sides[1][1]} are dgdgen rollout specs (kind "
                    "DGDRollout), not DynamoGraphDeployment files: `dgdgen diff` compares two "
                    "versions of a DGD file")
        else:
            what = (f"{specs[0][0]} {specs[0][1]} is a dgdgen rollout spec (kind DGDRollout): "
                    "`dgdgen diff` compares two versions of a DynamoGraphDeployment file, here "
                    f"OLD {sides[0][1]} and NEW {sides[1][1]}")
        raise InputError(
            what,
            location=Location(specs[-1][1]),
            hint="no command compares two rollout specs: `git diff` shows the edit and "
            "`dgdgen plan SPEC` the steps of each; to classify what a spec's candidate changes "
            "in its DGD, render a step and diff the two DGDs: dgdgen render SPEC -o out "
            "--step 1, then dgdgen diff out/<stable DGD>.yaml out/<candidate DGD>.yaml",
        )
    empty = [(name, shown) for name, shown, docs in sides if not any(is_dgd(d.data) for d in docs)]
    if empty:
        # "0 error(s)" would be a verdict about nothing (`dgdgen policy test` refuses too).
        raise InputError(
            " and ".join(f"{name} {shown}" for name, shown in empty)
            + f"{'' if len(empty) == 1 else ': each'} holds no DynamoGraphDeployment: nothing to "
            "compare", location=Location(empty[-1][1]),
        )
    report = engine.run([pair], opts, sources.sibling_loader([args.new]))
    emit(report, args)
    return 1 if report.failing(fail_on) else 0


def _is_spec(doc: object) -> bool:
    from dgdgen.spec import API_VERSION, KIND

    return isinstance(doc, dict) and doc.get("kind") == KIND and \
        str(doc.get("apiVersion", "")).startswith(API_VERSION.split("/")[0] + "/")
