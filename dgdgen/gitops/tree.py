"""Rendered files inside a directory dgdgen shares with other files: the index of what it owns,
crash-safe replacement, and drift detection.

The directory may hold files dgdgen did not write (a README, a kustomization, another tool's
output); dgdgen touches only the paths listed in its index (``.dgdgen-index``), refuses to
overwrite a file it does not own, and removes owned files that are no longer part of the output.
The index is JSON in a file without a ``.yaml``/``.json`` suffix, so an Argo CD directory source
does not try to apply it (Argo CD only reads ``*.yaml``, ``*.yml``, ``*.json``, ``*.jsonnet``).

Crash safety: a write stages the complete new tree under ``.dgdgen-staging/`` and only then
writes a journal (one atomic rename: the commit point). Applying the journal is a handful of
renames and unlinks. A process killed while staging leaves the previous tree untouched (the
half-staged directory is discarded by the next run); one killed while applying leaves a complete
journal that the next run finishes (:func:`recover`), so the tree is always either the old or the
new render once any dgdgen command has looked at it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.write import fsync_dir

INDEX = ".dgdgen-index"
STAGING = ".dgdgen-staging"
JOURNAL = "JOURNAL"
INDEX_FORMAT = 1
# Test hook: ``stage:N`` or ``apply:N`` sends SIGKILL to this process after N files of that
# phase, so tests can prove what an interrupted write leaves behind with a real kill.
_KILL_ENV = "DGDGEN_TEST_KILL_AT"


@dataclass(frozen=True)
class GateResult:
    gate: str
    result: str  # passed | failed | inconclusive
    message: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"gate": self.gate, "result": self.result}
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True)
class Index:
    """What the directory holds: the rollout, the recorded state and the owned files."""

    rollout: str
    stable_revision: str
    candidate_revision: str
    step: str  # a plan state label: step-00 .. step-NN, rollback, cleanup
    previous: str | None  # the state the last transition came from (decides sync waves)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256
    gates: dict[str, GateResult] = field(default_factory=dict)  # step label -> result

    def to_text(self) -> str:
        doc: dict[str, Any] = {
            "format": INDEX_FORMAT,
            "generator": "dgdgen",
            "rollout": self.rollout,
            "stableRevision": self.stable_revision,
            "candidateRevision": self.candidate_revision,
            "step": self.step,
            "previous": self.previous,
            "gates": {k: v.to_json() for k, v in sorted(self.gates.items())},
            "files": dict(sorted(self.files.items())),
        }
        return json.dumps(doc, indent=2) + "\n"

    @classmethod
    def parse(cls, text: str, where: str) -> Index:
        try:
            doc = json.loads(text)
            if doc.get("format") != INDEX_FORMAT:
                raise ValueError(f"unsupported index format {doc.get('format')!r}")
            return cls(
                rollout=str(doc["rollout"]),
                stable_revision=str(doc["stableRevision"]),
                candidate_revision=str(doc["candidateRevision"]),
                step=str(doc["step"]),
                previous=None if doc.get("previous") is None else str(doc["previous"]),
                files={str(k): str(v) for k, v in doc["files"].items()},
                gates={
                    str(k): GateResult(str(v["gate"]), str(v["result"]), str(v.get("message", "")))
                    for k, v in doc.get("gates", {}).items()
                },
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(
                f"not a dgdgen index ({exc}); remove it only if you know the directory's files",
                location=Location(where),
            ) from None


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_index(directory: str) -> Index | None:
    path = os.path.join(directory, INDEX)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return Index.parse(fh.read(), path)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return "<binary file>\n"


def maybe_kill(phase: str, count: int) -> None:
    """The kill points of the crash tests (``DGDGEN_TEST_KILL_AT=phase:count``)."""
    _maybe_kill(phase, count)


def _maybe_kill(phase: str, count: int) -> None:
    spec = os.environ.get(_KILL_ENV)
    if spec and spec == f"{phase}:{count}":
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _safe_rel(rel: str) -> str:
    norm = os.path.normpath(rel)
    if os.path.isabs(norm) or norm in (INDEX, STAGING) or \
            norm.startswith(("..", STAGING + os.sep)):
        raise InputError(f"refusing to write {rel!r}: it would leave the --into directory")
    return norm


def recover(directory: str) -> str | None:
    """Finish or discard an interrupted write. Returns what was done (for messages), or None."""
    staging = os.path.join(directory, STAGING)
    if not os.path.isdir(staging):
        return None
    journal = os.path.join(staging, JOURNAL)
    if not os.path.exists(journal):
        shutil.rmtree(staging)
        return "discarded an interrupted render that had not finished staging"
    with open(journal, encoding="utf-8") as fh:
        plan = json.load(fh)
    _apply(directory, staging, plan)
    return "finished an interrupted render"


def _apply(directory: str, staging: str, plan: Mapping[str, Any]) -> None:
    count = 0
    for rel in plan["write"]:
        src = os.path.join(staging, "files", rel)
        if os.path.exists(src):  # else already moved by an earlier, interrupted apply
            dst = os.path.join(directory, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)
            count += 1
            _maybe_kill("apply", count)
    for rel in plan["delete"]:
        try:
            os.unlink(os.path.join(directory, rel))
        except FileNotFoundError:
            pass
        parent = os.path.dirname(os.path.join(directory, rel))
        while os.path.abspath(parent) != os.path.abspath(directory):
            try:
                os.rmdir(parent)  # only empty directories left behind by removed files
            except OSError:
                break
            parent = os.path.dirname(parent)
    src = os.path.join(staging, INDEX)
    if os.path.exists(src):
        os.replace(src, os.path.join(directory, INDEX))
    shutil.rmtree(staging)


@dataclass(frozen=True)
class Change:
    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]
    recovered: str | None = None


def write(directory: str, files: Mapping[str, str], index: Index, *, force: bool = False
          ) -> Change:
    """Make ``directory`` hold ``files`` (relative path → text) and ``index``; leave every file
    it does not own alone. ``index.files`` is filled in here."""
    directory = os.path.abspath(directory)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError("--into path exists and is not a directory", location=Location(directory))
    os.makedirs(directory, exist_ok=True)
    recovered = recover(directory)
    old = read_index(directory)
    owned = set(old.files) if old else set()
    rels = {_safe_rel(r): t for r, t in files.items()}
    foreign = sorted(
        r for r in rels if r not in owned and os.path.lexists(os.path.join(directory, r))
    )
    if foreign and not force:
        raise InputError(
            f"{len(foreign)} file(s) in the way were not written by dgdgen: "
            + ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else ""),
            location=Location(directory),
            hint="move them away, or pass --force to take them over",
        )
    to_write = sorted(r for r, t in rels.items() if _read(os.path.join(directory, r)) != t)
    to_delete = sorted(owned - set(rels))
    new_index = Index(
        index.rollout, index.stable_revision, index.candidate_revision, index.step,
        index.previous, {r: digest(t) for r, t in rels.items()}, dict(index.gates),
    )
    index_text = new_index.to_text()
    old_index_text = _read(os.path.join(directory, INDEX))
    if not to_write and not to_delete and old_index_text == index_text:
        return Change((), (), tuple(sorted(rels)), recovered)

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
            _maybe_kill("stage", n)
        with open(os.path.join(staging, INDEX), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(index_text)
        tmp = os.path.join(staging, JOURNAL + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"write": to_write, "delete": to_delete}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, os.path.join(staging, JOURNAL))  # the commit point
        fsync_dir(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    with open(os.path.join(staging, JOURNAL), encoding="utf-8") as fh:
        _apply(directory, staging, json.load(fh))
    fsync_dir(directory)
    unchanged = tuple(sorted(set(rels) - set(to_write)))
    return Change(tuple(to_write), tuple(to_delete), unchanged, recovered)


def drift(directory: str, files: Mapping[str, str], index_text: str, *, label: str = ""
          ) -> list[str]:
    """Unified diffs between what is in ``directory`` and what a render would write (owned files
    and the index only). Empty when the directory is current."""
    directory = os.path.abspath(directory)
    old = read_index(directory) if os.path.exists(os.path.join(directory, INDEX)) else None
    want = dict(files)
    want[INDEX] = index_text
    rels = set(want) | (set(old.files) if old else set())
    prefix = label.rstrip("/") + "/" if label else ""
    diffs = []
    for rel in sorted(rels):
        have = _read(os.path.join(directory, rel))
        new = want.get(rel)
        if have == new:
            continue
        diffs.append("".join(difflib.unified_diff(
            (have or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{prefix}{rel}" if have is not None else "/dev/null",
            tofile=f"b/{prefix}{rel}" if new is not None else "/dev/null",
        )))
    return diffs
