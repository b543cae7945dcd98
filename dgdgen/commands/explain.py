"""dgdgen explain SPEC: where a rollout is, what it waits for, and the command that moves it."""

from __future__ import annotations

import argparse
import sys

from dgdgen.commands import _gitops

HELP = "say in one paragraph where a rollout is, what it waits for, and the command that moves it"
DESCRIPTION = """\
Read the rollout's directory as `dgdgen status` does and say, in one paragraph, where the rollout
is (step, weights, commit), what it waits for — an interrupted write, uncommitted changes, drift
from the recorded step, a hold (`dgdgen pause`), a rollback state to be Synced, the gate of the
step (not recorded, failed or inconclusive; for a metrics gate what its analysis counts), the
step's bake time — and then, on a line of its own, the one command that moves it on. It only
reads.

Exit 0; 1 when the rollout waits for something other than its next command (a hold, a gate not
passed, drift, an interrupted write, uncommitted changes).

examples:
  dgdgen explain rollout.yaml --into deploy/qwen
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p, push=False)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: the paragraph and the command; json: {explanation, command} "
                   "(default: text)")


def run(args: argparse.Namespace) -> int:
    import json
    import textwrap

    from dgdgen.gitops import explain

    text, cmd, blocked = explain.explain(_gitops.target(args))
    if args.format == "json":
        sys.stdout.write(json.dumps({"explanation": text, "command": cmd,
                                     "blocked": blocked}, indent=2) + "\n")
    else:
        sys.stdout.write(textwrap.fill(text, 100, break_on_hyphens=False) + f"\nnext: {cmd}\n")
    return 1 if blocked else 0
