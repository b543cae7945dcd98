"""dgdgen history SPEC: every rollout of a deploy directory, from Git."""

from __future__ import annotations

import argparse
import sys

from dgdgen.commands import _gitops

HELP = "list every rollout of a directory in Git: versions, steps reached, gates, outcome, times"
DESCRIPTION = """\
Read the Git history of the rollout's directory (see `dgdgen render --into`; first parents of
HEAD, the commits that changed its .dgdgen-index) and list every rollout it went through, oldest
first: the version (stable → candidate revision), when it started and ended (committer dates,
UTC), how long it took, the highest step it reached, its gate results (a gate a promotion
overrode with --skip-gate is "skipped"), its holds (`dgdgen pause`), and how it ended:

  completed     cleaned up: the candidate carries everything, the old generation is gone
  rolled back   back on the stable generation
  rolling back  between the states of a rollback (`dgdgen rollback` again)
  in progress   on one of its steps
  paused        on one of its steps, held by `dgdgen pause`
  interrupted   a write was killed half-way (`dgdgen status` says what the next writing
                command does with it)
  superseded    a new rollout started before it ended

A rollout starts with a new pair of generations, with a render back to the baseline, or with a
move after a finished one. It only reads. Exit 0; 2 outside a Git work tree.

examples:
  dgdgen history rollout.yaml --into deploy/qwen
  dgdgen history rollout.yaml --into deploy/qwen --format json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p, push=False)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: a table for a person; json: every rollout with its commits "
                   "(default: text)")


def run(args: argparse.Namespace) -> int:
    import json

    from dgdgen.gitops import history

    t = _gitops.target(args)
    rollouts, notes = history.history(t)
    for note in notes:
        sys.stderr.write(f"note: {note}\n")
    if args.format == "json":
        doc = {"rollout": t.prepared.plan.rollout, "path": t.rel,
               "rollouts": [r.to_json() for r in rollouts]}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return 0
    if not rollouts:
        sys.stdout.write(f"{t.rel}: no rollout of {t.prepared.plan.rollout} committed yet\n")
        return 0
    head = ("#", "version", "started", "ended", "took", "reached", "gates", "outcome")
    rows = [head]
    for k, r in enumerate(rollouts, 1):
        gates = " ".join(f"{label.removeprefix('step-').lstrip('0') or '0'}:{res}"
                         for label, res in r.gates().items()) or "—"
        rows.append((str(k), f"{r.stable} → {r.candidate}", r.start, r.end or "—",
                     history.duration(r.duration), f"step {r.highest}", gates, r.outcome))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
           for row in rows]
    for k, r in enumerate(rollouts, 1):
        for h in r.holds():
            out.append(f"{k}: paused by {h['by']} at {h['since']}: {h['reason']}"
                       + (f"; resumed at {h['until']}" if h["until"] else "; still paused"))
        if r.note and r.outcome != "paused":
            out.append(f"{k}: {r.outcome}: {r.note}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
