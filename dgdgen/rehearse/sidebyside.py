"""The same change rehearsed both ways, for a healthy and for a slowed candidate: applied in place
(the Dynamo operator's roll, :mod:`dgdgen.rehearse.inplace`) and as dgdgen's gated rollout (the
spec's own isolating mode; ``separate-dgd`` when the spec says ``in-place``,
:mod:`dgdgen.rehearse.run`).

Per run: how many requests the candidate configuration served before anything could stop it (the
gated rollout: until the first failing gate's rollback took its traffic away, or all of them when
every gate passed; in place: all of them — nothing can stop an ungated roll but another roll), the
candidate's peak share of requests, the worst p95 TTFT and ITL clients saw, failed and truncated
requests, the time from the candidate's first request to the rollback that took its traffic away,
and the wall time.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgdgen import yamlio
from dgdgen.pipeline.prepare import prepare
from dgdgen.rehearse import inplace, inplace_report
from dgdgen.rehearse.load import Record, itl, worst_p95

if TYPE_CHECKING:
    from dgdgen.runtime.forkserver import ForkServer
    from dgdgen.runtime.podserver import PodServer

# An in-place spec rehearsed as a gated rollout: a separate DGD, moved in these steps, each but
# the last gated by the spec's SLO gate (dgdgen's default canary schedule, docs/spec.md).
GATED_STEPS_FOR_IN_PLACE = [
    {"weight": 10, "pause": "10m", "gate": "slo"},
    {"weight": 50, "pause": "10m", "gate": "slo"},
    {"weight": 100},
]


@dataclass(frozen=True)
class SideBySideOptions:
    spec: Path
    slowdown: float = 4.0
    time_scale: float = 0.02
    rate: float = 20.0
    min_requests: int | None = 30
    auto_min_requests: bool = False  # as run.Options: min_requests None and this, auto
    worker_namespaces: str = "hashed"
    pod_startup: float = 4.0
    workers_run_by: str | None = None  # the in-place runs' (inplace.InPlaceOptions)
    grove_strategy: str | None = None
    workdir: Path = Path("rehearsal-work")
    report: Path = Path("rehearsal")
    # the A/B experiment step's samples, for the gated runs (as run.Options)
    experiment_samples: Path | None = None


def gated_spec(spec: Path, dest: Path) -> tuple[Path, str]:
    """The spec to rehearse as a gated rollout, and its isolation: the spec itself unless it says
    in-place; then a copy (with its stable DGD) in ``dest`` with a separate DGD, gated steps,
    analysis on, and dgdgen's HAProxy when the spec has no traffic provider (a switch Service
    cannot split traffic)."""
    prepared = prepare(str(spec))
    if prepared.mode != "in-place":
        return spec, prepared.mode
    data = copy.deepcopy(prepared.loaded.document.data)
    body = data["spec"]
    body["isolation"] = "separate-dgd"
    body["steps"] = copy.deepcopy(GATED_STEPS_FOR_IN_PLACE)
    analysis = body.setdefault("analysis", {})
    analysis["enabled"] = True
    traffic = body.setdefault("traffic", {})
    if traffic.get("provider", "none") == "none":
        # weighted steps need a provider that splits traffic: dgdgen's own HAProxy
        traffic["provider"] = "haproxy"
    dest.mkdir(parents=True, exist_ok=True)
    stable = body.get("stable") or {}
    if isinstance(stable.get("dgd"), str):
        shutil.copyfile((spec.parent / stable["dgd"]).resolve(), dest / "dgd.yaml")
        stable["dgd"] = "dgd.yaml"
    out = dest / "rollout.yaml"
    out.write_text(yamlio.dump(data))
    return out, "separate-dgd (the spec says in-place)" + (
        "; provider haproxy (the spec's is none)" if traffic["provider"] == "haproxy"
        and (prepared.loaded.spec.spec.traffic.provider.value == "none") else "")


def _gated_row(out: Any, data: dict[str, Any], candidate: str) -> dict[str, Any]:
    cand = out.prepared.plan.candidate_revision
    records: list[Record] = out.records
    served = [r for r in records if r.outcome.served_by == cand]
    first = served[0].start if served else None
    back = next((s for s in out.states if s.label.startswith("rollback")), None)
    stop = back.traffic_moved if back is not None else None
    before = [r for r in served if stop is None or r.start < stop]
    exposed = [r for r in records if first is not None and r.start >= first
               and (stop is None or r.start < stop)]
    peak = max((s["observed"].get(cand, 0.0) for s in data["states"]
                if s["splitErrorPoints"] is not None), default=0.0)
    failing = next((s for s in out.states if s.verdict and s.verdict != "Successful"), None)
    return {
        "strategy": "gated",
        "candidate": candidate,
        "result": out.result,
        "candidateServed": len(before),
        "exposedRequests": len(exposed),
        "candidateShareWhileExposed": (round(100.0 * len(before) / len(exposed), 1)
                                       if exposed else None),
        "candidatePeakSharePercent": round(peak, 1),
        "firstStepPercent": out.prepared.plan.steps[1].candidate.weight,
        "stoppedBy": (f"{failing.label} gate {failing.verdict}, rolled back"
                      if failing is not None and back is not None else "not stopped (promoted)"),
        "secondsToRollback": (round(stop - first, 1)
                              if stop is not None and first is not None else None),
        "worstTtftP95Seconds": _r(worst_p95(records, lambda r: r.outcome.ttft)),
        "worstItlP95Seconds": _r(worst_p95(records, itl)),
        "requests": len(records),
        "failed": data["failed"],
        "truncated": data["truncated"],
        "wallSeconds": data["wallSeconds"],
    }


def _inplace_row(out: inplace.InPlaceOutcome, data: dict[str, Any],
                 candidate: str) -> dict[str, Any]:
    served = [r for r in out.records if inplace_report.served_config(out, r) == "candidate"]
    first = served[0].start if served else None
    exposed = [r for r in out.records if first is not None and r.start >= first]
    peak = max((s["observedCandidatePercent"] or 0.0 for s in data["segments"]
                if s["requests"] >= 10), default=0.0)
    return {
        "strategy": "in-place",
        "candidate": candidate,
        "result": out.result,
        "candidateServed": len(served),
        "exposedRequests": len(exposed),
        "candidateShareWhileExposed": (round(100.0 * len(served) / len(exposed), 1)
                                       if exposed else None),
        "candidatePeakSharePercent": round(peak, 1),
        "firstStepPercent": None,
        "stoppedBy": "nothing: an ungated roll (no rollback but another roll)",
        "secondsToRollback": None,
        "worstTtftP95Seconds": data["worstTtftP95Seconds"],
        "worstItlP95Seconds": data["worstItlP95Seconds"],
        "requests": data["requests"],
        "failed": data["failed"],
        "truncated": data["truncated"],
        "wallSeconds": data["wallSeconds"],
        "rollSeconds": data["rollSeconds"],
    }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def run(opts: SideBySideOptions, say: Callable[[str], None]) -> dict[str, Any]:
    from dgdgen.rehearse.run import command_server
    from dgdgen.runtime.podserver import PodServer
    from dgdgen.runtime.procs import inherited_env

    spec_gated, isolation = gated_spec(opts.spec, opts.workdir / "gated-spec")
    # one command server and one pod server for the four runs; the command server forked while
    # this process has no other thread: after the first run the tokenizer library's threads run
    # here, and a command server made then would run every command as `python -m`
    # (dgdgen.runtime.forkserver)
    with command_server(spec_gated) as commands, PodServer(inherited_env()) as pods:
        rows = _runs(opts, spec_gated, commands, pods, say)
    result = {
        "spec": str(opts.spec),
        "gatedIsolation": isolation,
        "workerNamespaces": opts.worker_namespaces,
        "slowdown": opts.slowdown,
        "timeScale": opts.time_scale,
        "requestRate": opts.rate,
        "minRequests": opts.min_requests,
        "podStartupSeconds": opts.pod_startup,
        "runs": rows,
    }
    opts.report.mkdir(parents=True, exist_ok=True)
    (opts.report / "side-by-side.json").write_text(json.dumps(result, indent=2) + "\n")
    (opts.report / "side-by-side.md").write_text(to_markdown(result))
    return result


def _runs(opts: SideBySideOptions, spec_gated: Path, commands: ForkServer, pods: PodServer,
          say: Callable[[str], None]) -> list[dict[str, Any]]:
    from dgdgen.rehearse.report import write_report
    from dgdgen.rehearse.run import Options, Rehearsal

    rows: list[dict[str, Any]] = []
    # the runs' folders have short names: HAProxy's sockets live in them, and a Unix socket's path
    # is limited to 107 bytes
    for candidate, slow in (("healthy", 1.0), ("slow", opts.slowdown)):
        name = f"in-place-{candidate}"
        say(f"== {name}")
        forks = pods.forks
        ip = inplace.InPlaceRehearsal(inplace.InPlaceOptions(
            spec=opts.spec, rate=opts.rate, candidate_slowdown=slow,
            worker_namespaces=opts.worker_namespaces, pod_startup=opts.pod_startup,
            workers_run_by=opts.workers_run_by, grove_strategy=opts.grove_strategy,
            workdir=opts.workdir / f"ip-{candidate[0]}"), say).run(pods=pods)
        rows.append(_inplace_row(ip, inplace_report.write_report(ip, opts.report / name), candidate)
                    | {"report": f"{name}/report.md", "podServerStarts": pods.forks - forks})
        name = f"gated-{candidate}"
        say(f"== {name}")
        forks = pods.forks
        gated = Rehearsal(Options(
            spec=spec_gated, time_scale=opts.time_scale, rate=opts.rate,
            min_requests=opts.min_requests, auto_min_requests=opts.auto_min_requests,
            candidate_slowdown=slow, experiment_samples=opts.experiment_samples,
            workdir=opts.workdir / f"g-{candidate[0]}"), say).run(commands=commands, pods=pods)
        try:
            data = write_report(gated, opts.report / name)
        finally:
            gated.prometheus.stop()
        rows.append(_gated_row(gated, data, candidate)
                    | {"report": f"{name}/report.md", "podServerStarts": pods.forks - forks})
    return rows


def _s(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


TABLE_HEADER = (
    "| strategy | candidate | requests served by the candidate before anything could stop it "
    "| candidate's peak share % | worst p95 TTFT (s) | worst p95 ITL (s) | failed | truncated "
    "| time to rollback (s) | wall (s) |"
)


def table_rows(result: dict[str, Any]) -> list[str]:
    lines = [TABLE_HEADER, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for r in result["runs"]:
        strategy = ("in place (operator's roll)" if r["strategy"] == "in-place"
                    else f"gated ({result['gatedIsolation']})")
        back = ("none possible" if r["strategy"] == "in-place"
                else "not needed (promoted)" if r["secondsToRollback"] is None
                else f"{r['secondsToRollback']}")
        lines.append(
            f"| {strategy} | {r['candidate']} | {r['candidateServed']} of {r['requests']} | "
            f"{r['candidatePeakSharePercent']} | {_s(r['worstTtftP95Seconds'])} | "
            f"{_s(r['worstItlP95Seconds'])} | {r['failed']} | {r['truncated']} | {back} | "
            f"{r['wallSeconds']} |")
    return lines


def to_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# `{result['spec']}`: applied in place vs gated",
        "",
        (f"Each change rehearsed with a healthy candidate and with one slowed down "
         f"{result['slowdown']:g}×, at {result['requestRate']:g} requests/s. In place: the "
         f"operator's roll ({result['workerNamespaces']} worker namespaces), a new worker pod "
         f"taking {result['podStartupSeconds']:g} s to start. Gated: "
         f"{result['gatedIsolation']}, clock scaled by {result['timeScale']:g}, gates on at "
         f"least {result['minRequests'] or 'the spec’s'} requests per window."),
        "",
        *table_rows(result),
        "",
        ("In place, nothing stops the candidate: every request it served counts. Gated, the count "
        "stops when the first failing gate's rollback takes its traffic away. The worst p95 is the "
        "largest p95 over 5-second stretches of the run; ITL is a stream's mean time between "
        "tokens as its client saw it."),
        "",
        "Reports: " + ", ".join(f"[{r['strategy']} {r['candidate']}]({r['report']})"
                                for r in result["runs"]),
        "",
    ]
    return "\n".join(lines)
