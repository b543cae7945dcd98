"""Arguments and output shared by the promotion commands (status, promote, rollback, cleanup,
gate). Standard library only at import time, like every command module."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.gitops.target import Outcome, Target

Premise = tuple[str | None, str | None]  # (work tree, its HEAD) when the command started


def add_target(p: argparse.ArgumentParser, *, push: bool = True) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument(
        "--into", metavar="PATH", help="the rendered directory in a Git work tree (default: the "
        "spec's gitops.path, else deploy/<rollout name>, relative to the current directory)",
    )
    if push:
        p.add_argument(
            "--push", action="store_true",
            help="push the commit to gitops.remote (default origin), branch gitops.branch "
            "(default: the checked-out branch)",
        )


def add_skip_gate(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--skip-gate", action="store_true",
        help="leave the step although its gate is not recorded as passed (or jump over gated "
        "steps); needs --reason, which the commit records in a Dgdgen-Skip-Gate trailer",
    )
    p.add_argument("--reason", metavar="TEXT", help="why the gate is skipped (with --skip-gate)")


def skip_gate(p_args: argparse.Namespace) -> str | None:
    """The override's reason, or None; usage errors (exit 2) for half an override."""
    from dgdgen.errors import InputError

    if p_args.skip_gate and not p_args.reason:
        raise InputError("--skip-gate needs --reason TEXT (it is recorded in the commit)")
    if p_args.reason is not None and not p_args.skip_gate:
        raise InputError("--reason only goes with --skip-gate")
    reason: str | None = p_args.reason if p_args.skip_gate else None
    return reason


def premise(into: str | None) -> Premise:
    """The work tree ``--into`` (else the current directory) is in, and its HEAD: read first,
    before the command imports or reads anything else (the imports alone take about a second),
    so that a command another one overtakes meanwhile finds out once it holds the writer lock,
    and of two commands that overlap only one commits (dgdgen.gitops.transaction)."""
    import os

    from dgdgen.gitops import repo  # git and the standard library only

    top = repo.toplevel(os.path.abspath(into) if into else os.getcwd())
    return top, repo.head_or_none(top) if top else None


def target(args: argparse.Namespace, early: Premise | None = None) -> Target:
    """The rollout ``args`` name; ``early`` is :func:`premise` as the command read it first."""
    early = early if early is not None else premise(args.into)
    from dgdgen.gitops.target import open_target

    return open_target(args.spec, args.into, early=early)


def report(out: Outcome) -> int:
    """The commit message on stdout (what happened, in the words of the history), and where the
    commit went on stderr."""
    sys.stdout.write(out.message)
    for note in out.notes:
        sys.stderr.write(f"note: {note}\n")
    if out.commit:
        sys.stderr.write(f"committed {out.commit[:12]}" + (f", pushed to {out.pushed}" if out.pushed
                                                           else "") + "\n")
    return 0
