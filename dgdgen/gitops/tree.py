"""Rendered files inside a directory dgdgen shares with other files: the index of what it owns,
crash-safe replacement, and drift detection.

The directory may hold files dgdgen did not write (a README, a kustomization, another tool's
output); dgdgen touches only the paths listed in its index (``.dgdgen-index``), refuses to
overwrite a file it does not own, and removes owned files that are no longer part of the output.
The index is JSON in a file without a ``.yaml``/``.json`` suffix, so an Argo CD directory source
does not try to apply it (Argo CD only reads ``*.yaml``, ``*.yml``, ``*.json``, ``*.jsonnet``).

The directory is untrusted input: a pull request can change anything in it, the index and the
staging area included. So the index is checked for shape before anything acts on it (every path
relative, normalised, made of the characters dgdgen writes, never ``..``, ``.git`` or absolute),
nothing is read, written or removed through a symlink, and an owned file is removed only while it
still holds what the index says dgdgen wrote there.

Crash safety: a write stages the complete new tree under ``.dgdgen-staging/`` and only then
writes a journal (one atomic rename: the commit point). Applying the journal is a handful of
renames and unlinks. A process killed while staging leaves the previous tree untouched (the
half-staged directory is discarded by the next write); one killed while applying leaves a
complete journal that the next write finishes. In a Git work tree the journal also names the
commit that holds the new tree (:mod:`dgdgen.gitops.actions`): it is applied only once that
commit is HEAD, and discarded while HEAD is still its parent.
"""

from __future__ import annotations

import difflib
import errno
import json
import os
import re
import shutil
import signal
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.gitops.index import (
    INDEX,
    MAX_FILES,
    MAX_INDEX_BYTES,
    STAGING,
    Index,
    digest,
    path_problem,
    shown,
)
from dgdgen.write import fsync_dir

JOURNAL = "JOURNAL"
JOURNAL_FORMAT = 2  # 2: each path with the state it had and will have (its proof)
MAX_FILE_BYTES = 64 * 1024 * 1024  # an owned file read back to compare it (rendered: a few kB)
_SHA1 = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SHA256 = re.compile(r"[0-9a-f]{64}")  # a Git object id (SHA-1 or SHA-256 repository)
# Test hook: ``stage:N``, ``apply:N``, ``commit:1``, ``ref:1`` or ``index:1`` sends SIGKILL to
# this process at that point, so tests can prove what an interrupted write leaves behind.
_KILL_ENV = "DGDGEN_TEST_KILL_AT"
# A string the directory never holds as a file's text: a path that is a symlink, a directory, a
# FIFO or device where a file should be. Never read, never shown, never equal to a render.
NOT_A_FILE = "\0<not a regular file: not read>\0"
BINARY = "<binary file>\n"  # how an undecodable file reads (dgdgen never writes one)
# A file's state as the journal records it: absent (None), a digest of its text, or this for a
# path that is not a regular file (a symlink, folder or device: replaced, never read)
OTHER = "other"


def confined(directory: str, rel: str) -> str | None:
    """``directory/rel`` when every folder between them is a real folder (or does not exist
    yet), else None: nothing is read or written through a symlink a pull request committed."""
    here = directory
    for part in rel.split("/")[:-1]:
        here = os.path.join(here, part)
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            break
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
    return os.path.join(directory, rel)


