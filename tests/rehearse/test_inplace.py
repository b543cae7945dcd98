"""The in-place strategy rehearsed as the Dynamo operator rolls it, and side by side with the gated
rollout, against the real Dynamo frontend + mocker (and, for the gated runs, HAProxy and
Prometheus).

Every figure asserted here comes from the run's own report: which configuration served each
request is what the frontend answered for it (``nvext.worker_id``), matched with the worker ids the
workers' own metrics carry; the worker counts are the pods the rehearsal had available when the
request started.

Long: each test rehearses a rollout (or its first gated step) on scaled clocks with real processes
starting, baking and draining — 15–180 s (the side-by-side run the longest) each on two CPUs, more beside other tests — so the
module is marked `long` (tests/suite_support.py).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from rehearse_support import REPO, rehearse, require_runtime

from dgdgen import yamlio
from dgdgen.rehearse.inplace_report import INCOMPLETE_IDLE

pytestmark = [pytest.mark.slow, pytest.mark.rehearse, pytest.mark.long(minutes=2)]


def _in_flight(failure: dict[str, Any], moment: float) -> bool:
    """Whether a failed request was in flight at ``moment`` (it started before and ended after
    it), or started within 0.5 s after it (routed to what that moment just took away)."""
    start, end = failure["t"], failure["t"] + failure["seconds"]
    return start - 0.5 <= moment <= end + 0.05


def _assert_failures_explained(data: dict[str, Any]) -> None:
    """The operator's roll stops old workers while they serve: a request the frontend routed to a
    worker just as it got SIGTERM can fail with 503 (and, in a disaggregated graph, one routed to
    an old decode worker whose namespace just lost its last prefill worker). In a disaggregated
    graph the frontend also lists the new namespace a little before it activates its prefill
    router, and a request routed there in between gets 503 (the report's prefillRouterWindows,
    read off the frontends' logs). The rehearsal reports such a request and exits 1; anything
    else would be a fault of the rehearsal itself (a frontend switch, a Service without a ready
    pod). No stream may be cut: a stopped worker finishes what it serves."""
    assert data["truncated"] == 0, data["failures"]
    stops = [e["t"] for e in data["events"] if e["event"].startswith("stop stable-")
             and not e["event"].startswith("stop stable-frontend")]
    windows = [(w["start"], w["end"]) for w in data["prefillRouterWindows"]]
    for f in data["failures"]:
        # in flight at a stop: a 503 comes while the request is routed (before any token) —
        # in a disaggregated graph to its decode worker only after the prefill and the KV
        # transfer (dgdgen.runtime.mocker.REHEARSAL_KV_TRANSFER), so the stop can come a few
        # tenths of a second after the request started — or started within 0.5 s after it;
        # or in flight during a window (its 503 answered within it; the times rounded)
        in_window = any(f["t"] <= end + 0.01 and f["t"] + f["seconds"] >= start - 0.01
                        for start, end in windows)
        assert f["status"] == 503 and (in_window or any(_in_flight(f, t) for t in stops)), (
            f, stops, windows)
    assert data["exitCode"] == (1 if data["failed"] else 0), data


def _segments_with_traffic(data: dict[str, Any], minimum: int = 20) -> list[dict[str, Any]]:
    return [s for s in data["segments"] if s["requests"] >= minimum
            and s["observedCandidatePercent"] is not None]


def test_in_place_example_end_to_end(tmp_path: Path) -> None:
    # `isolation: auto` resolves to in-place for this example (a log level): `dgdgen rehearse`
    # plays the operator's roll of the rendered DGD, its capacity budget as the annotations.
    code, data, log = rehearse(tmp_path, "examples/vllm-agg-auto/rollout.yaml",
                               "--pod-startup", "2")
    assert data, log
    assert code == data["exitCode"], log
    assert data["strategy"].startswith("in-place")
    _assert_failures_explained(data)
    # each worker generation in its own hash-suffixed namespace, the frontend by prefix
    ns = data["namespaces"]
    assert ns["stable"] != ns["candidate"], ns
    assert all(n.startswith("inference-vllm-agg-") for n in ns.values()), ns
    assert data["frontend"] == "DYN_NAMESPACE_PREFIX=inference-vllm-agg"
    assert data["budgets"]["VllmDecodeWorker"]["maxSurge"] == 1
    assert data["budgets"]["VllmDecodeWorker"]["maxUnavailable"] == 0
    assert data["budgets"]["VllmDecodeWorker"]["source"].startswith("annotations")
    # both configurations served, the stable alone before the edit, the candidate alone after
    assert data["served"].get("stable", 0) > 0 and data["served"].get("candidate", 0) > 0, data
    # every request names the worker that served it, but one that failed (a 503 at a worker's
    # stop, allowed above) before a worker was chosen
    assert data["served"].get("unattributed", 0) == data["failed"], (data["served"],
                                                                       data["failures"])
    before = [s for s in data["segments"] if s["end"] <= data["editAt"] + 1e-6]
    after = [s for s in data["segments"] if s["start"] >= data["rolledAt"] - 1e-6]
    assert any(s["observedCandidatePercent"] == 0.0 for s in before if s["requests"]), before
    assert any(s["observedCandidatePercent"] == 100.0 for s in after if s["requests"]), after
    # the surge pod was created at the edit and its process started --pod-startup later
    events = [e["event"] for e in data["events"]]
    assert any(e.startswith("create pod candidate-vllmdecodeworker-0") for e in events), events
    created = next(e["t"] for e in data["events"] if e["event"].startswith("create pod"))
    started = next(e["t"] for e in data["events"]
                   if e["event"].startswith("start worker candidate-"))
    assert started - created >= 2.0 - 0.05, data["events"]
    svg = ET.parse(tmp_path / "report" / "chart.svg").getroot()
    ns_svg = "{http://www.w3.org/2000/svg}"
    assert svg.findall(f".//{ns_svg}path[@class='observed']")
    assert len(svg.findall(f".//{ns_svg}path[@class='workers']")) == 2
    md = (tmp_path / "report" / "report.md").read_text()
    assert "No gate, no pause, no rollback but another roll" in md


def test_a_changed_frontend_is_replaced_behind_its_service(tmp_path: Path) -> None:
    # The image bump changes the frontend too: it is not hashed, the operator replaces it in
    # place (surge first with the defaults), and its Service moves to the new pod before the old
    # one gets SIGTERM. No request may fail for it (the helper counts only worker stops).
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-image-bump/rollout.yaml",
                               "--in-place", "--pod-startup", "1")
    assert data, log
    assert code == data["exitCode"], log
    assert data["frontendRolled"] is True
    assert data["budgets"]["Frontend"]["maxSurge"] == 1
    events = [e["event"] for e in data["events"]]
    start = events.index(next(e for e in events if e.startswith("start frontend candidate-")))
    ready = events.index("candidate-frontend-0 available")
    stop = events.index("stop stable-frontend-0 (SIGTERM)")
    assert start < ready < stop, events
    _assert_failures_explained(data)


def _four_replica_spec(tmp: Path) -> Path:
    """vllm-agg-auto with four worker replicas: the roll has five stretches (0, 25, 50, 75,
    100 % of the workers on the new configuration), one replaced pod at a time (maxSurge 1,
    maxUnavailable 0 from the spec's capacity)."""
    src = REPO / "examples" / "vllm-agg-auto"
    dgd = yamlio.load_file(str(src / "dgd.yaml"))[0].data
    dgd["spec"]["services"]["VllmDecodeWorker"]["replicas"] = 4
    (tmp / "dgd.yaml").write_text(yamlio.dump(dgd))
    shutil.copy(src / "rollout.yaml", tmp / "rollout.yaml")
    return tmp / "rollout.yaml"


def test_slow_configuration_share_follows_replaced_pods(tmp_path: Path) -> None:
    spec = _four_replica_spec(tmp_path)
    code, data, log = rehearse(tmp_path, str(spec), "--candidate-slowdown", "4",
                               "--pod-startup", "3", "--rate", "20")
    assert data, log
    assert code == data["exitCode"], log
    _assert_failures_explained(data)
    expected_steps = [s["expectedCandidatePercent"] for s in data["segments"]]
    for share in (0.0, 25.0, 50.0, 75.0, 100.0):
        assert share in expected_steps, expected_steps
    checked = 0
    for s in _segments_with_traffic(data):
        p = s["expectedCandidatePercent"] / 100
        n = s["requests"]
        # The frontend picks a worker per request among all ready workers of every namespace
        # under its prefix, independently of their configuration: the candidate's count in a
        # stretch is (at most) binomial(n, p). Three standard deviations, plus 5 points for the
        # requests that straddle a change (started before the frontend saw a pod go or come:
        # discovery follows within tens of milliseconds, the settle margin is 0.5 s).
        tolerance = 100 * 3 * math.sqrt(p * (1 - p) / n) + 5
        assert abs(s["observedCandidatePercent"] - 100 * p) <= tolerance, (s, tolerance)
        checked += 1
    assert checked >= 4, data["segments"]
    # the share only grows as pods are replaced: nothing in an ungated roll turns it back
    shares = [s["expectedCandidatePercent"] for s in data["segments"]]
    assert shares == sorted(shares), shares
    # the slowed configuration is visibly slower to its clients
    ttft = data["ttftP95Seconds"]
    assert ttft["candidate"] > ttft["stable"], ttft


def test_one_shared_namespace_rejects_the_new_workers(tmp_path: Path) -> None:
    # Older releases, Grove before 1.5.0: old and new workers in one Dynamo namespace. The block
    # size enters the ModelDeploymentCard checksum, so the frontend keeps the incumbent and the
    # new workers, ready by their own /health, take nothing until the last old one goes.
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-block-size/rollout.yaml",
                               "--in-place", "--worker-namespaces", "shared",
                               "--pod-startup", "1")
    assert data, log
    # exit 1 exactly when clients saw a failed or truncated request (the moment the last old
    # prefill or decode worker goes can fail a request or two: that is reported, not hidden)
    assert code == (1 if data["failed"] or data["truncated"] else 0), log
    assert data["truncated"] == 0, data["failures"]
    ns = data["namespaces"]
    assert ns["stable"] == ns["candidate"] == "inference-vllm-v1-disagg-router", ns
    assert data["frontend"] == "--namespace inference-vllm-v1-disagg-router"
    assert data["rejectedWorkers"], data["events"]
    # while any old worker remains, every request is served by the stable configuration
    during = [s for s in data["segments"]
              if s["workers"].get("stable", 0) > 0 and s["observedCandidatePercent"] is not None]
    assert during and all(s["observedCandidatePercent"] == 0.0 for s in during), during
    assert data["served"].get("candidate", 0) > 0, data["served"]  # after the last old one
    # The card check acts on the decode worker set only: a new prefill worker in the same
    # namespace is used by the prefill router next to the old one, so requests are prefilled by
    # the new configuration (block size 32) and decoded by the old (16) — the KV hand-over the
    # isolation exists to prevent. With one old and one new prefill worker for ~2 s at 20
    # requests/s, no such request at all would be a (1/2)^30 chance if the router picked blindly.
    assert data["served"].get("mixed", 0) > 0, data["served"]
    md = (tmp_path / "report" / "report.md").read_text()
    assert "prefilled by a worker of one configuration and decoded by a worker of the other" in md


@pytest.mark.long(minutes=6)
def test_side_by_side_caps_the_slow_candidate_at_the_first_step(tmp_path: Path) -> None:
    """Long: four rehearsals (in place and gated, healthy and slow) on the healthy scenario's
    clock, 5-6 minutes, so it starts among the first."""
    require_runtime()
    report = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "dgdgen", "rehearse",
         str(REPO / "examples/vllm-disagg-block-size/rollout.yaml"), "--side-by-side",
         # The healthy scenario's sample and clock (test_scenarios.HEALTHY): the gates read a
         # TTFT p99, which over 30 requests is their slowest one, and one request a busy
         # machine delayed (5.8x the stable's, docs/rehearse.md) rolled the healthy candidate
         # back in CI; 150 requests a window need time scale 0.05 at 25 requests/s (at 0.02
         # and 0.03 the candidate's window held 117-123: Inconclusive, rolled back as well)
         "--time-scale", "0.05", "--rate", "25", "--min-requests", "150", "--pod-startup", "3",
         "--report", str(report), "--workdir", str(tmp_path / "w")],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, check=False)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    result = json.loads((report / "side-by-side.json").read_text())
    runs = {(r["strategy"], r["candidate"]): r for r in result["runs"]}
    assert set(runs) == {("in-place", "healthy"), ("in-place", "slow"), ("gated", "healthy"),
                         ("gated", "slow")}
    # every run's Dynamo processes start from the one pod server the four share (a server made
    # after the first run, with the tokenizer library's threads running, would start none)
    assert all(r["podServerStarts"] >= 3 for r in result["runs"]), result["runs"]
    gated, inplace = runs[("gated", "slow")], runs[("in-place", "slow")]
    # gated: the first gate fails, the rollback takes the candidate's traffic away; while it had
    # any, its share stayed at the first step's weight (the proxy's smooth weighted round robin
    # holds a split within 3 points, docs/rehearse.md)
    assert gated["result"] == "rolled-back", gated
    first = gated["firstStepPercent"]
    assert gated["candidatePeakSharePercent"] <= first + 3, gated
    assert abs(gated["candidateShareWhileExposed"] - first) <= 5, gated
    assert gated["secondsToRollback"] is not None and gated["secondsToRollback"] > 0, gated
    # in place: nothing stops it; it ends with all the traffic
    assert inplace["candidatePeakSharePercent"] == 100.0, inplace
    assert inplace["secondsToRollback"] is None
    assert inplace["candidateShareWhileExposed"] > first + 10, (inplace, gated)
    # the healthy gated rollout reaches its clean-up; the healthy in-place roll ends at 100 %.
    # (That gated run shrinks the still-serving stable at its 50 % step, where a request can be
    # lost to a worker stopped just after the frontend picked it: test_scenarios.py owns the
    # proof that no request is lost there; this test compares exposure.)
    assert runs[("gated", "healthy")]["result"].startswith("completed"), runs[("gated", "healthy")]
    assert runs[("in-place", "healthy")]["candidatePeakSharePercent"] == 100.0
    for r in result["runs"]:
        assert r["truncated"] == 0, r
    assert gated["failed"] == 0, gated  # nothing serving shrinks before its rollback
    # In place, prefill and decode roll as two Deployments: between the last old prefill pod
    # going and the last old decode pod going, the old namespace has decode workers and no
    # prefill, and a request routed there gets 503 — a hazard of the ungated roll, hit or missed
    # by timing. Any failure must be that one (or a worker stopped as it was picked).
    for name in ("in-place-healthy", "in-place-slow"):
        _assert_failures_explained(json.loads((report / name / "report.json").read_text()))
    # the slowed candidate is what clients saw at their worst in place
    assert inplace["worstTtftP95Seconds"] > runs[("in-place", "healthy")]["worstTtftP95Seconds"]
    md = (report / "side-by-side.md").read_text()
    assert "none possible" in md and "| gated (separate-dgd) | slow |" in md, md
    # the in-place slow run's own report shows the share growing with the replaced pods
    slow = json.loads((report / "in-place-slow" / "report.json").read_text())
    for s in _segments_with_traffic(slow):
        p = s["expectedCandidatePercent"] / 100
        tolerance = 100 * 3 * math.sqrt(p * (1 - p) / s["requests"]) + 5
        assert abs(s["observedCandidatePercent"] - 100 * p) <= tolerance, (s, tolerance)


