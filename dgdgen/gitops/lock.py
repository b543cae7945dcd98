"""One writer at a time: the lock every command that writes a deploy repository holds.

Two dgdgen commands on one repository a fraction of a second apart must not both act on the
state they read (a rollback and a promote that moves the finished rollout forward again; a gate
result written over a promotion). Each writing command holds this lock from before it reads the
recorded state until its commit is made, and fails at once, exit 2, naming the holder, when
another command holds it.

The lock is an advisory ``flock`` on ``<git dir>/dgdgen.lock`` (on the rendered directory itself
outside Git): the kernel releases it when its holder exits, however it exits, so a killed command
never blocks the next one. The file records the holder (pid, command, start time) for the
message; a record left by a holder that did not release it normally (killed) is reported when
the next command takes the lock, never silently overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator

from dgdgen.errors import InputError, Location

LOCK_NAME = "dgdgen.lock"
# Test hook: ``DGDGEN_TEST_PAUSE_AT=<point>:<file>`` makes the process create <file> when it
# reaches <point> (``premise``: the state read, the lock not yet taken; ``locked``: the lock
# held) and wait until <file> is removed, so tests can interleave two real processes exactly.
_PAUSE_ENV = "DGDGEN_TEST_PAUSE_AT"


def pause_point(point: str) -> None:
    spec = os.environ.get(_PAUSE_ENV)
    if not spec or not spec.startswith(point + ":"):
        return
    marker = spec[len(point) + 1:]
    with open(marker, "w", encoding="utf-8") as fh:
        fh.write(str(os.getpid()))
    deadline = time.monotonic() + 120
    while os.path.exists(marker) and time.monotonic() < deadline:
        time.sleep(0.01)


def _holder(text: str) -> str:
    try:
        doc = json.loads(text)
        return (f"pid {int(doc['pid'])}, `{str(doc['command'])[:200]}`, since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S %Z', time.localtime(float(doc['since'])))}")
    except (ValueError, KeyError, TypeError, OverflowError):
        return "an unknown holder"


@contextlib.contextmanager
def writer(path: str, command: str, notes: list[str] | None = None) -> Iterator[None]:
    """Hold the writer lock at ``path`` for the block: a lock file (created if missing) that
    records the holder, or a folder (outside Git: the rendered directory itself, which then
    records nothing). ``notes`` receives a line when a killed holder's record was found."""
    pause_point("premise")
    folder = os.path.isdir(path) and not os.path.islink(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY) if folder else \
            os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise InputError(f"cannot open the writer lock: {exc.strerror}",
                         location=Location(path)) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise InputError(f"cannot take the writer lock: {exc.strerror}",
                                 location=Location(path)) from None
            held = "" if folder else os.pread(fd, 4096, 0).decode("utf-8", "replace")
            raise InputError(
                f"another dgdgen command is writing this repository ({_holder(held)}); "
                "nothing was done",
                location=Location(path),
                hint="let it finish, check what it did (dgdgen status), then run this command "
                "again if it still applies",
            ) from None
        left = "" if folder else os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        if left and notes is not None:
            notes.append(f"the writer lock still named {_holder(left)}, which ended without "
                         "releasing it (killed?); its work, if any, is finished or discarded "
                         "below")
        if not folder:
            record = json.dumps({"pid": os.getpid(), "command": command, "since": time.time()})
            # the record only words messages: a full disk must not stop a command that can
            # still fail cleanly further on (the flock is held either way)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, record.encode("utf-8", "replace"), 0)
        pause_point("locked")
        try:
            yield
        finally:
            if not folder:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing releases the flock


def command_line() -> str:
    """The running command as the lock records it."""
    return " ".join(["dgdgen", *sys.argv[1:]])[:500]