def read_owned(directory: str, rel: str, *, limit: int = MAX_FILE_BYTES) -> str | None:
    """The text of ``directory/rel``, None when it does not exist, :data:`NOT_A_FILE` when it is
    anything but a regular file (a symlink is never followed) or lies behind a symlinked folder.
    Undecodable bytes read as a fixed placeholder."""
    path = confined(directory, rel)
    if path is None:
        return NOT_A_FILE
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENOTDIR, errno.ENXIO):
            return NOT_A_FILE
        raise InputError(f"cannot read: {exc.strerror}", location=Location(path)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return NOT_A_FILE
        if st.st_size > limit:
            return NOT_A_FILE
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return NOT_A_FILE
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", location=Location(path)) from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        return BINARY


def read_index(directory: str) -> Index | None:
    """The index in ``directory`` (checked for shape), or None when there is none. An index that
    is a symlink, a folder or a device is refused, never followed."""
    path = os.path.join(directory, INDEX)
    text = read_owned(directory, INDEX, limit=MAX_INDEX_BYTES)
    if text is None:
        return None
    if text is NOT_A_FILE:
        try:
            st = os.lstat(path)
            big = stat.S_ISREG(st.st_mode) and st.st_size > MAX_INDEX_BYTES
        except OSError:
            big = False
        raise InputError(
            f"the index is over {MAX_INDEX_BYTES} bytes; dgdgen writes a few kB" if big else
            "not a regular file (a symlink, folder or device); dgdgen never follows it",
            location=Location(path), hint="restore the index from the last dgdgen commit")
    return Index.parse(text, path)


# --------------------------------------------------------------------------- writing


def maybe_kill(phase: str, count: int) -> None:
    """The kill points of the crash tests (``DGDGEN_TEST_KILL_AT=phase:count``)."""
    spec = os.environ.get(_KILL_ENV)
    if spec and spec == f"{phase}:{count}":
        os.kill(os.getpid(), signal.SIGKILL)


def _safe_rel(rel: str) -> str:
    problem = path_problem(rel)
    if problem is not None:
        raise InputError(f"refusing to write {shown(rel)}: {problem}")
    return rel


def _staging(directory: str) -> str | None:
    """The staging folder, when there is one; refuses one that is not a plain folder (a symlink
    committed in its place would send the cleanup elsewhere)."""
    path = os.path.join(directory, STAGING)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(
            f"{STAGING} is not a folder dgdgen made (a symlink or file); nothing was touched",
            location=Location(path), hint="remove it by hand after checking what it is")
    return path


def state_of(text: str | None) -> str | None:
    """What the journal records of a file read with :func:`read_owned`: None when absent,
    :data:`OTHER` when not a regular file, else the digest of its text (an undecodable file
    has no digest that proves anything: :data:`OTHER` too)."""
    if text is None:
        return None
    if text is NOT_A_FILE or text == BINARY:
        return OTHER
    return digest(text)


@dataclass(frozen=True)
class Journal:
    """What an interrupted write still has to do, as the staging folder records it, with the
    proof of what it may touch: ``before`` holds the state of every path it replaces or
    removes as the write found it (None: absent, :data:`OTHER`: not a regular file, else the
    digest of its text), ``after`` the digest of every staged file. A file is replaced or
    removed only while it is still in its ``before`` state."""

    write: tuple[str, ...]
    delete: tuple[str, ...]
    commit: str | None = None  # the Git commit holding the new tree (None outside Git)
    parent: str | None = None  # HEAD the commit was made on (None: the first commit)
    intent: str = ""  # the command that wrote it (a rerun of the same command only finishes it)
    subject: str = ""
    before: Mapping[str, str | None] = field(default_factory=dict)
    after: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": JOURNAL_FORMAT,
                "write": [[r, self.before.get(r), self.after[r]] for r in self.write],
                "delete": [[r, self.before[r]] for r in self.delete], "commit": self.commit,
                "parent": self.parent, "intent": self.intent, "subject": self.subject}


def _state_problem(v: object) -> bool:
    return not (v is None or v == OTHER or (isinstance(v, str) and _SHA256.fullmatch(v)))


def read_journal(directory: str) -> Journal | None:
    """The journal of an interrupted write (checked like the index), None when there is none or
    the write stopped before its commit point (then :func:`discard` is all that is left)."""
    staging = _staging(directory)
    if staging is None:
        return None
    text = read_owned(staging, JOURNAL, limit=MAX_INDEX_BYTES)
    if text is None:
        return None
    where = os.path.join(staging, JOURNAL)
    try:
        doc = json.loads(text) if text is not NOT_A_FILE else None
    except (ValueError, RecursionError):
        doc = None
    problem = _journal_problem(doc)
    if problem:
        raise InputError(
            f"the journal of an interrupted write is not one dgdgen wrote ({problem}); nothing "
            "was touched", location=Location(where),
            hint=f"check and remove {STAGING} by hand")
    assert isinstance(doc, dict)
    writes, deletes = doc["write"], doc["delete"]
    before: dict[str, str | None] = {r: b for r, b, _a in writes}
    before.update({r: b for r, b in deletes})
    return Journal(tuple(r for r, _b, _a in writes), tuple(r for r, _b in deletes),
                   doc.get("commit"), doc.get("parent"), doc.get("intent", ""),
                   doc.get("subject", ""), before, {r: a for r, _b, a in writes})


