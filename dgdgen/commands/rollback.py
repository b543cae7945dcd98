"""dgdgen rollback SPEC: the next state of the rollback path, as one commit."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "step the rollout back towards the stable generation (one state per commit)"
DESCRIPTION = """\
Re-render the rollout's directory in the next state of its rollback path and commit it. Where the
surge budget holds it, that is the rollback state itself — the stable generation at full size
with all traffic, byte-identical to the baseline before the rollout. Where it does not, the path
first passes through rollback-NN states (`dgdgen plan` lists them and says why), each giving the
stable all the traffic it can carry; run `dgdgen rollback` again once each is Synced and Healthy
(the commit message says how many states remain; the rollout workflow does this itself). The candidate's
objects are removed from Git; Argo CD prunes them last (PruneLast), after the route has moved.
A failed gate never blocks a rollback. Refuses on a dirty work tree and on a finished rollout.

examples:
  dgdgen rollback rollout.yaml --into deploy/qwen
  dgdgen rollback rollout.yaml --into deploy/qwen --push
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)


def run(args: argparse.Namespace) -> int:
    early = _gitops.premise(args.into)  # before the imports: see _gitops.premise
    from dgdgen.gitops import actions

    return _gitops.report(actions.rollback(_gitops.target(args, early), push=args.push))
