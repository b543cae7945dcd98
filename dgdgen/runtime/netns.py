"""A private network namespace with only loopback, for the local Dynamo processes.

The mocker's ZMQ PUB sockets bind ``tcp://0.0.0.0`` whatever ``DYN_EVENT_PLANE_HOST`` says
(docs/rehearse.md, observed on Dynamo 1.6.1), so the only way to keep every socket on loopback is a
network namespace whose only interface is ``lo``. ``unshare(CLONE_NEWNET)`` needs CAP_SYS_ADMIN.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import multiprocessing
import os
import socket
import struct
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from dgdgen.runtime import RuntimeUnavailable

CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

T = TypeVar("T")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def enter_private_netns() -> None:
    """Move the calling (single-threaded) process into a new network namespace with ``lo`` up.

    Every process started afterwards inherits it. Raises :class:`RuntimeUnavailable` with the
    reason when the kernel refuses.
    """
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise RuntimeUnavailable(
            f"cannot create a private network namespace: {os.strerror(err)} (unshare needs root "
            "or CAP_SYS_ADMIN; the local Dynamo processes bind every interface otherwise)"
        )
    try:
        _loopback_up()
    except OSError as exc:
        raise RuntimeUnavailable(f"cannot bring up loopback in the private namespace: {exc}") from exc


def _child(conn: Any, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        enter_private_netns()
        conn.send(("ok", func(*args)))
    except BaseException as exc:  # noqa: BLE001 - everything goes to the parent, which re-raises
        conn.send(("error", (type(exc).__name__, str(exc), traceback.format_exc())))
    finally:
        conn.close()


class IsolatedError(Exception):
    """The function run in the private namespace raised; the message carries its traceback."""


def run_isolated(func: Callable[..., T], *args: Any, timeout: float = 600.0) -> T:
    """Run ``func(*args)`` in a forked child inside a fresh network namespace; return its result.

    The result must be picklable. A child that exceeds ``timeout`` is killed (with every process
    it started in its process group) and :class:`TimeoutError` is raised.
    """
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, func, args), daemon=False)
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(f"{getattr(func, '__name__', func)} did not finish in {timeout:.0f} s")
        status, payload = parent.recv()
    except EOFError:
        status, payload = "error", ("EOFError", "the isolated child died without a result", "")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(10)
    if status == "ok":
        return payload  # type: ignore[no-any-return]
    name, message, tb = payload
    if name == "RuntimeUnavailable":
        raise RuntimeUnavailable(message)
    raise IsolatedError(f"{name}: {message}\n{tb}")