def _journal_problem(doc: object) -> str:
    """Why ``doc`` is not a journal dgdgen writes (empty when it is one)."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("format") != JOURNAL_FORMAT or isinstance(doc.get("format"), bool):
        return "an unknown format (a write of another dgdgen version, or not dgdgen's)"
    writes, deletes = doc.get("write"), doc.get("delete")
    if not (isinstance(writes, list) and isinstance(deletes, list)
            and len(writes) + len(deletes) <= MAX_FILES):
        return "write/delete are not lists"
    for entry in writes:
        if not (isinstance(entry, list) and len(entry) == 3) or _state_problem(entry[1]) \
                or not (isinstance(entry[2], str) and _SHA256.fullmatch(entry[2])):
            return "a write is not [path, state before, sha256 after]"
    for entry in deletes:
        if not (isinstance(entry, list) and len(entry) == 2) or not (
                isinstance(entry[1], str) and _SHA256.fullmatch(entry[1])):
            return "a removal is not [path, sha256 of what is removed]"
    paths = [e[0] for e in writes] + [e[0] for e in deletes]
    bad = [p for p in paths if path_problem(p) is not None]
    if bad:
        return f"{path_problem(bad[0])}: {shown(bad[0])}"
    if len(set(paths)) != len(paths):
        return "a path is listed twice"
    for key in ("commit", "parent"):
        v = doc.get(key)
        if v is not None and not (isinstance(v, str) and _SHA1.fullmatch(v)):
            return f"{key} is not a commit id"
    for key in ("intent", "subject"):
        if not isinstance(doc.get(key, ""), str):
            return f"{key} is not a string"
    return ""


def discard(directory: str) -> bool:
    """Remove an interrupted write's staging folder; True when there was one."""
    staging = _staging(directory)
    if staging is None:
        return False
    shutil.rmtree(staging)
    return True


def _require_proof(directory: str, staging: str, journal: Journal) -> None:
    """Refuse, before anything is touched, a journal whose paths do not hold what it says:
    every path still to be replaced must be as the write found it, every staged file as it was
    staged, every path still to be removed must hold what dgdgen wrote there. So a journal
    touches only files it proves dgdgen wrote (or found absent), whoever wrote the journal."""
    files = os.path.join(staging, "files")
    wrong = []
    for rel in journal.write:
        staged = read_owned(files, rel)
        if staged is None:
            continue  # already moved by an earlier, interrupted apply
        if state_of(staged) != journal.after.get(rel) or \
                state_of(read_owned(directory, rel)) != journal.before.get(rel):
            wrong.append(rel)
    for rel in journal.delete:
        have = read_owned(directory, rel)
        if have is not None and state_of(have) != journal.before.get(rel):
            wrong.append(rel)
    if wrong:
        raise InputError(
            f"the interrupted write in {STAGING} would replace or remove {len(wrong)} file(s) "
            "that do not hold what it found there (edited since, or the journal is not "
            "dgdgen's): " + ", ".join(shown(r) for r in wrong[:5])
            + (" …" if len(wrong) > 5 else "") + "; nothing was touched",
            location=Location(os.path.join(staging, JOURNAL)),
            hint=f"check the files; remove {STAGING} by hand to keep them as they are")


def apply(directory: str) -> Journal:
    """Apply the journalled write in ``directory`` (idempotent: files moved by an earlier,
    interrupted apply are skipped); the journal stays until :func:`discard` removes it."""
    journal = read_journal(directory)
    staging = _staging(directory)
    assert journal is not None and staging is not None
    _require_proof(directory, staging, journal)
    count = 0
    for rel in journal.write:
        src = confined(os.path.join(staging, "files"), rel)
        dst = confined(directory, rel)
        if src is None or dst is None:
            raise InputError(f"refusing to write {shown(rel)} through a symlinked folder",
                             location=Location(directory))
        try:
            st = os.lstat(src)
        except FileNotFoundError:
            continue  # already moved by an earlier, interrupted apply
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"the staged {shown(rel)} is not a regular file; nothing more was "
                             "touched", location=Location(staging),
                             hint=f"check and remove {STAGING} by hand")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.replace(src, dst)
        count += 1
        maybe_kill("apply", count)
    for rel in journal.delete:
        path = confined(directory, rel)
        if path is None:
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except IsADirectoryError:
            continue
        parent = os.path.dirname(path)
        while os.path.abspath(parent) != os.path.abspath(directory):
            try:
                os.rmdir(parent)  # only empty directories left behind by removed files
            except OSError:
                break
            parent = os.path.dirname(parent)
    src = os.path.join(staging, INDEX)
    if os.path.lexists(src):
        if not stat.S_ISREG(os.lstat(src).st_mode):
            raise InputError("the staged index is not a regular file; nothing more was touched",
                             location=Location(staging), hint=f"check and remove {STAGING}")
        os.replace(src, os.path.join(directory, INDEX))
    fsync_dir(directory)
    return journal


