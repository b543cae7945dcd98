"""Reading a rollout's directory without writing it: ``dgdgen status`` (the state HEAD records, and
apart from it what is uncommitted or interrupted) and the drift check of ``render --check``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from dgdgen.gitops import repo, tree
from dgdgen.gitops.index import INDEX, STAGING, GateResult, Hold, Index, digest
from dgdgen.gitops.target import (
    Target,
    index_of,
    recorded,
    resolve,
    same_generations,
    state_files,
    state_of,
)
from dgdgen.plan import PlanStep


def check(t: Target) -> list[str]:
    """Unified diffs between the directory and a fresh render of its recorded state. Writes
    nothing: an interrupted earlier write still in the directory is reported as a difference
    (the next writing command finishes or discards it)."""
    idx = recorded(t)
    if idx is not None and same_generations(t, idx):
        state = state_of(t, idx.step)
        previous = state_of(t, idx.previous)
        gates = dict(idx.gates)
    else:
        state, previous, gates = t.prepared.plan.steps[0], None, {}
    assert state is not None
    files = state_files(t.prepared, state, previous)
    index = index_of(t, state, previous, gates, idx.hold if idx is not None else None)
    index = Index(index.rollout, index.stable_revision, index.candidate_revision,
                  index.step, index.previous, {r: digest(x) for r, x in files.items()}, gates,
                  index.hold)
    diffs = tree.drift(t.into, files, index.to_text(), label=t.repo_path, old=idx)
    if os.path.lexists(os.path.join(t.into, STAGING)):
        prefix = "" if t.repo_path == "." else t.repo_path.rstrip("/") + "/"
        what = ("a folder committed in Git, which dgdgen never commits: writing commands "
                "refuse until it is removed from the repository"
                if t.top is not None and repo.committed(t.top, _in_repo(t, STAGING)) else
                "an interrupted write is pending here: the next dgdgen command that writes "
                "finishes or discards it")
        diffs.append(f"--- a/{prefix}{STAGING}\n+++ b/{prefix}{STAGING}\n@@ {what} @@\n")
    return diffs


@dataclass(frozen=True)
class Status:
    rollout: str
    path: str
    recorded: bool
    state: PlanStep
    previous: PlanStep | None
    gates: dict[str, GateResult]
    next_state: PlanStep | None
    drifted: tuple[str, ...]
    dirty: tuple[str, ...]
    head: str | None
    uncommitted: str | None = None  # the directory records another state than HEAD does
    pending: str | None = None  # an interrupted write still in the directory
    hold: Hold | None = None  # dgdgen pause, as HEAD records it

    def to_json(self) -> dict[str, object]:
        def gen(g: object) -> dict[str, object]:
            from dataclasses import asdict

            return asdict(g)  # type: ignore[call-overload,no-any-return]

        s = self.state
        gate = self.gates.get(s.label)
        return {
            "rollout": self.rollout,
            "path": self.path,
            "recorded": self.recorded,
            "step": s.label,
            "index": s.index,
            "previous": self.previous.label if self.previous else None,
            "stable": gen(s.stable),
            "candidate": gen(s.candidate),
            "gate": None if not s.gate else {
                "name": s.gate, "result": gate.result if gate else "not-recorded",
                "message": gate.message if gate else "",
            },
            "next": None if self.next_state is None else {
                "step": self.next_state.label, "weight": self.next_state.candidate.weight,
            },
            "gates": {k: v.to_json() for k, v in sorted(self.gates.items())},
            "drifted": list(self.drifted),
            "dirty": list(self.dirty),
            "head": self.head,
            "uncommitted": self.uncommitted,
            "pending": self.pending,
            "hold": self.hold.to_json() if self.hold else None,
        }


def _pending(t: Target) -> str | None:
    """What an interrupted write left in the directory, and what the next writing command does
    with it (status reads; it never finishes or discards anything itself)."""
    if not os.path.lexists(os.path.join(t.into, STAGING)):
        return None
    if t.top is not None and repo.committed(t.top, _in_repo(t, STAGING)):
        return (f"{STAGING} is committed in Git, so it is not an interrupted write of "
                "dgdgen's; writing commands refuse until it is removed from the repository")
    journal = tree.read_journal(t.into)
    if journal is None:
        return "a write stopped while staging (nothing changed); the next writing command " \
            "discards it"
    what = journal.subject or "a dgdgen write"
    if journal.commit is None:
        return "an interrupted render past its commit point; the next writing command " \
            "finishes it"
    head = repo.head_or_none(t.top) if t.top else None
    if head == journal.commit:
        return (f"{what}: committed {journal.commit[:12]} (HEAD), but its files were not all "
                "written; the next writing command finishes it")
    if head == journal.parent:
        return f"{what}: stopped before its commit (nothing changed); the next writing " \
            "command discards it"
    return (f"{what}: staged for commit {journal.commit[:12]}, which HEAD neither is nor "
            f"follows; writing commands refuse until {STAGING} is checked and removed")


def _in_repo(t: Target, rel: str) -> str:
    return rel if t.repo_path == "." else f"{t.repo_path}/{rel}"


def status(t: Target) -> Status:
    """Where the rollout stands: the state HEAD records (outside Git, the directory's), and apart
    from it anything uncommitted or interrupted. Reads only; writes nothing."""
    head = repo.head_or_none(t.top) if t.top else None
    worktree = recorded(t)
    idx = worktree
    uncommitted = None
    if head is not None:
        assert t.top is not None
        rel_index = INDEX if t.repo_path == "." else f"{t.repo_path}/{INDEX}"
        text = repo.show(t.top, head, rel_index)
        idx = Index.parse(text, f"HEAD:{rel_index}") if text is not None else None
        if idx is not None and idx.rollout != t.prepared.plan.rollout:
            idx = recorded(t)  # the same refusal, worded for the directory
        if (worktree.to_text() if worktree else None) != (idx.to_text() if idx else None):
            uncommitted = ("the directory records " + (
                f"{worktree.step}, which is not committed" if worktree else "nothing")
                + f" (HEAD records {idx.step if idx else 'nothing'})")
    if idx is not None:
        state, previous = resolve(t, idx)
        gates = dict(idx.gates)
    else:
        state, previous, gates = t.prepared.plan.steps[0], None, {}
    plan = t.prepared.plan
    nxt: PlanStep | None
    if state.kind == "baseline" or state.kind == "step":
        nxt = plan.steps[state.index + 1] if state.index + 1 < len(plan.steps) else plan.cleanup
    else:
        nxt = None
    drifted = tree.changed_paths(check(t)) if worktree is not None else ()
    dirty = repo.dirty(t.top).paths if t.top else ()
    return Status(plan.rollout, t.rel, idx is not None, state, previous, gates, nxt, drifted,
                  dirty, head, uncommitted, _pending(t), idx.hold if idx is not None else None)
