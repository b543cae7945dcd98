"""Every rendered HTTPRoute and InferencePool — every example, every state, every provider —
validates against the vendored upstream CRD in strict mode with its CEL rules; the weights they
carry are the plan's."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from traffic_support import PROVIDER_SETTINGS, all_examples, spec_with

from dgdgen import crd
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.traffic.weights import state_backends

ROUTED_KINDS = ("HTTPRoute", "InferencePool")


def _objects(spec: Path) -> list[tuple[Any, list[Any]]]:
    prepared = prepare(str(spec))
    out = []
    for state in prepared.plan.all_states():
        out.append((state, render_state(prepared, state)))
    return out


def _check_state(prepared: Any, state: Any, manifests: list[Any], provider: str) -> int:
    checked = 0
    for m in manifests:
        if m.kind in ROUTED_KINDS or m.kind in ("Service", "Deployment", "ConfigMap",
                                                 "PodDisruptionBudget"):
            violations = crd.validate(m.obj, overlays=m.overlays)
            assert violations == [], (state.label, m.filename, violations)
            checked += m.kind in ROUTED_KINDS
    routes = [m for m in manifests if m.kind == "HTTPRoute"]
    if provider == "none":
        assert not [m for m in manifests if m.kind in ROUTED_KINDS or "haproxy" in m.name]
        return checked
    if provider == "haproxy":
        assert routes == []
        return checked
    assert len(routes) == 1
    refs = routes[0].obj["spec"]["rules"][0]["backendRefs"]
    planned = {b.weight for b in state_backends(prepared, state) if b.present}
    assert sum(r["weight"] for r in refs) == 100
    assert {r["weight"] for r in refs} <= planned | {0}
    if provider == "inference-pool":
        pools = {m.name for m in manifests if m.kind == "InferencePool"}
        assert {r["name"] for r in refs} == pools
        assert all(r["kind"] == "InferencePool" and "port" not in r for r in refs)
    else:
        services = {m.name for m in manifests if m.kind == "Service"}
        assert {r["name"] for r in refs} <= services, "a backendRef names no rendered Service"
    return checked


@pytest.mark.parametrize("example", all_examples(), ids=lambda p: p.name)
def test_examples_own_traffic_objects_validate(example: Path) -> None:
    prepared = prepare(str(example / "rollout.yaml"))
    provider = prepared.loaded.spec.spec.traffic.provider.value
    for state in prepared.plan.all_states():
        _check_state(prepared, state, render_state(prepared, state), provider)


@pytest.mark.parametrize("provider", sorted(PROVIDER_SETTINGS))
def test_every_provider_on_every_example_validates(provider: str, tmp_path: Path) -> None:
    checked = 0
    for example in all_examples():
        spec = spec_with(example, tmp_path / example.name, PROVIDER_SETTINGS[provider])
        prepared = prepare(str(spec))
        for state in prepared.plan.all_states():
            checked += _check_state(prepared, state, render_state(prepared, state), provider)
    if provider != "haproxy":
        assert checked >= len(all_examples()) * 3


def _route(example: str, provider: str, tmp: Path) -> dict[str, Any]:
    ex = next(p for p in all_examples() if p.name == example)
    prepared = prepare(str(spec_with(ex, tmp, PROVIDER_SETTINGS[provider])))
    ms = render_state(prepared, prepared.plan.steps[1])
    return copy.deepcopy(next(m.obj for m in ms if m.kind == "HTTPRoute"))


def test_validation_is_not_vacuous(tmp_path: Path) -> None:
    """The same checks reject what the API server would: a Service ref without a port (CEL), a
    weight above the maximum, a bad path, an unknown field."""
    route = _route("vllm-disagg-image-bump", "gateway-api", tmp_path / "a")
    no_port = copy.deepcopy(route)
    del no_port["spec"]["rules"][0]["backendRefs"][0]["port"]
    assert any("port" in str(v) for v in crd.validate(no_port))
    heavy = copy.deepcopy(route)
    heavy["spec"]["rules"][0]["backendRefs"][0]["weight"] = 1_000_001
    assert crd.validate(heavy)
    bad_path = copy.deepcopy(route)
    bad_path["spec"]["rules"][0]["matches"][0]["path"]["value"] = "/v1//x"
    assert crd.validate(bad_path)
    timeouts = copy.deepcopy(route)
    timeouts["spec"]["rules"][0]["timeouts"] = {"request": "1m", "backendRequest": "2m"}
    assert crd.validate(timeouts)
    unknown = copy.deepcopy(route)
    unknown["spec"]["rules"][0]["sessionPersistence"] = {"type": "Cookie"}
    assert crd.validate(unknown)


def test_gamma_parent_is_the_core_service(tmp_path: Path) -> None:
    route = _route("vllm-disagg-block-size", "gamma", tmp_path)
    assert route["spec"]["parentRefs"] == [
        {"group": "", "kind": "Service", "name": "llm-entry", "port": 8000}
    ]
    assert "hostnames" not in route["spec"]
    assert route["spec"]["rules"][0]["timeouts"] == {"request": "0s"}


def test_gateway_route_carries_hosts_path_and_timeouts(tmp_path: Path) -> None:
    route = _route("vllm-disagg-image-bump", "gateway-api", tmp_path)
    assert route["spec"]["hostnames"] == ["qwen.example.com", "*.llm.example.com"]
    rule = route["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/v1"}}]
    assert rule["timeouts"] == {"request": "1h30m", "backendRequest": "45m"}
    assert [r["weight"] for r in rule["backendRefs"]] == [90, 10]


def test_inference_pools_follow_the_generations(tmp_path: Path) -> None:
    ex = next(p for p in all_examples() if p.name == "trtllm-disagg-v1beta1")
    prepared = prepare(str(ex / "rollout.yaml"))
    by_state = {s.label: render_state(prepared, s) for s in prepared.plan.all_states()}
    pools = {label: sorted(m.name for m in ms if m.kind == "InferencePool")
             for label, ms in by_state.items()}
    assert pools["step-00"] == ["trtllm-disagg-pool"]
    assert len(pools["step-01"]) == 2
    assert pools["rollback"] == pools["step-00"]
    assert pools["cleanup"] == sorted(set(pools["step-01"]) - set(pools["step-00"]))
    pool = next(m.obj for m in by_state["step-01"] if m.name == pools["step-01"][0])
    # the operator's own pod labels: the generation's DGD, its frontend component type
    assert pool["spec"]["selector"]["matchLabels"]["nvidia.com/dynamo-component-type"] == "frontend"
    assert pool["spec"]["selector"]["matchLabels"]["nvidia.com/dynamo-graph-deployment-name"] in {
        m.name for m in by_state["step-01"] if m.kind == "DynamoGraphDeployment"}
    assert pool["spec"]["endpointPickerRef"]["name"] == pool["metadata"]["name"] + "-epp"