def recover(directory: str) -> str | None:
    """Outside Git: finish a journalled write (past its commit point) or discard a half-staged
    one. Returns what was done (for messages), or None. (In a Git work tree the journal names a
    commit, and :mod:`dgdgen.gitops.actions` decides by HEAD.)"""
    staging = _staging(directory)
    if staging is None:
        return None
    journal = read_journal(directory)
    if journal is None:
        discard(directory)
        return "discarded an interrupted render that had not finished staging"
    if journal.commit is not None:
        raise InputError(
            f"an interrupted write in {STAGING} belongs to Git commit {journal.commit[:12]}, but "
            "this directory is not in that work tree; nothing was touched",
            location=Location(staging), hint=f"check and remove {STAGING} by hand")
    apply(directory)
    discard(directory)
    return "finished an interrupted render"


@dataclass(frozen=True)
class Change:
    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]
    recovered: str | None = None


@dataclass(frozen=True)
class Staged:
    """A new tree staged beside the directory, not yet journalled: :func:`seal` makes it the
    write to apply, :func:`discard` drops it."""

    directory: str
    files: dict[str, str]  # every file of the new render (relative path → text)
    change: Change
    index_text: str
    before: dict[str, str | None]  # the state of each path written or removed, as found

    @property
    def staging(self) -> str:
        return os.path.join(self.directory, STAGING)

    def source(self, rel: str) -> str:
        """Where the content of ``rel`` can be read now: the staged copy, or the directory's
        own file when it is unchanged."""
        if rel == INDEX:
            return os.path.join(self.staging, INDEX)
        if rel in self.change.written:
            return os.path.join(self.staging, "files", rel)
        return os.path.join(self.directory, rel)


