"""Writing a deploy repository: one writer at a time, a commit made before the work tree moves,
and recovery from a write that was killed at any point.

A writing command runs in a :func:`writing` session:

1. it takes the writer lock (:mod:`dgdgen.gitops.lock`) — a second command fails at once, exit 2;
2. it finishes or discards a write an earlier, killed command left (the journal in the rendered
   directory says which commit it belongs to; HEAD says whether that commit was made);
3. it refuses, exit 2, when the rollout's directory changed in Git after the command started
   (the *premise*: HEAD as the command found it before it read anything), so a command never acts
   on a state someone else has just replaced.

:meth:`Session.write` then makes the change as one step: the new tree is staged beside the
directory, the commit is built in Git's object store from a temporary index (the work tree,
git's index and the branch untouched: a full disk or a broken object store changes nothing), the
journal is sealed, and the branch moves from the premise to the new commit in one
compare-and-swap ref update. Only then does the work tree move (a few renames) and git's index
follow. Killed before the ref update, the next command discards the staging: nothing visible had
changed. Killed after it, HEAD is already the new state; the next command finishes moving the
files, and a rerun of the same command stops there, exit 0 — exactly one step.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from dgdgen.errors import DgdgenError, InputError, Location
from dgdgen.gitops import lock, repo, tree
from dgdgen.gitops.index import INDEX, STAGING, Index


@dataclass(frozen=True)
class Finished:
    """What a rerun found: its own interrupted command had committed, and is now complete."""

    commit: str
    message: str  # the commit's message (what the interrupted command would have printed)
    note: str


@dataclass
class Session:
    into: str  # the rendered directory (absolute)
    top: str | None  # its Git work tree
    intent: str  # the command and its arguments, as recorded in the journal
    author: str | None
    base: str | None = None  # HEAD once the lock is held (the parent of the next commit)
    notes: list[str] = field(default_factory=list)
    finished: Finished | None = None

    @property
    def repo_dir(self) -> str:
        """The directory relative to the work tree, ``/``-separated (``.`` for its root)."""
        assert self.top is not None
        rel = os.path.relpath(os.path.realpath(self.into), os.path.realpath(self.top))
        return rel.replace(os.sep, "/")

    def repo_path(self, rel: str) -> str:
        d = self.repo_dir
        return rel if d == "." else f"{d}/{rel}"

    def write(self, files: Mapping[str, str], index: Index, *, message: str, subject: str,
              force: bool = False, commit: bool = True) -> tuple[tree.Change, str | None]:
        """Make the directory hold ``files`` and ``index`` — with ``commit``, as one commit on
        the branch (see the module's docstring). Returns what changed and the commit id (None
        when nothing was committed)."""
        if self.top is not None and commit:
            repo.require_committable(self.top)
        staged = tree.stage(self.into, files, index, force=force)
        if staged is None:
            return tree.Change((), (), tuple(sorted(files))), None
        if self.top is None or not commit:
            tree.seal(staged)
            tree.apply(self.into)
            tree.discard(self.into)
            return staged.change, None
        entries: list[tuple[str, str | None]] = [
            (self.repo_path(r), staged.source(r)) for r in sorted(staged.files)]
        entries.append((self.repo_path(INDEX), staged.source(INDEX)))
        entries += [(self.repo_path(r), None) for r in staged.change.removed]
        try:
            sha = repo.write_commit(self.top, self.base, entries, message, self.author)
        except repo.GitError as exc:
            tree.discard(self.into)
            raise InputError(f"cannot make the commit: {exc}; nothing was changed",
                             location=Location(self.top)) from None
        except BaseException:
            tree.discard(self.into)
            raise
        if sha is None:  # HEAD already holds this tree: only the work tree lags behind it
            tree.seal(staged)
            tree.apply(self.into)
            tree.discard(self.into)
            return staged.change, None
        tree.seal(staged, commit=sha, parent=self.base, intent=self.intent, subject=subject)
        tree.maybe_kill("commit", 1)
        try:
            repo.advance_head(self.top, sha, self.base, subject)
        except repo.RefMoved as exc:
            tree.discard(self.into)
            raise InputError(
                f"{self.repo_dir}: {exc}: someone else committed; nothing was changed",
                location=Location(self.top),
                hint="check `dgdgen status`, then run the command again if it still applies",
            ) from None
        except BaseException:
            # interrupted around the ref update: once HEAD is the new commit the journal must
            # stay, for the next command to finish moving the files
            if repo.head_or_none(self.top) != sha:
                tree.discard(self.into)
            raise
        tree.maybe_kill("ref", 1)
        self._finish(staged.change.written + staged.change.removed, sha, subject)
        self.base = sha
        return staged.change, sha

    def _finish(self, paths: tuple[str, ...], sha: str, subject: str) -> None:
        """Move the work tree and git's index to ``sha`` (HEAD), from the sealed journal."""
        assert self.top is not None
        tree.apply(self.into)
        tree.maybe_kill("index", 1)
        entries = [(self.repo_path(r), None) for r in (*paths, INDEX)]
        try:
            repo.sync_index(self.top, entries, sha)
        except repo.GitError as exc:
            raise InputError(
                f"committed {sha[:12]} ({subject}) and wrote its files, but git's index could not "
                f"be updated: {exc}", location=Location(self.top),
                hint="the next dgdgen command that writes finishes it",
            ) from None
        tree.discard(self.into)


