"""dgdgen gate SPEC --result R: record the current step's gate result, as one commit."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "record the result of the current step's gate (one commit)"
DESCRIPTION = """\
Record whether the current step's analysis gate passed, failed or was inconclusive (for example
from the exit code of `dgdgen analyze`, or the phase of the step's AnalysisRun). `dgdgen promote`
and `dgdgen cleanup` leave a gated step only once its gate is recorded as passed: a gate not
recorded yet, failed or inconclusive refuses them (exit 1) unless --skip-gate --reason TEXT
overrides it. A later `dgdgen gate` replaces the result; `dgdgen rollback` is never blocked by a
gate. Only the current step's gate can be recorded, and only when the spec gives it one.

examples:
  dgdgen gate rollout.yaml --into deploy/qwen --result passed
  dgdgen gate rollout.yaml --into deploy/qwen --result failed --message "ttft p95 2.4s > 2s"
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)
    p.add_argument("--result", required=True, choices=("passed", "failed", "inconclusive"),
                   help="the gate's outcome; promote and cleanup leave the step only once it is "
                   "passed")
    p.add_argument("--step", type=int, metavar="N",
                   help="the step the result is for (must be the current one; a safety check)")
    p.add_argument("--message", default="", help="why (kept in the index and the commit)")


def run(args: argparse.Namespace) -> int:
    early = _gitops.premise(args.into)  # before the imports: see _gitops.premise
    from dgdgen.gitops import actions

    return _gitops.report(actions.record_gate(
        _gitops.target(args, early), args.result, step=args.step, message=args.message, push=args.push
    ))
