"""dgdgen promote SPEC [--to N]: move the rollout forward, as one commit."""

from __future__ import annotations

import argparse

from dgdgen.commands import _gitops

HELP = "move a rollout rendered into Git to its next step (one commit)"
DESCRIPTION = """\
Re-render the rollout's directory (see `dgdgen render --into`) at the next step, or at step N
with --to, and commit exactly that directory with a message naming the step, the weights and the
gate. The commit is what Argo CD syncs; the sync waves in it make new DGDs and frontends Healthy
before weights move, and weights move before the old generation shrinks.

Refuses (nothing written, no commit) when the work tree has uncommitted changes (exit 2), when the
step does not exist or lies behind the current one (exit 2), when the rollout is finished, and
unless the current step's gate is recorded as passed (exit 1; see `dgdgen gate`) — a gate that is
not recorded refuses too, and so does --to jumping over a gated step. --skip-gate --reason TEXT
overrides that, and the commit records it in a `Dgdgen-Skip-Gate:` trailer.

examples:
  dgdgen promote rollout.yaml --into deploy/qwen
  dgdgen promote rollout.yaml --into deploy/qwen --to 3 --push
  dgdgen promote rollout.yaml --into deploy/qwen --skip-gate --reason "prometheus down, INC-42"
"""


def _step(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a step number, got {value!r}") from None
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p)
    _gitops.add_skip_gate(p)
    p.add_argument("--to", type=_step, metavar="N", help="promote to step N (default: the next)")


def run(args: argparse.Namespace) -> int:
    early = _gitops.premise(args.into)  # before the imports: see _gitops.premise
    from dgdgen.gitops import actions

    return _gitops.report(actions.promote(
        _gitops.target(args, early), args.to, push=args.push, skip_gate=_gitops.skip_gate(args)
    ))
