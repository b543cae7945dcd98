"""Write a rendered tree atomically: the whole tree is built beside the target and swapped in
with one rename, so a failed or interrupted render leaves the previous tree intact.

On Linux the swap is ``renameat2(RENAME_EXCHANGE)`` (both trees exist at every instant); elsewhere
the old tree is moved aside and the new one renamed into place.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Mapping

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


def write_tree(target: str, files: Mapping[str, str], *, force: bool = False) -> None:
    """Replace directory ``target`` with exactly ``files`` (relative path → text)."""
    target = os.path.abspath(target)
    if os.path.exists(target):
        if not os.path.isdir(target):
            raise InputError("output path exists and is not a directory", location=Location(target))
        if os.listdir(target) and not os.path.exists(os.path.join(target, MARKER)) and not force:
            raise InputError(
                "output directory is not empty and was not written by dgdgen render; refusing to "
                "replace it (pass --force to replace it anyway)",
                location=Location(target),
            )
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.new-", dir=parent)
    try:
        for rel, text in sorted(files.items()):
            path = os.path.join(staging, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        with open(os.path.join(staging, MARKER), "w", encoding="utf-8") as fh:
            fh.write("This directory is written by `dgdgen render`; it is replaced on every run.\n")
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
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


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
