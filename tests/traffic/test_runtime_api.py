"""The runtime fast path against a real HAProxy on loopback, sequential requests: runtime weights
survive a reload once saved, sticky clients stay on their generation until it leaves, and the
command line refuses what it cannot do (exit 2)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from gen_support import REPO, run_cli
from haproxy_loopback import (
    HAProxy,
    Loopback,
    fake_frontends,
    free_port,
    haproxy_binary,
    reload_and_wait,
    stream_once,
)

from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.traffic.haproxy import BACKEND
from dgdgen.traffic.runtime import RuntimeApi
from dgdgen.traffic.weights import state_backends

SPEC = REPO / "examples" / "sglang-disagg-transfer-backend" / "rollout.yaml"
needs_haproxy = pytest.mark.skipif(
    haproxy_binary() is None,
    reason="the haproxy binary is not installed (Debian package `haproxy`; CI installs it)",
)


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[tuple[HAProxy, Loopback]]:
    prepared = prepare(str(SPEC))
    plan = prepared.plan
    ns = prepared.loaded.spec.metadata.namespace
    cfg_text = next(m for m in render_state(prepared, plan.steps[0])
                    if m.kind == "ConfigMap").obj["data"]["haproxy.cfg"]
    with fake_frontends([plan.stable_revision, plan.candidate_revision]) as ports:
        loop = Loopback(
            tmp=tmp_path, frontend_port=free_port(), stats_port=free_port(),
            peer_port=free_port(),
            servers={f"{b.service}.{ns}.svc.cluster.local:8000": ports[b.key]
                     for b in state_backends(prepared, plan.steps[1])},
        )
        cfg = tmp_path / "haproxy.cfg"
        cfg.write_text(loop.adapt(cfg_text))
        p = HAProxy(cfg, loop, tmp_path / "haproxy.log")
        p.start()
        try:
            yield p, loop
        finally:
            p.stop()


def _split(port: int, n: int, headers: dict[str, str] | None = None) -> Counter[str]:
    async def go() -> Counter[str]:
        c: Counter[str] = Counter()
        for _ in range(n):
            st = await stream_once(port, 1, 0, headers)
            assert st.ok, st
            c[str(st.backend)] += 1
        return c
    return asyncio.run(go())


def _set(loop: Loopback, step: str, *extra: str) -> None:
    r = run_cli("traffic", "set-weights", str(SPEC), "--step", step, "--socket",
                loop.admin_socket, *extra)
    assert r.returncode == 0, r.stderr


@needs_haproxy
def test_runtime_weights_survive_a_reload_once_saved(proxy: tuple[HAProxy, Loopback]) -> None:
    _, loop = proxy
    api = RuntimeApi(loop.admin_socket)
    _set(loop, "2", "--state-file", str(loop.tmp / "run" / "server-state"))
    assert {s.server: s.weight for s in api.servers(BACKEND).values()} == \
        {"nixl": 150, "mooncake": 50}
    reload_and_wait(loop.master_socket)  # the config on disk still says step-00
    after = api.servers(BACKEND)
    assert {s.server: (s.weight, s.enabled) for s in after.values()} == \
        {"nixl": (150, True), "mooncake": (50, True)}
    split = _split(loop.frontend_port, 80)
    assert abs(split["mooncake"] - 20) <= 1, split  # 25 %, to one request


@needs_haproxy
def test_sticky_clients_keep_their_generation(proxy: tuple[HAProxy, Loopback]) -> None:
    _, loop = proxy
    _set(loop, "3")  # 50/50
    homes = {}
    for i in range(8):
        c = _split(loop.frontend_port, 1, {"X-Session-Id": f"client-{i}"})
        homes[i] = next(iter(c))
    assert set(homes.values()) == {"nixl", "mooncake"}
    _set(loop, "2")  # weights move back towards the stable: pinned clients do not move
    for i, home in homes.items():
        assert _split(loop.frontend_port, 3, {"X-Session-Id": f"client-{i}"}) == \
            Counter({home: 3})
    _set(loop, "rollback")  # the candidate leaves (maintenance): its clients come home
    for i in homes:
        assert _split(loop.frontend_port, 2, {"X-Session-Id": f"client-{i}"}) == \
            Counter({"nixl": 2})


def test_set_weights_refusals(tmp_path: Path) -> None:
    r = run_cli("traffic", "set-weights", str(SPEC), "--step", "1", "--socket",
                str(tmp_path / "nothing.sock"))
    assert r.returncode == 2 and "cannot reach the HAProxy runtime API" in r.stderr
    assert "Traceback" not in r.stderr
    gamma = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"
    r = run_cli("traffic", "set-weights", str(gamma), "--step", "1", "--dry-run")
    assert r.returncode == 2
    assert "rollout.yaml:" in r.stderr and "spec.traffic.provider" in r.stderr
    r = run_cli("traffic", "set-weights", str(SPEC), "--step", "9", "--dry-run")
    assert r.returncode == 2 and "there is no step 9" in r.stderr
    r = run_cli("traffic", "set-weights", str(SPEC), "--step", "2")
    assert r.returncode == 2  # neither --socket nor --dry-run


def test_dry_run_and_show() -> None:
    r = run_cli("traffic", "set-weights", str(SPEC), "--step", "rollback", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "set server be_frontends/nixl state ready",
        "set weight be_frontends/nixl 200",
        "set weight be_frontends/mooncake 0",
        "set server be_frontends/mooncake state maint",
    ]
    r = run_cli("traffic", "show", str(SPEC))
    assert r.returncode == 0 and "step-01   nixl  95% (weight 190)  mooncake   5% (weight 10)" \
        in r.stdout
    r = run_cli("traffic", "config", str(SPEC), "--step", "3")
    assert r.returncode == 0 and "weight 100" in r.stdout


@needs_haproxy
def test_dry_run_prints_what_the_live_run_sends(proxy: tuple[HAProxy, Loopback]) -> None:
    # From step 1 to rollback the candidate leaves and the stable gains: the order depends on the
    # proxy's current weights, which the dry run reads through --socket without changing them.
    _, loop = proxy
    _set(loop, "1")
    api = RuntimeApi(loop.admin_socket)
    before = api.servers(BACKEND)
    dry = run_cli("traffic", "set-weights", str(SPEC), "--step", "rollback", "--socket",
                  loop.admin_socket, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert api.servers(BACKEND) == before  # a dry run changes nothing
    live = run_cli("traffic", "set-weights", str(SPEC), "--step", "rollback", "--socket",
                   loop.admin_socket)
    assert live.returncode == 0, live.stderr
    assert dry.stdout.splitlines() == live.stdout.splitlines()
    assert len(live.stdout.splitlines()) >= 2