def stage(directory: str, files: Mapping[str, str], index: Index, *, force: bool = False
          ) -> Staged | None:
    """Stage the new tree of ``directory`` — ``files`` (relative path → text) and ``index`` —
    without touching anything visible; None when the directory already holds exactly that.
    Refuses (before anything is written) a file in the way that dgdgen does not own, a folder
    that is a symlink, and an owned file due for removal that no longer holds what dgdgen wrote
    there."""
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise InputError("--into path exists and is not a directory", location=Location(directory))
    if _staging(directory) is not None:
        raise InputError(f"an interrupted write is still in {STAGING}", location=Location(directory),
                         hint="run the command again: it finishes or discards it first")
    old = read_index(directory) if os.path.isdir(directory) else None
    owned = old.files if old else {}
    rels = {_safe_rel(r): t for r, t in files.items()}
    through_links = sorted(r for r in rels if confined(directory, r) is None)
    if through_links:
        raise InputError(
            f"refusing to write through a symlinked folder: {', '.join(through_links[:5])}",
            location=Location(directory), hint="replace the symlink with a folder, or remove it")
    current = {r: read_owned(directory, r) for r in sorted(set(rels) | set(owned))}
    foreign = sorted(r for r in rels if r not in owned and current[r] is not None)
    if foreign and not force:
        raise InputError(
            f"{len(foreign)} file(s) in the way were not written by dgdgen: "
            + ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else ""),
            location=Location(directory),
            hint="move them away, or pass --force to take them over",
        )
    to_delete = sorted(r for r in set(owned) - set(rels) if current[r] is not None)
    changed = [r for r in to_delete if state_of(current[r]) != owned[r]]
    if changed:
        raise InputError(
            f"{len(changed)} file(s) due for removal no longer hold what dgdgen wrote there "
            "(edited by hand, replaced, or the index was edited): kept, and nothing was touched: "
            + ", ".join(changed[:5]) + (" …" if len(changed) > 5 else ""),
            location=Location(directory),
            hint="restore them from the commit that wrote them, or remove them yourself (and "
            "commit) if they should go",
        )
    to_write = sorted(r for r, t in rels.items() if current[r] != t)
    new_index = Index(
        index.rollout, index.stable_revision, index.candidate_revision, index.step,
        index.previous, {r: digest(t) for r, t in rels.items()}, dict(index.gates), index.hold,
    )
    index_text = new_index.to_text()
    if not to_write and not to_delete and read_owned(directory, INDEX) == index_text:
        return None
    os.makedirs(directory, exist_ok=True)
    staging = os.path.join(directory, STAGING)
    os.makedirs(staging)
    try:
        for n, rel in enumerate(to_write, 1):
            path = os.path.join(staging, "files", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(rels[rel])
                fh.flush()
                os.fsync(fh.fileno())
            maybe_kill("stage", n)
        with open(os.path.join(staging, INDEX), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(index_text)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f"cannot stage the new tree: {exc.strerror}; nothing was changed",
                         location=Location(directory)) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    unchanged = tuple(sorted(set(rels) - set(to_write)))
    before = {r: state_of(current[r]) for r in (*to_write, *to_delete)}
    return Staged(directory, rels, Change(tuple(to_write), tuple(to_delete), unchanged),
                  index_text, before)


def seal(staged: Staged, *, commit: str | None = None, parent: str | None = None,
         intent: str = "", subject: str = "") -> None:
    """Write the journal: the commit point of the write (before it, the next write discards the
    staging; after it, the next write applies it — in Git, once ``commit`` is HEAD)."""
    journal = Journal(staged.change.written, staged.change.removed, commit, parent, intent,
                      subject, staged.before,
                      {r: digest(staged.files[r]) for r in staged.change.written})
    tmp = os.path.join(staged.staging, JOURNAL + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(journal.to_json(), fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(staged.staging, JOURNAL))
        fsync_dir(staged.staging)
    except OSError as exc:
        shutil.rmtree(staged.staging, ignore_errors=True)
        raise InputError(f"cannot record the write: {exc.strerror}; nothing was changed",
                         location=Location(staged.directory)) from None


def write(directory: str, files: Mapping[str, str], index: Index, *, force: bool = False
          ) -> Change:
    """Make ``directory`` hold ``files`` (relative path → text) and ``index``, outside Git (or
    without a commit); leave every file it does not own alone."""
    directory = os.path.abspath(directory)
    recovered = recover(directory) if os.path.isdir(directory) else None
    staged = stage(directory, files, index, force=force)
    if staged is None:
        return Change((), (), tuple(sorted(files)), recovered)
    seal(staged)
    apply(directory)
    discard(directory)
    c = staged.change
    return Change(c.written, c.removed, c.unchanged, recovered)


# --------------------------------------------------------------------------- drift


def drift(directory: str, files: Mapping[str, str], index_text: str, *, label: str = "",
          old: Index | None = None) -> list[str]:
    """Unified diffs between what is in ``directory`` and what a render would write (owned files
    and the index only; ``old`` is the index already read). Empty when the directory is current.
    A path that is not a regular file is reported without being read."""
    directory = os.path.abspath(directory)
    want = dict(files)
    want[INDEX] = index_text
    rels: set[str] = set(want) | (set(old.files) if old else set())
    prefix = label.rstrip("/") + "/" if label and label != "." else ""
    diffs = []
    for rel in sorted(rels):
        have = read_owned(directory, rel)
        new = want.get(rel)
        if have == new:
            continue
        if have is NOT_A_FILE:
            diffs.append(f"--- a/{prefix}{rel}\n+++ b/{prefix}{rel}\n"
                         "@@ not a regular file (a symlink, folder or device): not read @@\n")
            continue
        diffs.append("".join(difflib.unified_diff(
            (have or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{prefix}{rel}" if have is not None else "/dev/null",
            tofile=f"b/{prefix}{rel}" if new is not None else "/dev/null",
        )))
    return diffs


def changed_paths(diffs: Sequence[str]) -> tuple[str, ...]:
    """The paths of :func:`drift`'s diffs (as the diff headers name them)."""
    out = []
    for d in diffs:
        lines = d.splitlines()
        out.append(lines[1][len("+++ b/"):] if lines[1].startswith("+++ b/")
                   else lines[0][len("--- a/"):])
    return tuple(out)
