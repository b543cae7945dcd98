"""An A/B experiment step over HAProxy, in a real HAProxy on loopback: the rendered config of the
experiment step holds the split, and every client (X-Session-Id) stays on one generation for all
its requests, so the experiment's per-user samples come from one generation each."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from pathlib import Path

import pytest
from gen_support import REPO
from haproxy_loopback import (
    HAProxy,
    Loopback,
    fake_frontends,
    free_port,
    haproxy_binary,
    stream_once,
)

from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.traffic.weights import state_backends

EXAMPLE = REPO / "examples" / "sglang-disagg-transfer-backend"
# odd: without stickiness, a round robin over two servers would move every user between rounds
CLIENTS = 41


def _experiment_spec(tmp: Path) -> Path:
    text = (EXAMPLE / "rollout.yaml").read_text()
    gated = "    - weight: 50\n      pause: 20m\n      gate: slo\n"
    assert gated in text
    text = text.replace(gated, "    - weight: 50\n      gate: experiment\n")
    text = text.replace("  analysis:\n", "  analysis:\n    experiment:\n      metric: rating\n"
                        "      minimumDetectableEffect: 0.1\n", 1)
    shutil.copy(EXAMPLE / "dgd.yaml", tmp / "dgd.yaml")
    (tmp / "rollout.yaml").write_text(text)
    return tmp / "rollout.yaml"


@pytest.mark.skipif(haproxy_binary() is None, reason="the haproxy binary is not installed")
@pytest.mark.parametrize("sticky", [True, False])
def test_experiment_clients_stay_on_one_generation(tmp_path: Path, sticky: bool) -> None:
    """sticky=False is the control: the same config without its stick-table lines moves users
    between generations, so the assertion below can fail."""
    prepared = prepare(str(_experiment_spec(tmp_path)))
    plan = prepared.plan
    step = next(s for s in plan.steps if s.gate == "experiment")
    assert step.candidate.weight == 50
    ns = prepared.loaded.spec.metadata.namespace
    cfg_text = next(m for m in render_state(prepared, step)
                    if m.kind == "ConfigMap").obj["data"]["haproxy.cfg"]
    assert "stick" in cfg_text
    if not sticky:
        cfg_text = "\n".join(ln for ln in cfg_text.splitlines()
                             if not ln.strip().startswith(("stick-table", "stick on"))) + "\n"
    with fake_frontends([plan.stable_revision, plan.candidate_revision]) as ports:
        loop = Loopback(
            tmp=tmp_path, frontend_port=free_port(), stats_port=free_port(),
            peer_port=free_port(),
            servers={f"{b.service}.{ns}.svc.cluster.local:8000": ports[b.key]
                     for b in state_backends(prepared, step)},
        )
        cfg = tmp_path / "haproxy.cfg"
        cfg.write_text(loop.adapt(cfg_text))
        proxy = HAProxy(cfg, loop, tmp_path / "haproxy.log")
        proxy.start()
        try:
            async def go() -> dict[int, Counter[str]]:
                seen: dict[int, Counter[str]] = {i: Counter() for i in range(CLIENTS)}
                for _round in range(3):
                    for i in range(CLIENTS):
                        st = await stream_once(loop.frontend_port, 1, 0,
                                               {"X-Session-Id": f"user-{i}"})
                        assert st.ok, st
                        seen[i][str(st.backend)] += 1
                return seen
            seen = asyncio.run(go())
        finally:
            proxy.stop()
    if not sticky:
        assert any(len(c) == 2 for c in seen.values()), seen
        return
    assert all(len(c) == 1 for c in seen.values()), seen  # one generation per user
    homes = Counter(next(iter(c)) for c in seen.values())
    assert set(homes) == {plan.stable_revision, plan.candidate_revision}, homes
    # the 50/50 split over users (weighted round robin on first contact): to one user
    assert homes[plan.candidate_revision] in (CLIENTS // 2, CLIENTS // 2 + 1), homes
