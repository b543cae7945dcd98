"""A private network namespace with only loopback, for the local Dynamo processes.

The mocker's ZMQ PUB sockets bind ``tcp://0.0.0.0`` whatever ``DYN_EVENT_PLANE_HOST`` says
(docs/rehearse.md, observed on Dynamo 1.6.1), so the only way to keep every socket on loopback is a
network namespace whose only interface is ``lo``. ``unshare(CLONE_NEWNET)`` needs CAP_SYS_ADMIN;
as root it is used directly. Otherwise a new user namespace is created together with the network
namespace (``unshare(CLONE_NEWUSER | CLONE_NEWNET)``, what ``unshare --user --map-root-user --net``
does, user_namespaces(7)): the caller's uid/gid map to root inside, which grants CAP_NET_ADMIN over
the new network namespace and nothing outside it. Where the kernel refuses that too, the error says
why and what to change; nothing ever falls back to binding on the host's interfaces.

The same ``unshare`` can add a PID namespace (``CLONE_NEWPID``, pid_namespaces(7)): the next
process forked becomes its first process, and when that one ends — however it ends — the kernel
kills every process left in the namespace, grandchildren included. That first process is tied to
the one that forked it with ``PR_SET_PDEATHSIG`` (prctl(2)), so a SIGKILL of the command a user
started takes everything it started with it (:func:`fork_first_process`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import multiprocessing
import os
import select
import signal
import socket
import struct
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from dgdgen.runtime import RuntimeUnavailable

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

T = TypeVar("T")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), _SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | _IFF_UP))


def _write(path: str, text: str) -> None:
    # Binary: no codec lookup, which can need imports the process may no longer be able to read.
    with open(path, "wb") as fh:
        fh.write(text.encode())


def _read_sysctl(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read().decode().strip()
    except OSError:
        return None


def _userns_refusal_hint() -> str:
    """Say which kernel setting refuses unprivileged user namespaces here, and what to do."""
    hints = []
    if _read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        hints.append(
            "kernel.unprivileged_userns_clone=0 (enable with `sudo sysctl -w "
            "kernel.unprivileged_userns_clone=1`)"
        )
    if _read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        hints.append(
            "kernel.apparmor_restrict_unprivileged_userns=1 (allow it with `sudo sysctl -w "
            "kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile granting "
            "`userns,` to this Python)"
        )
    if _read_sysctl("/proc/sys/user/max_user_namespaces") == "0":
        hints.append(
            "user.max_user_namespaces=0 (raise it with `sudo sysctl -w user.max_user_namespaces=15000`)"
        )
    if not hints:
        hints.append(
            "a seccomp filter or container runtime forbids unshare (run on the host or in a privileged container)"
        )
    return "; ".join(hints) + "; or run as root"


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def enter_private_netns(*, pid_namespace: bool = False) -> None:
    """Move the calling (single-threaded) process into a new network namespace with ``lo`` up.

    As root, only the network namespace is new. Otherwise a user namespace is created with it and
    the caller's uid/gid are mapped to root inside. Every process started afterwards inherits it.
    With ``pid_namespace``, a PID namespace is created too: the caller stays outside it, and the
    next process it forks is the namespace's first (:func:`fork_first_process`).
    Raises :class:`RuntimeUnavailable` with the reason and the fix when the kernel refuses.
    """
    libc = _libc()
    pid_flag = CLONE_NEWPID if pid_namespace else 0
    if os.geteuid() == 0:
        if libc.unshare(CLONE_NEWNET | pid_flag) != 0:
            err = ctypes.get_errno()
            raise RuntimeUnavailable(
                f"cannot create a private network namespace: {os.strerror(err)} (unshare needs "
                "CAP_SYS_ADMIN; the local Dynamo processes bind every interface otherwise)"
            )
    else:
        uid, gid = os.geteuid(), os.getegid()
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | pid_flag) != 0:
            err = ctypes.get_errno()
            raise RuntimeUnavailable(
                f"cannot create an unprivileged user + network namespace: {os.strerror(err)}; "
                f"the kernel refuses it here: {_userns_refusal_hint()}. The local Dynamo "
                "processes bind every interface otherwise, so the rehearsal does not start"
            )
        try:
            # setgroups must be denied before an unprivileged process may write gid_map
            # (user_namespaces(7), "Interaction with system calls that change process UIDs or GIDs").
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"0 {uid} 1")
            _write("/proc/self/gid_map", f"0 {gid} 1")
        except OSError as exc:
            raise RuntimeUnavailable(
                f"cannot map uid {uid}/gid {gid} in the new user namespace: {exc}"
            ) from exc
    try:
        _loopback_up()
    except OSError as exc:
        raise RuntimeUnavailable(
            f"cannot bring up loopback in the private namespace: {exc}"
        ) from exc


def die_with_parent(parent_alive: int) -> None:
    """In a freshly forked child: be killed (SIGKILL) when the process that forked it ends, even
    by SIGKILL. ``parent_alive`` is the read end of a pipe whose write end only the parent holds:
    should the parent have died between the fork and the prctl, it reads as closed, and the child
    ends at once (a PID namespace's first process cannot ask getppid(), which says 0 there)."""
    if _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(70)
    if select.select([parent_alive], [], [], 0)[0]:  # EOF: the parent is gone
        os._exit(137)
    os.close(parent_alive)


def fork_first_process(
    on_start: Callable[[], None],
    forward: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
) -> int | None:
    """Fork the first process of the PID namespace entered with
    ``enter_private_netns(pid_namespace=True)``, tied to this one (:func:`die_with_parent`).

    Returns None in that child, which goes on with the caller's work once ``on_start`` has run
    there (it installs the child's handlers for the signals ``forward`` names: a namespace's
    first process receives only the signals it handles, pid_namespaces(7), and they are held back
    until then). Every process the child starts lives in the namespace and ends with it. In this
    process, waits for the child — passing those signals on — and returns its exit code (128 +
    the signal that ended it). When it returns, no process of the namespace is left: the kernel
    ends them all with its first process, before that one can be waited for.
    """
    alive_r, alive_w = os.pipe()
    held = set(forward)
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    pid = os.fork()
    if pid == 0:
        os.close(alive_w)
        die_with_parent(alive_r)
        on_start()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
        return None
    os.close(alive_r)

    def pass_on(signum: int, _frame: Any) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    previous = {sig: signal.signal(sig, pass_on) for sig in forward}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, held)
    try:
        _, status = os.waitpid(pid, 0)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        os.close(alive_w)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def _child(conn: Any, func: Callable[..., Any], args: tuple[Any, ...], alive_r: int,
           alive_w: int) -> None:
    # the caller (a test) may be SIGKILLed: this child ends with it, and the first process of
    # the PID namespace with this child, taking every process it started along
    os.close(alive_w)
    die_with_parent(alive_r)
    try:
        enter_private_netns(pid_namespace=True)
        inner_r, inner_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(inner_w)
            die_with_parent(inner_r)
            try:
                conn.send(("ok", func(*args)))
            except BaseException as exc:  # noqa: BLE001 - everything goes to the parent
                conn.send(("error", (type(exc).__name__, str(exc), traceback.format_exc())))
            finally:
                conn.close()
                os._exit(0)
        os.close(inner_r)
        os.waitpid(pid, 0)
    except BaseException as exc:  # noqa: BLE001 - everything goes to the parent, which re-raises
        conn.send(("error", (type(exc).__name__, str(exc), traceback.format_exc())))
    finally:
        conn.close()


