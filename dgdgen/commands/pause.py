"""dgdgen pause SPEC --reason TEXT: hold a rollout where it is, as one commit."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "hold a rollout at its current step: promote and cleanup refuse until resume (one commit)"
DESCRIPTION = """\
Record a hold in the rollout's directory (its .dgdgen-index): who (--by, else the commit's
author), why (--reason) and since when (UTC), as one commit. While it is there `dgdgen promote`
and `dgdgen cleanup` refuse with exit 4 and say who paused and why, and the rollout workflow
waits before its next promotion (it neither fails nor rolls back) until `dgdgen resume` removes
the hold. A hold never stops `dgdgen rollback` — the way back is always allowed — nor
`dgdgen gate`: recording a judgement moves no traffic. It changes no rendered file, so Argo CD
syncs nothing new. Refuses when the rollout is already paused (exit 2).

examples:
  dgdgen pause rollout.yaml --into deploy/qwen --reason "INC-77: KV-cache errors under review"
  dgdgen pause rollout.yaml --into deploy/qwen --reason "change freeze" --by "Ana <ana@x.io>" --push
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)
    p.add_argument("--reason", required=True, metavar="TEXT",
                   help="why the rollout is held (kept in the index and the commit)")
    p.add_argument("--by", metavar="WHO",
                   help="who holds it (default: the commit's author: the spec's "
                   "gitops.commitAuthor, else git's user.name <user.email>)")


def run(args: argparse.Namespace) -> int:
    early = _gitops.premise(args.into)  # before the imports: see _gitops.premise
    from dgdgen.gitops import actions

    return _gitops.report(actions.pause(_gitops.target(args, early), args.reason, by=args.by,
                                        push=args.push))
