"""Bad traffic settings and refused weights: one message with file:line and the field path,
exit 2, no traceback, nothing written. The weight model's refusals, case by case."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from gen_support import REPO, run_cli
from traffic_support import spec_with

from dgdgen.errors import PlanError
from dgdgen.pipeline.prepare import prepare
from dgdgen.traffic.weights import MAX_BACKEND_REFS, Backend, problem, state_backends

EXAMPLE = REPO / "examples" / "vllm-disagg-image-bump"

CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "gateway-api-without-gateway": (
        {"provider": "gateway-api"},
        ["spec.traffic.gateway", "traffic provider 'gateway-api' needs `gateway` settings",
         "add under spec.traffic: gateway:"],
    ),
    "inference-pool-without-gateway": (
        {"provider": "inference-pool", "inferencePool": {"targetPort": 8000}},
        ["spec.traffic.gateway", "'inference-pool' needs `gateway`"],
    ),
    "epp-memory-not-a-quantity": (
        {"provider": "inference-pool", "gateway": {"name": "gw"},
         "inferencePool": {"endpointPicker": {"memory": "512 MB"}}},
        ["spec.traffic.inferencePool.endpointPicker.memory", "must be a Kubernetes quantity"],
    ),
    "gamma-without-service": (
        {"provider": "gamma"}, ["spec.traffic.gamma", "needs `gamma` settings"],
    ),
    "settings-of-another-provider": (
        {"provider": "haproxy", "gamma": {"service": "x"}},
        ["spec.traffic.gamma", "does not apply to traffic provider 'haproxy'"],
    ),
    "sticky-on-httproute": (
        {"provider": "gateway-api", "gateway": {"name": "gw"}, "sticky": {"header": "X-User"}},
        ["spec.traffic.sticky", "no session persistence", "use provider haproxy"],
    ),
    "hostnames-on-haproxy": (
        {"provider": "haproxy", "hostnames": ["a.example.com"]},
        ["spec.traffic.hostnames", "does not apply"],
    ),
    "path-on-haproxy": (
        {"provider": "haproxy", "path": "/v1"}, ["spec.traffic.path", "forwards every path"],
    ),
    "backend-timeout-longer-than-request": (
        {"provider": "gateway-api", "gateway": {"name": "gw"}, "requestTimeout": "10m",
         "backendRequestTimeout": "1h"},
        ["spec.traffic.backendRequestTimeout", "longer than requestTimeout"],
    ),
    "bad-hostname": (
        {"provider": "gateway-api", "gateway": {"name": "gw"}, "hostnames": ["Qwen_.com"]},
        ["spec.traffic.hostnames", "not a hostname"],
    ),
    "bad-path": (
        {"provider": "gateway-api", "gateway": {"name": "gw"}, "path": "v1//x"},
        ["spec.traffic.path", "normalised path prefix"],
    ),
    "sticky-header-and-cookie": (
        {"provider": "haproxy", "sticky": {"header": "X-User", "cookie": "s"}},
        ["spec.traffic.sticky", "exactly one of `header` or `cookie`"],
    ),
    "unknown-provider-field": (
        {"provider": "haproxy", "haproxy": {"replica": 2}},
        ["spec.traffic.haproxy.replica", "did you mean 'replicas'?"],
    ),
    "gamma-service-is-a-frontend": (
        {"provider": "gamma", "gamma": {"service": "vllm-disagg-fe"}},
        ["spec.traffic.gamma.service", "also a generation's frontend Service"],
    ),
    "unknown-provider": (
        {"provider": "istio"}, ["spec.traffic.provider", "gateway-api"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_traffic_settings_exit_2(case: str, tmp_path: Path) -> None:
    traffic, expected = CASES[case]
    spec = spec_with(EXAMPLE, tmp_path, traffic)
    out = tmp_path / "out"
    r = run_cli("render", str(spec), "-o", str(out))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert "rollout.yaml:" in r.stderr and ":" in r.stderr.split("rollout.yaml:")[1][:6]
    for text in expected:
        assert text in r.stderr, (text, r.stderr)
    assert not out.exists(), "nothing may be written"


def _b(key: str, weight: int, capacity: float = 1.0, present: bool = True) -> Backend:
    return Backend(key, "stable", "dgd", f"{key}-fe", key, weight, capacity, present)


def test_weight_model_refusals() -> None:
    assert problem([_b("a", 90), _b("b", 10)]) is None
    assert "every backend has weight 0" in str(problem([_b("a", 0), _b("b", 0)]))
    assert "every backend has weight 0" in str(problem([_b("a", 0, present=False)]))
    many = [_b(f"g{i}", 0) for i in range(MAX_BACKEND_REFS + 1)]
    many[0] = _b("g0", 100)
    assert "at most 16 backendRefs" in str(problem(many))
    assert problem(many[:MAX_BACKEND_REFS]) is None
    over = problem([_b("a", 50, capacity=0.25), _b("b", 50)])
    assert over is not None and "carry only 25%" in over
    assert problem([_b("a", 50, capacity=0.25), _b("b", 50)], headroom=0.25) is None
    assert "add up to 90%" in str(problem([_b("a", 80), _b("b", 10)]))


def test_state_over_capacity_is_refused_at_the_step(tmp_path: Path) -> None:
    """A state whose share exceeds the capacity the plan gives is refused with the location of
    the step's weight in the spec (the planner never produces one; this is the last guard)."""
    spec = spec_with(EXAMPLE, tmp_path, {"provider": "gateway-api", "gateway": {"name": "gw"}})
    prepared = prepare(str(spec))
    step = prepared.plan.steps[2]
    starved = dataclasses.replace(step, candidate=dataclasses.replace(step.candidate,
                                                                      capacity=0.1))
    with pytest.raises(PlanError) as exc:
        state_backends(prepared, starved)
    assert exc.value.field == ("spec", "steps", 1, "weight")
    assert exc.value.location is not None and exc.value.location.line is not None
    assert "step-02" in str(exc.value) and "carry only 10%" in str(exc.value)
    zero = dataclasses.replace(step, stable=dataclasses.replace(step.stable, weight=0),
                               candidate=dataclasses.replace(step.candidate, weight=0))
    with pytest.raises(PlanError, match="every backend has weight 0"):
        state_backends(prepared, zero)
