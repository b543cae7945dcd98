"""Where dgdgen keeps what it may reuse between runs, and how a cache file is replaced.

One directory for every cache: ``$DGDGEN_CACHE_DIR``; empty disables every cache; unset, it is
``$XDG_CACHE_HOME/dgdgen`` or ``~/.cache/dgdgen``. A cache is only ever an optimisation: a
directory that cannot be created, a file that cannot be read or written, costs the work the
cache would have saved and nothing else.
"""

from __future__ import annotations

import contextlib
import os


def cache_dir() -> str | None:
    """The cache directory (created when missing), or None when caching is disabled
    (``DGDGEN_CACHE_DIR=""``) or the directory cannot be created."""
    root = os.environ.get("DGDGEN_CACHE_DIR")
    if root == "":
        return None
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "dgdgen")
    try:
        os.makedirs(root, exist_ok=True)
    except OSError:
        return None
    return root


def replace_file(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` whole or not at all: a temporary file in the same directory,
    renamed over ``path`` (``os.replace`` is atomic, so a concurrent reader sees the old file or
    the new one, and of two concurrent writers the last one wins). False when it failed; the
    temporary file never stays behind."""
    # Not tempfile.mkstemp: importing tempfile (random, shutil) costs a pre-commit run more
    # than writing the file. A random name opened with O_EXCL is as safe.
    tmp = None
    try:
        name = f".{os.path.basename(path)}.{os.urandom(8).hex()}.tmp"
        candidate = os.path.join(os.path.dirname(path), name)
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        tmp = candidate
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        tmp = None
        return True
    except OSError:
        return False
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.remove(tmp)
