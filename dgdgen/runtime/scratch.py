"""One private folder for everything a rehearsal and its processes write to a temporary place.

``dgdgen rehearse`` creates ``$TMPDIR/dgdgen-rehearse-XXXXXXXX/`` before it starts anything and
points ``TMPDIR`` (and :mod:`tempfile`) of itself and every process it starts at the ``tmp``
folder inside: the Kubernetes API's token folders, HAProxy's socket folder, Prometheus' data, the
scratch Git repository, and what the Dynamo runtime writes to the temp folder on its own (each
1.6.1 frontend and worker leaves a logging configuration ``tmpXXXXXXXX.json`` there:
``dynamo/runtime/logging.py`` ``configure_sglang_logging``, a NamedTemporaryFile with
``delete=False``; :class:`dgdgen.runtime.procs.LocalDynamo` points them at a ``tmp`` folder of
its work folder, which it removes when they stop) all land in it. The folder is removed on every exit path the rehearsal sees
(success, failure, Ctrl-C, SIGTERM).

A SIGKILL gives no exit path: then the folder stays, and the next rehearsal (or
``dgdgen rehearse --clean``) removes it. A folder is known to be abandoned by its lock: its owner
holds an exclusive ``flock`` on ``.owner`` for as long as it lives, and the kernel drops the lock
when the last process holding it ends, however it ends. A folder whose lock can be taken has no
owner left.

Standard library only.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "dgdgen-rehearse-"
_OWNER = ".owner"
# Paths this run had to create outside the folder (HAProxy's socket folder when the temp folder's
# path is too long for a UNIX socket), one a line, removed with it.
_OUTSIDE = ".outside"
# The folder of the running rehearsal, for the code that must register a path outside it.
ENV = "DGDGEN_SCRATCH"
# What older dgdgen versions left in the temp folder on every rehearsal: a folder holding only
# the drain hook's token file with this content (see sweep). Such a rehearsal reads it within
# seconds of writing it; one untouched for longer than this is no longer read by anyone.
_OLD_TOKEN_PREFIX = "dgdgen-api-"
_OLD_TOKEN = "rehearsal\n"
_OLD_TOKEN_AGE = 600.0


class Scratch:
    """The private folder of one run; its owner lock is held until :meth:`remove` or the end of
    every process holding the descriptor (a fork inherits it; an exec'd child does not)."""

    def __init__(self, path: Path, lock_fd: int) -> None:
        self.path = path
        self.tmp = path / "tmp"
        self._lock_fd = lock_fd

    @classmethod
    def create(cls, base: str | None = None) -> Scratch:
        path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
        # The lock file is locked before it gets its name: a sweep sees either no owner file (a
        # folder being created: left alone) or a locked one, never an unlocked instant.
        fd = os.open(path / (_OWNER + ".new"), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.rename(path / (_OWNER + ".new"), path / _OWNER)
        (path / "tmp").mkdir()
        return cls(path, fd)

    def adopt(self) -> None:
        """Make the private ``tmp`` folder the temp folder of this process and of every process
        it starts from now on."""
        os.environ["TMPDIR"] = str(self.tmp)
        os.environ[ENV] = str(self.path)
        tempfile.tempdir = str(self.tmp)

    def remove(self) -> None:
        _remove(self.path)
        try:
            os.close(self._lock_fd)
        except OSError:
            pass


def note_outside(path: Path) -> None:
    """Record ``path`` (a folder created outside the private folder) with the running rehearsal's
    folder, so that a sweep after a SIGKILL removes it too. Nothing to do outside a rehearsal."""
    scratch = os.environ.get(ENV)
    if not scratch:
        return
    try:
        with open(Path(scratch) / _OUTSIDE, "a", encoding="utf-8") as fh:
            fh.write(f"{path}\n")
    except OSError:
        pass


def _remove(path: Path) -> None:
    try:
        outside = (path / _OUTSIDE).read_text(encoding="utf-8").splitlines()
    except OSError:
        outside = []
    for line in outside:
        other = Path(line)
        # only what this module lets be registered: a private socket folder of ours
        if other.name.startswith("dgdgen-haproxy-") and other.is_dir() and not other.is_symlink():
            shutil.rmtree(other, ignore_errors=True)
    shutil.rmtree(path, ignore_errors=True)


def _abandoned(path: Path) -> bool:
    """Whether ``path`` is a private folder of this user whose owner is gone."""
    try:
        if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.geteuid():
            return False
        fd = os.open(path / _OWNER, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False  # no owner file: being created right now (or not ours)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its owner lives
    finally:
        os.close(fd)
    return True


def _old_token_folder(path: Path) -> bool:
    try:
        st = path.lstat()
        if (path.is_symlink() or not path.is_dir() or st.st_uid != os.geteuid()
                or time.time() - st.st_mtime < _OLD_TOKEN_AGE):
            return False
        entries = list(path.iterdir())
        return ([e.name for e in entries] == ["token"]
                and (path / "token").read_text(encoding="utf-8") == _OLD_TOKEN)
    except OSError:
        return False


def sweep(base: str | None = None) -> list[Path]:
    """Remove the private folders of rehearsals that died without removing them (SIGKILL), and
    the token folders older dgdgen versions left behind; return what was removed."""
    root = Path(base or tempfile.gettempdir())
    removed = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for path in entries:
        if path.name.startswith(PREFIX) and _abandoned(path):
            _remove(path)
            removed.append(path)
        elif path.name.startswith(_OLD_TOKEN_PREFIX) and _old_token_folder(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
