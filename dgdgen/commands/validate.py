"""dgdgen validate SPEC...: check rollout specs (fields, DGD references, plan, rendered output)."""

from __future__ import annotations

import argparse
import sys

HELP = "check rollout specs: fields, the DGD they name, the plan, and the rendered manifests"
DESCRIPTION = """\
Check one or more rollout specs the way `render` would use them: every field (unknown or
mistyped fields are named with file:line and a did-you-mean), the stable DGD the spec points at,
the components it changes, the plan (weights, surge budget, names), and every rendered manifest
against the upstream CRD schemas and their CEL rules. Nothing is written.

Warnings (a valid spec that likely misbehaves, e.g. PodMonitor labels left to their default)
are printed as "warning: file:line: ..." and do not change the exit code.

exit codes: 0 all valid, 2 at least one spec is invalid (each problem printed as file:line).

example:
  dgdgen validate examples/*/rollout.yaml
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs", nargs="+", metavar="SPEC", help="rollout spec files")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")


def run(args: argparse.Namespace) -> int:
    from dgdgen.commands._common import progress, report_error
    from dgdgen.errors import DgdgenError
    from dgdgen.pipeline.files import validate_all
    from dgdgen.pipeline.prepare import prepare

    failed = 0
    for path in progress(list(args.specs), "validating"):
        try:
            prepared = prepare(path)
            validate_all(prepared)
        except DgdgenError as exc:  # every problem of this spec; then the next spec
            failed += 1
            report_error("validate", exc)
            continue
        import warnings

        from dgdgen.errors import InputWarning
        from dgdgen.render import images
        from dgdgen.render.analysis import warnings as analysis_warnings

        unpublished = images.warning(prepared)
        for w in analysis_warnings(prepared) + ([unpublished] if unpublished else []):
            warnings.warn(w, InputWarning, stacklevel=1)  # `dgdgen validate: warning: ...`
        if not args.quiet:
            p = prepared.plan
            sys.stdout.write(
                f"ok: {path}: rollout {p.rollout}, {p.mode}, {len(p.steps) - 1} step(s), "
                f"{p.stable_revision} → {p.candidate_revision}\n"
            )
    return 2 if failed else 0
