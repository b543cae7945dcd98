"""The proxy clients go through: a real HAProxy.

* ``haproxy`` provider: the rendered ``haproxy.cfg`` itself. Only what ties it to a cluster is
  adapted — bind addresses, the socket and state-file folder, the peer address, and each server's
  Service DNS name mapped to the loopback port of the frontend that Service selects — plus one
  observation line (``http-response set-header X-Dgdgen-Generation %s``) so every response names
  the generation that served it. A Service that selects several frontend replicas is played as
  kube-proxy plays it: a loopback port of its own (a ``listen`` section appended to the config)
  that spreads connections over all of them in turn. Weights move the way the chosen path moves
  them: a hitless reload through the master CLI (the Git path: a new ConfigMap rolls the proxy),
  or ``dgdgen traffic set-weights`` on the runtime API first (the fast path) and the reload
  after.
* HTTPRoute providers (``gateway-api``, ``gamma``, ``inference-pool``): there is no Gateway here,
  so an HAProxy stands in for it with the route's backends and weights (smooth weighted round
  robin, no health checks: a Gateway routes by weight alone), each backend's Service spreading
  over its frontend replicas the same way. The report says so.
* ``gamma`` also has callers outside the mesh: no sidecar applies the route for them, they reach
  what the parent Service's selector selects (kube-proxy). The stand-in gives them a listener of
  their own (:attr:`Proxy.parent_port`) over the frontends that selector reaches in each state,
  so a state whose parent Service selects a generation that cannot serve fails their requests.

:func:`adapt_config` is the one loopback adaptation of a rendered ``haproxy.cfg``; the traffic
tests run the rendered config through it too.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from dgdgen.runtime.procs import Proc, free_port, log_tail
from dgdgen.runtime.scratch import note_outside
from dgdgen.traffic.runtime import MasterCli

GENERATION_HEADER = "X-Dgdgen-Generation"
_SERVER = re.compile(r"^(\s*server\s+(\S+)\s+)(\S+?)(:\d+)?(\s.*)?$")
_UNREACHABLE = "127.0.0.1:9"  # nothing listens: the server goes DOWN, as with no endpoints
# HAProxy refuses a UNIX socket path longer than this ("socket path ... too long (max 97)",
# HAProxy 2.6 on Debian 12: sun_path's 108 bytes less its own suffixes).
SOCKET_PATH_MAX = 97


def socket_dir(work: Path) -> Path:
    """Where the admin and master sockets go: ``work/run``, or, when that path would be too long
    for HAProxy (a deep --workdir; pytest's per-user temp folders), a private folder of its own
    under the temp folder (the rehearsal's private one, :mod:`dgdgen.runtime.scratch`), or under
    /tmp when that is deep too — then registered with the rehearsal's folder, which a sweep after
    a SIGKILL removes with it."""
    run = work / "run"
    if len(str(run / "master.sock")) <= SOCKET_PATH_MAX:
        run.mkdir(parents=True, exist_ok=True)
        return run
    base = tempfile.gettempdir()
    if len(base) <= SOCKET_PATH_MAX - 40:
        return Path(tempfile.mkdtemp(prefix="dgdgen-haproxy-", dir=base))
    path = Path(tempfile.mkdtemp(prefix="dgdgen-haproxy-", dir="/tmp"))
    note_outside(path)
    return path


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if os.path.exists("/usr/sbin/haproxy") else None
    )


def adapt_config(rendered: str, *, port: int, stats_port: int, peer_port: int, run_dir: Path,
                 server_address: Callable[[str], str], observe: bool = True) -> str:
    """A rendered ``haproxy.cfg`` on loopback: the two binds, the socket and state-file folder and
    the peer address replaced, each backend server's address (``svc.ns.svc.cluster.local:8000``)
    replaced by ``server_address(address)``; with ``observe``, each backend also names the server
    that answered in the ``X-Dgdgen-Generation`` response header. Nothing else changes."""
    out: list[str] = []
    in_backend = False
    for line in rendered.splitlines():
        stripped = line.strip()
        if stripped == "bind :8000":
            line = line.replace(":8000", f"127.0.0.1:{port}")
        elif stripped == "bind :8404":
            line = line.replace(":8404", f"127.0.0.1:{stats_port}")
        elif stripped.startswith("peer local 127.0.0.1:"):
            line = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{peer_port}", line)
        line = line.replace("/var/run/haproxy/", f"{run_dir}/")
        m = _SERVER.match(line)
        if m and in_backend:
            host = m.group(3) + (m.group(4) or "")
            line = f"{m.group(1)}{server_address(host)}{m.group(5) or ''}"
        if stripped.startswith("backend "):
            in_backend = True
            out.append(line)
            if observe:
                out.append(f"    http-response set-header {GENERATION_HEADER} %s")
            continue
        if stripped and not line.startswith((" ", "\t")) and not stripped.startswith("backend"):
            in_backend = False
        out.append(line)
    return "\n".join(out) + "\n"


class Proxy:
    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / "haproxy"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.run_dir = socket_dir(self.dir)
        self.port = free_port()
        self.stats_port = free_port()
        self.peer_port = free_port()
        self.parent_port = free_port()  # callers outside a GAMMA mesh (the parent Service)
        self.cfg = self.dir / "haproxy.cfg"
        self.popen: subprocess.Popen[bytes] | None = None
        self.reloads = 0
        self.kind = ""  # "rendered" | "stand-in"
        self._service_ports: dict[str, int] = {}
        self._former: set[int] = set()  # the workers that ran before the last reload

    @property
    def admin_socket(self) -> str:
        return str(self.run_dir / "admin.sock")

    @property
    def master_socket(self) -> str:
        return str(self.run_dir / "master.sock")

    # ------------------------------------------------------------------ configs

    def adapt(self, rendered: str, service_ports: Callable[[str], list[int]]) -> str:
        """The rendered config with only its cluster-bound parts replaced (see the module doc);
        ``service_ports`` names the loopback ports of the frontends a Service selects."""
        spread: dict[str, list[int]] = {}

        def address(host: str) -> str:
            service = host.split(".")[0]
            return self._address(service, service_ports(service), spread)

        text = adapt_config(rendered, port=self.port, stats_port=self.stats_port,
                            peer_port=self.peer_port, run_dir=self.run_dir,
                            server_address=address)
        return text + self._services(spread)

    def service_port(self, service: str) -> int | None:
        """The loopback port that plays a Service with several frontend replicas, once a config
        with it was made."""
        return self._service_ports.get(service)

    def _address(self, service: str, ports: list[int], spread: dict[str, list[int]]) -> str:
        if not ports:
            return _UNREACHABLE
        if len(ports) == 1:
            return f"127.0.0.1:{ports[0]}"
        # a port per Service for the whole run: a reload keeps the address of every server
        port = self._service_ports.setdefault(service, free_port())
        spread[service] = sorted(ports)
        return f"127.0.0.1:{port}"

    def _services(self, spread: Mapping[str, list[int]]) -> str:
        """kube-proxy for the Services with several frontend replicas: each connection to the
        Service's port goes to the next replica (in TCP: kube-proxy balances connections, not
        requests). A fresh ``defaults`` section, so none of the rendered HTTP settings apply. A
        replica that stopped before the next config left it refuses the connection, which goes
        to another replica: kube-proxy takes a terminating pod out of the Service first."""
        if not spread:
            return ""
        lines = [
            "",
            "# dgdgen rehearse: each Service with several frontend replicas, as kube-proxy",
            "# spreads its connections over them",
            "defaults",
            "    mode tcp",
            "    timeout connect 5s",
            "    timeout client 30m",
            "    timeout server 30m",
            "    retries 2",
            "    option redispatch 1",
        ]
        for service, ports in sorted(spread.items()):
            lines += ["", f"listen svc-{service}",
                      f"    bind 127.0.0.1:{self._service_ports[service]}",
                      "    balance roundrobin"]
            lines += [f"    server {service}-{i} 127.0.0.1:{p}" for i, p in enumerate(ports)]
        return "\n".join(lines) + "\n"

    def stand_in(self, backends: list[tuple[str, int, list[int]]],
                 parent: list[tuple[str, list[int]]] | None = None,
                 preview: tuple[str, str, list[tuple[str, list[int]]]] | None = None
                 ) -> str:
        """A Gateway stand-in: (server name, weight, loopback ports of the frontends its Service
        selects) per backendRef; with ``parent`` (generation, loopback ports of its frontends the
        GAMMA parent Service selects), the listener of the callers outside the mesh; with
        ``preview`` (header, value, the route's preview rule's backends), its rule: a request
        whose header has the value goes to those backends alone (as the route's header match
        takes precedence over its weighted rule)."""
        spread: dict[str, list[int]] = {}
        lines = [
            "# Stand-in for the Gateway: the HTTPRoute's backends and weights (dgdgen rehearse).",
            "global",
            f"    stats socket {self.admin_socket} mode 600 level admin",
            "    maxconn 4096",
            "defaults",
            "    mode http",
            "    option http-no-delay",
            "    timeout connect 5s",
            "    timeout client 30m",
            "    timeout server 30m",
            "frontend fe_route",
            f"    bind 127.0.0.1:{self.port}",
        ]
        if preview is not None:
            header, value, _ = preview
            lines += [f"    acl preview req.hdr({header}) -m str {value}",
                      "    use_backend be_preview if preview"]
        lines += [
            "    default_backend be_route",
            "backend be_route",
            "    balance roundrobin",
            f"    http-response set-header {GENERATION_HEADER} %s",
        ]
        for name, weight, ports in backends:
            lines.append(f"    server {name} {self._address(name, ports, spread)} weight {weight}")
        if preview is not None:
            lines += ["backend be_preview",
                      "    balance roundrobin",
                      f"    http-response set-header {GENERATION_HEADER} %s"]
            for name, ports in preview[2]:
                lines.append(f"    server {name} {self._address(name, ports, spread)} weight 1")
            if not preview[2]:
                lines.append(f"    server none {_UNREACHABLE}")  # reaches nothing: 503
        if parent is not None:
            # kube-proxy spreads connections evenly over the endpoints the selector reaches; the
            # load opens a connection per request, so per request here
            lines += ["frontend fe_parent",
                      f"    bind 127.0.0.1:{self.parent_port}",
                      "    default_backend be_parent",
                      "backend be_parent",
                      "    balance roundrobin",
                      f"    http-response set-header {GENERATION_HEADER} %s"]
            for name, ports in parent:
                address = self._address(f"parent-{name}", ports, spread)
                lines.append(f"    server {name} {address} weight {max(1, len(ports))}")
            if not parent:
                lines.append(f"    server none {_UNREACHABLE}")  # selects nothing: 503
        return "\n".join(lines) + "\n" + self._services(spread)

    # ------------------------------------------------------------------ process

    def apply(self, config: str) -> bool:
        """Start HAProxy with ``config``, or reload it when the config changed. True if it did."""
        if self.popen is not None and self.cfg.exists() and self.cfg.read_text() == config:
            return False
        tmp = self.dir / "haproxy.cfg.new"
        tmp.write_text(config)
        binary = haproxy_binary() or "haproxy"
        # not -q: with it HAProxy says nothing of why it refuses a config
        check = subprocess.run([binary, "-c", "-f", str(tmp)], capture_output=True, text=True,
                               check=False)
        if check.returncode != 0:
            said = (check.stderr + check.stdout).strip()[-2000:]
            raise RuntimeError(f"haproxy -c refused the adapted config {tmp}:\n{said}")
        os.replace(tmp, self.cfg)
        if self.popen is None:
            self._start(binary)
        else:
            former = self._worker_pids()
            self._reload()
            self.reloads += 1
            self._wait_reloaded(former)
            self._former = former
            self._wait_listening()
        return True

    def drain(self, timeout: float) -> bool:
        """Wait until the workers that ran before the last reload have exited: every connection
        they accepted (under the former config) is done and none reaches them any more. False if
        one still holds a connection after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self._former & self._worker_pids():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _worker_pids(self, timeout: float = 15.0) -> set[int]:
        """The pids of the current and the old workers (still finishing connections)."""
        from dgdgen.errors import DgdgenError

        deadline = time.monotonic() + timeout
        while True:
            try:
                current, old = MasterCli(self.master_socket).workers()
                return set(current) | set(old)
            except DgdgenError as exc:  # the master refuses while it re-executes on a reload
                if time.monotonic() > deadline:
                    raise RuntimeError(f"haproxy master CLI: {exc}") from exc
                time.sleep(0.05)

    def _wait_reloaded(self, former: set[int], timeout: float = 15.0) -> None:
        """Wait until the reload took effect: a worker started on the new config is current.
        HAProxy 2.6's master answers ``reload`` before it re-executes, and until then the former
        workers keep accepting connections under the former config (a Service switch seen
        sending requests to a frontend 0.8 s after the reload returned, on a loaded machine)."""
        from dgdgen.errors import DgdgenError

        deadline = time.monotonic() + timeout
        while True:
            try:
                current, _old = MasterCli(self.master_socket).workers()
            except DgdgenError:  # refused while it re-executes: not yet
                current = []
            if current and not set(current) & former:
                return
            if self.popen is not None and self.popen.poll() is not None:
                raise RuntimeError("haproxy exited: " + self.log_tail())
            if time.monotonic() > deadline:
                raise RuntimeError("haproxy reload did not take effect in "
                                   f"{timeout:.0f} s: " + self.log_tail())
            time.sleep(0.05)

    def _reload(self, timeout: float = 15.0) -> None:
        """A hitless reload through the master CLI. The master re-executes itself on a reload and
        refuses connections meanwhile, so a reload right after another one is retried."""
        from dgdgen.errors import DgdgenError

        deadline = time.monotonic() + timeout
        while True:
            try:
                MasterCli(self.master_socket).reload()
                return
            except DgdgenError as exc:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"haproxy reload failed: {exc}") from exc
                time.sleep(0.2)

    def _start(self, binary: str) -> None:
        log = open(self.dir / "haproxy.log", "ab")  # noqa: SIM115 - owned by the process
        try:
            self.popen = subprocess.Popen(
                [binary, "-W", "-db", "-S", f"{self.master_socket},mode,600", "-f", str(self.cfg)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            log.close()
        self._wait_listening()

    def _wait_listening(self, timeout: float = 15.0) -> None:
        """Wait until HAProxy accepts on its port and its master CLI answers. The master's socket
        file exists before the master listens on it: a `show proc` right after a start that
        only saw the file was refused (as an unprivileged user, on a loaded machine)."""
        from dgdgen.errors import DgdgenError

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 1):
                    pass
                MasterCli(self.master_socket).workers()
                return
            except (OSError, DgdgenError):
                pass
            if self.popen is not None and self.popen.poll() is not None:
                raise RuntimeError("haproxy exited: " + self.log_tail())
            time.sleep(0.05)
        raise RuntimeError("haproxy does not listen: " + self.log_tail())

    def log_tail(self) -> str:
        return log_tail(self.dir / "haproxy.log")

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
        if self.run_dir.parent != self.dir:  # a private socket folder under the temp folder
            shutil.rmtree(self.run_dir, ignore_errors=True)


def route_backends(
    objects: Mapping[tuple[str, str], Mapping[str, Any]],
    frontends_of_service: Callable[[str], list[Proc]],
    frontends_matching: Callable[[Mapping[str, str]], list[Proc]],
) -> list[tuple[str, int, list[Proc]]] | None:
    """The (name, weight, frontends) backends of the tree's HTTPRoute, or None without one."""
    routes = [o for (kind, _), o in sorted(objects.items()) if kind == "HTTPRoute"]
    if not routes:
        return None
    rules = [r for r in (routes[0].get("spec") or {}).get("rules") or [] if not _headers(r)]
    return _rule_backends(rules[0] if rules else {}, objects, frontends_of_service,
                          frontends_matching)


def route_preview(
    objects: Mapping[tuple[str, str], Mapping[str, Any]],
    frontends_of_service: Callable[[str], list[Proc]],
    frontends_matching: Callable[[Mapping[str, str]], list[Proc]],
) -> tuple[str, str, list[tuple[str, int, list[Proc]]]] | None:
    """(header, value, backends) of the tree's HTTPRoute preview rule (its header match,
    ``spec.traffic.preview``), or None without one."""
    routes = [o for (kind, _), o in sorted(objects.items()) if kind == "HTTPRoute"]
    for rule in (routes[0].get("spec") or {}).get("rules") or [] if routes else []:
        headers = _headers(rule)
        if headers:
            return (str(headers[0].get("name")), str(headers[0].get("value")),
                    _rule_backends(rule, objects, frontends_of_service, frontends_matching))
    return None


def _headers(rule: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [h for m in rule.get("matches") or [] for h in m.get("headers") or []]


def _rule_backends(
    rule: Mapping[str, Any], objects: Mapping[tuple[str, str], Mapping[str, Any]],
    frontends_of_service: Callable[[str], list[Proc]],
    frontends_matching: Callable[[Mapping[str, str]], list[Proc]],
) -> list[tuple[str, int, list[Proc]]]:
    out: list[tuple[str, int, list[Proc]]] = []
    for ref in rule.get("backendRefs") or []:
        name = str(ref.get("name"))
        weight = int(ref.get("weight", 1))
        if ref.get("kind") == "InferencePool":
            pool = objects.get(("InferencePool", name)) or {}
            selector = (pool.get("spec") or {}).get("selector") or {}
            labels = selector.get("matchLabels", selector)
            procs = frontends_matching({str(k): str(v) for k, v in labels.items()})
        else:
            procs = frontends_of_service(name)
        out.append((name, weight, list(procs)))
    return out