def _recover(s: Session) -> None:
    """Finish or discard what a killed write left in the directory. A staging folder that
    arrived in a commit is never acted on: dgdgen never commits one, so it is not a write of
    dgdgen's (a pull request planted it)."""
    if not os.path.lexists(os.path.join(s.into, STAGING)):
        return
    if s.top is not None:
        refuse_committed_staging(s.top, s.repo_path(STAGING), s.into)
    journal = tree.read_journal(s.into)
    if journal is None:
        tree.discard(s.into)
        s.notes.append("discarded an interrupted write that had not finished staging (nothing "
                       "had changed)")
        return
    if journal.commit is None:
        tree.apply(s.into)
        tree.discard(s.into)
        s.notes.append("finished an interrupted render")
        return
    if s.top is None:
        raise InputError(
            f"an interrupted write in {STAGING} belongs to Git commit {journal.commit[:12]}, "
            "but this directory is not in a Git work tree; nothing was touched",
            location=Location(s.into), hint=f"check and remove {STAGING} by hand")
    head = repo.head_or_none(s.top)
    what = journal.subject or "a dgdgen command"
    if head != journal.commit and head == journal.parent:
        tree.discard(s.into)
        s.notes.append(f"discarded an interrupted command ({what}): it was stopped before its "
                       "commit, so nothing had changed")
        return
    follows = head is not None and head != journal.commit and repo.git(
        s.top, "merge-base", "--is-ancestor", journal.commit, head, check=False).returncode == 0
    if head == journal.commit or (
            follows and not repo.changed_between(s.top, journal.commit, head, s.repo_dir)):
        repo.require_committable(s.top)
        s._finish(journal.write + journal.delete, journal.commit, what)
        note = (f"finished an interrupted command: {what} (committed {journal.commit[:12]}; its "
                "files are now written)")
        if journal.intent == s.intent and head == journal.commit:
            message = repo.git(s.top, "log", "-1", "--format=%B", journal.commit).stdout
            s.finished = Finished(journal.commit, message.rstrip("\n") + "\n", note)
        else:
            s.notes.append(note)
        return
    raise InputError(
        f"an interrupted write in {STAGING} belongs to commit {journal.commit[:12]}, which "
        f"HEAD ({(head or 'none')[:12]}) neither is nor follows; nothing was touched",
        location=Location(os.path.join(s.into, STAGING)),
        hint=f"if HEAD was moved on purpose (a reset, a rebase), remove {STAGING}: HEAD's "
        "files are then the current ones",
    )


def refuse_committed_staging(top: str, rel: str, into: str) -> None:
    """Refuse a staging folder that is in Git (HEAD's tree or git's index): dgdgen never commits
    one, so it came with someone's commit, and nothing in it is trusted."""
    if repo.committed(top, rel):
        raise InputError(
            f"{STAGING} is committed in Git; dgdgen never commits it, so it is not an "
            "interrupted write of dgdgen's (a commit put it there) and nothing in it is acted "
            "on; nothing was touched",
            location=Location(os.path.join(into, STAGING)),
            hint=f"remove it from the repository (git rm -r {rel}) and commit",
        )


def _check_premise(s: Session, premise: str | None) -> str | None:
    """HEAD, once the lock is held; refuses when the rollout's directory changed in Git since the
    command started (another command, or someone's commit, came in between)."""
    assert s.top is not None
    now = repo.head_or_none(s.top)
    if now != premise and repo.changed_between(s.top, premise, now, s.repo_dir):
        subject = repo.subject_of(s.top, now) if now else ""
        raise InputError(
            f"{s.repo_dir}: the rollout changed after this command started: HEAD moved from "
            f"{(premise or 'nothing')[:12]} to {(now or 'nothing')[:12]}"
            + (f" ({subject!r})" if subject else "") + "; nothing was done",
            location=Location(s.top),
            hint="check `dgdgen status`, then run the command again if it still applies",
        )
    return now


@contextlib.contextmanager
def writing(into: str, top: str | None, premise: str | None, intent: str,
            author: str | None) -> Iterator[Session]:
    """A writing session on ``into`` (see the module's docstring); ``premise`` is HEAD as the
    command found it when it started."""
    s = Session(into, top, intent, author)
    created = False
    if top is not None:
        lock_path = os.path.join(repo.git_dir(top), lock.LOCK_NAME)
    else:
        created = not os.path.lexists(into)
        try:
            os.makedirs(into, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the directory: {exc.strerror}",
                             location=Location(into)) from None
        lock_path = into
    try:
        with lock.writer(lock_path, lock.command_line(), s.notes):
            _recover(s)
            if top is not None:
                s.base = _check_premise(s, premise)
            yield s
    except DgdgenError as exc:
        exc.notes = (*s.notes, *exc.notes)  # what was finished or discarded still happened
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(into)
        raise
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(into)  # only when the failed command left it empty
        raise
