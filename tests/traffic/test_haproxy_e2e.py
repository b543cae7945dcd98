"""End-to-end proof on loopback: a real HAProxy started from the config dgdgen renders for
``examples/sglang-disagg-transfer-backend``, two fake Dynamo frontends streaming SSE, and at least
100 concurrent streams while the weights move through every step of the plan and back
(rollback) — once through the runtime API (the real ``dgdgen traffic set-weights`` command) and
once through config reloads (the rendered config of each step, hitless master-worker reload).

Asserted per state: the split of new requests is within ±2 points of the plan (a generation in
maintenance gets none at all); no stream fails or is truncated (every token in order, then
``data: [DONE]`` and the closing chunk); HAProxy adds under 20 ms median per token compared with
the same load sent straight to the frontends.

The config is the rendered one with only addresses, ports and paths changed for loopback
(:meth:`haproxy_loopback.Loopback.adapt` checks that nothing else changes). Why ±2 points is a sound
bound with 200 requests per state: the backend balances with ``roundrobin``, a deterministic
smooth weighted round robin, so the split of consecutive requests is exact to about one request
whatever the concurrency; a random balancer would need thousands of requests per state for the
same bound (binomial spread). Set ``DGDGEN_E2E_REPORT=path.json`` to write the measured figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path

import pytest
from gen_support import REPO
from haproxy_loopback import (
    HAProxy,
    Load,
    Loopback,
    Phase,
    fake_frontends,
    free_port,
    haproxy_binary,
    median_delay,
    quantile_delay,
    reload_and_wait,
)

pytestmark = pytest.mark.skipif(
    haproxy_binary() is None,
    reason="the haproxy binary is not installed (Debian package `haproxy`; CI installs it)",
)

SPEC = REPO / "examples" / "sglang-disagg-transfer-backend" / "rollout.yaml"
CONCURRENCY = 120
PER_STATE = 200  # counted requests per state
TOKENS = 12
INTERVAL_MS = 40
TOLERANCE = 2.0  # percentage points (the bound)
MAX_ADDED_MS = 20.0


def _deadline(t0: float) -> None:
    # A broken proxy must fail the test, not hang CI (a healthy run takes ~10 s per mode).
    assert time.monotonic() - t0 < 120, "the load did not progress within 120 s"


def _prepared():  # type: ignore[no-untyped-def]
    from dgdgen.pipeline.prepare import prepare

    return prepare(str(SPEC))


def _configs(prepared, states):  # type: ignore[no-untyped-def]
    """Rendered haproxy.cfg of each state, taken from the rendered ConfigMap."""
    from dgdgen.render import render_state

    out = {}
    for state in states:
        cms = [m for m in render_state(prepared, state) if m.kind == "ConfigMap"]
        assert len(cms) == 1
        out[state.label] = cms[0].obj["data"]["haproxy.cfg"]
    return out


def _planned(prepared, state):  # type: ignore[no-untyped-def]
    from dgdgen.traffic.weights import state_backends

    backends = state_backends(prepared, state)
    return ({b.key: b.weight for b in backends if b.serving},
            {b.key for b in backends if not b.serving})


async def _run(mode: str, tmp: Path) -> dict[str, object]:
    prepared = _prepared()
    plan = prepared.plan
    states = list(plan.steps) + [plan.rollback]
    configs = _configs(prepared, states)
    names = [plan.stable_revision, plan.candidate_revision]
    ns = prepared.loaded.spec.metadata.namespace
    with fake_frontends(names) as ports:
        from dgdgen.traffic.weights import state_backends

        backends = state_backends(prepared, plan.steps[1])
        loop = Loopback(
            tmp=tmp, frontend_port=free_port(), stats_port=free_port(), peer_port=free_port(),
            servers={f"{b.service}.{ns}.svc.cluster.local:8000": ports[b.key] for b in backends},
        )
        cfg = tmp / "haproxy.cfg"
        cfg.write_text(loop.adapt(configs["step-00"]))
        proxy = HAProxy(cfg, loop, tmp / "haproxy.log")

        # Baseline: the same load straight to the frontends.
        direct = []
        for name in names:
            d = Load(ports[name], CONCURRENCY // 2, TOKENS, INTERVAL_MS)
            direct.append(d)
            d.start()
        await asyncio.sleep(0.5)  # warm-up, not measured
        warm = time.monotonic()
        await asyncio.sleep(1.5)
        for d in direct:
            await d.stop()
        direct_streams = [s for d in direct for s in d.streams if s.sent > warm]

        proxy.start()
        load = Load(loop.frontend_port, CONCURRENCY, TOKENS, INTERVAL_MS)
        phases: list[Phase] = []
        try:
            load.start()
            t0 = time.monotonic()
            for i, state in enumerate(states):
                planned, disabled = _planned(prepared, state)
                phase = Phase(state.label, planned, disabled)
                if i == 0:
                    phase.apply_start = phase.apply_end = t0
                else:
                    # Let the load reach full concurrency before every change.
                    while load.in_flight < CONCURRENCY - 5:
                        _deadline(t0)
                        await asyncio.sleep(0.005)
                    phase.in_flight_at_change = load.in_flight
                    phase.apply_start = time.monotonic()
                    phases[-1].next_apply_start = phase.apply_start
                    if mode == "runtime":
                        proc = await asyncio.create_subprocess_exec(
                            sys.executable, "-m", "dgdgen", "traffic", "set-weights", str(SPEC),
                            "--step", state.label.removeprefix("step-").lstrip("0") or "0",
                            "--socket", loop.admin_socket,
                            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                            cwd=str(REPO),
                        )
                        _, err = await proc.communicate()
                        assert proc.returncode == 0, err.decode()
                    else:
                        tmp_cfg = cfg.with_suffix(".new")
                        tmp_cfg.write_text(loop.adapt(configs[state.label]))
                        os.replace(tmp_cfg, cfg)
                        await asyncio.to_thread(reload_and_wait, loop.master_socket)
                    phase.apply_end = time.monotonic()
                phases.append(phase)
                while load.count_since(phase.apply_end) < PER_STATE:
                    _deadline(t0)
                    await asyncio.sleep(0.02)
            phases[-1].next_apply_start = time.monotonic()
            await load.stop()
        finally:
            proxy.stop()
        elapsed = time.monotonic() - t0

    failed = [s for s in load.streams + direct_streams if not s.ok]
    results: dict[str, object] = {
        "mode": mode,
        "streams": len(load.streams),
        "failed": len(failed),
        "failures": [f"{s.status} {s.error} events={s.events} done={s.done}" for s in failed[:5]],
        "elapsed_s": round(elapsed, 1),
        "concurrency": CONCURRENCY,
        "min_in_flight_at_change": min(p.in_flight_at_change for p in phases[1:]),
        "direct_median_ms": round(median_delay(direct_streams), 2),
        "proxy_median_ms": round(median_delay([s for s in load.streams if s.ok]), 2),
        "direct_p95_ms": round(quantile_delay(direct_streams, 0.95), 2),
        "proxy_p95_ms": round(quantile_delay([s for s in load.streams if s.ok], 0.95), 2),
        "states": [],
    }
    for p in phases:
        counted = [s for s in load.streams if p.counted(s)]
        by = {name: sum(1 for s in counted if s.backend == name) for name in names}
        results["states"].append({  # type: ignore[attr-defined]
            "state": p.name,
            "planned": {n: p.planned.get(n, 0) for n in names},
            "measured": {n: round(100 * by[n] / len(counted), 2) for n in names},
            "requests": len(counted),
            "disabled": sorted(p.disabled),
            "disabled_hits": sum(by[n] for n in p.disabled),
            "in_flight_at_change": p.in_flight_at_change,
        })
    results["added_median_ms"] = round(
        results["proxy_median_ms"] - results["direct_median_ms"], 2  # type: ignore[operator]
    )
    return results


def _check(results: dict[str, object]) -> None:
    report = os.environ.get("DGDGEN_E2E_REPORT")
    if report:
        existing = json.loads(Path(report).read_text()) if Path(report).exists() else {}
        existing[str(results["mode"])] = results
        existing["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
        Path(report).write_text(json.dumps(existing, indent=2) + "\n")
    summary = json.dumps(results, indent=1)
    assert results["failed"] == 0, summary
    assert results["min_in_flight_at_change"] >= 100, summary  # type: ignore[operator]
    for st in results["states"]:  # type: ignore[attr-defined]
        assert st["requests"] >= PER_STATE, summary
        assert st["disabled_hits"] == 0, summary
        for name, pct in st["planned"].items():
            assert abs(st["measured"][name] - pct) <= TOLERANCE, (st["state"], name, summary)
    assert results["added_median_ms"] < MAX_ADDED_MS, summary  # type: ignore[operator]


def test_weights_move_through_the_runtime_api(tmp_path: Path) -> None:
    _check(asyncio.run(_run("runtime", tmp_path)))


def test_weights_move_through_config_reloads(tmp_path: Path) -> None:
    _check(asyncio.run(_run("reload", tmp_path)))
