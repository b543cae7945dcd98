"""The isolation modes that write fields proposed in ai-dynamo/dynamo#15214 (`worker-group`:
`workerGroupName`, `partition`: `partition`) are a named opt-in of the spec
(`spec.dynamo.operatorCapabilities`): without it `validate` and `render` refuse with file, line
and field path; with it the output validates against the upstream CRD plus the proposed-fields
overlay, and the running stable is rendered exactly as it runs (docs/planning.md)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from gen_support import REPO, run_cli

OVERLAY = "dgd-proposed-rollout-fields"
EXAMPLES = {
    "worker-group": ("vllm-disagg-v1beta1-worker-group", "workerGroupName", "dgd-worker-groups"),
    "partition": ("sglang-disagg-v1beta1-partition", "partition", "dgd-partitioned-rollout"),
}


def _copy(tmp_path: Path, mode: str, *, opt_in: bool) -> Path:
    folder, _, _ = EXAMPLES[mode]
    src = REPO / "examples" / folder
    shutil.copy(src / "dgd.yaml", tmp_path / "dgd.yaml")
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    if not opt_in:
        data["spec"].pop("dynamo")
    spec = tmp_path / "rollout.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    return spec


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("mode", sorted(EXAMPLES))
def test_without_the_opt_in_validate_and_render_refuse(tmp_path: Path, mode: str) -> None:
    _, field, capability = EXAMPLES[mode]
    spec = _copy(tmp_path, mode, opt_in=False)
    line = _line_of(spec, f"isolation: {mode}")
    out = tmp_path / "out"
    for args in (("validate", str(spec)), ("render", str(spec), "-o", str(out))):
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert f"{spec}:{line}:3: spec.isolation:" in r.stderr, r.stderr
        assert f"`{field}`" in r.stderr and "no released DynamoGraphDeployment CRD" in r.stderr
        assert f"operatorCapabilities: [{capability}]" in r.stderr
        assert "Traceback" not in r.stderr
    assert not out.exists()  # nothing half-written


@pytest.mark.parametrize("mode", sorted(EXAMPLES))
def test_the_opt_in_names_the_capability_the_mode_needs(tmp_path: Path, mode: str) -> None:
    """The other proposal's capability is not enough."""
    spec = _copy(tmp_path, mode, opt_in=True)
    data = yaml.safe_load(spec.read_text())
    other = next(c for m, (_, _, c) in EXAMPLES.items() if m != mode)
    data["spec"]["dynamo"]["operatorCapabilities"] = [other]
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run_cli("validate", str(spec))
    assert r.returncode == 2 and "spec.isolation:" in r.stderr, r.stderr


def test_an_unknown_capability_is_refused_at_its_line(tmp_path: Path) -> None:
    spec = _copy(tmp_path, "worker-group", opt_in=True)
    text = spec.read_text().replace("- dgd-worker-groups", "- dgd-worker-group")
    spec.write_text(text)
    r = run_cli("validate", str(spec))
    line = _line_of(spec, "- dgd-worker-group")
    assert r.returncode == 2, r.stderr
    assert f"{spec}:{line}:" in r.stderr and "spec.dynamo.operatorCapabilities[0]" in r.stderr


@pytest.mark.parametrize("mode", sorted(EXAMPLES))
def test_with_the_opt_in_the_output_validates_against_the_overlay(tmp_path: Path,
                                                                  mode: str) -> None:
    _, field, _ = EXAMPLES[mode]
    spec = _copy(tmp_path, mode, opt_in=True)
    out = tmp_path / "out"
    r = run_cli("render", str(spec), "-o", str(out))
    assert r.returncode == 0, r.stderr
    r = run_cli("verify", "--overlay", OVERLAY, "--skip-unknown-kinds", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    # ... and only with it: a released operator's schema does not declare the field
    r = run_cli("verify", "--skip-unknown-kinds", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    problems = [ln for ln in r.stdout.splitlines() if ": DynamoGraphDeployment/" in ln]
    assert problems and all(f".{field}: unknown field" in ln for ln in problems), problems


def _components(dgd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = dgd["spec"]
    if "services" in spec:
        return dict(spec["services"])
    return {c["name"]: c for c in spec["components"]}


def test_worker_group_leaves_the_running_stable_as_it_runs(tmp_path: Path) -> None:
    """Step 0 and the rollback state are the input DGD itself; at every step the stable's
    components keep their spec (only their replica counts follow the plan) and get no worker
    group: naming one would change their Dynamo namespace and restart them."""
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render import render_state

    spec = REPO / "examples" / EXAMPLES["worker-group"][0] / "rollout.yaml"
    prepared = prepare(str(spec))
    original = yaml.safe_load((spec.parent / "dgd.yaml").read_text())
    before = _components(original)
    for state in prepared.plan.all_states():
        (dgd,) = [m.obj for m in render_state(prepared, state)
                  if m.obj["kind"] == "DynamoGraphDeployment"]
        comps = _components(dgd)
        if state.kind in ("baseline", "rollback"):
            assert dgd["spec"] == original["spec"], state.label
        for name, node in before.items():
            if not state.stable.present:
                assert name not in comps, state.label
                continue
            got = dict(comps[name])
            assert "workerGroupName" not in got, (state.label, name)
            want = dict(node)
            got.pop("replicas", None)
            want.pop("replicas", None)
            assert got == want, (state.label, name)
        for name, node in comps.items():
            if name not in before:  # the candidate's copies: its own group
                assert node["workerGroupName"] == prepared.candidate.revision, (state.label, name)


def test_a_stable_with_proposed_fields_needs_the_opt_in(tmp_path: Path) -> None:
    """A stable left by an earlier worker-group rollout carries `workerGroupName`; re-rendering
    it in separate-dgd mode would emit the field, so the spec must state the capability."""
    spec = _copy(tmp_path, "worker-group", opt_in=False)
    data = yaml.safe_load(spec.read_text())
    data["spec"]["isolation"] = "separate-dgd"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    dgd = tmp_path / "dgd.yaml"
    text = dgd.read_text()
    assert "    replicas: 1\n" in text
    dgd.write_text(text.replace("    replicas: 1\n", "    replicas: 1\n    workerGroupName: g1\n", 1))
    r = run_cli("validate", str(spec))
    line = _line_of(dgd, "workerGroupName: g1")
    assert r.returncode == 2, r.stderr
    assert f"dgd.yaml:{line}:" in r.stderr and ".workerGroupName:" in r.stderr, r.stderr
    assert "operatorCapabilities: [dgd-worker-groups]" in r.stderr
    data["spec"]["dynamo"] = {"operatorCapabilities": ["dgd-worker-groups"]}
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run_cli("validate", str(spec))
    assert r.returncode == 0, r.stderr
