"""What the cluster says of a rollout's DGDs: the health Argo CD gives each of them.

``dgdgen status SPEC --live FILE`` reads the DGDs as the API server returns them (``kubectl get
dgd -n NS -o yaml``: a ``List`` or a stream of objects) and runs the health check dgdgen ships
for Argo CD (``argo/dgd-health.lua``) on each of the rollout's DGDs — the same script, in a real
Lua 5.1 (lupa), with the libraries dgdgen's argocd-cm patch opens to it (``useOpenLibs``: the
clock that times an ``insufficient_capacity`` wait). One script decides both, so ``status`` can
never call Healthy what Argo CD calls Degraded: the Ready reasons the release defines
(``updating`` → Progressing, ``insufficient_capacity`` → Degraded after the bounded wait, with
the reason) reach the command line exactly as they reach the sync.

The live file is untrusted input: read through the one YAML loader with its limits, and handed
to Lua as plain tables (no Python object is reachable from the script).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from dgdgen import resources, yamlio
from dgdgen.errors import DgdgenError, InputError, Location
from dgdgen.model.dgd import is_dgd
from dgdgen.plan import PlanStep
from dgdgen.plan.prepared import Prepared

# The environment Argo CD gives a health script when useOpenLibs is set for the kind: the Lua
# standard libraries. The script reads only these (argo/dgd-health.lua, its header).
_ENV = ("pairs", "ipairs", "type", "tostring", "tonumber", "next", "os", "string")


@dataclass(frozen=True)
class LiveHealth:
    """One generation's DGD as the live file shows it."""

    generation: str  # stable | candidate
    name: str
    namespace: str
    expected: bool  # the recorded state has this generation
    status: str  # Healthy | Progressing | Degraded, or Missing (not in the live file)
    message: str

    def to_json(self) -> dict[str, object]:
        return {"generation": self.generation, "name": self.name, "namespace": self.namespace,
                "expected": self.expected, "health": self.status, "message": self.message}


def _objects(data: Any) -> Iterator[Any]:
    """The objects of one document: a ``List`` (what ``kubectl get -o yaml`` prints) or one."""
    if isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"),
                                                                              list):
        yield from data["items"]
    else:
        yield data


def read_live(path: str) -> list[dict[str, Any]]:
    """The DGDs of a live file (other kinds are skipped; a file with none is an error)."""
    found = [obj for doc in yamlio.load_file(path) for obj in _objects(doc.data) if is_dgd(obj)]
    if not found:
        raise InputError("no DynamoGraphDeployment in it (expected the output of `kubectl get "
                         "dgd -n NAMESPACE -o yaml`)", location=Location(path))
    return found


class _Lua:
    """The shipped health script in one Lua 5.1 runtime."""

    def __init__(self) -> None:
        try:
            from lupa import lua51  # type: ignore[import-untyped]
        except ImportError:
            raise DgdgenError(
                "--live runs the Argo CD health check, which needs lupa (a Lua 5.1 runtime): "
                "pip install 'dgdgen[live]'") from None
        self.rt = lua51.LuaRuntime(unpack_returned_tuples=True, register_eval=False,
                                   register_builtins=False)
        env = ", ".join(f"{n} = {n}" for n in _ENV)
        self.run = self.rt.eval(
            "function(src, obj) local f = assert(loadstring(src, 'dgd-health.lua')); "
            f"setfenv(f, {{{env}, obj = obj}}); local hs = f(); "
            "return hs.status, hs.message end")
        self.script = resources.read_text("argo", "dgd-health.lua")

    def health(self, obj: dict[str, Any]) -> tuple[str, str]:
        status, message = self.run(self.script, self.rt.table_from(obj, recursive=True))
        return str(status), str(message)


def health(obj: dict[str, Any]) -> tuple[str, str]:
    """Argo CD's health of one live DGD: (Healthy | Progressing | Degraded, message)."""
    return _Lua().health(obj)


def live_health(prepared: Prepared, state: PlanStep,
                objects: Iterable[dict[str, Any]]) -> list[LiveHealth]:
    """The health of each generation's DGD, as the live objects show it. A generation the
    recorded state has and the live file lacks is Missing; one it no longer has (the stable
    after cleanup, the candidate after a rollback) is shown only when it is still there."""
    namespace = prepared.loaded.spec.metadata.namespace
    live = {(str((o.get("metadata") or {}).get("namespace") or namespace),
             str((o.get("metadata") or {}).get("name") or "")): o
            for o in objects if isinstance(o.get("metadata"), dict)}
    names = {"stable": prepared.stable.dgd.name, "candidate": prepared.candidate_name}
    present = {"stable": state.stable.present, "candidate": state.candidate.present}
    lua: _Lua | None = None
    out: list[LiveHealth] = []
    seen: set[str] = set()
    for gen in ("stable", "candidate"):
        name = names[gen]
        if name in seen:  # one DGD for both generations (worker-group, partition, in-place)
            continue
        seen.add(name)
        obj = live.get((namespace, name))
        if obj is None:
            if present[gen]:
                out.append(LiveHealth(gen, name, namespace, True, "Missing",
                                      "not in the live file: not applied yet, or deleted"))
            continue
        lua = lua or _Lua()
        status, message = lua.health(obj)
        out.append(LiveHealth(gen, name, namespace, present[gen], status, message))
    return out
