"""Render into a real Git repository, promote through every step, roll back, clean up: one commit
per action, exact file contents, refusals that leave HEAD and the tree alone, pushes to a bare
remote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git

INDEX = ".dgdgen-index"


def _manifests(files: dict[str, str]) -> dict[str, str]:
    """The deployed manifests: without the index, and without dgdgen's drain hook Jobs (Argo CD
    runs and deletes them; they are not part of any generation)."""
    return {k: v for k, v in files.items() if k != INDEX and "-drain-" not in k}


@pytest.fixture(scope="module")
def all_states(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    """`dgdgen render -o` of every state: what each promotion commit must hold."""
    from gitops_support import EXAMPLE

    out = tmp_path_factory.mktemp("all")
    assert cli("render", str(EXAMPLE / "rollout.yaml"), "-o", str(out)).code == 0
    states: dict[str, dict[str, str]] = {}
    for d in sorted(p for p in out.iterdir() if p.is_dir()):
        states[d.name] = _manifests({f.name: f.read_text() for f in sorted(d.iterdir())})
    return states


def test_promote_through_every_step_and_clean_up(
    ws: Workspace, all_states: dict[str, dict[str, str]]
) -> None:
    spec, into = str(ws.spec), str(ws.into)
    r = cli("render", spec, "--into", into, "--commit")
    assert r.code == 0, r.err
    assert _manifests(ws.files()) == all_states["step-00"]
    commits = {"step-00": ws.head()}
    for n in (1, 2, 3):
        if n > 1:  # the gate of the step being left
            r = cli("gate", spec, "--into", into, "--result", "passed", "--push")
            assert r.code == 0, r.err
        r = cli("promote", spec, "--into", into, "--push")
        assert r.code == 0, r.err
        assert f"promote to step {n}" in r.out
        label = f"step-{n:02d}"
        # plan-order promotion: byte-identical to the `-o` render of the same step
        assert _manifests(ws.files()) == all_states[label]
        commits[label] = ws.head()
    r = cli("gate", spec, "--into", into, "--result", "passed")
    assert r.code == 2 and "no gate" in r.err  # the last step has none in this spec
    r = cli("cleanup", spec, "--into", into, "--push")
    assert r.code == 0, r.err
    assert _manifests(ws.files()) == all_states["cleanup"]
    assert not (ws.into / "dynamographdeployment-vllm-v1-disagg-router.yaml").exists()

    assert ws.log() == [
        "qwen-router: clean up: remove bs16 (bs32 at 100%)",
        "qwen-router: promote to step 3 (bs32 at 100%)",
        "qwen-router: gate slo of step 2: passed",
        "qwen-router: promote to step 2 (bs32 at 50%)",
        "qwen-router: gate slo of step 1: passed",
        "qwen-router: promote to step 1 (bs32 at 25%)",
        "qwen-router: render step 0 (baseline)",
        "rollout spec",
    ]
    # each action is one commit touching only the rendered directory
    for rev in ("HEAD", "HEAD~1", "HEAD~2", "HEAD~3"):
        changed = git(ws.work, "diff", "--name-only", f"{rev}~1", rev).splitlines()
        assert changed and all(c.startswith("deploy/qwen-router/") for c in changed)
    # the bare remote has every pushed commit
    assert git(ws.remote, "rev-parse", "main").strip() == ws.head()
    body = git(ws.work, "log", "-1", "--format=%B", commits["step-02"])
    assert "traffic: bs16 50% / bs32 50%" in body and "Dgdgen-Step: step-02" in body
    index = json.loads((ws.into / INDEX).read_text())
    assert index["step"] == "cleanup" and index["previous"] == "step-03"
    assert set(index["gates"]) == {"step-01", "step-02"}


def test_rollback_is_byte_identical_to_the_baseline(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    baseline = ws.files()
    assert cli("promote", spec, "--into", into).code == 0
    assert cli("gate", spec, "--into", into, "--result", "passed").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    assert cli("gate", spec, "--into", into, "--result", "passed").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    assert any("bs32" in name for name in ws.files())
    # one state per commit: from step 3 the surge budget forces a stop at step 2's replicas
    # (the plan's rollback path), so every transition stays within the budget
    r = cli("rollback", spec, "--into", into, "--push")
    assert r.code == 0, r.err
    assert ws.log()[0] == ("qwen-router: roll back towards bs16: rollback-02, step 2's replicas "
                           "(from step 3)")
    assert "rollback continues" in git(ws.work, "log", "-1", "--format=%B")
    r = cli("promote", spec, "--into", into)
    assert r.code == 2 and "a rollback is in progress" in r.err
    r = cli("rollback", spec, "--into", into, "--push")
    assert r.code == 0, r.err
    assert ws.log()[0] == "qwen-router: roll back to bs16 (from rollback-02)"
    after = ws.files()
    assert _manifests(after) == _manifests(baseline)
    # bytes on disk, not just in Git
    for name, text in _manifests(baseline).items():
        assert (ws.into / name).read_bytes() == text.encode()
    # the same files, plus the drain hook of the candidate this commit removes (with the
    # account it reads EndpointSlices with)
    extra = sorted({p.name for p in ws.into.iterdir()} - set(baseline))
    assert extra == ["job-qwen-router-drain-bs32.yaml", "role-qwen-router-drain-reader.yaml",
                     "rolebinding-qwen-router-drain-reader.yaml",
                     "serviceaccount-qwen-router-drain-reader.yaml"], extra
    assert set(baseline) <= {p.name for p in ws.into.iterdir()}
    # finished: no further moves
    assert cli("promote", spec, "--into", into).code == 2
    assert cli("rollback", spec, "--into", into).code == 2


def test_refusals_change_nothing(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    head, files = ws.head(), ws.files()

    def unchanged() -> None:
        assert ws.head() == head
        assert ws.files() == files
        assert {p.name for p in ws.into.iterdir()} == set(files)

    r = cli("promote", spec, "--into", into, "--to", "9")
    assert r.code == 2 and "no step 9" in r.err
    unchanged()
    r = cli("promote", spec, "--into", into, "--to", "1")
    assert r.code == 2 and "only moves forward" in r.err
    unchanged()
    r = cli("cleanup", spec, "--into", into)
    assert r.code == 2 and "100%" in r.err
    unchanged()
    (ws.work / "notes.txt").write_text("uncommitted\n")
    r = cli("promote", spec, "--into", into)
    assert r.code == 2 and "uncommitted changes (notes.txt)" in r.err
    unchanged()
    (ws.work / "notes.txt").unlink()
    assert cli("gate", spec, "--into", into, "--result", "failed", "--message", "ttft p95 2.4s"
               ).code == 0
    head, files = ws.head(), ws.files()
    r = cli("promote", spec, "--into", into)
    assert r.code == 1 and "recorded as failed (ttft p95 2.4s)" in r.err
    unchanged()
    r = cli("gate", spec, "--into", into, "--result", "passed", "--step", "2")
    assert r.code == 2 and "current step" in r.err
    unchanged()
    st = cli("status", spec, "--into", into)
    assert st.code == 0 and "slo: failed (ttft p95 2.4s)" in st.out
    # a failed gate never blocks the way back
    assert cli("rollback", spec, "--into", into).code == 0


def test_jump_uses_the_real_transition_for_waves(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    head = ws.head()
    r = cli("promote", spec, "--into", into, "--to", "3")
    assert r.code == 1 and "jumps over gate 'slo' of step 1, gate 'slo' of step 2" in r.err
    assert ws.head() == head
    assert cli("promote", spec, "--into", into, "--to", "3", "--skip-gate", "--reason",
               "hotfix, INC-7").code == 0
    body = git(ws.work, "log", "-1", "--format=%B")
    assert "skipped gates: slo of step 1, slo of step 2: hotfix, INC-7" in body
    trailers = git(ws.work, "log", "-1", "--format=%(trailers:key=Dgdgen-Skip-Gate,valueonly)")
    assert trailers.split("\n")[:2] == ["slo of step 1 (jumped over): hotfix, INC-7",
                                         "slo of step 2 (jumped over): hotfix, INC-7"]
    assert json.loads((ws.into / INDEX).read_text())["previous"] == "step-00"
    assert cli("render", spec, "--into", into, "--check").code == 0


def test_status_reports_step_weights_and_next_gate(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    r = cli("status", spec, "--into", into)
    assert r.code == 0, r.err
    assert "step       1 of 3" in r.out
    assert "traffic    stable bs16 75%, candidate bs32 25%" in r.out
    assert "candidate  bs32: fe:1 dec:1 pre:1" in r.out
    assert "gate       slo: not recorded" in r.out
    assert "next       step 2: candidate 50%, after a bake time of 10m, once gate slo passes" \
        in r.out
    j = json.loads(cli("status", spec, "--into", into, "--format", "json").out)
    assert j["step"] == "step-01" and j["candidate"]["weight"] == 25
    assert j["gate"] == {"name": "slo", "result": "not-recorded", "message": ""}
    assert j["next"] == {"step": "step-02", "weight": 50}


def test_check_catches_a_hand_edited_file(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("render", spec, "--into", into, "--check").code == 0
    dgd = ws.into / "dynamographdeployment-vllm-v1-disagg-router.yaml"
    dgd.write_text(dgd.read_text().replace("replicas: 2", "replicas: 7", 1))
    git(ws.work, "commit", "-q", "-am", "hand edit")
    r = cli("render", spec, "--into", into, "--check")
    assert r.code == 1
    assert "--- a/deploy/qwen-router/dynamographdeployment-vllm-v1-disagg-router.yaml" in r.out
    assert "-      replicas: 7" in r.out and "+      replicas: 2" in r.out
    st = cli("status", spec, "--into", into)
    assert st.code == 1 and "drifted" in st.out
    # a deleted owned file is drift too
    dgd.unlink()
    r = cli("render", spec, "--into", into, "--check")
    assert r.code == 1 and "+++ b/deploy/qwen-router/dynamographdeployment" in r.out
    # re-rendering repairs it
    assert cli("render", spec, "--into", into).code == 0
    assert cli("render", spec, "--into", into, "--check").code == 0


def test_files_it_does_not_own_are_left_alone(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    ws.into.mkdir(parents=True)
    (ws.into / "README.md").write_text("hand-written\n")
    (ws.into / "kustomization.yaml").write_text("resources: []\n")
    git(ws.work, "add", "-A")
    git(ws.work, "commit", "-q", "-m", "docs")
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    assert cli("rollback", spec, "--into", into).code == 0
    assert (ws.into / "README.md").read_text() == "hand-written\n"
    assert (ws.into / "kustomization.yaml").read_text() == "resources: []\n"
    # a foreign file in the way is refused, not overwritten
    other = ws.work / "deploy" / "other"
    other.mkdir()
    (other / "service-vllm-v1-disagg-router-fe.yaml").write_text("mine\n")
    r = cli("render", spec, "--into", str(other))
    assert r.code == 2 and "not written by dgdgen" in r.err
    assert (other / "service-vllm-v1-disagg-router-fe.yaml").read_text() == "mine\n"
    assert not (other / INDEX).exists()


def test_init_creates_a_repository(tmp_path: Path) -> None:
    from gitops_support import EXAMPLE

    into = tmp_path / "deploy"
    r = cli("render", str(EXAMPLE / "rollout.yaml"), "--into", str(into), "--init")
    assert r.code == 0, r.err
    assert git(into, "log", "--format=%s").splitlines() == ["qwen-router: render step 0 (baseline)"]
    assert cli("promote", str(EXAMPLE / "rollout.yaml"), "--into", str(into)).code == 0
    assert len(git(into, "log", "--format=%s").splitlines()) == 2


def test_a_changed_spec_is_a_new_rollout(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    ws.spec.write_text(ws.spec.read_text().replace("revision: bs32", "revision: bs64"))
    git(ws.work, "commit", "-q", "-am", "new candidate")
    r = cli("promote", spec, "--into", into)
    assert r.code == 2 and "bs16 → bs32" in r.err and "--step 0 --commit" in r.err
    assert cli("render", spec, "--into", into, "--step", "0", "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    assert ws.log()[0] == "qwen-router: promote to step 1 (bs64 at 25%)"


def test_promote_refuses_a_gate_that_is_not_recorded(ws: Workspace) -> None:
    """A gated step is left only once its gate is recorded as passed; the override is explicit
    and lands in the commit as a trailer."""
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0  # the baseline has no gate
    head, files = ws.head(), ws.files()
    r = cli("promote", spec, "--into", into)
    assert r.code == 1
    assert "gate 'slo' of step 1 is not recorded" in r.err and "--skip-gate" in r.err
    assert r.err.count("\n") == 1
    assert (ws.head(), ws.files()) == (head, files)
    for args, words in ((["--skip-gate"], "needs --reason"),
                        (["--reason", "x"], "only goes with --skip-gate"),
                        (["--skip-gate", "--reason", "  "], "non-empty --reason")):
        r = cli("promote", spec, "--into", into, *args)
        assert r.code == 2 and words in r.err, (args, r.err)
        assert (ws.head(), ws.files()) == (head, files)
    assert cli("gate", spec, "--into", into, "--result", "inconclusive").code == 0
    r = cli("promote", spec, "--into", into)
    assert r.code == 1 and "recorded as inconclusive" in r.err
    r = cli("promote", spec, "--into", into, "--skip-gate", "--reason",
            "no traffic on a Sunday;\nowner approved")
    assert r.code == 0, r.err
    assert "gate slo of step 1: skipped (recorded as inconclusive): no traffic on a Sunday; " \
        "owner approved" in r.out
    trailers = git(ws.work, "log", "-1", "--format=%(trailers:key=Dgdgen-Skip-Gate,valueonly)")
    assert trailers.strip() == "slo of step 1 (inconclusive): no traffic on a Sunday; owner " \
        "approved"
    # a recorded pass needs no override and leaves no trailer
    assert cli("gate", spec, "--into", into, "--result", "passed").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    assert "Dgdgen-Skip-Gate" not in git(ws.work, "log", "-1", "--format=%B")
