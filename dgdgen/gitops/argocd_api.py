"""What the rollout workflow asks Argo CD, through the Argo CD API server with a token limited to
``applications, get`` and ``applications, sync`` on the rollout's Applications — never ``patch``
on the Application objects, which could rewrite their source and destination.

* **refresh**: ``GET /api/v1/applications/NAME?refresh=normal`` (argo-cd
  ``server/application/application.go: Get`` enforces only ``get``);
* **wait**: poll ``GET /api/v1/applications/NAME`` until the sync *operation* of the commit has
  Succeeded, the app is Synced at that commit and Healthy; with ``analysis.hooks.enabled`` also
  until the step's PostSync AnalysisRun (read through
  ``GET /api/v1/applications/NAME/resource``, also ``get``) is Successful;
* **sync**: ``POST /api/v1/applications/NAME/sync`` with the commit as ``revision`` and
  ``prune: true`` (``Sync`` enforces ``sync``), for Applications that do not sync by themselves:
  cluster waves (``gitops.clusters``) move one wave at a time. The operation takes the app's own
  sync options and retry policy (argo-cd ``server/application/application.go: Sync``), so with
  analysis hooks a failed sync is not retried. A commit whose operation already ran or runs is
  never synced again (a retried pod; a failed gate stays failed); a running operation at another
  commit is waited for;
* **terminate**: ``DELETE /api/v1/applications/NAME/operation`` (``TerminateOperation`` enforces
  ``sync``), so a rollback commit never waits for a running PostSync analysis.

The verdict is a pure function of the Application JSON (:func:`verdict`); the network part is the
standard library only, so the module runs in the promotion image as
``python3 -m dgdgen.gitops.argocd_api``. Exit codes: 0 done, 1 failed (sync failed, Degraded,
analysis Failed / Error / Inconclusive, or the timeout), 2 bad usage or configuration.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# AnalysisRun phases (argo-rollouts v1.9.1 pkg/apis/rollouts/v1alpha1/analysis_types.go):
# Successful passes; these three never do.
RUN_FAILED = ("Failed", "Error", "Inconclusive")
OP_FAILED = ("Failed", "Error")


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class Verdict:
    done: bool  # nothing more to wait for
    ok: bool  # only meaningful when done
    message: str


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _op_revision(op: dict[str, Any]) -> str | None:
    rev = _get(op, "syncResult", "revision") or _get(op, "operation", "sync", "revision")
    return rev if isinstance(rev, str) else None


def _hook_result(op: dict[str, Any], run: str | None) -> dict[str, Any] | None:
    for r in _get(op, "syncResult", "resources") or []:
        if isinstance(r, dict) and r.get("kind") == "AnalysisRun" and r.get("hookType") and (
                run is None or r.get("name") == run):
            return r
    return None


def verdict(app: dict[str, Any], revision: str, *, run_phase: str | None = None,
            analysis_run: str | None = None, containing: frozenset[str] = frozenset()
            ) -> Verdict:
    """Where the Application stands for commit ``revision``: the sync operation that applied it
    (its own, or one at a later commit in ``containing``) must have Succeeded, and the app be
    Synced and Healthy.

    ``analysis_run`` names the step's PostSync AnalysisRun when the runs are hooks, and
    ``run_phase`` is its live ``status.phase`` (None when it could not be read, e.g. deleted by
    ``HookSucceeded``: then the sync result's hook phase stands in for it)."""
    name = _get(app, "metadata", "name") or "?"
    op = _get(app, "status", "operationState")
    sync = _get(app, "status", "sync") or {}
    # The operation that applied the commit: its own, or one at a later commit that contains it
    # (``containing``: another rollout in the same repository pushed on top of ours before Argo CD
    # looked, so Argo CD synced that head; the caller establishes which revisions are later).
    if not isinstance(op, dict) or _op_revision(op) not in (revision, *containing):
        return Verdict(False, False, f"{name}: waiting for a sync of {revision[:12]}")
    revision = str(_op_revision(op))
    phase = op.get("phase")
    hook = _hook_result(op, analysis_run) if analysis_run else None
    if phase in ("Running", "Terminating"):
        extra = ""
        if hook is not None:
            extra = f"; analysis {hook.get('name')}: {hook.get('hookPhase') or 'Pending'}"
        return Verdict(False, False, f"{name}: sync of {revision[:12]} {phase}{extra}")
    if phase in OP_FAILED:
        what = f"{name}: sync of {revision[:12]} {phase}: {op.get('message') or ''}".rstrip(": ")
        if analysis_run is not None and (run_phase in RUN_FAILED or hook is not None):
            shown = run_phase or (hook or {}).get("hookPhase") or "unknown"
            what += f"; analysis {analysis_run}: {shown}"
            if hook is not None and hook.get("message"):
                what += f" ({hook['message']})"
        return Verdict(True, False, what)
    if phase != "Succeeded":
        return Verdict(False, False, f"{name}: sync of {revision[:12]} {phase or 'pending'}")
    health = _get(app, "status", "health", "status")
    if sync.get("status") != "Synced":
        return Verdict(False, False, f"{name}: {sync.get('status') or 'Unknown'} at "
                       f"{str(sync.get('revision') or '?')[:12]}, waiting for {revision[:12]}")
    if health == "Degraded":
        msg = _get(app, "status", "health", "message") or ""
        return Verdict(True, False, f"{name}: Degraded at {revision[:12]} {msg}".rstrip())
    if health != "Healthy":
        return Verdict(False, False, f"{name}: {health or 'Unknown'} at {revision[:12]}")
    if analysis_run is not None:
        shown = run_phase
        if shown is None and hook is not None and hook.get("hookPhase") == "Succeeded":
            shown = "Successful"  # deleted on success (HookSucceeded): the hook result stands
        if shown is None:
            return Verdict(True, False, f"{name}: synced {revision[:12]}, but its analysis "
                           f"{analysis_run} is neither in the sync result nor readable")
        if shown in RUN_FAILED:
            return Verdict(True, False, f"{name}: analysis {analysis_run}: {shown}")
        if shown != "Successful":
            return Verdict(False, False, f"{name}: analysis {analysis_run}: {shown}")
        return Verdict(True, True, f"{name}: synced {revision[:12]}, Healthy, analysis "
                       f"{analysis_run}: Successful")
    return Verdict(True, True, f"{name}: synced {revision[:12]}, Healthy")


# --------------------------------------------------------------------------- the API


class Client:
    def __init__(self, server: str, token: str, *, ca_file: str | None = None,
                 insecure: bool = False, timeout: float = 30) -> None:
        if not server.startswith(("http://", "https://")):
            server = "https://" + server
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout
        ctx = ssl.create_default_context(cafile=ca_file) if ca_file else ssl.create_default_context()
        if insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        self.context = ctx

    def _call(self, method: str, path: str, query: dict[str, str] | None = None,
              body: dict[str, Any] | None = None) -> Any:
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(  # the URL is the configured Argo CD server
                    req, timeout=self.timeout,
                    context=self.context if url.startswith("https:") else None) as resp:
                answer = resp.read()
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace")
            try:
                text = str(json.loads(text).get("message") or text)
            except (ValueError, AttributeError):
                pass
            raise ApiError(exc.code, f"{method} {path}: HTTP {exc.code}: {text.strip()}") from None
        return json.loads(answer) if answer else {}

    def application(self, name: str, *, refresh: bool = False) -> dict[str, Any]:
        q = {"refresh": "normal"} if refresh else None
        app: dict[str, Any] = self._call("GET", f"/api/v1/applications/{_seg(name)}", q)
        return app

    def analysis_run_phase(self, app: str, namespace: str, run: str) -> str | None:
        """The live phase of a resource Argo CD tracks for ``app`` (hooks included)."""
        try:
            res = self._call("GET", f"/api/v1/applications/{_seg(app)}/resource", {
                "namespace": namespace, "resourceName": run, "group": "argoproj.io",
                "version": "v1alpha1", "kind": "AnalysisRun"})
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        manifest = res.get("manifest")
        if not isinstance(manifest, str):
            return None
        phase = _get(json.loads(manifest), "status", "phase")
        return phase if isinstance(phase, str) else "Pending"

    def revision_date(self, app: str, revision: str) -> datetime.datetime | None:
        """The commit date Argo CD's repo server reports for ``revision`` (``get``)."""
        try:
            meta = self._call("GET", f"/api/v1/applications/{_seg(app)}/revisions/"
                              f"{_seg(revision)}/metadata")
        except ApiError as exc:
            if exc.status in (400, 404):
                return None
            raise
        text = str(meta.get("date", "")).replace("Z", "+00:00")
        try:
            return datetime.datetime.fromisoformat(text)
        except ValueError:
            return None

    def sync(self, name: str, revision: str) -> None:
        """Start a sync operation of ``name`` at commit ``revision``, pruning what the commit
        no longer holds (as the automated policy would)."""
        self._call("POST", f"/api/v1/applications/{_seg(name)}/sync",
                   body={"name": name, "revision": revision, "prune": True})

    def terminate(self, name: str) -> bool:
        """Stop the app's running operation. False when none was running."""
        try:
            self._call("DELETE", f"/api/v1/applications/{_seg(name)}/operation")
        except ApiError as exc:
            # "Unable to terminate operation. No operation is in progress" (InvalidArgument)
            if exc.status == 400 and "no operation is in progress" in str(exc).lower():
                return False
            raise
        return True


def _seg(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def wait(client: Client, apps: Sequence[str], revision: str, *, timeout: float,
         interval: float, run: str | None = None, namespace: str | None = None,
         log: Callable[[str], None] = print,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep) -> bool:
    """Wait for every app in ``apps``, in that order; the first failure ends the wait."""
    deadline = clock() + timeout
    for app in apps:
        first, last = True, ""
        later: set[str] = set()  # revisions known to be newer commits than ours
        while True:
            try:
                data = client.application(app, refresh=first)
                first = False
                phase = None
                if run is not None and namespace is not None:
                    phase = client.analysis_run_phase(app, namespace, run)
                _note_later(client, app, data, revision, later)
                v = verdict(data, revision, run_phase=phase, analysis_run=run,
                            containing=frozenset(later))
            except ApiError as exc:
                if exc.status < 500:  # 401/403/404: the token, its policy or the name is wrong
                    raise
                v = Verdict(False, False, f"{app}: {exc} (retrying)")
            except OSError as exc:  # the API server restarting: keep waiting until the deadline
                v = Verdict(False, False, f"{app}: {exc} (retrying)")
            if v.message != last:
                log(v.message)
                last = v.message
            if v.done:
                if not v.ok:
                    return False
                break
            if clock() >= deadline:
                log(f"{app}: gave up after {int(timeout)}s: {v.message}")
                return False
            sleep(interval)
    return True


IN_PROGRESS = "another operation is already in progress"


def sync(client: Client, apps: Sequence[str], revision: str, *, timeout: float,
         interval: float, log: Callable[[str], None] = print,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep) -> bool:
    """Start a sync of every app in ``apps`` at ``revision``, in that order, without waiting for
    the operations to end (``wait`` does). An app whose last operation is at ``revision`` is left
    alone, whatever its phase: a retried pod does not start a second operation, and a failed
    sync (with hooks: a failed gate) is not retried. An operation running at another commit is
    waited for until ``timeout``."""
    deadline = clock() + timeout
    for app in apps:
        last = ""
        while True:
            try:
                data = client.application(app)
                op = _get(data, "status", "operationState")
                phase = op.get("phase") if isinstance(op, dict) else None
                if isinstance(op, dict) and _op_revision(op) == revision:
                    log(f"{app}: the sync of {revision[:12]} is {phase or 'pending'} already")
                    break
                if phase in ("Running", "Terminating"):
                    message = (f"{app}: waiting for the {phase} operation at "
                               f"{str(_op_revision(op) or '?')[:12]} to end")
                else:
                    client.sync(app, revision)
                    log(f"{app}: sync of {revision[:12]} started")
                    break
            except ApiError as exc:
                if exc.status == 403:
                    raise ApiError(exc.status, f"{exc}: the account needs `applications, sync` "
                                   f"on {app} (and `applications, override` where argocd-cm sets "
                                   "application.sync.requireOverridePrivilegeForRevisionSync: "
                                   "'true')") from None
                if exc.status < 500 and IN_PROGRESS not in str(exc).lower():
                    raise
                message = f"{app}: {exc} (retrying)"
            except OSError as exc:  # the API server restarting
                message = f"{app}: {exc} (retrying)"
            if message != last:
                log(message)
                last = message
            if clock() >= deadline:
                log(f"{app}: gave up after {int(timeout)}s: {message}")
                return False
            sleep(interval)
    return True


def _note_later(client: Client, app: str, data: dict[str, Any], revision: str,
                later: set[str]) -> None:
    """When Argo CD synced (and compares with) another commit than ours, find out whether it is
    a later one: its commit date is not before ours. An older one (the branch not yet fetched, a
    targetRevision that is not the branch pushed to) never counts."""
    op = _get(data, "status", "operationState")
    other = _op_revision(op) if isinstance(op, dict) else None
    if other is None or other == revision or other in later:
        return
    if other != _get(data, "status", "sync", "revision"):
        return
    ours, theirs = client.revision_date(app, revision), client.revision_date(app, other)
    if ours is not None and theirs is not None and theirs >= ours:
        later.add(other)


def _seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m dgdgen.gitops.argocd_api", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wait", help="wait for a commit to be synced, Healthy (and analysed)")
    w.add_argument("--app", required=True, help="Application name(s), comma-separated, in order")
    w.add_argument("--revision", required=True,
                   help="the commit id ('none': nothing was committed, nothing to wait for)")
    w.add_argument("--analysis-run", help="the step's PostSync AnalysisRun (hooks)")
    w.add_argument("--namespace", help="namespace of that AnalysisRun")
    w.add_argument("--timeout", default="2h")
    w.add_argument("--interval", default="10s")
    s = sub.add_parser("sync", help="start a sync of each app at the commit, in order")
    s.add_argument("--app", required=True, help="Application name(s), comma-separated, in order")
    s.add_argument("--revision", required=True,
                   help="the commit id ('none': nothing was committed, nothing to sync)")
    s.add_argument("--timeout", default="30m",
                   help="how long to wait for an operation at another commit to end")
    s.add_argument("--interval", default="10s")
    t = sub.add_parser("terminate", help="stop the apps' running sync operations (best effort)")
    t.add_argument("--app", required=True, help="Application name(s), comma-separated")
    args = p.parse_args(argv)

    server = os.environ.get("ARGOCD_SERVER", "")
    token = os.environ.get("ARGOCD_AUTH_TOKEN", "")
    if not server or not token:
        sys.stderr.write("error: ARGOCD_SERVER and ARGOCD_AUTH_TOKEN must be set (the token of "
                         "the rollout's Argo CD account, from its Secret)\n")
        return 2
    client = Client(server, token, ca_file=os.environ.get("ARGOCD_CA_FILE") or None,
                    insecure=os.environ.get("ARGOCD_INSECURE") == "true")
    apps = [a for a in args.app.split(",") if a]
    if args.cmd == "terminate":
        for app in apps:
            try:
                stopped = client.terminate(app)
            except (ApiError, OSError) as exc:
                # best effort: the rollback commit goes ahead; it syncs once the operation ends
                sys.stderr.write(f"{app}: could not terminate the running operation: {exc}\n")
                continue
            print(f"{app}: " + ("terminated the running sync operation" if stopped
                                else "no operation in progress"))
        return 0
    if args.revision == "none":
        print("nothing was committed: nothing to " + ("wait for" if args.cmd == "wait" else "sync"))
        return 0
    if args.cmd == "sync":
        try:
            ok = sync(client, apps, args.revision, timeout=_seconds(args.timeout),
                      interval=_seconds(args.interval), log=lambda m: print(m, flush=True))
        except (ApiError, OSError) as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 1
        return 0 if ok else 1
    if (args.analysis_run is None) != (args.namespace is None):
        sys.stderr.write("error: --analysis-run and --namespace go together\n")
        return 2
    try:
        ok = wait(client, apps, args.revision, timeout=_seconds(args.timeout),
                  interval=_seconds(args.interval), run=args.analysis_run,
                  namespace=args.namespace, log=lambda m: print(m, flush=True))
    except (ApiError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover - the workflow's entry point
    sys.exit(main())
