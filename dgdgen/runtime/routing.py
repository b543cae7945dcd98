"""What a Dynamo frontend routes to, as its ``/v1/models/{model}/ready`` answer and its log tell it:
the workers it lists, and the disaggregated namespaces whose prefill router it has activated.

The 1.6.1 frontend lists a disaggregated namespace with both worker types a few milliseconds (on a
loaded machine, a tenth of a second) before it activates that namespace's prefill router, and
answers 503 "no backend worker available" to a request it routes there in between (docs/rehearse.md,
In place: the operator's roll). Readiness waits for the activation
(:func:`prefill_routers_active`); a report names each such window
(:func:`prefill_router_windows`), where a rolling update exposes its traffic to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol


class FrontendLog(Protocol):
    """A frontend process's log and how far it was read (:class:`dgdgen.runtime.procs.Proc`)."""

    log_path: Path
    log_read: int
    prefill_routers: set[str]  # the namespaces whose prefill router its log showed activated


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def prefill_routers_active(proc: FrontendLog, namespaces: Iterable[str]) -> bool:
    """Whether the frontend ``proc`` has activated the prefill router of every namespace given
    (its log: "Prefill router target activated ... namespace=NS"). The 1.6.1 frontend's
    ``/v1/models/{model}/ready`` counts a disaggregated namespace's prefill and decode workers a
    few milliseconds before that, and a request it routes there in between fails with 503 "no
    backend worker available" (docs/rehearse.md, In place: the operator's roll)."""
    want = set(namespaces)
    if want <= proc.prefill_routers:
        return True
    # only what the log gained since the last look, up to its last whole line: a frontend under
    # load logs every request, and the whole log grows to megabytes in a rehearsal
    try:
        with open(proc.log_path, "rb") as fh:
            fh.seek(proc.log_read)
            new = fh.read()
    except OSError:
        return False
    whole = new[:new.rfind(b"\n") + 1]
    proc.log_read += len(whole)
    for line in _ANSI.sub("", whole.decode("utf-8", "replace")).splitlines():
        if "Prefill router target activated" in line:
            m = re.search(r"\bnamespace=(\S+)", line)
            if m:
                proc.prefill_routers.add(m[1])
    return want <= proc.prefill_routers


def prefill_namespaces(ready: Mapping[str, Any]) -> list[str]:
    """The namespaces of a ``/v1/models/{model}/ready`` answer that have prefill workers."""
    namespaces = ready.get("namespaces")
    if not isinstance(namespaces, dict):
        return []
    return sorted(ns for ns, v in namespaces.items()
                  if isinstance(v, dict) and "prefill" in (v.get("worker_types") or {}))


def count_ready_workers(ready: Mapping[str, Any]) -> int:
    """Workers counted in a ``/v1/models/{model}/ready`` answer, over namespaces and types."""
    total = 0
    namespaces = ready.get("namespaces")
    if not isinstance(namespaces, dict):
        return 0
    for ns in namespaces.values():
        types = ns.get("worker_types") if isinstance(ns, dict) else None
        if isinstance(types, dict):
            for t in types.values():
                if isinstance(t, dict) and isinstance(t.get("workers"), int):
                    total += t["workers"]
    return total


# The frontend's log lines (1.6.1, tracing's default format; the ANSI colours removed):
#   2026-11-29T19:08:20.398056Z  INFO dynamo_llm::discovery::model: Adding worker set to model
#     model=… namespace=["NS","prefill","generate","","prefill"]
#   2026-11-29T19:08:20.522135Z  INFO …: Prefill router target activated model_name=…
#     namespace=NS endpoint_id=NS/prefill/generate
_SET = re.compile(r'^(?P<at>\S+)\s.*\b(?P<what>Adding|Removed) worker set (?:to|from) model\b'
                  r'.*\bnamespace=\["(?P<ns>[^"]+)".*"(?P<kind>prefill|decode)"\]')
_ACTIVATED = re.compile(r"^(?P<at>\S+)\s.*Prefill router target activated\b.*\bnamespace=(?P<ns>\S+)")


def _seconds(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def prefill_router_windows(log_path: Path) -> list[tuple[str, float, float]]:
    """(namespace, from, to), in seconds since the epoch, for each time the frontend whose log
    this is listed a disaggregated namespace with both its prefill and its decode workers before
    it had activated that namespace's prefill router: a request it routed there in between got
    503. A namespace whose last prefill worker went and came back opens a new window."""
    try:
        raw = log_path.read_bytes()
    except OSError:
        return []
    present: dict[str, dict[str, float]] = {}  # namespace → worker type → since
    active: set[str] = set()
    windows = []
    for line in raw.splitlines():
        if b"worker set" not in line and b"Prefill router target activated" not in line:
            continue
        text = _ANSI.sub("", line.decode("utf-8", "replace"))
        m = _SET.match(text)
        if m:
            at = _seconds(m["at"])
            kinds = present.setdefault(m["ns"], {})
            if m["what"] == "Removed":
                kinds.pop(m["kind"], None)
                if m["kind"] == "prefill":
                    active.discard(m["ns"])
            elif at is not None:
                kinds.setdefault(m["kind"], at)
            continue
        m = _ACTIVATED.match(text)
        if m and m["ns"] not in active:
            active.add(m["ns"])
            kinds = present.get(m["ns"], {})
            at = _seconds(m["at"])
            if at is not None and len(kinds) == 2 and max(kinds.values()) <= at:
                windows.append((m["ns"], max(kinds.values()), at))
    return windows
