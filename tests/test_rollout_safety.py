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


# --------------------------------------------------------------------- rollback budget (§9), drain (§8)


def test_rollback_walks_back_within_the_surge_budget() -> None:
    """From the last step a one-shot rollback regrows the whole stable next to the whole
    candidate (+4 GPUs here against a +2 budget); the plan walks back step by step instead."""
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    plan = prepared.plan
    budget = max(s.extra_gpus_peak for s in plan.steps)
    surge = plan.surge_replicas
    sizes = {n: max(prepared.stable.target_replicas[n], prepared.candidate.target_replicas[n])
             for n in surge}
    last = len(plan.steps) - 1
    path = plan.rollback_from(last)
    assert [s.label for s in path] == [f"rollback-{i:02d}" for i in range(last - 1, 0, -1)] + [
        "rollback"]
    for state in path:
        assert state.extra_gpus_peak <= budget, (state.label, state.extra_gpus_peak, budget)
        for name, extra in surge.items():
            assert state.peak_replicas[name] - sizes[name] <= extra, (state.label, name)
    one_shot = plan.rollback.stable.gpus + plan.steps[last].candidate.gpus - plan.baseline_gpus
    assert one_shot > budget  # the case the stepped rollback exists for


def test_plan_shows_rollback_gpus_and_the_drain(tmp_path: Path) -> None:
    from gen_support import run_cli

    r = run_cli("plan", str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line[:1].isalnum()}
    prepared = prepare(str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"))
    for state in prepared.plan.rollback_steps:
        row = rows[f"rollback→{state.index}"]
        assert f"{state.peak_gpus} (+{state.extra_gpus_peak})" in row
    assert f"{prepared.plan.rollback.peak_gpus} (+{prepared.plan.rollback.extra_gpus_peak})" in rows[
        "rollback"]
    # the step that empties the stable drains it (bounded by the request timeout) before it shrinks
    last = prepared.plan.steps[-1]
    assert last.drain_seconds == 30 * 60  # spec.traffic.requestTimeout: 30m
    assert "grow→shift→drain ≤30m→shrink" in rows[str(last.index)]


# --------------------------------------------------------------------- provider none (§2)


def _routed_generations(objects: dict[str, dict[str, Any]]) -> set[str]:
    """Generations some rendered route sends new requests to: HTTPRoute backendRefs with a
    weight (to a Service or an InferencePool), enabled HAProxy servers with a weight, or the
    provider-none switch Service; each resolved to the generation its target selects."""
    import re

    by_service = {o["metadata"]["name"]: o["spec"]["selector"].get("dgdgen.dev/generation")
                  for o in objects.values() if o["kind"] == "Service"}
    pools = {o["metadata"]["name"]: o["spec"]["selector"]["matchLabels"].get(
        "dgdgen.dev/generation") for o in objects.values() if o["kind"] == "InferencePool"}
    out: set[str] = set()
    for o in objects.values():
        if o["kind"] == "HTTPRoute":
            for ref in o["spec"]["rules"][0]["backendRefs"]:
                if ref.get("weight", 1) > 0:
                    target = (pools if ref["kind"] == "InferencePool" else by_service)[ref["name"]]
                    out.add(str(target))
        elif o["kind"] == "ConfigMap" and "haproxy.cfg" in o.get("data", {}):
            for m in re.finditer(r"^\s*server \S+ ([a-z0-9-]+)\.\S+ weight (\d+)( disabled)?$",
                                 o["data"]["haproxy.cfg"], re.M):
                if int(m.group(2)) > 0 and not m.group(3):
                    out.add(str(by_service[m.group(1)]))
        elif o["kind"] == "Service" and o["metadata"]["labels"].get("dgdgen.dev/role") == "switch":
            out.add(str(o["spec"]["selector"]["dgdgen.dev/generation"]))
    return out


def test_every_generation_with_weight_has_a_route_in_every_state() -> None:
    from gen_support import EXAMPLES

    checked = 0
    for example in EXAMPLES:
        prepared = prepare(str(example / "rollout.yaml"))
        if prepared.mode not in ("separate-dgd", "worker-group"):
            continue  # one shared frontend: replica counts carry the split
        for state in prepared.plan.all_states():
            routed = _routed_generations(_objects(prepared, state))
            for gen in (state.stable, state.candidate):
                if gen.weight > 0:
                    assert gen.revision in routed, (example.name, state.label, gen.revision)
                    checked += 1
    assert checked > 20


def test_provider_none_switches_one_service_and_keeps_it_through_cleanup() -> None:
    prepared = prepare(str(REPO / "examples/vllm-agg-blue-green/rollout.yaml"))
    assert prepared.loaded.spec.spec.traffic.provider.value == "none"
    for state in prepared.plan.all_states():
        objs = _objects(prepared, state)
        switch = objs[f"service-{prepared.loaded.spec.metadata.name}.yaml"]
        home = state.candidate if state.candidate.weight == 100 else state.stable
        assert switch["spec"]["selector"]["dgdgen.dev/generation"] == home.revision, state.label
        # it moves with the weights, after the growing generation is ready
        assert switch["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "1"


def test_provider_none_refuses_a_split_between_two_frontends(tmp_path: Path) -> None:
    import yaml
    from gen_support import run_cli

    src = REPO / "examples/vllm-disagg-v1beta1-worker-group"
    (tmp_path / "dgd.yaml").write_text((src / "dgd.yaml").read_text())
    data = yaml.safe_load((src / "rollout.yaml").read_text())
    data["spec"].pop("traffic")
    spec = tmp_path / "rollout.yaml"
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run_cli("validate", str(spec))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "spec.steps[0].weight" in r.stderr and "cannot split traffic" in r.stderr
    assert f"{spec}:" in r.stderr and "Traceback" not in r.stderr
