"""dgdgen rollback SPEC: all traffic back on the stable generation, as one commit."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "return all traffic to the stable generation (one commit)"
DESCRIPTION = """\
Re-render the rollout's directory in the rollback state — the stable generation at full size with
all traffic, byte-identical to the baseline before the rollout — and commit it. The candidate's
objects are removed from Git; Argo CD prunes them last (PruneLast), after the route has moved.
A failed gate never blocks a rollback. Refuses on a dirty work tree and on a finished rollout.

examples:
  dgdgen rollback rollout.yaml --into deploy/qwen
  dgdgen rollback rollout.yaml --into deploy/qwen --push
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)


def run(args: argparse.Namespace) -> int:
    from dgdgen.gitops import actions

    return _gitops.report(actions.rollback(_gitops.target(args), push=args.push))
