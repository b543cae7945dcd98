"""dgdgen resume SPEC: remove the hold `dgdgen pause` recorded, as one commit."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "remove the hold of `dgdgen pause` (one commit)"
DESCRIPTION = """\
Remove the hold that `dgdgen pause` recorded in the rollout's directory, as one commit that names
who had paused it and why. `dgdgen promote` and `dgdgen cleanup` work again, and a waiting rollout
workflow promotes at its next poll. Refuses when the rollout is not paused (exit 2).

examples:
  dgdgen resume rollout.yaml --into deploy/qwen
  dgdgen resume rollout.yaml --into deploy/qwen --push
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)


def run(args: argparse.Namespace) -> int:
    early = _gitops.premise(args.into)  # before the imports: see _gitops.premise
    from dgdgen.gitops import actions

    return _gitops.report(actions.resume(_gitops.target(args, early), push=args.push))
