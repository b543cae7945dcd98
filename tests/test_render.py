"""Rendering: determinism, rollback identity, names, atomic writes, schema validation."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gen_support import EXAMPLES, REPO, run_cli, without_roll_settings
from dgdgen import crd, yamlio
from dgdgen.model import dgd as dgdmod
from dgdgen.model.generation import edit_args
from dgdgen.pipeline.files import all_files
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.spec import DNS1123_LABEL


def _read_tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_byte_identical_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    spec = str(EXAMPLES[0] / "rollout.yaml")
    trees = []
    for seed in ("0", "1", "12345"):
        out = tmp_path / f"out-{seed}"
        r = run_cli("render", spec, "-o", str(out), env={"PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        trees.append(_read_tree(out))
    assert trees[0] == trees[1] == trees[2]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_rollback_is_byte_identical_to_baseline(example: Path) -> None:
    files = all_files(prepare(str(example / "rollout.yaml")))
    baseline = {k.split("/", 1)[1]: v for k, v in files.items() if k.startswith("step-00/")}
    rollback = {k.split("/", 1)[1]: v for k, v in files.items() if k.startswith("rollback/")}
    # the stable's manifests exactly; beside them at most the drain hook of the candidate the
    # rollback removes (dgdgen's own Job and the account it reads EndpointSlices with). In place
    # the way back is a roll, which keeps the forward roll's surge settings (CLU201): those
    # annotations are the one difference.
    rollback = {k: without_roll_settings(v) for k, v in rollback.items()}
    assert baseline and baseline == {k: v for k, v in rollback.items() if "-drain-" not in k}
    assert all(k.split("-", 1)[0] in ("job", "serviceaccount", "role", "rolebinding")
               for k in set(rollback) - set(baseline))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_names_are_labels_and_prefix_free(example: Path) -> None:
    prepared = prepare(str(example / "rollout.yaml"))
    ns = prepared.loaded.spec.metadata.namespace
    for state in prepared.plan.all_states():
        manifests = render_state(prepared, state)
        dgd_names = {}
        for m in manifests:
            assert DNS1123_LABEL.match(m.name) and len(m.name) <= 63, m.name
            if m.kind == "DynamoGraphDeployment":
                dgd_names[m.name] = m.name
        spaces = {n: dgdmod.dynamo_namespace(ns, n) for n in dgd_names}
        assert dgdmod.prefix_conflicts(spaces) == [], spaces


def test_stable_dgd_keeps_unmodelled_fields_and_workers_untouched() -> None:
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    source = prepared.stable.dgd.doc
    step1 = {m.filename: m.obj for m in render_state(prepared, prepared.plan.steps[1])}
    stable = step1["dynamographdeployment-vllm-v1-disagg-router.yaml"]
    # workers of the running generation: byte-for-byte the same apart from replicas
    for name in ("VllmDecodeWorker", "VllmPrefillWorker"):
        before = dict(source["spec"]["services"][name])
        after = dict(stable["spec"]["services"][name])
        before.pop("replicas"), after.pop("replicas")
        assert before == after
    cand = step1["dynamographdeployment-bs32-vllm-v1-disagg-router.yaml"]
    # the candidate keeps everything the spec does not change (env DYN_ROUTER_MODE etc.)
    assert cand["spec"]["services"]["Frontend"]["envs"] == source["spec"]["services"]["Frontend"]["envs"]
    args = cand["spec"]["services"]["VllmDecodeWorker"]["extraPodSpec"]["mainContainer"]["args"]
    assert args[-2:] == ["--block-size", "32"]


def test_proposed_fields_need_the_overlay() -> None:
    prepared = prepare(str(REPO / "examples/vllm-disagg-v1beta1-worker-group/rollout.yaml"))
    (m,) = [m for m in render_state(prepared, prepared.plan.steps[1]) if m.kind == "DynamoGraphDeployment"]
    assert m.overlays == ("dgd-proposed-rollout-fields",)
    assert crd.validate(m.obj, overlays=m.overlays) == []
    unknown = crd.validate(m.obj)
    assert unknown and any("workerGroupName" in str(v) for v in unknown)


def test_every_rendered_object_is_validated(tmp_path: Path) -> None:
    """A render whose output breaks the CRD fails before anything is written."""
    d = tmp_path / "ex"
    d.mkdir()
    text = (REPO / "examples/vllm-disagg-image-bump/dgd.yaml").read_text()
    (d / "dgd.yaml").write_text(text.replace("      replicas: 1\n", "      replicas: 1\n      minAvailable: 3\n", 1))
    spec = (REPO / "examples/vllm-disagg-image-bump/rollout.yaml").read_text()
    (d / "rollout.yaml").write_text(spec)
    r = run_cli("render", str(d / "rollout.yaml"), "-o", str(d / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "minAvailable" in r.stderr
    assert not (d / "out").exists()


def test_edit_args_forms() -> None:
    words = ["--model", "m", "--block-size=16", "--trust-remote-code", "--tp", "1"]
    assert edit_args(words, {"--block-size": 32}, []) == ["--model", "m", "--block-size=32",
                                                          "--trust-remote-code", "--tp", "1"]
    assert edit_args(words, {"--tp": 2}, ["--trust-remote-code"]) == ["--model", "m",
                                                                      "--block-size=16", "--tp", "2"]
    assert edit_args(words, {"--new": None}, ["--model"])[-1] == "--new"
    assert "--trust-remote-code" not in edit_args(words, {"--trust-remote-code": False}, [])
    assert edit_args(["--x", "-1"], {"--x": 5}, []) == ["--x", "5"]


def test_sh_c_string_is_edited_as_words(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
        "metadata": {"name": "agg"},
        "spec": {"services": {
            "Frontend": {"componentType": "frontend", "extraPodSpec": {"mainContainer": {"image": "i:1"}}},
            "W": {"componentType": "worker", "resources": {"limits": {"gpu": "1"}},
                  "extraPodSpec": {"mainContainer": {
                      "image": "i:1", "command": ["/bin/sh", "-c"],
                      "args": ["python3 -m dynamo.vllm \\\n  --model Qwen/Qwen3-0.6B --block-size 16"]}}}}},
    }
    (tmp_path / "dgd.yaml").write_text(yamlio.dump(doc))
    (tmp_path / "r.yaml").write_text(
        "apiVersion: dgdgen.dev/v1alpha1\nkind: DGDRollout\nmetadata: {name: agg}\nspec:\n"
        "  stable: {dgd: dgd.yaml}\n  candidate:\n    revision: r2\n    components:\n"
        "      W: {args: {set: {--block-size: 32}}}\n  capacity: {maxSurge: 100%}\n")
    prepared = prepare(str(tmp_path / "r.yaml"))
    mc = prepared.candidate.dgd.main_container("W")
    assert mc["args"] == ["python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --block-size 32"]


def test_env_changes(tmp_path: Path) -> None:
    src = REPO / "examples/vllm-disagg-block-size"
    (tmp_path / "dgd.yaml").write_text((src / "dgd.yaml").read_text())
    (tmp_path / "r.yaml").write_text(
        "apiVersion: dgdgen.dev/v1alpha1\nkind: DGDRollout\nmetadata: {name: x}\nspec:\n"
        "  stable: {dgd: dgd.yaml}\n  candidate:\n    revision: r2\n    components:\n"
        "      Frontend: {env: {set: {DYN_ROUTER_MODE: round-robin}}}\n"
        "      VllmDecodeWorker: {env: {set: {DYN_LOG: debug}}}\n")
    prepared = prepare(str(tmp_path / "r.yaml"))
    fe = prepared.candidate.dgd.component_doc("Frontend")
    assert {"name": "DYN_ROUTER_MODE", "value": "round-robin"} in fe["envs"]
    mc = prepared.candidate.dgd.main_container("VllmDecodeWorker")
    assert mc["env"] == [{"name": "DYN_LOG", "value": "debug"}]


def test_failed_render_keeps_previous_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = str(EXAMPLES[0] / "rollout.yaml")
    assert run_cli("render", spec, "-o", str(out)).returncode == 0
    before = _read_tree(out)
    r = run_cli("render", spec, "-o", str(out), "--step", "42")
    assert r.returncode == 2
    assert _read_tree(out) == before


def test_interrupted_render_keeps_previous_tree(tmp_path: Path) -> None:
    """Kill the process while it writes the staging tree: the previous tree is untouched."""
    out = tmp_path / "out"
    spec = str(REPO / "examples/vllm-disagg-block-size/rollout.yaml")
    assert run_cli("render", spec, "-o", str(out), "--step", "1").returncode == 0
    before = _read_tree(out)
    # A child that renders all steps but is SIGKILLed in the middle of writing files.
    code = (
        "import os, signal, builtins\n"
        "from dgdgen import write\n"
        "real_open = builtins.open\n"
        "count = {'n': 0}\n"
        "def slow_open(path, *a, **k):\n"
        "    if '.new-' in str(path):\n"
        "        count['n'] += 1\n"
        "        if count['n'] == 5: os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return real_open(path, *a, **k)\n"
        "write.open = slow_open\n"
        "from dgdgen.cli import main\n"
        f"main(['render', {spec!r}, '-o', {str(out)!r}])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL
    assert _read_tree(out) == before
