"""Helpers for the traffic tests: example specs re-pointed at any provider."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml
from gen_support import EXAMPLES, copy_example_inputs

# One complete settings block per provider (the shapes of the examples' own sections).
PROVIDER_SETTINGS: dict[str, dict[str, Any]] = {
    "gateway-api": {
        "provider": "gateway-api",
        "gateway": {"name": "inference-gateway", "namespace": "gateway-system",
                    "sectionName": "https", "port": 443},
        "hostnames": ["qwen.example.com", "*.llm.example.com"],
        "path": "/v1",
        "requestTimeout": "1h30m",
        "backendRequestTimeout": "45m",
    },
    "gamma": {"provider": "gamma", "gamma": {"service": "llm-entry", "port": 8000},
              "requestTimeout": "0s"},
    "inference-pool": {
        "provider": "inference-pool",
        "gateway": {"name": "inference-gateway"},
        "inferencePool": {"targetPort": 8000, "appProtocol": "http",
                          "endpointPicker": {"port": 9002, "failureMode": "FailOpen"}},
    },
    "haproxy": {
        "provider": "haproxy",
        "haproxy": {"replicas": 3, "timeouts": {"server": "1h", "hardStopAfter": "1h"}},
        "sticky": {"cookie": "session"},
    },
}


def spec_with(example: Path, tmp: Path, traffic: dict[str, Any] | None) -> Path:
    """A copy of ``example``'s spec (and DGD) in ``tmp`` with ``spec.traffic`` replaced."""
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(example / "dgd.yaml", tmp / "dgd.yaml")
    copy_example_inputs(example, tmp)
    data = yaml.safe_load((example / "rollout.yaml").read_text())
    if traffic is None:
        data["spec"].pop("traffic", None)
    else:
        data["spec"]["traffic"] = traffic
    out = tmp / "rollout.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    if traffic is not None and traffic.get("provider") == "haproxy":
        # One backend has one readiness path; a rollout that changes the served model name
        # needs it given (dgdgen.traffic.haproxy.health_path refuses to guess).
        from urllib.parse import quote

        from dgdgen.pipeline.prepare import prepare
        from dgdgen.traffic.haproxy import served_model

        from dgdgen.errors import DgdgenError

        data["spec"]["traffic"] = {"provider": "none"}
        data["spec"]["steps"] = [{"weight": 0}, {"weight": 100}]
        out.write_text(yaml.safe_dump(data, sort_keys=False))
        try:
            prepared = prepare(str(out))
            names = sorted({str(served_model(g.dgd))
                            for g in (prepared.stable, prepared.candidate)})
        except DgdgenError:  # a spec that is bad on purpose: left as the caller wrote it
            names = []
        data = yaml.safe_load((example / "rollout.yaml").read_text())
        data["spec"]["traffic"] = traffic
        if len(names) > 1:
            hp = dict(traffic.get("haproxy") or {})
            hp["healthCheck"] = {**hp.get("healthCheck", {}),
                                 "path": f"/v1/models/{quote(names[-1], safe='')}/ready"}
            data["spec"]["traffic"] = {**traffic, "haproxy": hp}
        out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


def all_examples() -> list[Path]:
    return list(EXAMPLES)
