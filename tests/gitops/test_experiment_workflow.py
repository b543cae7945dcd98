"""The rollout workflow at an A/B experiment step: it waits for a person (`argo resume`), then
requires the decision `dgdgen experiment --record` recorded to be passed; resuming never passes
an experiment. The container script runs for real against a bare remote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git, rendered_and_pushed

from dgdgen.analysis.experiment import experiment_samples
from dgdgen.pipeline.prepare import prepare

STEP1 = "    - weight: 25\n      pause: 10m\n      gate: slo\n"
EXPERIMENT = "    experiment:\n      metric: rating\n      minimumDetectableEffect: 0.1\n"


def _make_experiment(spec: Path) -> None:
    text = spec.read_text()
    assert STEP1 in text
    text = text.replace(STEP1, "    - weight: 25\n      gate: experiment\n")
    text = text.replace("    expectedRequestRate: 40\n", "    expectedRequestRate: 40\n" + EXPERIMENT)
    spec.write_text(text)


def test_the_workflow_requires_the_recorded_decision(tmp_path: Path) -> None:
    pytest.importorskip("hera")
    import shutil

    from gitops_support import EXAMPLE

    from dgdgen.gitops.workflow import workflow_template

    shutil.copy(EXAMPLE / "dgd.yaml", tmp_path / "dgd.yaml")
    spec = tmp_path / "rollout.yaml"
    spec.write_text((EXAMPLE / "rollout.yaml").read_text())
    _make_experiment(spec)
    wt = workflow_template(prepare(str(spec)))
    steps = [s[0] for s in next(t for t in wt["spec"]["templates"]
                                if t["name"] == "rollout")["steps"]]
    names = [s["name"] for s in steps]
    assert names[:4] == ["step-1-promote", "step-1-synced", "step-1-approve", "step-1-gate"]
    gate = steps[3]
    action = next(p["value"] for p in gate["arguments"]["parameters"] if p["name"] == "action")
    assert action == "require-gate"
    # step 2 keeps its analysis gate
    assert "step-2-analysis-0" in names


def _samples(path: Path, shift: int) -> Path:
    n_s, n_c = experiment_samples(0.1, 0.25)
    lines = [json.dumps({"generation": "stable", "value": i % 4 + 1}) for i in range(n_s)]
    lines += [json.dumps({"generation": "candidate", "value": min(5, max(1, i % 4 + 1 + shift))})
              for i in range(n_c)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_script_refuses_until_the_experiment_passed(ws: Workspace, tmp_path: Path) -> None:
    from dgdgen.gitops.workflow import PROMOTE_SCRIPT

    _make_experiment(ws.spec)
    git(ws.work, "commit", "-q", "-am", "experiment")
    spec, into, bindir, home = rendered_and_pushed(ws, tmp_path)

    def run(action: str, to: str = "0") -> subprocess.CompletedProcess[str]:
        clone = tmp_path / f"clone-{len(list(tmp_path.iterdir()))}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
        env.update({
            "PATH": f"{bindir}:{os.environ['PATH']}", "HOME": str(home),
            "ACTION": action, "TO": to, "MESSAGE": "", "REPO": str(ws.remote),
            "BRANCH": "main", "SPEC": "rollouts/qwen/rollout.yaml",
            "INTO": "deploy/qwen-router", "CLONE": str(clone),
            "COMMIT_FILE": str(tmp_path / "commit"), "APPS": "qwen-router",
        })
        return subprocess.run(["sh", "-c", PROMOTE_SCRIPT], env=env, capture_output=True,
                              text=True, timeout=180, check=False)

    def record(shift: int) -> int:
        git(ws.work, "pull", "-q", "origin", "main")
        r = subprocess.run([sys.executable, "-m", "dgdgen", "experiment", spec, "--samples",
                            str(_samples(tmp_path / f"s{shift}.jsonl", shift)), "--record",
                            into], capture_output=True, text=True, check=False)
        git(ws.work, "push", "-q", "origin", "main")
        return r.returncode

    assert run("promote", "1").returncode == 0
    r = run("require-gate", "1")
    assert r.returncode == 1 and "is not-recorded" in r.stderr, r.stderr
    assert record(-1) == 1  # stable better: recorded as failed
    r = run("require-gate", "1")
    assert r.returncode == 1 and "is failed" in r.stderr, r.stderr
    assert record(1) == 0  # a new decision on new samples: candidate better
    assert run("require-gate", "1").returncode == 0
    assert run("promote", "2").returncode == 0
    trailer = git(ws.remote, "log", "-1", "--format=%(trailers:key=Dgdgen-Experiment,valueonly)",
                  "main")
    assert trailer.startswith("experiment candidate-better"), trailer
    assert cli("status", spec, "--into", into).code == 0
