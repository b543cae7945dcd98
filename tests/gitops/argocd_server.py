"""A loopback stand-in for the Argo CD API server (Argo CD itself cannot run on these machines):
the endpoints the rollout workflow uses (application, resource, revision metadata, operation),
with Argo CD's paths, query parameters, bearer
authentication, its ``policy.<name>.csv`` RBAC decisions (only the ``p`` lines that name the
account's role; argo-cd ``server/application/application.go``: ``Get`` needs ``get``,
``Sync`` and ``TerminateOperation`` need ``sync``), its "No operation is in progress" answer and
its refusal to start a sync while an operation runs (``SetAppOperation``: "another operation is
already in progress", FailedPrecondition). Each GET of
an Application returns the next of a scripted series of Application documents, so a test plays a
sync operation through its phases."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from http_support import Handler, serving

TOKEN = "test-token"


@dataclass
class Fake:
    project: str
    policy: str  # the argocd-rbac-cm policy.<account>.csv text
    apps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name → series
    runs: dict[tuple[str, str], str] = field(default_factory=dict)  # (app, run) → phase
    running: set[str] = field(default_factory=set)  # apps with an operation in progress
    dates: dict[str, str] = field(default_factory=dict)  # revision → commit date (RFC 3339)
    calls: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    syncs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (app, request body)
    url: str = ""

    def allowed(self, action: str, app: str) -> bool:
        obj = f"{self.project}/{app}"
        for line in self.policy.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if parts[:1] == ["p"] and parts[2:5] == ["applications", action, obj] \
                    and parts[5] == "allow":
                return True
        return False


def _handler(fake: Fake) -> type[Handler]:
    class H(Handler):
        def _send(self, code: int, body: dict[str, Any]) -> None:
            self.reply_json(body, code)

        def _route(self, method: str) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            fake.calls.append((method, url.path, query))
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self._send(401, {"error": "invalid session", "code": 16,
                                 "message": "invalid session: token is invalid"})
                return
            parts = url.path.split("/")
            if parts[:4] != ["", "api", "v1", "applications"] or len(parts) < 5:
                self._send(404, {"message": "not found"})
                return
            app = urllib.parse.unquote(parts[4])
            rest = parts[5:]
            action = "sync" if method in ("DELETE", "POST") else "get"
            if app not in fake.apps or not fake.allowed(action, app):
                # Argo CD answers "permission denied" for apps the caller may not see
                self._send(403, {"code": 7, "message": "permission denied"})
                return
            if method == "GET" and not rest:
                series = fake.apps[app]
                doc = series.pop(0) if len(series) > 1 else series[0]
                self._send(200, doc)
            elif method == "GET" and rest == ["resource"]:
                phase = fake.runs.get((app, query.get("resourceName", "")))
                if phase is None or query.get("kind") != "AnalysisRun":
                    self._send(404, {"code": 5, "message": "not found"})
                    return
                run = {"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisRun",
                       "metadata": {"name": query["resourceName"],
                                    "namespace": query.get("namespace")},
                       "status": {"phase": phase}}
                self._send(200, {"manifest": json.dumps(run)})
            elif method == "GET" and len(rest) == 3 and rest[0] == "revisions" \
                    and rest[2] == "metadata":
                date = fake.dates.get(rest[1])
                if date is None:
                    self._send(404, {"code": 5, "message": "revision not found"})
                    return
                self._send(200, {"author": "dgdgen <dgdgen@localhost>", "date": date,
                                 "message": "a commit"})
            elif method == "DELETE" and rest == ["operation"]:
                if app not in fake.running:
                    self._send(400, {"code": 3, "message": "Unable to terminate operation. No "
                                     "operation is in progress"})
                    return
                fake.running.discard(app)
                self._send(200, {})
            elif method == "POST" and rest == ["sync"]:
                body = self.read_json()
                op = fake.apps[app][0].get("status", {}).get("operationState") or {}
                if op.get("phase") in ("Running", "Terminating"):
                    self._send(400, {"code": 9, "message": "another operation is already in "
                                     "progress"})
                    return
                fake.syncs.append((app, body))
                self._send(200, fake.apps[app][0])
            else:
                self._send(404, {"message": "not found"})

        def do_POST(self) -> None:
            self._route("POST")

        def do_GET(self) -> None:
            self._route("GET")

        def do_DELETE(self) -> None:
            self._route("DELETE")

    return H


@contextmanager
def serve(fake: Fake) -> Iterator[Fake]:
    with serving(_handler(fake)) as url:
        fake.url = url
        yield fake


def app_doc(name: str, revision: str, *, op: str | None, sync: str = "Synced",
            synced_rev: str | None = None, health: str = "Healthy",
            hook: tuple[str, str] | None = None, message: str = "") -> dict[str, Any]:
    """An Application as the API returns it: ``op`` the operation phase at ``revision`` (None:
    no operation of it yet), ``hook`` (run name, hookPhase) a PostSync AnalysisRun result."""
    status: dict[str, Any] = {
        "sync": {"status": sync, "revision": synced_rev or revision},
        "health": {"status": health},
    }
    if op is not None:
        resources = []
        if hook is not None:
            resources.append({"group": "argoproj.io", "version": "v1alpha1",
                              "kind": "AnalysisRun", "namespace": "inference", "name": hook[0],
                              "status": "Synced", "hookType": "PostSync",
                              "hookPhase": hook[1], "syncPhase": "PostSync",
                              "message": message})
        status["operationState"] = {
            "operation": {"sync": {"revision": revision}},
            "phase": op, "message": message,
            "syncResult": {"revision": revision, "resources": resources},
        }
    return {"metadata": {"name": name, "namespace": "argocd"}, "status": status}
