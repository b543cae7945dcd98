"""dgdgen cleanup SPEC: remove the old generation once the candidate carries 100 %."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "remove the old generation once the candidate carries 100%% (one commit)"
DESCRIPTION = """\
Re-render the rollout's directory in the cleanup state (the candidate alone) and commit it. Only
allowed at the last step (100% on the candidate) and when that step's gate is recorded as passed
(or overridden with --skip-gate --reason TEXT, recorded in a `Dgdgen-Skip-Gate:` trailer). Argo CD
prunes the old generation's DGD and Service.

examples:
  dgdgen cleanup rollout.yaml --into deploy/qwen --push
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)
    _gitops.add_skip_gate(p)


def run(args: argparse.Namespace) -> int:
    early = _gitops.premise(args.into)  # before the imports: see _gitops.premise
    from dgdgen.gitops import actions

    return _gitops.report(actions.cleanup(
        _gitops.target(args, early), push=args.push, skip_gate=_gitops.skip_gate(args)
    ))