class IsolatedError(Exception):
    """The function run in the private namespace raised; the message carries its traceback."""


def run_isolated(func: Callable[..., T], *args: Any, timeout: float = 600.0) -> T:
    """Run ``func(*args)`` in a forked child inside a fresh network and PID namespace; return its
    result.

    The result must be picklable. Every process ``func`` starts ends when it returns, when the
    child is killed after ``timeout`` (:class:`TimeoutError` is raised then), and when the caller
    itself is killed, by SIGKILL too (:func:`fork_first_process`).
    """
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    alive_r, alive_w = os.pipe()
    proc = ctx.Process(target=_child, args=(child, func, args, alive_r, alive_w), daemon=False)
    try:
        proc.start()
    finally:
        os.close(alive_r)
    child.close()
    try:
        if not parent.poll(timeout):
            raise TimeoutError(
                f"{getattr(func, '__name__', func)} did not finish in {timeout:.0f} s"
            )
        status, payload = parent.recv()
    except EOFError:
        status, payload = "error", ("EOFError", "the isolated child died without a result", "")
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(10)
        os.close(alive_w)
    if status == "ok":
        return payload  # type: ignore[no-any-return]
    name, message, tb = payload
    if name == "RuntimeUnavailable":
        raise RuntimeUnavailable(message)
    raise IsolatedError(f"{name}: {message}\n{tb}")
