"""What a platform engineer checks in the Argo objects before applying them: the workflow waits
on every generated Application in a stated order and on the step's analysis, records gates
before promoting, rolls back without waiting on analysis; nobody gets ``patch`` on an
Application; the AppProject allows only what the rollout writes; the containers run restricted;
the cluster domain is a setting."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from argocd_server import TOKEN, Fake, serve
from gitops_support import EXAMPLE, Workspace, cli, git, rendered_and_pushed

from dgdgen import crd, yamlio
from dgdgen.gitops import argo_files, argocd, rbac
from dgdgen.pipeline.prepare import prepare

ANALYSIS = """  analysis:
    enabled: true
    prometheus: http://prometheus.monitoring:9090
    expectedRequestRate: 40
"""


def _spec(tmp_path: Path, analysis: str, gitops: str) -> Path:
    d = tmp_path / "spec"
    d.mkdir(exist_ok=True)
    shutil.copy(EXAMPLE / "dgd.yaml", d / "dgd.yaml")
    text = (EXAMPLE / "rollout.yaml").read_text()
    text = text[: text.index("  analysis:")] + analysis + gitops
    (d / "rollout.yaml").write_text(text)
    return d / "rollout.yaml"


CLUSTERS = """  gitops:
    repoUrl: https://git.example.com/deploy.git
    project: inference
    appProject: true
    clusters:
      - {name: us-east, server: https://10.0.0.1:6443}
      - {name: eu-west, server: https://10.0.1.1:6443, namespace: llm}
      - {name: ap-south}
"""


def _templates(wt: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in wt["spec"]["templates"]}


def _steps(wt: dict[str, Any], name: str = "rollout") -> list[dict[str, Any]]:
    return [s[0] for s in _templates(wt)[name]["steps"]]


def _param(step: dict[str, Any], name: str) -> str:
    return next(str(p["value"]) for p in step["arguments"]["parameters"] if p["name"] == name)


def _group_of(wt: dict[str, Any], template: str = "rollout") -> dict[str, int]:
    """Step name → the index of its step group: a group starts only when the one before it
    ended (Argo Workflows steps), so a lower index is a dependency."""
    return {s["name"]: k for k, g in enumerate(_templates(wt)[template]["steps"]) for s in g}


def test_cluster_waves_move_the_canary_first_each_gated_on_its_own_runs(tmp_path: Path
                                                                        ) -> None:
    """Three clusters, waves by default: us-east is the canary (wave 1), the others wave 2.
    The ApplicationSet does not sync by itself; each promotion commit is synced to wave 1,
    waited on, analysed on us-east's own series, and only then synced to wave 2 — whose sync
    step comes after wave 1's analysis — and the gate is recorded after both waves."""
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import SYNC_SCRIPT, workflow_template

    p = prepare(str(_spec(tmp_path, ANALYSIS, CLUSTERS)))
    apps = ["us-east-qwen-router", "eu-west-qwen-router", "ap-south-qwen-router"]
    assert argocd.waves(p) == [apps[:1], apps[1:]] and argocd.app_names(p) == apps
    appset = argocd.application_set(p)
    assert appset["spec"]["template"]["metadata"]["name"] == "{{.cluster}}-qwen-router"
    policy = appset["spec"]["template"]["spec"]["syncPolicy"]
    assert "automated" not in policy and "ServerSideApply=true" in policy["syncOptions"]
    wt = workflow_template(p)
    assert crd.validate(wt) == []
    templates = _templates(wt)
    assert templates["argocd-sync"]["container"]["args"][0] == SYNC_SCRIPT
    groups = [[s["name"] for s in g] for g in templates["rollout"]["steps"]]
    at = _group_of(wt)
    assert groups[:9] == [
        ["step-1-promote"],
        ["step-1-sync-wave-1"], ["step-1-synced-us-east"], ["step-1-analysis-us-east"],
        ["step-1-sync-wave-2"], ["step-1-synced-eu-west"], ["step-1-synced-ap-south"],
        ["step-1-analysis-eu-west", "step-1-analysis-ap-south"],  # side by side
        ["step-1-gate"],
    ]
    steps = {s["name"]: s for s in _steps(wt)} | {
        s["name"]: s for g in templates["rollout"]["steps"] for s in g}
    for i in (1, 2):
        commit = f"{{{{steps.step-{i}-promote.outputs.parameters.commit}}}}"
        assert _param(steps[f"step-{i}-sync-wave-1"], "apps") == apps[0]
        assert _param(steps[f"step-{i}-sync-wave-2"], "apps") == ",".join(apps[1:])
        assert all(_param(steps[f"step-{i}-{n}"], "revision") == commit for n in (
            "sync-wave-1", "sync-wave-2", "synced-us-east", "synced-eu-west", "synced-ap-south"))
        # wave 2 moves only after wave 1 is synced, Healthy and its AnalysisRun Successful
        assert at[f"step-{i}-synced-us-east"] < at[f"step-{i}-analysis-us-east"] \
            < at[f"step-{i}-sync-wave-2"] < at[f"step-{i}-synced-eu-west"] \
            < at[f"step-{i}-analysis-eu-west"] < at[f"step-{i}-gate"]
    # the ungated last step and the cleanup move in waves too, without analysis
    assert [n for g in groups for n in g if n.startswith(("step-3-", "cleanup"))] == [
        "step-3-promote", "step-3-sync-wave-1", "step-3-synced-us-east", "step-3-sync-wave-2",
        "step-3-synced-eu-west", "step-3-synced-ap-south",
        "cleanup", "cleanup-sync-wave-1", "cleanup-synced-us-east", "cleanup-sync-wave-2",
        "cleanup-synced-eu-west", "cleanup-synced-ap-south"]
    for c in ("us-east", "eu-west", "ap-south"):
        run = yamlio.load_documents(
            templates[f"analysis-step-1-{c}"]["resource"]["manifest"], "run")[0].data
        assert {"name": "cluster", "value": c} in run["spec"]["args"]
        assert all('cluster="{{args.cluster}}"' in m["provider"]["prometheus"]["query"]
                   for m in run["spec"]["metrics"])
    # a failure anywhere rolls every cluster back: one sync of all waves, then each waited on
    exit_steps = [s["name"] for s in _steps(wt, "on-exit")]
    assert exit_steps[:5] == ["rollback", "rollback-sync", "rollback-synced-us-east",
                              "rollback-synced-eu-west", "rollback-synced-ap-south"]
    assert _param(_steps(wt, "on-exit")[1], "apps") == ",".join(apps)
    # the rollback's terminate reaches every Application
    env = {e["name"]: e.get("value") for e in templates["git-action"]["container"]["env"]}
    assert env["APPS"] == ",".join(apps)


def test_explicit_waves_and_a_gate_a_person_judges_per_wave(tmp_path: Path) -> None:
    """`wave:` orders the clusters (ap-south is the canary here, us-east last); a gate without
    analysis waits for a person after each wave before the next one moves."""
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    p = prepare(str(_spec(tmp_path, "", """  gitops:
    repoUrl: https://git.example.com/deploy.git
    clusters:
      - {name: us-east, wave: 3}
      - {name: eu-west, wave: 2}
      - {name: ap-south, wave: 1}
""")))
    assert argocd.waves(p) == [["ap-south-qwen-router"], ["eu-west-qwen-router"],
                               ["us-east-qwen-router"]]
    wt = workflow_template(p)
    names = [n for g in _templates(wt)["rollout"]["steps"] for s in g for n in [s["name"]]
             if n.startswith("step-1-")]
    assert names == [
        "step-1-promote", "step-1-sync-wave-1", "step-1-synced-ap-south",
        "step-1-approve-wave-1", "step-1-sync-wave-2", "step-1-synced-eu-west",
        "step-1-approve-wave-2", "step-1-sync-wave-3", "step-1-synced-us-east",
        "step-1-approve", "step-1-gate", "step-1-bake"]


@pytest.mark.parametrize("clusters", ["", "    clusters: [{name: us-east}]\n"])
def test_zero_or_one_cluster_keeps_automated_sync_and_no_sync_step(tmp_path: Path,
                                                                   clusters: str) -> None:
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    p = prepare(str(_spec(tmp_path, ANALYSIS, PLAIN + clusters)))
    [app] = argocd.objects(p)
    policy = (app["spec"]["template"]["spec"] if clusters else app["spec"])["syncPolicy"]
    assert policy["automated"] == {"prune": True, "selfHeal": True}
    wt = workflow_template(p)
    assert "argocd-sync" not in _templates(wt)
    assert not [n for n in _group_of(wt) if "-sync-" in n or n.endswith("-sync")]


def _rbac_rules(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for o in objs if o["kind"] in ("Role", "ClusterRole") for r in o["rules"]]


@pytest.mark.parametrize("gitops", [CLUSTERS, """  gitops:
    repoUrl: https://git.example.com/deploy.git
"""])
def test_no_patch_on_applications_and_no_empty_resource_names(tmp_path: Path,
                                                               gitops: str) -> None:
    p = prepare(str(_spec(tmp_path, ANALYSIS, gitops)))
    objs = rbac.objects(p)
    for o in objs:
        assert crd.validate(o) == [] or not crd.known(o["apiVersion"], o["kind"]), o["kind"]
        assert o["metadata"]["namespace"] == "inference"  # nothing in Argo CD's namespace
    rules = _rbac_rules(objs)
    assert not [r for r in rules if "applications" in r["resources"]]
    assert all(r.get("resourceNames", ["x"]) != [] for r in rules)
    assert not [r for r in rules if "patch" in r["verbs"] and r["resources"] != [
        "workflowtaskresults"]]
    # the Argo CD side: get + sync on exactly these Applications, by name
    csv = argocd.argocd_rbac_cm_patch(p)["data"]["policy.dgdgen-qwen-router.csv"]
    lines = [ln for ln in csv.splitlines() if ln.startswith("p,")]
    expected = [f"p, role:dgdgen-qwen-router, applications, {a}, {p.loaded.spec.spec.gitops.project}"
                f"/{app}, allow" for app in argocd.app_names(p) for a in ("get", "sync")]
    assert lines == expected
    assert "*" not in csv
    cm = argocd.argocd_cm_patch(p, workflow=True)["data"]
    assert cm["accounts.dgdgen-qwen-router"] == "apiKey"


def test_app_project_allows_only_the_kinds_the_rollout_writes(tmp_path: Path) -> None:
    from dgdgen.pipeline.files import all_files

    p = prepare(str(_spec(tmp_path, ANALYSIS, CLUSTERS)))
    proj = argocd.app_project(p)
    assert crd.validate(proj) == []
    allowed = {(k["group"], k["kind"]) for k in proj["spec"]["namespaceResourceWhitelist"]}
    assert not [k for k in allowed if "*" in k[0] or "*" in k[1]]
    written = set()
    for name, text in all_files(p).items():
        if name.endswith(".yaml"):
            for d in yamlio.load_documents(text, name):
                written.add((str(d.data["apiVersion"]).rpartition("/")[0], d.data["kind"]))
    assert allowed == written
    assert ("nvidia.com", "DynamoGraphDeployment") in allowed and ("", "Service") in allowed
    assert ("", "Secret") not in allowed and proj["spec"]["clusterResourceWhitelist"] == []


HOOKS = ANALYSIS + "    hooks: {enabled: true}\n"
PLAIN = """  gitops:
    repoUrl: https://git.example.com/deploy.git
"""


def test_hooks_the_workflow_waits_for_the_hook_run_and_argocd_never_retries(
        tmp_path: Path) -> None:
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template
    from dgdgen.pipeline.files import state_files

    p = prepare(str(_spec(tmp_path, HOOKS, PLAIN)))
    app = argocd.application(p)
    assert "retry" not in app["spec"]["syncPolicy"]
    wt = workflow_template(p)
    steps = _steps(wt)
    names = [s["name"] for s in steps]
    assert not [n for n in names if "analysis" in n]  # the hook is the run
    for i in (1, 2):
        wait = next(s for s in steps if s["name"] == f"step-{i}-synced")
        run = _param(wait, "run")
        tree = state_files(p, p.plan.steps[i], p.plan.steps[i - 1])
        runs = [d.data for t in tree.values() for d in yamlio.load_documents(t, "x")
                if d.data["kind"] == "AnalysisRun"]
        assert [r["metadata"]["name"] for r in runs] == [run]
        assert runs[0]["metadata"]["annotations"]["argocd.argoproj.io/hook"] == "PostSync"
        assert names.index(f"step-{i}-synced") < names.index(f"step-{i}-gate") < \
            names.index(f"step-{i + 1}-promote")
    # the ungated last step and the rollback wait on no analysis
    assert _param(next(s for s in steps if s["name"] == "step-3-synced"), "run") == ""
    assert all("run" not in [q["name"] for q in s["arguments"]["parameters"]]
               for s in _steps(wt, "on-exit") if s["name"].startswith("rollback-synced"))
    # without hooks Argo CD retries transient failures, each retry on the newest commit
    plain = argocd.application(prepare(str(_spec(tmp_path, ANALYSIS, PLAIN))))
    assert plain["spec"]["syncPolicy"]["retry"]["refresh"] is True
    assert crd.validate(app) == [] and crd.validate(plain) == []


def test_a_gate_without_analysis_waits_for_a_person(tmp_path: Path) -> None:
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    p = prepare(str(_spec(tmp_path, "", PLAIN)))
    names = [s["name"] for s in _steps(workflow_template(p))]
    assert names[:5] == ["step-1-promote", "step-1-synced", "step-1-approve", "step-1-gate",
                         "step-1-bake"]
    assert "suspend" in _templates(workflow_template(p))["approve"]
    with_analysis = workflow_template(prepare(str(_spec(tmp_path, ANALYSIS, PLAIN))))
    assert "approve" not in _templates(with_analysis)


def test_containers_run_restricted_with_resources(tmp_path: Path) -> None:
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    p = prepare(str(_spec(tmp_path, ANALYSIS, PLAIN)))
    wt = workflow_template(p)
    pod = wt["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True and pod["seccompProfile"] == {"type": "RuntimeDefault"}
    containers = [t["container"] for t in wt["spec"]["templates"] if "container" in t]
    assert len(containers) == 2
    for c in containers:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["readOnlyRootFilesystem"] is True and sc["runAsNonRoot"] is True
        assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"]
        assert {m["mountPath"] for m in c["volumeMounts"]} == {"/home/dgdgen", "/tmp"}
    assert {v["name"] for v in wt["spec"]["volumes"]} == {"home", "tmp"}
    assert argo_files.notes(p)  # a tag, not a digest
    pinned = _spec(tmp_path, ANALYSIS, PLAIN + """    workflow:
      image: ghcr.io/example/dgdgen-promote@sha256:""" + "a" * 64 + "\n")
    assert argo_files.notes(prepare(str(pinned))) == []


def test_cluster_domain_is_a_setting(tmp_path: Path) -> None:
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    p = prepare(str(_spec(tmp_path, ANALYSIS, PLAIN + """  clusterDomain: corp.internal
""")))
    text = yamlio.dump(workflow_template(p))
    assert "cluster.local" not in text
    assert "https://argocd-server.argocd.svc.corp.internal" in text
    r = cli("validate", str(_spec(tmp_path, ANALYSIS, PLAIN + """  clusterDomain: Not_A_Domain
""")))
    assert r.code == 2 and "spec.clusterDomain" in r.err


def test_workflow_scripts_gate_and_rollback_for_real(ws: Workspace, tmp_path: Path) -> None:
    """The container script with real git against a bare remote and the Argo CD stand-in:
    the gate action records once (idempotent), the next promotion then passes, and the
    rollback stops the running sync operation before it commits."""
    from dgdgen.gitops.workflow import PROMOTE_SCRIPT

    spec, _, bindir, home = rendered_and_pushed(ws, tmp_path)
    policy = argocd.argocd_rbac_cm_patch(prepare(spec))["data"]["policy.dgdgen-qwen-router.csv"]
    fake = Fake("default", policy, apps={"qwen-router": [{}]}, running={"qwen-router"})

    def run(action: str, to: str = "0", message: str = "") -> subprocess.CompletedProcess[str]:
        clone = tmp_path / f"clone-{len(list(tmp_path.iterdir()))}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
        env.update({
            "PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(home),
            "ACTION": action, "TO": to, "MESSAGE": message, "REPO": str(ws.remote),
            "BRANCH": "main", "SPEC": "rollouts/qwen/rollout.yaml",
            "INTO": "deploy/qwen-router", "CLONE": str(clone),
            "COMMIT_FILE": str(tmp_path / "commit"), "APPS": "qwen-router",
            "ARGOCD_SERVER": fake.url, "ARGOCD_AUTH_TOKEN": TOKEN,
        })
        return subprocess.run(["sh", "-c", PROMOTE_SCRIPT], env=env, capture_output=True,
                              text=True, timeout=180, check=False)

    def subject() -> str:
        return git(ws.remote, "log", "-1", "--format=%s", "main").strip()

    with serve(fake):
        r = run("rollback")  # at the baseline: nothing to roll back, nothing to wait for
        assert r.returncode == 0 and (tmp_path / "commit").read_text().strip() == "none"
        assert run("promote", "1").returncode == 0
        r = run("promote", "2")
        assert r.returncode == 1 and "not recorded" in r.stderr  # the gate comes first
        assert subject() == "qwen-router: promote to step 1 (bs32 at 25%)"
        assert run("gate", "1", "AnalysisRun of step 1 Successful").returncode == 0
        assert subject() == "qwen-router: gate slo of step 1: passed"
        head = git(ws.remote, "rev-parse", "main")
        assert run("gate", "1", "again").returncode == 0  # a retried pod: no second commit
        assert git(ws.remote, "rev-parse", "main") == head
        assert run("gate", "2").returncode == 1  # not the current step
        assert run("promote", "2").returncode == 0
        r = run("rollback")
        assert r.returncode == 0, r.stderr
        assert "qwen-router: terminated the running sync operation" in r.stdout
        # from step 2 the surge budget holds a direct return: one state, all traffic on the
        # stable; the exit handler's next rollback step commits nothing more
        assert subject() == "qwen-router: roll back to bs16 (from step 2)"
        assert run("rollback").returncode == 0
    assert ("DELETE", "/api/v1/applications/qwen-router/operation", {}) in fake.calls
    assert subject() == "qwen-router: roll back to bs16 (from step 2)"
    index = json.loads(git(ws.remote, "show", "main:deploy/qwen-router/.dgdgen-index"))
    assert index["step"] == "rollback"


def test_rollback_by_hand_with_hooks_says_how_to_stop_the_analysis(tmp_path: Path) -> None:
    """A person's rollback is a commit; with PostSync analysis it would wait for the running
    run. The command says how to stop it (the workflow does it itself)."""
    repo = tmp_path / "repo"
    spec = _spec(tmp_path, HOOKS, PLAIN)
    into = str(repo / "deploy")
    assert cli("render", str(spec), "--into", into, "--init", "--commit").code == 0
    assert cli("promote", str(spec), "--into", into).code == 0
    r = cli("rollback", str(spec), "--into", into)
    assert r.code == 0
    assert "note: analysis hooks: a running PostSync AnalysisRun holds Argo CD's sync" in r.err
    assert "`argocd app terminate-op qwen-router`" in r.err
    (tmp_path / "b").mkdir()
    plain = _spec(tmp_path / "b", ANALYSIS, PLAIN)
    into_b = str(tmp_path / "b" / "repo" / "deploy")
    assert cli("render", str(plain), "--into", into_b, "--init", "--commit").code == 0
    assert cli("promote", str(plain), "--into", into_b).code == 0
    assert "terminate-op" not in cli("rollback", str(plain), "--into", into_b).err


def test_promote_by_hand_with_cluster_waves_names_the_syncs_in_wave_order(tmp_path: Path
                                                                          ) -> None:
    """Without the workflow nothing syncs a fan-out's commit: the command says so and names the
    `argocd app sync` commands at the commit, wave by wave, with the canary's gate between;
    a rollback syncs every cluster at once. A single Application that syncs itself: no note."""
    repo = tmp_path / "repo"
    spec = _spec(tmp_path, ANALYSIS, CLUSTERS)
    into = str(repo / "deploy")
    assert cli("render", str(spec), "--into", into, "--init", "--commit").code == 0
    r = cli("promote", str(spec), "--into", into)
    assert r.code == 0, r.err
    sha = git(Path(into), "rev-parse", "HEAD").strip()
    [note] = [ln for ln in r.err.splitlines() if "cluster waves" in ln]
    assert note == (
        "note: cluster waves: Argo CD syncs none of the 3 clusters by itself "
        "(spec.gitops.clusters), so this commit moves no cluster until each wave is synced; "
        "push it, then "
        f"wave 1: `argocd app sync us-east-qwen-router --revision {sha} --prune` and "
        "`argocd app wait us-east-qwen-router --operation --sync --health` and its gate, "
        f"cluster by cluster (`dgdgen analyze {os.path.relpath(spec)} --step 1 --cluster us-east`); "
        "only when a wave passed, "
        f"wave 2: `argocd app sync eu-west-qwen-router ap-south-qwen-router --revision {sha} "
        "--prune` and `argocd app wait eu-west-qwen-router ap-south-qwen-router --operation "
        "--sync --health`")
    r = cli("rollback", str(spec), "--into", into)
    assert r.code == 0, r.err
    sha = git(Path(into), "rev-parse", "HEAD").strip()
    assert (f"`argocd app sync us-east-qwen-router eu-west-qwen-router ap-south-qwen-router "
            f"--revision {sha} --prune`") in r.err
    assert "(every cluster at once: the way back)" in r.err and "wave 1" not in r.err
    (tmp_path / "b").mkdir()
    plain = _spec(tmp_path / "b", ANALYSIS, PLAIN)
    into_b = str(tmp_path / "b" / "repo" / "deploy")
    assert cli("render", str(plain), "--into", into_b, "--init", "--commit").code == 0
    r = cli("promote", str(plain), "--into", into_b)
    assert r.code == 0 and "argocd app sync" not in r.err


def test_hooks_with_a_manual_sync_wait_for_the_postsync_run_of_that_sync(tmp_path: Path
                                                                         ) -> None:
    """`autoSync: false` with analysis hooks: the workflow syncs the one Application at the
    commit and its wait reads the PostSync run that sync carries; the Application keeps no
    retry, and the sync action never re-syncs a commit whose operation failed
    (test_argocd_api)."""
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    p = prepare(str(_spec(tmp_path, HOOKS, PLAIN + "    autoSync: false\n")))
    app = argocd.application(p)
    policy = app["spec"]["syncPolicy"]
    assert "automated" not in policy and "retry" not in policy
    wt = workflow_template(p)
    steps = {s["name"]: s for s in _steps(wt)}
    at = _group_of(wt)
    assert at["step-1-promote"] < at["step-1-sync"] < at["step-1-synced"] < at["step-1-gate"]
    assert _param(steps["step-1-sync"], "apps") == "qwen-router"
    assert _param(steps["step-1-synced"], "run").startswith("qwen-router-step-01-")
