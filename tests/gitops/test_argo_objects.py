"""Argo CD and Argo Workflows objects: strict validation against the vendored CRDs, their shape,
the Config Management Plugin's generate command run for real, and the workflow's promotion script
run for real against a bare Git remote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gitops_support import EXAMPLE, Workspace, cli, git, rendered_and_pushed

from dgdgen import crd, resources, yamlio
from dgdgen.gitops import argo_files, argocd
from dgdgen.pipeline.prepare import prepare


def _load(path: Path) -> dict[str, Any]:
    return yamlio.load_file(str(path))[0].data  # type: ignore[no-any-return]


def _spec_with(tmp_path: Path, gitops: str) -> Path:
    d = tmp_path / "spec"
    d.mkdir()
    shutil.copy(EXAMPLE / "dgd.yaml", d / "dgd.yaml")
    text = (EXAMPLE / "rollout.yaml").read_text()
    # the example's own analysis and gitops sections are replaced by the test's
    text = text[: text.index("  analysis:")] + gitops
    (d / "rollout.yaml").write_text(text)
    return d / "rollout.yaml"


def test_argo_command_writes_valid_objects(tmp_path: Path) -> None:
    out = tmp_path / "argo"
    r = cli("argo", str(EXAMPLE / "rollout.yaml"), "-o", str(out))
    assert r.code == 0, r.err
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert names == [
        "application-qwen-router.yaml", "argocd-cm-patch.yaml", "argocd-rbac-cm-patch.yaml",
        "role-inference-dgdgen-rollout.yaml", "rolebinding-inference-dgdgen-rollout.yaml",
        "serviceaccount-dgdgen-rollout.yaml", "workflowtemplate-qwen-router-rollout.yaml",
    ]
    assert "default promotion image, which no registry publishes" in r.err
    for name in names:
        obj = _load(out / name)
        assert crd.known(obj["apiVersion"], obj["kind"]), name
        assert crd.validate(obj) == [], name
    app = _load(out / "application-qwen-router.yaml")
    assert app["spec"]["source"] == {
        "repoURL": "https://github.com/example-org/inference-deploy.git",
        "targetRevision": "main", "path": "deploy/qwen-router", "directory": {"recurse": False},
    }
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert app["spec"]["destination"]["namespace"] == "inference"
    # deterministic
    again = tmp_path / "again"
    assert cli("argo", str(EXAMPLE / "rollout.yaml"), "-o", str(again)).code == 0
    for name in names:
        assert (out / name).read_bytes() == (again / name).read_bytes()


def test_application_set_and_project(tmp_path: Path) -> None:
    spec = _spec_with(tmp_path, """  gitops:
    repoUrl: https://git.example.com/deploy.git
    path: deploy/qwen
    branch: release
    project: inference
    appProject: true
    clusters:
      - {name: us-east, server: https://10.0.0.1:6443}
      - {name: eu-west, server: https://10.0.1.1:6443, namespace: llm}
""")
    p = prepare(str(spec))
    objs = argo_files.objects(p, workflow=False)
    kinds = [o["kind"] for o in objs]
    assert kinds == ["ApplicationSet", "AppProject"]
    for o in objs:
        assert crd.validate(o) == [], o["kind"]
    appset = objs[0]
    assert appset["spec"]["generators"][0]["list"]["elements"] == [
        {"cluster": "us-east", "namespace": "inference", "server": "https://10.0.0.1:6443"},
        {"cluster": "eu-west", "namespace": "llm", "server": "https://10.0.1.1:6443"},
    ]
    tmpl = appset["spec"]["template"]
    assert tmpl["spec"]["destination"] == {"server": "{{.server}}", "namespace": "{{.namespace}}"}
    assert tmpl["spec"]["source"]["targetRevision"] == "release"
    assert tmpl["spec"]["project"] == "inference"
    proj = objs[1]
    assert proj["spec"]["sourceRepos"] == ["https://git.example.com/deploy.git"]
    assert {"server": "https://10.0.1.1:6443", "namespace": "llm"} in proj["spec"]["destinations"]


def test_missing_repo_url_is_a_located_input_error(tmp_path: Path) -> None:
    spec = _spec_with(tmp_path, "")
    r = cli("argo", str(spec), "-o", str(tmp_path / "out"))
    assert r.code == 2
    assert "rollout.yaml:" in r.err and "spec.gitops.repoUrl" in r.err
    assert not (tmp_path / "out").exists()


def test_workflow_template_shape() -> None:
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import WAIT_SCRIPT, workflow_template

    p = prepare(str(EXAMPLE / "rollout.yaml"))
    wt = workflow_template(p)
    assert crd.validate(wt) == []
    spec = wt["spec"]
    assert spec["entrypoint"] == "rollout" and spec["onExit"] == "on-exit"
    templates = {t["name"]: t for t in spec["templates"]}
    steps = [s[0]["name"] for s in templates["rollout"]["steps"]]
    # the example gates steps 1 and 2 (analysis on, no hooks): the workflow creates their runs
    # ... and records each gate as passed before the next promotion (which refuses otherwise)
    assert steps == [
        "step-1-promote", "step-1-synced", "step-1-analysis-0", "step-1-gate", "step-1-bake",
        "step-2-promote", "step-2-synced", "step-2-analysis-0", "step-2-gate", "step-2-bake",
        "step-3-promote", "step-3-synced",
        "cleanup", "cleanup-synced",
    ]
    # waiting is a container asking the Argo CD API, not a patch of the Application
    assert "resource" not in templates["wait-synced"]
    assert templates["wait-synced"]["container"]["args"][0] == WAIT_SCRIPT
    exit_steps = [s[0] for s in templates["on-exit"]["steps"]]
    # the rollback path from the last step: rollback-02, rollback — one commit each, each
    # Synced before the next
    assert [s["name"] for s in exit_steps] == [
        "rollback", "rollback-synced", "rollback-2", "rollback-2-synced"]
    assert {"name": "revision", "value": "{{steps.rollback-2.outputs.parameters.commit}}"} in \
        exit_steps[3]["arguments"]["parameters"]
    assert all(s["when"] == "{{workflow.status}} != Succeeded" for s in exit_steps)
    assert exit_steps[0]["arguments"]["parameters"][0] == {"name": "action", "value": "rollback"}
    assert {"name": "revision", "value": "{{steps.rollback.outputs.parameters.commit}}"} in \
        exit_steps[1]["arguments"]["parameters"]


def test_workflow_creates_each_gated_steps_analysis_run(tmp_path: Path) -> None:
    """With analysis on, every gated step gets a create-and-wait AnalysisRun step whose manifest
    is the analysis renderer's run with generateName (keyed on kind)."""
    pytest.importorskip("hera")
    from dgdgen.gitops.workflow import workflow_template

    spec = _spec_with(tmp_path, """  analysis:
    enabled: true
    prometheus: http://prometheus.monitoring:9090
    slos: {ttftP95Seconds: 2.0, errorRate: 0.01}
  gitops:
    repoUrl: https://git.example.com/deploy.git
""")
    p = prepare(str(spec))
    wt = workflow_template(p)
    assert crd.validate(wt) == []
    templates = {t["name"]: t for t in wt["spec"]["templates"]}
    runs = {n: t for n, t in templates.items() if n.startswith("analysis-step-")}
    assert sorted(runs) == ["analysis-step-1-0", "analysis-step-2-0"]
    for t in runs.values():
        res = t["resource"]
        assert res["action"] == "create"
        assert res["successCondition"] == "status.phase == Successful"
        assert res["failureCondition"] == "status.phase in (Failed,Error,Inconclusive)"
        run = yamlio.load_documents(res["manifest"], "<manifest>")[0].data
        assert run["kind"] == "AnalysisRun" and "name" not in run["metadata"]
        assert run["metadata"]["generateName"].endswith("-")
        assert crd.validate(run) == []


def test_cmp_plugin_generate_command(ws: Workspace, tmp_path: Path) -> None:
    """Run plugin.yaml's generate command as argocd-cmp-server would: in the Application's path,
    with the ARGOCD_ENV_ variables the Application sets. Its stream is the recorded step."""
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    plugin = yamlio.load_documents(resources.read_text("argo", "plugin.yaml"), "plugin.yaml")
    gen = plugin[0].data["spec"]["generate"]
    p = prepare(spec)
    app = argocd.application(p, plugin=True)
    env_from_app = {e["name"]: e["value"] for e in app["spec"]["source"]["plugin"]["env"]}
    assert app["spec"]["source"]["path"] == "rollouts/qwen"
    bindir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    env.update({f"ARGOCD_ENV_{k}": v for k, v in env_from_app.items()})
    r = subprocess.run([*gen["command"], *gen["args"]], cwd=ws.work / app["spec"]["source"]["path"],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    docs = [d.data for d in yamlio.load_documents(r.stdout, "<cmp>")]
    on_disk = {f.name: _load(f) for f in ws.into.glob("*.yaml")}
    assert sorted(docs, key=lambda d: (d["kind"], d["metadata"]["name"])) == sorted(
        on_disk.values(), key=lambda d: (d["kind"], d["metadata"]["name"]))


def test_repo_server_patch_mounts_the_plugin() -> None:
    p = prepare(str(EXAMPLE / "rollout.yaml"))
    patch = yamlio.load_documents(argocd.repo_server_patch(p), "patch")[0].data
    c = patch["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == p.loaded.spec.spec.gitops.workflow.image
    assert c["command"] == ["/var/run/argocd/argocd-cmp-server"]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/home/argocd/cmp-server/config/plugin.yaml"]["subPath"] == "plugin.yaml"
    vols = {v["name"]: v for v in patch["spec"]["template"]["spec"]["volumes"]}
    assert vols["dgdgen-cmp-plugin"]["configMap"]["name"] == \
        argocd.plugin_configmap(p)["metadata"]["name"]
    # merged into a minimal argocd-repo-server Deployment, it is a valid Deployment
    base = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "argocd-repo-server", "namespace": "argocd"},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "argocd-repo-server"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "argocd-repo-server"}},
                "spec": {
                    "containers": [{"name": "argocd-repo-server",
                                    "image": "quay.io/argoproj/argocd:v3.5.1"}],
                    "volumes": [{"name": "var-files", "emptyDir": {}},
                                {"name": "plugins", "emptyDir": {}}],
                },
            },
        },
    }
    pod = base["spec"]["template"]["spec"]  # type: ignore[index]
    pod["containers"] += patch["spec"]["template"]["spec"]["containers"]
    pod["volumes"] += patch["spec"]["template"]["spec"]["volumes"]
    if not crd.known("apps/v1", "Deployment"):
        pytest.skip("kubernetes-validate is not installed")
    assert crd.validate(base) == []


