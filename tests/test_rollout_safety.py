"""What a platform engineer reading the rendered steps would check before applying them: each
test here pins one rollout-safety property of the rendered output (docs/planning.md,
docs/traffic.md, docs/analysis.md say what each one changes and why)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gen_support import REPO
from dgdgen.pipeline import prepare
from dgdgen.render import render_state


def _objects(prepared: Any, state: Any) -> dict[str, dict[str, Any]]:
    return {m.filename: m.obj for m in render_state(prepared, state)}


def _components(dgd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = dgd["spec"]
    if "services" in spec:
        return dict(spec["services"])
    return {c["name"]: c for c in spec["components"]}


# --------------------------------------------------------------------- partition (issue 11 §10)


def test_partition_counts_replicas_kept_on_the_old_revision() -> None:
    """StatefulSet / CloneSet convention: ``partition`` = replicas that keep the OLD revision."""
    prepared = prepare(str(REPO / "examples/sglang-disagg-v1beta1-partition/rollout.yaml"))
    seen = 0
    for state in prepared.plan.steps[1:]:
        (dgd,) = [o for o in _objects(prepared, state).values()
                  if o["kind"] == "DynamoGraphDeployment"]
        for name, comp in _components(dgd).items():
            if name not in state.stable.replicas or "partition" not in comp:
                continue
            if name in ("prefill", "decode"):
                assert comp["partition"] == state.stable.replicas[name], (state.label, name)
                assert comp["replicas"] - comp["partition"] == state.candidate.replicas[name]
                seen += 1
            elif state.candidate.weight < 100:
                # the frontend stays on the old revision until the 100 % step
                assert comp["partition"] == comp["replicas"], (state.label, name)
    assert seen >= 2


# --------------------------------------------------------------------- GAMMA parent (issue 11 §15)


def test_gamma_parent_service_selects_only_the_stable_frontend() -> None:
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    gamma = prepared.loaded.spec.spec.traffic.gamma
    assert gamma is not None and gamma.create_service
    for state in prepared.plan.all_states():
        svc = _objects(prepared, state)[f"service-{gamma.service}.yaml"]
        home = state.stable if state.stable.present else state.candidate
        assert svc["spec"]["selector"]["dgdgen.dev/generation"] == home.revision, state.label


# --------------------------------------------------------------------- PodMonitor labels (§12)


def test_pod_monitors_carry_the_default_selector_labels_and_validate_warns(tmp_path: Path) -> None:
    from gen_support import run_cli

    spec = REPO / "examples/vllm-disagg-v1beta1-worker-group/rollout.yaml"
    assert "monitorLabels" not in spec.read_text()
    prepared = prepare(str(spec))
    monitors = [o for o in _objects(prepared, prepared.plan.steps[1]).values()
                if o["kind"] == "PodMonitor"]
    assert monitors and all(
        m["metadata"]["labels"]["release"] == "kube-prometheus-stack" for m in monitors)
    r = run_cli("validate", str(spec))
    assert r.returncode == 0, r.stderr
    assert "warning: " in r.stderr and "spec.analysis.monitorLabels: not set" in r.stderr
    assert f"{spec}:" in r.stderr  # file:line of spec.analysis
    # given explicitly: no warning
    explicit = REPO / "examples/vllm-disagg-image-bump/rollout.yaml"
    assert "monitorLabels" in explicit.read_text()
    r = run_cli("validate", str(explicit))
    assert r.returncode == 0 and "monitorLabels" not in r.stderr, r.stderr
