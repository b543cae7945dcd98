"""A generation whose frontend runs but has no workers must leave HAProxy's rotation.

The Dynamo 1.6.1 frontend answers ``/health`` 200 with zero workers and
``/v1/models/{model}/ready`` 404 until a worker serves the model
(tests/rehearse/test_frontend_readiness.py, on the real frontend). A real HAProxy runs the
rendered config of a 50/50 step against two fake frontends that answer those endpoints the same
way, one of them without workers: every request must reach the other. The same config with its
check path set back to ``/health`` (the control) sends the workerless frontend its half, so this
test fails on a config that checks ``/health``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from gen_support import REPO
from haproxy_loopback import HAProxy, Loopback, fake_frontends, free_port, haproxy_binary, stream_once

pytestmark = pytest.mark.skipif(
    haproxy_binary() is None,
    reason="the haproxy binary is not installed (Debian package `haproxy`; CI installs it)",
)

SPEC = REPO / "examples" / "sglang-disagg-transfer-backend" / "rollout.yaml"
REQUESTS = 40


def _route(tmp: Path, *, check_path: str | None) -> dict[str | None, int]:
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render import render_state
    from dgdgen.traffic.haproxy import BACKEND, health_path
    from dgdgen.traffic.runtime import RuntimeApi
    from dgdgen.traffic.weights import state_backends

    prepared = prepare(str(SPEC))
    state = next(s for s in prepared.plan.steps if s.candidate.weight == 50)
    (cm,) = [m for m in render_state(prepared, state) if m.kind == "ConfigMap"]
    text = cm.obj["data"]["haproxy.cfg"]
    rendered_check = f"option httpchk GET {health_path(prepared)}\n"
    assert rendered_check in text
    if check_path is not None:
        text = text.replace(rendered_check, f"option httpchk GET {check_path}\n")
    backends = state_backends(prepared, state)
    ns = prepared.loaded.spec.metadata.namespace
    names = [b.key for b in backends]
    workerless = prepared.plan.candidate_revision
    with fake_frontends(names, no_workers=frozenset({workerless})) as ports:
        loop = Loopback(
            tmp=tmp, frontend_port=free_port(), stats_port=free_port(), peer_port=free_port(),
            servers={f"{b.service}.{ns}.svc.cluster.local:8000": ports[b.key] for b in backends},
        )
        cfg = tmp / "haproxy.cfg"
        cfg.write_text(loop.adapt(text))
        proxy = HAProxy(cfg, loop, tmp / "haproxy.log")
        proxy.start()
        try:
            api = RuntimeApi(loop.admin_socket)
            # Both servers start UP; wait until the checks settled (fall 2 × inter 2s).
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                state_now = api.servers(BACKEND)
                if check_path is not None or not state_now[workerless].up:
                    break
                time.sleep(0.2)
            time.sleep(5)

            async def load() -> list[str | None]:
                out = []
                for _ in range(REQUESTS):
                    st = await stream_once(loop.frontend_port, 2, 1)
                    assert st.ok, (st.status, st.error)
                    out.append(st.backend)
                return out

            got = asyncio.run(load())
        finally:
            proxy.stop()
    return {name: got.count(name) for name in {*names, *got}}


def test_a_frontend_without_workers_gets_no_traffic(tmp_path: Path) -> None:
    from dgdgen.pipeline.prepare import prepare

    plan = prepare(str(SPEC)).plan
    counts = _route(tmp_path / "rendered", check_path=None)
    assert counts[plan.candidate_revision] == 0, counts
    assert counts[plan.stable_revision] == REQUESTS, counts


def test_control_health_path_keeps_the_workerless_frontend_in_rotation(tmp_path: Path) -> None:
    from dgdgen.pipeline.prepare import prepare

    plan = prepare(str(SPEC)).plan
    counts = _route(tmp_path / "control", check_path="/health")
    # round robin at 50/50: the workerless frontend gets its half
    assert counts[plan.candidate_revision] >= REQUESTS // 2 - 2, counts