def test_coherent_never_leaves_the_old_generation_half_gone(tmp_path: Path) -> None:
    # Grove Coherent (GREP-393), the 1.6 default for this disaggregated graph on Grove: one
    # prefill and one decode old pod taken down together, their replacements created as one gang,
    # the next step once the gang is available. Some generation is complete at every pod change
    # and the old generation is never left with decode workers and no prefill worker: no window
    # of the kind a Deployment-backed roll opens. What remains is the runtime's millisecond
    # races, which no strategy removes: a new generation whose decode worker registers before its
    # prefill worker (a window on the candidate's side, recorded), and a request routed to a
    # namespace as its last workers get SIGTERM (docs/rehearse.md, "The disaggregated gap"):
    # every failure must be one of those.
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-block-size/rollout.yaml",
                               "--in-place", "--workers-run-by", "grove", "--pod-startup", "1",
                               "--rate", "20")
    assert data, log
    st = data["updateStrategy"]
    assert (st["name"], st["pace"], st["prefillDecodeTogether"]) == (
        "Grove Coherent", "coherent", True), st
    assert st["source"].startswith("the default of Dynamo 1.6"), st
    assert "update strategy: Grove Coherent" in log
    events = [e["event"] for e in data["events"]]
    steps = [e for e in events if e.startswith("Coherent step ")]
    assert len(steps) == 2 and all("together" in e for e in steps), events
    g = data["gaps"]
    assert g["disaggregated"] is True
    for w in g["windows"]:
        assert w["kinds"] == [INCOMPLETE_IDLE], w
        assert w["incomplete"] == ["candidate"], w  # never the old generation half gone
        assert w["seconds"] < 1.0, w
    assert data["truncated"] == 0, data["failures"]
    moments = [e["t"] for e in data["events"] if e["event"].startswith("stop stable-")
               or (e["event"].startswith("candidate-") and " available" in e["event"])]
    for f in data["failures"]:
        assert f["status"] == 503 and any(_in_flight(f, t) for t in moments), (f, moments)
    assert code == data["exitCode"] == (1 if data["failed"] else 0), log
    assert data["served"].get("mixed", 0) == 0, data["served"]


def test_on_delete_rolls_nothing(tmp_path: Path) -> None:
    code, data, log = rehearse(tmp_path, "examples/vllm-disagg-block-size/rollout.yaml",
                               "--in-place", "--workers-run-by", "grove",
                               "--grove-update-strategy", "OnDelete", "--rate", "10")
    assert data, log
    assert data["result"].startswith("not rolled (OnDelete"), data["result"]
    assert data["served"].get("candidate", 0) == 0 and data["served"].get("stable", 0) > 0
    assert not any(e["event"].startswith(("create pod", "stop ")) for e in data["events"])
    assert data["gaps"]["windows"] == []
    assert code == data["exitCode"] == (1 if data["failed"] else 0), log
