"""The rollout a GitOps command works on: the spec's plan, the rendered directory in its Git work
tree, the premise (HEAD when the command started), and the state its index records, checked to
be this spec's rollout. Shared by the commands that write (:mod:`dgdgen.gitops.actions`) and the
ones that only read (:mod:`dgdgen.gitops.status`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dgdgen.errors import InputError, Location
from dgdgen.gitops import repo, tree
from dgdgen.gitops.index import INDEX, GateResult, Hold, Index

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared


@dataclass(frozen=True)
class Target:
    prepared: Prepared
    into: str  # absolute path of the rendered directory
    top: str | None  # the Git work tree it is in
    premise: str | None = None  # HEAD when the command started, before it read anything

    @property
    def rel(self) -> str:
        """The directory as the user sees it (relative to the current directory)."""
        return os.path.relpath(self.into)

    @property
    def repo_path(self) -> str:
        """The directory inside its repository (``.`` for the work tree root)."""
        if not self.top:
            return self.rel
        rel = os.path.relpath(os.path.realpath(self.into), os.path.realpath(self.top))
        return rel.replace(os.sep, "/")


@dataclass(frozen=True)
class Outcome:
    message: str  # the commit message (or what was done)
    state: PlanStep
    change: tree.Change
    commit: str | None = None
    pushed: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def default_into(prepared: Prepared) -> str:
    g = prepared.loaded.spec.spec.gitops
    return g.path or f"deploy/{prepared.plan.rollout}"


def open_target(spec: str, into: str | None,
                early: tuple[str | None, str | None] | None = None) -> Target:
    """The rollout of ``spec`` rendered in ``into``; ``early`` is the work tree and HEAD as the
    command found them when it started (read here when not given)."""
    # The premise first: HEAD before the spec is read and anything is decided, so a command that
    # another one overtakes finds out once it holds the writer lock (transaction.writing). A
    # command reads it before its imports (commands._gitops.premise): those alone take a second.
    if early is None:
        early_top = repo.toplevel(os.path.abspath(into) if into else os.getcwd())
        early_head = repo.head_or_none(early_top) if early_top else None
    else:
        early_top, early_head = early
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.write import resolve_target

    prepared = prepare(spec)
    given = into or default_into(prepared)
    _refuse_symlinked(given)
    path = resolve_target(given, what="--into path")
    _refuse_odd_path(path, into)
    top = repo.toplevel(path)
    premise = early_head if top is not None and top == early_top else (
        repo.head_or_none(top) if top else None)
    return Target(prepared, path, top, premise)


def _refuse_symlinked(given: str) -> None:
    """A rollout's directory, or a folder above it, that is a symlink inside a Git work tree is
    refused: a commit can point it anywhere (another rollout's folder, whose files a promotion
    would then replace and delete, or a folder outside the repository, whose files `status` and
    `render --check` would read). Symlinks below the directory are refused file by file
    (:func:`dgdgen.gitops.tree.confined`); symlinks above the work tree (``/tmp`` on some
    systems) are the machine's own, and followed."""
    here = os.path.abspath(given)
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return
        if os.path.islink(here):
            top = repo.toplevel(parent)
            if top is not None:
                link = os.path.normpath(os.path.join(
                    os.path.relpath(os.path.realpath(parent), top), os.path.basename(here)))
                raise InputError(
                    f"{link} is a symlink inside the Git work tree {top}; a rollout's directory "
                    "is never read or written through a symlink, which a commit can point "
                    "anywhere; nothing was done",
                    location=Location(given),
                    hint="give --into (or spec.gitops.path) the folder itself, not a path "
                    "through a symlink",
                )
        here = parent


def _refuse_odd_path(path: str, given: str | None) -> None:
    """A rendered directory inside a ``.git`` folder (whose hooks run code), or whose path holds a
    control character (git's line-based plumbing could not name it), is refused."""
    parts = os.path.realpath(path).split(os.sep)
    if any(p.lower() == ".git" for p in parts):
        raise InputError("the rendered directory would be inside a .git folder",
                         location=Location(given or path),
                         hint="give --into (or spec.gitops.path) a folder of the work tree")
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise InputError("the rendered directory's path holds a control character",
                         location=Location(repr(given or path)))


# --------------------------------------------------------------------------- rendering


def state_files(prepared: Prepared, state: PlanStep, previous: PlanStep | None, *,
                validate: bool = True) -> dict[str, str]:
    """The files of one state as committed to Git: sync waves from ``previous`` → ``state``."""
    from dgdgen.pipeline import files as output

    return output.state_files(prepared, state, previous, validate=validate)


def _states(prepared: Prepared) -> dict[str, PlanStep]:
    return {s.label: s for s in prepared.plan.all_states()}


def index_of(t: Target, state: PlanStep, previous: PlanStep | None,
             gates: dict[str, GateResult], hold: Hold | None = None) -> Index:
    p = t.prepared.plan
    return Index(p.rollout, p.stable_revision, p.candidate_revision, state.label,
                 previous.label if previous else None, {}, gates, hold)


def recorded(t: Target) -> Index | None:
    """The index in ``--into``, checked to belong to this rollout and plan."""
    idx = tree.read_index(t.into)
    if idx is None:
        return None
    p = t.prepared.plan
    if idx.rollout != p.rollout:
        raise InputError(
            f"this directory holds rollout {idx.rollout!r}, not {p.rollout!r}",
            location=Location(os.path.join(t.into, INDEX)),
            hint="each rollout needs its own --into directory",
        )
    return idx


def same_generations(t: Target, idx: Index) -> bool:
    p = t.prepared.plan
    return (idx.stable_revision, idx.candidate_revision) == (p.stable_revision, p.candidate_revision)


def state_of(t: Target, label: str | None) -> PlanStep | None:
    if label is None:
        return None
    states = _states(t.prepared)
    if label not in states:
        raise InputError(
            f"the recorded step {label!r} is not in the plan (steps 0..{len(t.prepared.plan.steps) - 1}"
            ", rollback, cleanup)",
            location=Location(os.path.join(t.into, INDEX)),
            hint="the spec's steps changed during a rollout; restore them, or start over with "
            "`dgdgen render SPEC --into PATH --step 0 --commit`",
        )
    return states[label]


def current(t: Target) -> tuple[Index, PlanStep, PlanStep | None]:
    """The recorded index, state and previous state; refuses when nothing is recorded or the
    recorded rollout is a different pair of generations."""
    idx = recorded(t)
    if idx is None:
        raise InputError(
            f"nothing is rendered in {t.rel} yet",
            location=Location(t.into),
            hint=f"start with `dgdgen render SPEC --into {t.rel} --commit` (the baseline)",
        )
    state, previous = resolve(t, idx)
    return idx, state, previous


def resolve(t: Target, idx: Index) -> tuple[PlanStep, PlanStep | None]:
    """The plan states an index records, checked to be this spec's generations."""
    rel = t.rel
    if not same_generations(t, idx):
        raise InputError(
            f"{rel} holds the rollout {idx.stable_revision} → {idx.candidate_revision}, but the "
            f"spec now describes {t.prepared.plan.stable_revision} → "
            f"{t.prepared.plan.candidate_revision}",
            location=Location(os.path.join(t.into, INDEX)),
            hint=f"finish the recorded rollout first, or start the new one with "
            f"`dgdgen render SPEC --into {rel} --step 0 --commit`",
        )
    state = state_of(t, idx.step)
    assert state is not None
    return state, state_of(t, idx.previous)
