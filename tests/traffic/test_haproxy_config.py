"""The rendered HAProxy objects: every ``haproxy.cfg`` (every example, every state) passes
``haproxy -c`` from Debian's package; the weight scale is exact; the pod template rolls when the
config changes; the runtime commands come in a safe order."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from haproxy_loopback import haproxy_binary
from hypothesis import given
from hypothesis import strategies as st
from traffic_support import PROVIDER_SETTINGS, all_examples, spec_with

from dgdgen.pipeline.prepare import prepare
from dgdgen.render import render_state
from dgdgen.traffic.haproxy import MAX_WEIGHT, checksum, haproxy_weights
from dgdgen.traffic.runtime import Current, Target, commands

needs_haproxy = pytest.mark.skipif(
    haproxy_binary() is None,
    reason="the haproxy binary is not installed (Debian package `haproxy`; CI installs it)",
)

# The only warnings a rendered config may give off-cluster: no state file yet, and the frontend
# Services' cluster DNS names do not resolve here (init-addr ... none keeps such a server in
# maintenance until the resolvers find it).
ALLOWED_WARNING = re.compile(
    r"Can't open global server state file|could not resolve address|Warnings were found"
)


def _configs(spec: Path) -> dict[str, str]:
    prepared = prepare(str(spec))
    out = {}
    for state in prepared.plan.all_states():
        # the proxy's config (an example with a quality gate also renders its prompt set)
        cm = [m for m in render_state(prepared, state)
              if m.kind == "ConfigMap" and "haproxy.cfg" in m.obj["data"]]
        assert len(cm) == 1
        out[state.label] = cm[0].obj["data"]["haproxy.cfg"]
    return out


def haproxy_check(text: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    cfg = tmp / "haproxy.cfg"
    cfg.write_text(text)
    binary = haproxy_binary()
    assert binary
    return subprocess.run([binary, "-c", "-f", str(cfg)], capture_output=True, text=True,
                          timeout=60, check=False)


def _assert_valid(r: subprocess.CompletedProcess[str], label: str) -> None:
    out = r.stdout + r.stderr
    assert r.returncode == 0, (label, out)
    assert "Configuration file is valid" in out, (label, out)
    for line in out.splitlines():
        if "[WARNING]" in line or "[ALERT]" in line:
            assert ALLOWED_WARNING.search(line), (label, line)


@needs_haproxy
@pytest.mark.parametrize("example", all_examples(), ids=lambda p: p.name)
def test_every_rendered_config_passes_haproxy_c(example: Path, tmp_path: Path) -> None:
    spec = example / "rollout.yaml"
    if "provider: haproxy" not in spec.read_text():
        spec = spec_with(example, tmp_path / "spec", PROVIDER_SETTINGS["haproxy"])
    for label, text in _configs(spec).items():
        _assert_valid(haproxy_check(text, tmp_path), f"{example.name}/{label}")


@needs_haproxy
def test_haproxy_c_rejects_what_haproxy_rejects(tmp_path: Path) -> None:
    """The check is not vacuous: a weight outside 0..256 fails it (HAProxy 2.6's
    configuration manual, `weight`)."""
    example = next(p for p in all_examples() if p.name == "sglang-disagg-transfer-backend")
    text = _configs(example / "rollout.yaml")["step-02"]
    bad = re.sub(r"weight 150\b", "weight 300", text)
    assert bad != text
    r = haproxy_check(bad, tmp_path)
    assert r.returncode != 0 and "not within 0 and 256" in r.stdout + r.stderr


def test_config_choices_are_rendered() -> None:
    example = next(p for p in all_examples() if p.name == "sglang-disagg-transfer-backend")
    text = _configs(example / "rollout.yaml")["step-01"]
    for line in (
        "option http-no-delay", "balance roundrobin", "option httpchk GET /v1/models/Qwen%2FQwen3-0.6B/ready",
        "http-check expect status 200", "timeout server 1800s", "monitor-uri /healthz",
        "monitor fail if { nbsrv(be_frontends) lt 1 }", "server-state-file",
        "load-server-state-from-file global", "observe layer7 error-limit 10 on-error mark-down",
        "stick on req.hdr(X-Session-Id)", "expose-fd listeners", "hard-stop-after 1800s",
        "server nixl sglang-disagg-fe.inference.svc.cluster.local:8000 weight 190\n",
        "server mooncake mooncake-sglang-disagg-fe.inference.svc.cluster.local:8000 weight 10\n",
    ):
        assert line in text, line
    directives = "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))
    for absent in ("leastconn", "static-rr", "balance random", "timeout tunnel", "compression"):
        assert absent not in directives, absent
    base = _configs(example / "rollout.yaml")["step-00"]
    assert "weight 0 disabled" in base  # the candidate is present as a server, in maintenance


def test_pod_template_rolls_when_the_config_changes() -> None:
    example = next(p for p in all_examples() if p.name == "sglang-disagg-transfer-backend")
    prepared = prepare(str(example / "rollout.yaml"))
    sums = {}
    for state in prepared.plan.all_states():
        ms = {m.kind: m.obj for m in render_state(prepared, state)
              if m.kind in ("ConfigMap", "Deployment")}
        cm, dep = ms["ConfigMap"], ms["Deployment"]
        ann = dep["spec"]["template"]["metadata"]["annotations"]
        assert ann["checksum/config"] == checksum(cm["data"]["haproxy.cfg"])
        sums[state.label] = ann["checksum/config"]
        # immutable and named after its content; the pods mount that name, so a new config is
        # a new pod template and an old pod keeps the config it started with
        assert cm["immutable"] is True
        assert cm["metadata"]["name"] == f"qwen-sglang-haproxy-{ann['checksum/config'][:10]}"
        [volume] = [v for v in dep["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
        assert volume["configMap"] == {"name": cm["metadata"]["name"]}
        # the new ConfigMap exists (wave 0, grow) before the Deployment mounts it (wave 1, shift)
        waves = (cm["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"],
                 dep["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        assert waves == ("0", "1"), state.label
    # a rollback state repeats the config of the state it restores (rollback-NN: step NN,
    # rollback: the baseline); every other state has its own
    repeats = {s.label: f"step-{s.index:02d}" for s in prepared.plan.rollback_steps}
    repeats["rollback"] = "step-00"
    for label, same in repeats.items():
        assert sums[label] == sums[same], label
    forward = {k: v for k, v in sums.items() if k not in repeats}
    assert len(set(forward.values())) == len(forward)


@given(st.lists(st.integers(0, 100), min_size=1, max_size=16).filter(lambda ws: sum(ws) > 0))
def test_haproxy_weights_are_exact(percents: list[int]) -> None:
    weights = haproxy_weights(percents)
    assert all(0 <= w <= MAX_WEIGHT for w in weights)
    # the same ratios, with no rounding: w_i * p_j == w_j * p_i
    for i in range(len(percents)):
        for j in range(len(percents)):
            assert weights[i] * percents[j] == weights[j] * percents[i]


def test_haproxy_weights_scale_and_refusals() -> None:
    assert haproxy_weights([90, 10]) == (180, 20)
    assert haproxy_weights([100, 0]) == (200, 0)
    assert haproxy_weights([95, 5]) == (190, 10)
    for bad in ([0, 0], [-1, 101], [257, 1]):
        with pytest.raises(ValueError):
            haproxy_weights(bad)


def test_runtime_commands_raise_before_they_lower() -> None:
    be = "be_frontends"
    now = {"old": Current("old", 150, True, True), "new": Current("new", 50, True, True)}
    cmds = commands(be, [Target("old", 100, True), Target("new", 100, True)], now)
    assert cmds == [f"set weight {be}/new 100", f"set weight {be}/old 100"]
    # rollback from 100 % candidate: the stable is enabled first, the candidate leaves last
    now = {"old": Current("old", 0, False, False), "new": Current("new", 200, True, True)}
    cmds = commands(be, [Target("old", 200, True), Target("new", 0, False)], now)
    assert cmds == [
        f"set server {be}/old state ready", f"set weight {be}/old 200",
        f"set weight {be}/new 0", f"set server {be}/new state maint",
    ]
    # nothing to do: nothing sent
    now = {"old": Current("old", 200, True, True), "new": Current("new", 0, False, False)}
    assert commands(be, [Target("old", 200, True), Target("new", 0, False)], now) == []


def test_readiness_path_is_refused_when_the_generations_serve_different_models(
        tmp_path: Path) -> None:
    """One backend has one check path: two served model names need an explicit one (exit 2 at
    the spec's provider line, the field named)."""
    from gen_support import run_cli

    import yaml

    example = next(p for p in all_examples() if p.name == "vllm-agg-blue-green")
    spec = spec_with(example, tmp_path / "spec", PROVIDER_SETTINGS["haproxy"])
    data = yaml.safe_load(spec.read_text())
    assert data["spec"]["traffic"]["haproxy"].pop("healthCheck")  # what spec_with added
    spec.write_text(yaml.safe_dump(data, sort_keys=False))
    r = run_cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "spec.traffic.haproxy.healthCheck.path" in r.stderr
    assert "'Qwen/Qwen3-0.6B', 'Qwen/Qwen3-1.7B'" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()
