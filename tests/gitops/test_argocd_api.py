"""The workflow's Argo CD client (``python3 -m dgdgen.gitops.argocd_api``), run as a process
against a loopback stand-in of the Argo CD API that enforces the RBAC policy ``dgdgen argo``
renders: waits for the sync *operation* at the commit and the PostSync AnalysisRun's phase;
syncs a cluster wave's Applications at the commit; terminates running operations for a
rollback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from argocd_server import TOKEN, Fake, app_doc, serve
from gitops_support import EXAMPLE

from dgdgen.gitops import argocd
from dgdgen.gitops.argocd_api import verdict
from dgdgen.pipeline.prepare import prepare

REV = "3f6c1e2d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d"
OLD = "0123456789abcdef0123456789abcdef01234567"
RUN = "qwen-router-step-01-slo"


def _policy() -> str:
    return str(argocd.argocd_rbac_cm_patch(prepare(str(EXAMPLE / "rollout.yaml")))["data"]
               ["policy.dgdgen-qwen-router.csv"])


def _run(fake: Fake, *args: str, timeout: str = "20s") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ARGOCD_SERVER=fake.url, ARGOCD_AUTH_TOKEN=TOKEN)
    argv = [sys.executable, "-m", "dgdgen.gitops.argocd_api", *args]
    if args[0] in ("wait", "sync"):
        argv += ["--interval", "0.05s", "--timeout", timeout]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120,
                          check=False)


def test_waits_for_the_operation_at_the_commit_not_just_synced_and_healthy() -> None:
    """Synced + Healthy at the commit is not enough: a PostSync hook keeps the operation Running
    while the app already looks Synced and Healthy (hooks are not part of app health)."""
    fake = Fake("default", _policy(), apps={"qwen-router": [
        app_doc("qwen-router", REV, op=None, synced_rev=OLD),  # the commit not seen yet
        app_doc("qwen-router", REV, op="Running", hook=(RUN, "Running")),
        app_doc("qwen-router", REV, op="Running", hook=(RUN, "Running")),
        app_doc("qwen-router", REV, op="Succeeded", hook=(RUN, "Succeeded")),
    ]}, runs={("qwen-router", RUN): "Successful"})
    with serve(fake):
        r = _run(fake, "wait", "--app", "qwen-router", "--revision", REV,
                 "--analysis-run", RUN, "--namespace", "inference")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "qwen-router: waiting for a sync of 3f6c1e2d9a8b"
    assert "qwen-router: sync of 3f6c1e2d9a8b Running; analysis qwen-router-step-01-slo: Running" \
        in lines
    assert lines[-1].endswith("analysis qwen-router-step-01-slo: Successful")
    gets = [c for c in fake.calls if c[0] == "GET" and c[1] == "/api/v1/applications/qwen-router"]
    assert gets[0][2] == {"refresh": "normal"} and all(c[2] == {} for c in gets[1:])
    assert ("GET", "/api/v1/applications/qwen-router/resource",
            {"namespace": "inference", "resourceName": RUN, "group": "argoproj.io",
             "version": "v1alpha1", "kind": "AnalysisRun"}) in fake.calls


@pytest.mark.parametrize("phase", ["Failed", "Error", "Inconclusive"])
def test_a_failed_error_or_inconclusive_run_fails_the_wait(phase: str) -> None:
    # Argo CD fails the PostSync hook for Degraded (Failed, Error) and Unknown (Inconclusive)
    fake = Fake("default", _policy(), apps={"qwen-router": [
        app_doc("qwen-router", REV, op="Failed", hook=(RUN, "Failed"),
                message="one or more synchronization tasks completed unsuccessfully"),
    ]}, runs={("qwen-router", RUN): phase})
    with serve(fake):
        r = _run(fake, "wait", "--app", "qwen-router", "--revision", REV,
                 "--analysis-run", RUN, "--namespace", "inference")
    assert r.returncode == 1
    assert f"analysis {RUN}: {phase}" in r.stdout


def test_an_inconclusive_run_never_passes_even_if_the_sync_succeeded() -> None:
    app = app_doc("qwen-router", REV, op="Succeeded", hook=(RUN, "Succeeded"))
    v = verdict(app, REV, run_phase="Inconclusive", analysis_run=RUN)
    assert v.done and not v.ok
    assert verdict(app, REV, run_phase=None, analysis_run=RUN).ok  # deleted on success
    # a synced, healthy app whose hook result is missing is not a pass
    bare = app_doc("qwen-router", REV, op="Succeeded")
    v = verdict(bare, REV, run_phase=None, analysis_run=RUN)
    assert v.done and not v.ok


def test_degraded_or_a_failed_sync_fails_and_an_old_revision_waits() -> None:
    assert not verdict(app_doc("a", REV, op="Succeeded", health="Degraded"), REV).ok
    assert verdict(app_doc("a", REV, op="Succeeded", health="Degraded"), REV).done
    v = verdict(app_doc("a", REV, op="Error", message="ComparisonError"), REV)
    assert v.done and not v.ok and "ComparisonError" in v.message
    # Succeeded, but for the previous commit: keep waiting
    v = verdict(app_doc("a", OLD, op="Succeeded"), REV)
    assert not v.done
    # the operation of the commit Succeeded but the app still Progressing (a later wave)
    assert not verdict(app_doc("a", REV, op="Succeeded", health="Progressing"), REV).done
    assert verdict(app_doc("a", REV, op="Succeeded"), REV).ok


def test_waits_on_every_application_in_order_and_stops_at_the_first_failure() -> None:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    assert argocd.app_names(p) == ["qwen-router"]
    apps = ["us-east-qwen-router", "eu-west-qwen-router"]
    policy = "\n".join(f"p, role:x, applications, {a}, default/{n}, allow"
                       for n in apps for a in ("get", "sync"))
    fake = Fake("default", policy, apps={
        apps[0]: [app_doc(apps[0], REV, op="Failed", message="hook failed")],
        apps[1]: [app_doc(apps[1], REV, op="Succeeded")],
    })
    with serve(fake):
        r = _run(fake, "wait", "--app", ",".join(apps), "--revision", REV)
    assert r.returncode == 1 and "us-east-qwen-router: sync of 3f6c1e2d9a8b Failed" in r.stdout
    assert not any(apps[1] in c[1] for c in fake.calls)
    fake.apps[apps[0]] = [app_doc(apps[0], REV, op="Succeeded")]
    fake.calls.clear()
    with serve(fake):
        r = _run(fake, "wait", "--app", ",".join(apps), "--revision", REV)
    assert r.returncode == 0, r.stdout
    order = [c[1].split("/")[4] for c in fake.calls]
    assert order.index(apps[0]) < order.index(apps[1])


def test_the_rendered_policy_allows_get_and_sync_on_this_app_only() -> None:
    """The rendered argocd-rbac-cm policy is what the stand-in enforces: the workflow's calls
    pass; the same token cannot read another Application."""
    fake = Fake("default", _policy(), apps={
        "qwen-router": [app_doc("qwen-router", REV, op="Succeeded")],
        "payments": [app_doc("payments", REV, op="Succeeded")],
    }, running={"qwen-router", "payments"})
    with serve(fake):
        assert _run(fake, "wait", "--app", "qwen-router", "--revision", REV).returncode == 0
        r = _run(fake, "wait", "--app", "payments", "--revision", REV)
        assert r.returncode == 1 and "HTTP 403" in r.stderr
        r = _run(fake, "terminate", "--app", "qwen-router")
        assert r.returncode == 0 and "terminated the running sync operation" in r.stdout
        r = _run(fake, "terminate", "--app", "qwen-router")
        assert r.returncode == 0 and "no operation in progress" in r.stdout
        # refused by RBAC: reported, and the rollback goes ahead (exit 0)
        r = _run(fake, "terminate", "--app", "payments")
        assert r.returncode == 0 and "could not terminate" in r.stderr
    assert "payments" in fake.running


def test_timeout_and_missing_configuration() -> None:
    fake = Fake("default", _policy(), apps={"qwen-router": [
        app_doc("qwen-router", REV, op="Running")]})
    with serve(fake):
        r = _run(fake, "wait", "--app", "qwen-router", "--revision", REV, timeout="0.3s")
    assert r.returncode == 1 and "gave up after 0s" in r.stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARGOCD_")}
    r = subprocess.run([sys.executable, "-m", "dgdgen.gitops.argocd_api", "wait", "--app", "x",
                        "--revision", REV], capture_output=True, text=True, env=env,
                       timeout=60, check=False)
    assert r.returncode == 2 and "ARGOCD_AUTH_TOKEN" in r.stderr


def test_module_runs_without_the_package_extras(tmp_path: Path) -> None:
    """The client is standard library only (it runs in the promotion image, which has no hera):
    importing it pulls in nothing outside the standard library and dgdgen."""
    code = ("import sys, dgdgen.gitops.argocd_api; "
            "mods = {m.split('.')[0] for m in sys.modules}; "
            "print(sorted(m for m in mods if m in ('hera', 'pydantic', 'ruamel', 'yaml')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       check=True, timeout=60)
    assert r.stdout.strip() == "[]"


NEWER = "fedcba9876543210fedcba9876543210fedcba98"


def test_a_commit_pushed_on_top_does_not_hang_the_wait() -> None:
    """Another rollout in the same repository pushes right after ours, and Argo CD syncs that
    newer head (which contains our commit): done. An operation at an older commit — the branch
    not fetched yet, or a targetRevision that is not the branch pushed to — is never taken for
    ours."""
    dates = {OLD: "2026-11-23T01:00:00Z", REV: "2026-11-23T02:00:00Z",
             NEWER: "2026-11-23T02:00:05Z"}
    fake = Fake("default", _policy(), apps={"qwen-router": [
        app_doc("qwen-router", OLD, op="Succeeded"),  # still the old commit: not done
        app_doc("qwen-router", NEWER, op="Running"),
        app_doc("qwen-router", NEWER, op="Succeeded"),
    ]}, dates=dates)
    with serve(fake):
        r = _run(fake, "wait", "--app", "qwen-router", "--revision", REV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[0] == "qwen-router: waiting for a sync of 3f6c1e2d9a8b"
    assert r.stdout.splitlines()[-1] == "qwen-router: synced fedcba987654, Healthy"
    # the old commit alone never ends the wait
    fake = Fake("default", _policy(), apps={"qwen-router": [
        app_doc("qwen-router", OLD, op="Succeeded")]}, dates=dates)
    with serve(fake):
        r = _run(fake, "wait", "--app", "qwen-router", "--revision", REV, timeout="0.5s")
    assert r.returncode == 1 and "gave up" in r.stdout
    # pure: only the revisions the caller established as later count
    assert not verdict(app_doc("a", NEWER, op="Succeeded"), REV).done
    assert verdict(app_doc("a", NEWER, op="Succeeded"), REV, containing=frozenset({NEWER})).ok
    # our own operation, the app now compared with a later commit that did not touch it
    assert verdict(app_doc("a", REV, op="Succeeded", synced_rev=NEWER), REV).ok


def test_nothing_committed_means_nothing_to_wait_for() -> None:
    fake = Fake("default", _policy(), apps={"qwen-router": [
        app_doc("qwen-router", OLD, op="Running")]})
    with serve(fake):
        r = _run(fake, "wait", "--app", "qwen-router", "--revision", "none")
    assert r.returncode == 0 and "nothing to wait for" in r.stdout
    assert fake.calls == []


WAVE = ["us-east-qwen-router", "eu-west-qwen-router"]


def _wave_policy(*apps: str) -> str:
    return "\n".join(f"p, role:x, applications, {a}, default/{n}, allow"
                     for n in apps for a in ("get", "sync"))


def test_sync_posts_each_app_at_the_commit_with_prune_in_order() -> None:
    """What the workflow sends for a cluster wave: one POST .../sync per Application, in the
    order given, the commit as revision, prune on, nothing else (the app's own sync options and
    retry policy apply); the `sync` permission the rendered policy grants is enough."""
    fake = Fake("default", _wave_policy(*WAVE), apps={
        a: [app_doc(a, OLD, op="Succeeded")] for a in WAVE})
    with serve(fake):
        r = _run(fake, "sync", "--app", ",".join(WAVE), "--revision", REV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert fake.syncs == [(a, {"name": a, "revision": REV, "prune": True}) for a in WAVE]
    posts = [(m, path) for m, path, _ in fake.calls if m == "POST"]
    assert posts == [("POST", f"/api/v1/applications/{a}/sync") for a in WAVE]
    assert r.stdout.splitlines() == [f"{a}: sync of 3f6c1e2d9a8b started" for a in WAVE]
    # the rendered policy of a two-cluster spec grants exactly that: get and sync per app
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    assert argocd.argocd_rbac_cm_patch(p)["data"]["policy.dgdgen-qwen-router.csv"].count(
        "applications, sync, default/qwen-router") == 1


@pytest.mark.parametrize("phase", ["Succeeded", "Failed", "Running"])
def test_a_commit_already_synced_or_failed_is_never_synced_again(phase: str) -> None:
    """A retried pod, or a sync whose PostSync analysis failed: the operation at the commit
    stands, no second one is started (a failed gate would otherwise be measured again)."""
    fake = Fake("default", _wave_policy(*WAVE), apps={
        a: [app_doc(a, REV, op=phase)] for a in WAVE})
    with serve(fake):
        r = _run(fake, "sync", "--app", ",".join(WAVE), "--revision", REV)
    assert r.returncode == 0, r.stderr
    assert fake.syncs == []
    assert f"us-east-qwen-router: the sync of 3f6c1e2d9a8b is {phase} already" in r.stdout


def test_sync_waits_for_an_operation_at_another_commit_and_gives_up_in_time() -> None:
    """The rollback's sync after a terminate: the old operation is still Terminating, and Argo
    CD refuses a second one ("another operation is already in progress"): wait, then sync."""
    app = WAVE[0]
    fake = Fake("default", _wave_policy(app), apps={app: [
        app_doc(app, OLD, op="Succeeded"),   # looks idle ...
        app_doc(app, OLD, op="Terminating"),  # ... but the POST meets a running operation
        app_doc(app, OLD, op="Failed"),
    ]})
    with serve(fake):
        r = _run(fake, "sync", "--app", app, "--revision", REV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "another operation is already in progress (retrying)" in r.stdout
    assert "waiting for the Terminating operation at 0123456789ab to end" in r.stdout
    assert fake.syncs == [(app, {"name": app, "revision": REV, "prune": True})]
    fake = Fake("default", _wave_policy(app), apps={app: [app_doc(app, OLD, op="Running")]})
    with serve(fake):
        r = _run(fake, "sync", "--app", app, "--revision", REV, timeout="0.3s")
    assert r.returncode == 1 and "gave up after 0s" in r.stdout and fake.syncs == []


def test_sync_refused_by_rbac_names_the_permissions() -> None:
    app = WAVE[0]
    policy = f"p, role:x, applications, get, default/{app}, allow"  # no sync
    fake = Fake("default", policy, apps={app: [app_doc(app, OLD, op="Succeeded")]})
    with serve(fake):
        r = _run(fake, "sync", "--app", app, "--revision", REV)
    assert r.returncode == 1 and fake.syncs == []
    assert "HTTP 403" in r.stderr and "`applications, sync` on us-east-qwen-router" in r.stderr
    assert "requireOverridePrivilegeForRevisionSync" in r.stderr
    with serve(fake):
        r = _run(fake, "sync", "--app", app, "--revision", "none")
    assert r.returncode == 0 and "nothing to sync" in r.stdout
