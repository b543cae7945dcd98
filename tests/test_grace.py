"""Termination grace periods: every frontend and worker pod the candidate runs may take the
request timeout (plus dgdgen.render.grace.MARGIN_SECONDS) to stop, the running stable is never edited,
a longer value of the user's is kept, and a stable whose pods stop too soon is noted in the plan.
What a Dynamo process does on SIGTERM (the margin's basis) is shown against the real runtime in
tests/rehearse/test_sigterm.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from gen_support import EXAMPLES, REPO, run_cli

from dgdgen.model import dgd as dgdmod
from dgdgen.render.grace import MARGIN_SECONDS
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.spec import parse_duration

FIELD = "terminationGracePeriodSeconds"
BLOCK_SIZE = REPO / "examples" / "vllm-disagg-block-size"


def _required(spec_path: Path) -> int:
    spec = yaml.safe_load(spec_path.read_text())["spec"]
    timeout = (spec.get("traffic") or {}).get("requestTimeout", "1h")
    bound = parse_duration(timeout) or parse_duration(
        ((spec.get("gitops") or {}).get("workflow") or {}).get("waitTimeout", "2h"))
    return bound + MARGIN_SECONDS


def _components(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = doc["spec"]
    if doc["apiVersion"].endswith("v1alpha1"):
        return dict(spec["services"])
    return {c["name"]: c for c in spec["components"]}


def _grace(node: dict[str, Any], version: str) -> int | None:
    pod = (node.get("extraPodSpec") if version == "v1alpha1"
           else (node.get("podTemplate") or {}).get("spec")) or {}
    return pod.get(FIELD)


def _serving(doc: dict[str, Any]) -> set[str]:
    d = dgdmod.parse(doc)
    return {n for n, c in d.components.items() if c.is_worker or c.role is dgdmod.Role.FRONTEND}


def _without_replicas(node: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k != "replicas"}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_rendered_grace_period_per_component_per_state(example: Path) -> None:
    prepared = prepare(str(example / "rollout.yaml"))
    need = _required(example / "rollout.yaml")
    version = prepared.stable.dgd.version
    stable_in = _components(prepared.stable.dgd.doc)
    cand_in = _components(prepared.candidate.dgd.doc)
    # in the single-DGD modes only the components the candidate changes are rolled
    changed = {n for n in stable_in if _without_replicas(stable_in[n]) != _without_replicas(cand_in[n])}
    serving = _serving(prepared.candidate.dgd.doc)
    seen_candidate = 0
    for state in prepared.plan.all_states():
        for m in render_state(prepared, state):
            if m.kind != "DynamoGraphDeployment":
                continue
            comps = _components(m.obj)
            for name, node in comps.items():
                base = name
                if prepared.mode == "worker-group":
                    cand = node.get("workerGroupName") == prepared.candidate.revision
                    base = name.removesuffix(f"-{prepared.candidate.revision}")
                elif prepared.mode == "separate-dgd":
                    cand = m.name == prepared.candidate_name
                else:  # one DGD: the stable's at the baseline and on rollback, else the candidate's
                    cand = state.kind not in ("baseline", "rollback") and base in changed
                where = (example.name, state.label, m.name, name)
                source = cand_in[base] if cand else stable_in[base]
                have = _grace(source, version)
                if cand and base in serving:
                    seen_candidate += 1
                    assert _grace(node, version) == max(have or 0, need), where
                else:  # the stable's pods (and the candidate's planner/epp) as the input has them
                    assert _grace(node, version) == have, where
    assert seen_candidate > 0


def _variant(tmp_path: Path, edit_dgd: Any = None, edit_spec: Any = None) -> Path:
    shutil.copytree(BLOCK_SIZE, tmp_path / "ex", ignore=shutil.ignore_patterns("rendered"))
    dgd_path = tmp_path / "ex" / "dgd.yaml"
    spec_path = tmp_path / "ex" / "rollout.yaml"
    if edit_dgd is not None:
        doc = yaml.safe_load(dgd_path.read_text())
        edit_dgd(doc)
        dgd_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    if edit_spec is not None:
        doc = yaml.safe_load(spec_path.read_text())
        edit_spec(doc)
        spec_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return spec_path


def _set_stable(values: dict[str, Any]) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        for name, value in values.items():
            doc["spec"]["services"][name]["extraPodSpec"][FIELD] = value
    return edit


def _candidate_grace(spec_path: Path) -> dict[str, dict[str, int | None]]:
    """state label → candidate component → rendered grace period."""
    prepared = prepare(str(spec_path))
    out: dict[str, dict[str, int | None]] = {}
    for state in prepared.plan.all_states():
        for m in render_state(prepared, state):
            if m.kind == "DynamoGraphDeployment" and m.name == prepared.candidate_name:
                out[state.label] = {n: _grace(c, "v1alpha1") for n, c in _components(m.obj).items()}
    return out


def _grace_notes(spec_path: Path) -> list[str]:
    return [n for n in prepare(str(spec_path)).plan.notes if n.startswith("stable pods that stop")]


def test_a_longer_user_value_is_kept_and_a_shorter_one_raised(tmp_path: Path) -> None:
    need = _required(BLOCK_SIZE / "rollout.yaml")
    spec = _variant(tmp_path, _set_stable({"VllmDecodeWorker": need * 4, "VllmPrefillWorker": 60}))
    by_state = _candidate_grace(spec)
    assert by_state  # the candidate exists in some state
    for label, comps in by_state.items():
        assert comps == {"Frontend": need, "VllmDecodeWorker": need * 4,
                         "VllmPrefillWorker": need}, label
    # the stable itself is never edited: every state renders its input values
    prepared = prepare(str(spec))
    for state in prepared.plan.all_states():
        for m in render_state(prepared, state):
            if m.kind == "DynamoGraphDeployment" and m.name == prepared.stable.dgd.name:
                comps = _components(m.obj)
                assert _grace(comps["VllmDecodeWorker"], "v1alpha1") == need * 4
                assert _grace(comps["VllmPrefillWorker"], "v1alpha1") == 60
                assert _grace(comps["Frontend"], "v1alpha1") is None
    # the plan names the stable component whose pods stop too soon while it serves, only it
    notes = _grace_notes(spec)
    assert len(notes) == 1
    assert "VllmPrefillWorker 60 s" in notes[0] and "VllmDecodeWorker" not in notes[0]
    assert f"extraPodSpec.terminationGracePeriodSeconds: {need}" in notes[0]


def test_the_note_goes_when_the_stable_covers_the_request_timeout(tmp_path: Path) -> None:
    need = _required(BLOCK_SIZE / "rollout.yaml")
    assert _grace_notes(BLOCK_SIZE / "rollout.yaml")  # unset: 30 s, too short for 30m streams
    enough = _variant(tmp_path / "a", _set_stable({"VllmDecodeWorker": need, "VllmPrefillWorker": need}))
    assert _grace_notes(enough) == []
    one_short = _variant(tmp_path / "b", _set_stable({"VllmDecodeWorker": need,
                                                      "VllmPrefillWorker": need - 1}))
    notes = _grace_notes(one_short)
    assert len(notes) == 1 and f"VllmPrefillWorker {need - 1} s" in notes[0]


def test_the_note_says_whether_a_killed_stream_migrates_or_is_cut(tmp_path: Path) -> None:
    # The bundled stable's frontend migrates (examples/SOURCES.md): a worker stream that outlives
    # the grace period continues elsewhere (tests/rehearse/test_kill_migrates.py on the real
    # runtime); the upstream stable's frontend does not, and the stream is cut.
    from example_support import upstream_copy

    (bundled,) = _grace_notes(BLOCK_SIZE / "rollout.yaml")
    assert "continues on another worker" in bundled and "are cut" not in bundled
    (upstream,) = _grace_notes(upstream_copy(tmp_path, "vllm-disagg-block-size"))
    assert "longer streams on them are cut" in upstream and "continues" not in upstream


def test_a_stable_that_never_shrinks_while_serving_is_not_noted() -> None:
    # blue/green: the stable stays whole until the candidate has all the traffic, then drains
    example = next(p for p in EXAMPLES if p.name == "vllm-agg-blue-green")
    plan = prepare(str(example / "rollout.yaml")).plan
    assert all(s.stable.replicas == plan.steps[0].stable.replicas for s in plan.steps)
    assert _grace_notes(example / "rollout.yaml") == []


def test_request_timeout_0s_is_bounded_by_the_workflow_wait_timeout(tmp_path: Path) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["spec"]["traffic"]["requestTimeout"] = "0s"
        doc["spec"].setdefault("gitops", {}).setdefault("workflow", {})["waitTimeout"] = "3h"

    spec = _variant(tmp_path, edit_spec=edit)
    for label, comps in _candidate_grace(spec).items():
        assert set(comps.values()) == {3 * 3600 + MARGIN_SECONDS}, label


def test_the_rendered_tree_is_schema_valid_and_carries_the_value(tmp_path: Path) -> None:
    # `render` validates every object against the vendored CRD (strict, CEL) before writing
    out = tmp_path / "out"
    r = run_cli("render", str(BLOCK_SIZE / "rollout.yaml"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    need = _required(BLOCK_SIZE / "rollout.yaml")
    doc = yaml.safe_load((out / "step-01" / "dynamographdeployment-bs32-vllm-v1-disagg-router.yaml")
                         .read_text())
    assert {n: _grace(c, "v1alpha1") for n, c in _components(doc).items()} == {
        "Frontend": need, "VllmDecodeWorker": need, "VllmPrefillWorker": need}


@pytest.mark.parametrize("value", ["soon", -5, [30]])
def test_a_malformed_stable_value_is_one_error_at_its_line(tmp_path: Path, value: Any) -> None:
    spec = _variant(tmp_path, _set_stable({"VllmDecodeWorker": value}))
    r = run_cli("plan", str(spec))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert "dgd.yaml:" in r.stderr and FIELD in r.stderr, r.stderr
    assert "VllmDecodeWorker" in r.stderr, r.stderr


def test_setting_the_stable_value_is_no_rollout_hazard(tmp_path: Path) -> None:
    # docs/planning.md: the fix the plan note asks for rolls in place without a finding
    old = yaml.safe_load((BLOCK_SIZE / "dgd.yaml").read_text())
    new = yaml.safe_load((BLOCK_SIZE / "dgd.yaml").read_text())
    need = _required(BLOCK_SIZE / "rollout.yaml")
    _set_stable(dict.fromkeys(new["spec"]["services"], need))(new)
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old, sort_keys=False))
    (tmp_path / "new.yaml").write_text(yaml.safe_dump(new, sort_keys=False))
    r = run_cli("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json")
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert yaml.safe_load(r.stdout)["findings"] == []
