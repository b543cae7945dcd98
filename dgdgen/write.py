"""Write a rendered tree atomically: the whole tree is built beside the target and swapped in
with one rename, so a failed or interrupted render leaves the previous tree intact.

On Linux the swap is ``renameat2(RENAME_EXCHANGE)`` (both trees exist at every instant); elsewhere
the old tree is moved aside and the new one renamed into place.

Whatever goes wrong on the way — a parent that is a file, a read-only folder, ``/proc``, a symlink
loop, a full disk — is one :class:`InputError` naming the path and the reason; nothing outside the
staging folder is touched before the swap. A symlink to an earlier output is written *through*
(the link stays, the folder it names is replaced). Staging folders a killed run left behind
(``.NAME.new-*`` / ``.NAME.old-*``) are removed by the next run; a live run holds a lock on its
own, so two runs never remove each other's.

The marker file a write leaves in the tree lists the files it wrote, each with the sha256 of what
it wrote. A folder is replaced only when everything in it is listed there and still holds what
was written: a file someone put into an earlier output (a picture, the output of another
command), edited since, or listed by a marker someone else wrote (an older marker that names
files without their content proves nothing) is never deleted silently — the write is refused,
exit 2, unless ``force``. For the same reason a write into a folder inside an earlier output is
refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping

from dgdgen.errors import InputError, Location

MARKER = ".dgdgen-render"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths (Linux renameat2). False when unsupported."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(rc == 0)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        return "a part of the path is a file, not a directory"
    return exc.strerror or str(exc)


def resolve_target(target: str, *, what: str = "output path") -> str:
    """The directory ``target`` names, symlinks followed (a symlink to a directory is written
    through, never replaced); an :class:`InputError` when it cannot be a directory."""
    path = os.path.abspath(target)
    if os.path.islink(path):
        try:
            os.stat(path)
        except OSError as exc:
            reason = _reason(exc) if exc.errno == errno.ELOOP else "dangling symlink"
            raise InputError(f"{what} is a symlink that leads nowhere: {reason}",
                             location=Location(target)) from None
        path = os.path.realpath(path)
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise InputError(f"cannot use the {what}: {_reason(exc)}",
                         location=Location(target)) from None
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"{what} exists and is not a directory", location=Location(target))
    return path


def safe_relative(rel: str, *, where: str) -> str:
    """``rel`` normalised, or an :class:`InputError` when it would leave its folder (absolute,
    ``..``); a guard behind file names that are safe by construction."""
    norm = os.path.normpath(rel)
    if not rel or os.path.isabs(norm) or norm == ".." or norm.startswith(".." + os.sep) \
            or "\0" in rel:
        raise InputError(f"refusing to write {rel!r}: it would leave the output directory",
                         location=Location(where))
    if norm == "." or rel.endswith("/") or norm == MARKER:
        raise InputError(f"refusing to write {rel!r}: not a file name", location=Location(where))
    return norm


def _missing_parents(path: str) -> list[str]:
    """The ancestors of ``path`` that do not exist yet, outermost first."""
    out = []
    p = path
    while not os.path.lexists(p):
        out.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return out[::-1]


def _default_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o777 & ~mask


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def remove_stale(parent: str, name: str) -> list[str]:
    """Remove the staging folders of runs that were killed (``.NAME.new-*`` / ``.NAME.old-*``
    that no live run holds locked). Returns what was removed."""
    removed: list[str] = []
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith((f".{name}.new-", f".{name}.old-")):
            continue
        path = os.path.join(parent, entry)
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a live run's
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            os.close(fd)
    return removed


def _rendered_ancestor(target: str) -> str | None:
    """The nearest enclosing directory that a dgdgen render wrote (holds the marker), if any."""
    here = os.path.dirname(os.path.abspath(target))
    while True:
        if os.path.isfile(os.path.join(here, MARKER)):
            return here
        up = os.path.dirname(here)
        if up == here:
            return None
        here = up


_MARKER_HEAD = ("This directory is written by dgdgen (render -o, argo -o) and replaced on every "
                "run. The files it wrote, each after the sha256 of what it wrote:\n")
_MARKER_BYTES = 4 * 1024 * 1024  # a render lists a few thousand files at most
_SHA256_LINE = re.compile(r"([0-9a-f]{64})  (.+)")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _marker_text(files: Mapping[str, str]) -> str:
    return _MARKER_HEAD + "".join(f"{_sha256(text.encode('utf-8'))}  {rel}\n"
                                  for rel, text in sorted(files.items()))


def _read_plain(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file (never through a symlink, never past ``limit``), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                return None
    except OSError:
        return None
    finally:
        os.close(fd)


def _recorded(target: str) -> dict[str, str] | None:
    """The files the marker of ``target`` lists, each with the sha256 of what dgdgen wrote;
    None when it proves nothing (a marker of an older dgdgen, listing names only, or one that
    is not dgdgen's)."""
    raw = _read_plain(os.path.join(target, MARKER), _MARKER_BYTES)
    try:
        text = raw.decode("utf-8") if raw is not None else ""
    except UnicodeDecodeError:
        return None
    if not text.startswith(_MARKER_HEAD):
        return None
    out = {}
    for line in text[len(_MARKER_HEAD):].splitlines():
        m = _SHA256_LINE.fullmatch(line)
        if m is None:
            return None
        out[m.group(2)] = m.group(1)
    return out


def _holds(target: str, rel: str, sha: str) -> bool:
    """Whether ``target/rel`` is a regular file (not behind a symlink) holding what the marker
    says dgdgen wrote there."""
    here = target
    for part in rel.split(os.sep)[:-1]:
        here = os.path.join(here, part)
        if os.path.islink(here):
            return False
    data = _read_plain(os.path.join(target, rel), 1 << 30)
    return data is not None and _sha256(data) == sha


def _present(target: str) -> list[str]:
    """Every file (and symlink) under ``target``, relative, sorted; the marker left out."""
    out: list[str] = []
    for here, dirs, names in os.walk(target):
        rel = os.path.relpath(here, target)
        for name in names + [d for d in dirs if os.path.islink(os.path.join(here, d))]:
            out.append(os.path.normpath(os.path.join(rel, name)))
    return sorted(p for p in out if p != MARKER)


def _check_replaceable(target: str, shown: str) -> None:
    """Refuse (:class:`InputError`) to replace ``target`` when that would delete something no
    dgdgen write put there."""
    owner = _rendered_ancestor(target)
    if owner is not None:
        if os.path.isdir(target) and os.listdir(target) \
                and not os.path.exists(os.path.join(target, MARKER)):
            # e.g. `render -o out/rollback/ --step rollback` after `render -o out/`: the folder
            # was written by dgdgen, as one state of that all-steps render.
            raise InputError(
                f"output directory is one state's folder of the dgdgen render in "
                f"{os.path.relpath(owner)}; replacing it alone would leave that render "
                "inconsistent: pick a folder outside it, or re-render the whole "
                f"{os.path.relpath(owner)}",
                location=Location(shown),
            )
        raise InputError(
            f"output directory is inside the dgdgen output in {os.path.relpath(owner)}, which "
            "the next run there replaces: pick a folder outside it",
            location=Location(shown),
        )
    if not os.path.isdir(target):
        return
    try:
        entries = os.listdir(target)
    except OSError as exc:
        raise InputError(f"cannot read the output directory: {_reason(exc)}",
                         location=Location(shown)) from None
    if not entries:
        return
    if not os.path.exists(os.path.join(target, MARKER)):
        raise InputError(
            "output directory is not empty and was not written by dgdgen render; refusing to "
            "replace it (pass --force to replace it anyway)",
            location=Location(shown),
        )
    recorded = _recorded(target)
    if recorded is None:
        raise InputError(
            "output directory was written by an older dgdgen that did not record what it wrote "
            "(or its .dgdgen-render is not dgdgen's), so nothing proves its files are dgdgen's; "
            "refusing to replace it (pass --force to replace it anyway, once)",
            location=Location(shown),
        )
    foreign = [p for p in _present(target) if p not in recorded]
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise InputError(
            f"output directory holds {len(foreign)} file(s) that dgdgen did not write there "
            f"({', '.join(foreign[:3])}{more}); replacing the folder would delete them: move "
            "them out, or pass --force to replace it anyway",
            location=Location(shown),
        )
    changed = [p for p in _present(target) if not _holds(target, p, recorded[p])]
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        raise InputError(
            f"output directory holds {len(changed)} file(s) that no longer hold what dgdgen "
            f"wrote there ({', '.join(changed[:3])}{more}: edited, or replaced); replacing the "
            "folder would delete them: move them out, or pass --force to replace it anyway",
            location=Location(shown),
        )


def write_tree(target: str, files: Mapping[str, str], *, force: bool = False) -> None:
    """Replace directory ``target`` with exactly ``files`` (relative path → text)."""
    shown = target
    target = resolve_target(target)
    rels = {safe_relative(rel, where=shown): text for rel, text in files.items()}
    if os.path.exists(target):
        try:
            os.listdir(target)
        except OSError as exc:
            raise InputError(f"cannot read the output directory: {_reason(exc)}",
                             location=Location(shown)) from None
    if not force:
        _check_replaceable(target, shown)
    parent = os.path.dirname(target)
    created = _missing_parents(parent)
    try:
        os.makedirs(parent, exist_ok=True)
        remove_stale(parent, os.path.basename(target))
        staging = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.new-", dir=parent)
    except OSError as exc:
        _remove_empty(created)
        raise InputError(f"cannot write the output: {_reason(exc)}",
                         location=Location(shown)) from None
    try:
        with _locked(staging):
            mode = os.stat(target).st_mode & 0o7777 if os.path.isdir(target) else _default_mode()
            for rel, text in sorted(rels.items()):
                path = os.path.join(staging, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as fh:
                    fh.write(text)
            with open(os.path.join(staging, MARKER), "w", encoding="utf-8") as fh:
                fh.write(_marker_text(rels))
            os.chmod(staging, mode)  # mkdtemp makes 0700; the output gets a folder's usual mode
            fsync_dir(staging)
            if os.path.isdir(target) and _exchange(staging, target):
                shutil.rmtree(staging)  # now holds the previous tree
            elif os.path.isdir(target):
                aside = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.old-", dir=parent)
                os.rmdir(aside)
                os.rename(target, aside)
                os.rename(staging, target)
                shutil.rmtree(aside)
            else:
                os.rename(staging, target)
        fsync_dir(parent)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise InputError(f"cannot write the output: {_reason(exc)}",
                         location=Location(shown)) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_empty(created)
        raise


def _remove_empty(created: list[str]) -> None:
    """Undo the parent folders a failed write made (innermost first; only if still empty)."""
    for d in reversed(created):
        try:
            os.rmdir(d)
        except OSError:
            break


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file(path: str, data: bytes, *, what: str = "output file") -> None:
    """Write one output file whole or not at all: a temporary file beside it, renamed over it,
    removed again whatever fails (a folder in the way, a read-only folder, a full disk). A path
    that is a device or a FIFO — ``/dev/null``, ``/dev/stdout``, a pipe someone reads — is
    written through, never replaced: a rename over ``/dev/null`` would turn the machine's null
    device into a regular file (run as root, it did)."""
    import stat
    import tempfile

    shown = Location(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise InputError(f"cannot write the {what}: {_reason(exc)}", location=shown) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"is a directory, expected a path for the {what}", location=shown)
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise InputError(f"cannot write the {what}: {_reason(exc)}", location=shown) from None
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.",
                                   dir=os.path.dirname(os.path.abspath(path)))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise InputError(f"cannot write the {what}: {_reason(exc)}", location=shown) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
