"""Whole rollouts rehearsed against the real Dynamo frontend + mocker, HAProxy and Prometheus.

Each scenario runs `dgdgen rehearse` exactly as a user would and reads its JSON report; the
report's figures are computed from what the load generator saw per request (the generation named
by the proxy's response header, status, truncation) and from the gate verdicts that
`dgdgen analyze --record` committed.

Long: each test rehearses a rollout (or its first gated step) on scaled clocks with real processes
starting, baking and draining — 45–150 s each on two CPUs, more beside other tests — so the
module is marked `long` (tests/suite_support.py).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rehearse_support import REPO, rehearse
from svg_layout import assert_reads, axes

pytestmark = [pytest.mark.slow, pytest.mark.rehearse, pytest.mark.long(minutes=3)]

FAST = ("--time-scale", "0.02", "--rate", "20")
# Where no latency gate reads the load — the quality gate sends its own prompts to both
# frontends (the candidate has no traffic at its step), the blue/green switch is ungated — the
# load only has to show where the traffic goes, which a quarter of it does: 5 requests/s
# instead of 20, 60 requests a state, about 7 CPU-seconds less a run
LIGHT = ("--time-scale", "0.02", "--rate", "5")
HEALTHY = ("--time-scale", "0.05", "--rate", "25", "--min-requests", "150")


NS = "{http://www.w3.org/2000/svg}"


def _chart_reads_at_a_glance(chart: Path, data: dict) -> ET.Element:
    """The rehearsal chart of a real run: no text overlaps or is crossed by a line, every panel
    has its value axis and the time axis (tests/svg_layout.py; the drawing itself is tested
    on every shape in tests/rehearse/test_chart.py), and the legend names each generation,
    planned vs observed and the gate dots."""
    svg = ET.parse(chart).getroot()
    assert_reads(svg)
    for panel in svg.iter(f"{NS}g"):
        if panel.get("class") != "panel":
            continue
        found = axes(panel)
        assert found["y"][1][0].startswith("0"), (panel.get("data-title"), found)
        xs = found["x"][1]
        assert len(xs) >= 3 and all(t.endswith(" s") for t in xs), xs
        assert float(xs[-1][:-2]) <= data["wallSeconds"] + 1e-6
    legend = " | ".join(t.text or "" for t in svg.iter(f"{NS}text")
                        if t.get("class") == "legend-label")
    for gen in data["states"][0]["planned"]:
        assert gen in legend
    for words in ("planned candidate share", "observed candidate share", "gate passed",
                  "gate not passed"):
        assert words in legend, legend
    return svg


def _moving_states(data: dict) -> list[dict]:
    return [s for s in data["states"] if s["splitErrorPoints"] is not None]


def test_healthy_candidate_reaches_cleanup(tmp_path: Path) -> None:
    # Enough samples that a p99 compared with the stable's is not a coin toss on a busy machine
    # (with 30 requests per window it is little more than the slowest one).
    # The example as bundled: its stable frontend migrates a request routed to a stopping worker
    # (examples/SOURCES.md); without that, step 2's shrink may lose one (test_no_loss.py).
    spec = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"
    code, data, log = rehearse(tmp_path, str(spec), *HEALTHY)
    assert code == 0, log
    assert data["result"] == "completed"
    assert data["states"][-1]["state"] == "cleanup"
    assert data["requests"] > 500 and data["streams"] > 0
    assert data["failed"] == 0 and data["truncated"] == 0, (data["failures"], log)
    for s in _moving_states(data):
        assert s["splitErrorPoints"] <= 3.0, s
    gated = [s for s in data["states"] if s["gate"]]
    assert gated and all(s["verdict"] == "Successful" for s in gated), gated
    # GAMMA: callers outside the mesh follow the parent Service's selector, not the route's
    # weights: the stable's frontend until the candidate takes all the traffic, then the
    # candidate's (finding 1: a parent left on a workerless stable fails them here)
    outside = data["outOfMesh"]
    assert outside["service"] == "qwen-router" and outside["requests"] > 20, outside
    assert outside["failed"] == 0 and outside["truncated"] == 0, (data["failures"], log)
    served = {s["state"]: s["servedBy"] for s in outside["states"]}
    stable, candidate = list(data["states"][0]["planned"])
    assert set(served["step-00"]) == {stable} and set(served["cleanup"]) == {candidate}, served
    # every planned generation with weight got traffic; none without weight did
    for s in _moving_states(data):
        for gen, w in s["planned"].items():
            assert (s["observed"][gen] > 0) == (w > 0), s
    # the rendered drain hooks ran against the real frontends: the step that empties the stable
    # and the cleanup drain it, each well before its (scaled) request timeout of 90 s
    assert len(data["drains"]) >= 2, data["drains"]
    assert all(d["exitCode"] == 0 and d["seconds"] < 60 for d in data["drains"]), data["drains"]
    svg = _chart_reads_at_a_glance(tmp_path / "report" / "chart.svg", data)
    ns = NS
    assert svg.findall(f".//{ns}path[@class='observed']")
    assert len(svg.findall(f".//{ns}circle[@class='gate']")) == len(gated)
    assert "| step-01 |" in (tmp_path / "report" / "report.md").read_text()


def test_slow_candidate_is_rolled_back(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-block-size/rollout.yaml",
                               *FAST, "--min-requests", "30", "--candidate-slowdown", "4")
    assert code == 1, log
    assert data["result"] == "rolled-back"
    first_gate = next(s for s in data["states"] if s["gate"])
    assert first_gate["verdict"] == "Failed", first_gate
    assert data["states"][-1]["state"] == "rollback"
    assert data["failed"] == 0 and data["truncated"] == 0, log
    back = data["states"][-1]
    stable = next(g for g, w in back["planned"].items() if w == 100)
    assert back["observed"][stable] == 100.0, back
    # where the wall time went: the phases add up to it, the gated step baked at least its
    # scaled pause (the wait its log line names) between its traffic moving and its gate's
    # verdict — a floor, however long a busy machine takes over the other phases (their share
    # of the state is no measure: 19 s of apply and 9 s of gate on a loaded run) —, the one gate
    # took some time, and the report and summary say so
    by = data["wallSecondsBy"]
    assert sum(by.values()) == pytest.approx(data["wallSeconds"], abs=0.5), by
    baked = re.search(r"\[step-01\] bake (\d+) s", log)
    assert baked, log  # the log names the step's bake
    wait = float(baked[1])
    moved = next(e["t"] for e in data["events"] if e["event"].startswith("step-01: traffic moved"))
    gated = next(e["t"] for e in data["events"] if e["event"].startswith("step-01: gate "))
    assert gated - moved >= wait - 0.5 and by["bake"] > 0, (wait, moved, gated, by)
    assert by["gates"] > 0 and by["GitOps commands"] > 0, by
    assert "Wall time: GitOps commands " in (tmp_path / "report" / "report.md").read_text()
    assert "wall time: GitOps commands " in log
    # the candidate's latency lines end with its traffic: no point later than two seconds
    # (a query step and the drain of the requests in flight) after the rollback moved it away
    svg = _chart_reads_at_a_glance(tmp_path / "report" / "chart.svg", data)
    candidate = next(g for g, w in back["planned"].items() if w == 0)
    width = float(svg.get("width", 0))
    per_second = (width - 70 - 20) / max(data["wallSeconds"], 1.0)
    for panel in svg.iter(f"{NS}g"):
        if panel.get("data-title") not in ("TTFT p95 (s)", "ITL p95 (s)"):
            continue
        rollback_x = max(float(line.get("x1", 0)) for line in panel.iter(f"{NS}line")
                         if line.get("class") == "state-start")
        paths = [p for p in panel.iter(f"{NS}path") if p.get("data-generation") == candidate]
        assert paths, panel.get("data-title")
        last = max(float(pt.split(",")[0]) for p in paths
                   for pt in p.get("d", "").replace("M", " ").replace("L", " ").split())
        assert last <= rollback_x + 2.5 * per_second, (panel.get("data-title"), last, rollback_x)


def test_gate_that_cannot_collect_its_sample_is_inconclusive(tmp_path: Path) -> None:
    # 5 % of 20 requests/s for a scaled 12 s bake cannot reach the spec's derived minimum sample
    # (the plan's "min requests", kept by `--min-requests spec`): the gate must say Inconclusive,
    # and Inconclusive never passes.
    # (the rendered haproxy.cfg, its weights moved through the runtime API first)
    code, data, log = rehearse(tmp_path, "examples/sglang-disagg-transfer-backend/rollout.yaml",
                               *FAST, "--min-requests", "spec", "--traffic-path", "runtime-api")
    assert code == 1, log
    first_gate = next(s for s in data["states"] if s["gate"])
    assert first_gate["verdict"] == "Inconclusive", first_gate
    # said before the run started, with the ways out
    warned = log.index("warning: gate 'slo' of step 1 cannot collect its sample")
    assert warned < log.index("load: "), log
    assert "--rate " in log[warned:] and "--min-requests " in log[warned:]
    assert data["result"] == "rolled-back"
    assert data["failed"] == 0 and data["truncated"] == 0, log
    moves = [e["event"] for e in data["events"] if "traffic set-weights" in e["event"]]
    assert moves and all(m.endswith("exit 0") for m in moves), moves
    assert data["proxy"] == "rendered haproxy.cfg"


def test_every_frontend_replica_of_a_service_serves(tmp_path: Path) -> None:
    # Two frontend replicas per generation behind each generation's Service: as kube-proxy
    # would, the Service spreads its connections over both, so each replica serves requests —
    # counted by each frontend itself (its dynamo_frontend_requests_total), not by the proxy.
    import shutil

    from dgdgen import yamlio

    src = REPO / "examples" / "sglang-disagg-transfer-backend"
    dgd = yamlio.load_file(str(src / "dgd.yaml"))[0].data
    dgd["spec"]["services"]["Frontend"]["replicas"] = 2
    (tmp_path / "dgd.yaml").write_text(yamlio.dump(dgd))
    shutil.copy(src / "rollout.yaml", tmp_path / "rollout.yaml")
    spec = yamlio.load_file(str(tmp_path / "rollout.yaml"))[0].data
    spec["spec"]["steps"] = [{"weight": 50, "pause": "10m"}, {"weight": 100}]
    spec["spec"]["analysis"] = {"enabled": False}
    (tmp_path / "rollout.yaml").write_text(yamlio.dump(spec))
    code, data, log = rehearse(tmp_path, str(tmp_path / "rollout.yaml"), *FAST)
    assert code == 0, log
    assert data["failed"] == 0 and data["truncated"] == 0, log
    frontends = data["frontends"]
    for gen in ("nixl", "mooncake"):
        mine = [f for f in frontends if f["generation"] == gen]
        assert len(mine) == 2, frontends
        assert all(f["requests"] > 0 for f in mine), frontends
    half = next(s for s in data["states"] if s["planned"].get("mooncake") == 50)
    assert half["splitErrorPoints"] <= 3.0, half


def test_blue_green_switch_service_moves_all_traffic(tmp_path: Path) -> None:
    # Provider `none`: clients call the switch Service, whose selector moves to green at the
    # 100 % step. The example's own candidate serves another model (the plan says so) and its gate
    # is a probe, which only a cluster can run; here green changes a scheduling flag and the
    # first step bakes ungated, so the rehearsal shows the switch itself.
    import shutil

    from dgdgen import yamlio

    src = Path(__file__).resolve().parents[2] / "examples" / "vllm-agg-blue-green"
    shutil.copy(src / "dgd.yaml", tmp_path / "dgd.yaml")
    spec = yamlio.load_file(str(src / "rollout.yaml"))[0].data
    spec["spec"]["candidate"]["components"] = {
        "VllmDecodeWorker": {"args": {"set": {"--max-num-seqs": 64}}}}
    spec["spec"]["steps"] = [{"weight": 0, "pause": "10m"}, {"weight": 100, "pause": "10m"}]
    spec["spec"]["analysis"] = {"enabled": False}
    (tmp_path / "rollout.yaml").write_text(yamlio.dump(spec))
    code, data, log = rehearse(tmp_path, str(tmp_path / "rollout.yaml"), *LIGHT)
    assert code == 0, log
    assert data["proxy"].startswith("HAProxy standing in")
    assert data["failed"] == 0 and data["truncated"] == 0, log
    switched = next(s for s in data["states"] if s["planned"].get("green") == 100)
    assert switched["observed"]["green"] == 100.0, switched
    before = next(s for s in data["states"] if s["state"] == "step-01")
    assert before["observed"]["blue"] == 100.0, before


def _quality_spec(tmp: Path, candidate_args: dict, prompts: int) -> str:
    """Blue/green with the quality gate (scorer `length`) on the first step, where the candidate
    has no traffic yet: the gate sends its own prompts to both real frontends."""
    import shutil

    from dgdgen import yamlio

    src = Path(__file__).resolve().parents[2] / "examples" / "vllm-agg-blue-green"
    (tmp / ".git").mkdir(exist_ok=True)
    shutil.copy(src / "dgd.yaml", tmp / "dgd.yaml")
    spec = yamlio.load_file(str(src / "rollout.yaml"))[0].data
    spec["spec"]["candidate"]["components"] = {"VllmDecodeWorker": {"args": {"set": candidate_args}}}
    spec["spec"]["steps"] = [{"weight": 0, "pause": "10m", "gate": "quality"},
                             {"weight": 100, "pause": "10m"}]
    spec["spec"]["analysis"] = {
        "enabled": True, "monitorLabels": {},
        "quality": {"prompts": "prompts.jsonl", "model": "Qwen/Qwen3-0.6B", "scorer": "length",
                    "maxTokens": 48, "seed": 1, "effect": 0.25,
                    "image": "registry.example/dgdgen:1"},
    }
    (tmp / "rollout.yaml").write_text(yamlio.dump(spec))
    (tmp / "prompts.jsonl").write_text("".join(
        f'{{"prompt": "Say something about item {i}."}}\n' for i in range(prompts)))
    return str(tmp / "rollout.yaml")


def test_quality_gate_rolls_back_a_truncating_candidate(tmp_path: Path) -> None:
    # A candidate with a 64-token context window answers each prompt with fewer tokens than the
    # stable's 48: the quality gate fails at the first step and the rollout is rolled back.
    from dgdgen.analysis.paired import sign_test_samples

    n = sign_test_samples(0.5, 0.25)
    spec = _quality_spec(tmp_path, {"--max-model-len": 64}, n)
    code, data, log = rehearse(tmp_path, spec, *LIGHT)
    assert code == 1, log
    first = next(s for s in data["states"] if s["gate"])
    assert first["state"] == "step-01" and first["gate"] == "quality", first
    assert first["verdict"] == "Failed", (first, log)
    assert data["result"] == "rolled-back"
    assert data["states"][-1]["state"] == "rollback"
    # the report shows the gate like the latency gates: its verdict and the pairs behind it
    report = (tmp_path / "report" / "report.md").read_text()
    assert "| quality: Failed |" in report
    assert f"candidate worse: 0 wins, {n} losses, 0 ties" in report
    # and what the plan said it decides: the loss share and the pairs it needs
    assert first["gatePlan"][0] == "gate quality: quality", first
    at = report.index("### step-01: quality")
    planned = report[at:report.index("```", at)]
    assert (f"- quality gate (step 1): {n} prompts of quality-prompts.jsonl to the stable and "
            f"the candidate ({2 * n} requests), scorer length; Failed when the candidate loses "
            f"significantly more than 0.5 of the decided pairs (sign test), Inconclusive below "
            f"{n} scored pairs") in planned, planned


@pytest.mark.parametrize(("prompts_less", "verdict"), [(0, "Successful"), (1, "Inconclusive")])
def test_quality_gate_equal_candidate(tmp_path: Path, prompts_less: int, verdict: str) -> None:
    # The same engine limits on both sides: every pair ties. Enough pairs pass; one pair fewer
    # than the minimum sample is Inconclusive, which never passes.
    from dgdgen.analysis.paired import sign_test_samples

    n = sign_test_samples(0.5, 0.25) - prompts_less
    spec = _quality_spec(tmp_path, {"--max-num-seqs": 64}, n)
    code, data, log = rehearse(tmp_path, spec, *LIGHT)
    first = next(s for s in data["states"] if s["gate"])
    assert first["verdict"] == verdict, (first, log)
    report = (tmp_path / "report" / "report.md").read_text()
    assert f"| quality: {verdict} |" in report and f"0 losses, {n} ties" in report
    if verdict == "Successful":
        assert code == 0 and data["result"] == "completed", log
    else:
        assert code == 1 and data["result"] == "rolled-back", log
