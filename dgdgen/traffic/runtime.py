"""HAProxy's runtime API over its unix stats socket (stdlib ``socket``; no socat needed).

Weights set here take effect at once and do not touch streams in flight. They are not
persistent: a reload or a new pod starts from the config weights, unless ``show servers state``
was saved to the ``server-state-file`` first — which :meth:`RuntimeApi.save_state` does
(docs/traffic.md, "Two ways to move the weights"; tests/traffic/test_runtime_api.py).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dgdgen.errors import InputError

# `srv_admin_state` bits (HAProxy include/haproxy/server-t.h): forced and inherited maintenance
# are the operator's intent. Config `disabled` sets forced (0x01) plus 0x04, a record that it came
# from the config; 0x04 stays after `state ready`, so it is not part of the intent.
_ADMIN_MAINT = 0x01 | 0x02


@dataclass(frozen=True)
class Target:
    """What one server should look like."""

    server: str
    weight: int  # 0..256
    enabled: bool


@dataclass(frozen=True)
class Current:
    server: str
    weight: int
    enabled: bool
    up: bool  # operational state: health checks pass


def _exchange(path: str, timeout: float, request: str, what: str, hint: str | None = None) -> str:
    """Send ``request`` on HAProxy's unix socket ``path`` and read until HAProxy closes it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        try:
            s.connect(path)
        except OSError as exc:
            raise InputError(f"cannot reach the HAProxy {what} at {path}: {exc.strerror or exc}",
                             hint=hint) from None
        chunks = []
        try:
            s.sendall(request.encode())
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        except OSError as exc:
            raise InputError(f"the HAProxy {what} at {path} hung up: {exc}") from None
    finally:
        s.close()
    return b"".join(chunks).decode("utf-8", "replace")


class RuntimeApi:
    """A client of one HAProxy process's stats socket (``level admin``)."""

    def __init__(self, path: str, *, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout

    def command(self, line: str) -> str:
        """Send one command and return HAProxy's answer (the stats socket closes after it)."""
        return _exchange(self.path, self.timeout, line + "\n", "runtime API",
                         "pass the `stats socket` path of the running proxy with --socket")

    def servers(self, backend: str) -> dict[str, Current]:
        """``show servers state``: version line, ``#`` header, one row per server."""
        text = self.command(f"show servers state {backend}")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        header = next((ln for ln in lines if ln.startswith("#")), None)
        if header is None:
            raise InputError(f"HAProxy has no backend {backend!r}: {text.strip() or 'no answer'}")
        cols = header.lstrip("# ").split()
        out = {}
        for ln in lines:
            if ln.startswith("#") or len(ln.split()) < len(cols) or ln.split()[1] != backend:
                continue
            row = dict(zip(cols, ln.split(), strict=False))
            name = row["srv_name"]
            out[name] = Current(
                server=name,
                weight=int(row["srv_uweight"]),
                enabled=not int(row["srv_admin_state"]) & _ADMIN_MAINT,
                up=row["srv_op_state"] == "2",
            )
        return out

    def save_state(self, path: str) -> None:
        """Write ``show servers state`` (all backends) atomically to ``path``."""
        text = self.command("show servers state")
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def apply(self, backend: str, targets: Sequence[Target]) -> list[str]:
        """Move ``backend``'s servers to ``targets``; returns the commands sent.

        Refuses (before sending anything) a target server the proxy does not have. After the
        commands, reads the weights back and raises if any differs.
        """
        current = self.servers(backend)
        missing = [t.server for t in targets if t.server not in current]
        if missing:
            raise InputError(
                f"the proxy's backend {backend} has no server {', '.join(missing)} "
                f"(it has: {', '.join(sorted(current)) or 'none'}); is it running this rollout's "
                "config?"
            )
        sent = []
        for cmd in commands(backend, targets, current):
            answer = self.command(cmd).strip()
            if answer:
                raise InputError(f"HAProxy refused `{cmd}`: {answer}")
            sent.append(cmd)
        after = self.servers(backend)
        wrong = [
            f"{t.server}: weight {after[t.server].weight}, "
            f"{'enabled' if after[t.server].enabled else 'maintenance'}"
            for t in targets
            if after[t.server].weight != t.weight or after[t.server].enabled != t.enabled
        ]
        if wrong:
            raise InputError("weights did not take effect: " + "; ".join(wrong))
        return sent


def commands(backend: str, targets: Sequence[Target],
             current: Mapping[str, Current] | None = None) -> list[str]:
    """The runtime commands that move ``backend`` to ``targets``, in a safe order:

    1. servers that gain traffic (enabled, then weight raised), largest gain first;
    2. servers that lose weight;
    3. servers that leave (weight 0, then maintenance: their streams finish, docs/traffic.md).

    So some enabled server always has weight at any instant. Raising before lowering also keeps
    round robin exact: on HAProxy 2.6.12, lowering one server's weight before raising the other's
    sent every one of the next 100+ requests to one server; raising first kept every step exact to
    one request in 100 (docs/traffic.md, measured). Without ``current`` (a dry run) the order
    follows the targets alone.
    """

    def now(t: Target) -> tuple[int, bool]:
        if current is None or t.server not in current:
            return (0, False)
        c = current[t.server]
        return (c.weight, c.enabled)

    gain = sorted(
        (t for t in targets if t.enabled and t.weight >= now(t)[0]),
        key=lambda t: (-(t.weight - now(t)[0]), t.server),
    )
    lose = sorted(
        (t for t in targets if t.enabled and t.weight < now(t)[0]),
        key=lambda t: (t.weight - now(t)[0], t.server),
    )
    leave = sorted((t for t in targets if not t.enabled), key=lambda t: t.server)
    out = []
    for t in gain:
        if not now(t)[1]:
            out.append(f"set server {backend}/{t.server} state ready")
        if current is None or now(t)[0] != t.weight:
            out.append(f"set weight {backend}/{t.server} {t.weight}")
    for t in lose:
        out.append(f"set weight {backend}/{t.server} {t.weight}")
    for t in leave:
        if current is None or now(t)[0] != t.weight:
            out.append(f"set weight {backend}/{t.server} {t.weight}")
        if current is None or now(t)[1]:
            out.append(f"set server {backend}/{t.server} state maint")
    return out


class MasterCli:
    """HAProxy's master CLI (``haproxy -W -S PATH``): reloads and the process list.

    The master keeps a connection open after answering, so every command ends with ``; quit``
    (HAProxy 2.6.12; used so by tests/traffic/test_haproxy_e2e.py's reloads).
    """

    def __init__(self, path: str, *, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout

    def command(self, line: str) -> str:
        # hangs up e.g. while the master re-executes itself during a reload
        return _exchange(self.path, self.timeout, f"{line}; quit\n", "master CLI")

    def reload(self) -> None:
        """Hitless reload: a new worker takes new connections, the old one finishes its streams
        and exits (docs/traffic.md; tests/traffic/test_haproxy_e2e.py)."""
        self.command("reload")

    def workers(self) -> tuple[list[int], list[int]]:
        """(current worker pids, old workers still finishing streams) from ``show proc``."""
        current: list[int] = []
        old: list[int] = []
        section = None
        for line in self.command("show proc").splitlines():
            if line.startswith("#"):
                section = line.strip("# ").strip()
                continue
            fields = line.split()
            if len(fields) < 2 or not fields[0].isdigit():
                continue
            if fields[1] == "worker":
                (old if section == "old workers" else current).append(int(fields[0]))
        return current, old