def test_workflow_promotion_script_against_a_bare_remote(ws: Workspace, tmp_path: Path) -> None:
    """The container script of the WorkflowTemplate, run by sh with real git: clone, promote,
    push; idempotent on retry; rollback on exit."""
    from dgdgen.gitops.workflow import PROMOTE_SCRIPT

    _, _, bindir, home = rendered_and_pushed(ws, tmp_path)

    def run(action: str, to: str = "0") -> str:
        clone = tmp_path / f"clone-{action}-{to}-{len(list(tmp_path.iterdir()))}"
        commit_file = tmp_path / "commit"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
        env.update({
            "PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(home),
            "ACTION": action, "TO": to, "REPO": str(ws.remote), "BRANCH": "main",
            "SPEC": "rollouts/qwen/rollout.yaml", "INTO": "deploy/qwen-router",
            "CLONE": str(clone), "COMMIT_FILE": str(commit_file),
        })
        r = subprocess.run(["sh", "-c", PROMOTE_SCRIPT], env=env, capture_output=True,
                           text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        return commit_file.read_text().strip()

    c1 = run("promote", "1")
    remote_head = git(ws.remote, "rev-parse", "main").strip()
    assert c1 == remote_head
    assert git(ws.remote, "log", "-1", "--format=%s", "main").strip() == \
        "qwen-router: promote to step 1 (bs32 at 25%)"
    assert run("promote", "1") == c1  # a retried pod: nothing new, same commit
    run("rollback")
    assert git(ws.remote, "log", "-1", "--format=%s", "main").strip() == \
        "qwen-router: roll back to bs16 (from step 1)"
    head = git(ws.remote, "rev-parse", "main").strip()
    run("rollback")  # the exit handler after a rollback: no second commit
    assert git(ws.remote, "rev-parse", "main").strip() == head
    index = json.loads(git(ws.remote, "show", "main:deploy/qwen-router/.dgdgen-index"))
    assert index["step"] == "rollback"
