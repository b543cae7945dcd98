"""dgdgen analyze SPEC --step N: run one step's gate against a live Prometheus (or, with
--calibrate, only the quality judge's calibration)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from dgdgen.commands import _gitops

if TYPE_CHECKING:
    from dgdgen.analysis.calibration import Calibration
    from dgdgen.analysis.gates import StepGate
    from dgdgen.gitops.target import Target
    from dgdgen.plan.prepared import Prepared

HELP = "run a step's SLO gate against a live Prometheus (a rehearsal before promoting)"
DESCRIPTION = """\
Run the gate of one plan step as its AnalysisRun would: every metric's PromQL against the given
Prometheus (args filled for that step), judged by the same successCondition / failureCondition
(the expr semantics of Argo Rollouts: empty results and NaN are Inconclusive, never a pass).
Prints each metric's value and verdict, then the run's verdict — the worst metric wins.
The canary probe (a Job) is not run here; it is listed as skipped, and a gate with nothing
else to measure is Inconclusive (exit 3), never a pass.

exit codes: 0 Successful, 1 Failed (or a measurement Error), 2 bad input or usage (also an
unreachable Prometheus), 3 Inconclusive (too little traffic to judge).

Prometheus' answers are untrusted input: the gate's queries together end within
--prometheus-timeout (default 60 s; a Prometheus that has not answered by then is unreachable,
exit 2, whatever it is still sending), and an answer over --prometheus-max-bytes (default 16M)
or not of the shape Prometheus gives is that metric's measurement Error.

With --print-run, print the step's standalone AnalysisRun (metadata.generateName) instead, for a
workflow to create: dgdgen analyze SPEC --step N --print-run | kubectl create -f -

With spec.gitops.clusters every query reads one cluster's series (spec.analysis.clusterLabel):
--cluster NAME names it, and is required to run the gate; --print-run without it prints one run
per cluster (a YAML stream).

With --record PATH, the verdict is also recorded as the step's gate result in the rendered Git
tree at PATH, as one commit (Successful → passed, Failed or Error → failed, Inconclusive →
inconclusive), exactly as `dgdgen gate` would; `dgdgen promote` then refuses to leave a step
whose gate failed. The exit code is the verdict's either way.

With --calibrate (no --step), run only the quality judge's calibration
(spec.analysis.quality.judge.calibration) against the judge the spec names or --judge-url: print
its agreement with the labelled pairs, its interval, precision and recall for "candidate worse",
position consistency and the judge calls; exit 0 when the judge would gate, 1 when not.

examples:
  dgdgen analyze rollout.yaml --step 1 --prometheus http://localhost:9090
  dgdgen analyze rollout.yaml --calibrate --judge-url http://localhost:8791
  dgdgen analyze rollout.yaml --step 1 --prometheus http://localhost:9090 --record deploy/qwen
  dgdgen analyze rollout.yaml --step 2 --prometheus http://prom:9090 --time 2026-08-20T12:00:00Z
  dgdgen analyze examples/vllm-disagg-image-bump/rollout.yaml --step 1 --print-run
  dgdgen analyze rollout.yaml --step 1 --prometheus http://thanos:9090 --cluster us-east
"""

EXIT_FAILED = 1
EXIT_INCONCLUSIVE = 3


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument("--step", type=int, metavar="N", help="plan step (1..n); required but "
                   "with --calibrate")
    p.add_argument(
        "--calibrate", action="store_true",
        help="run only the quality judge's calibration; exit 0 when it would gate, 1 when not",
    )
    p.add_argument(
        "--judge-url", metavar="URL",
        help="quality gate: the judge's base URL (default: spec.analysis.quality.judge.url)",
    )
    p.add_argument(
        "--prometheus", metavar="URL",
        help="Prometheus base URL (default: spec.analysis.prometheus)",
    )
    p.add_argument(
        "--prometheus-timeout", type=float, default=60.0, metavar="SECONDS",
        help="the gate's Prometheus queries together end within this (default: 60); past it "
        "Prometheus is unreachable (exit 2)",
    )
    p.add_argument(
        "--prometheus-max-bytes", default="16M", metavar="SIZE",
        help="the largest answer read of one query (e.g. 512k, 16M; default: 16M); a larger "
        "one is that metric's measurement Error",
    )
    p.add_argument(
        "--time", metavar="TIME",
        help="evaluation time: unix seconds or RFC 3339 (default: now)",
    )
    p.add_argument(
        "-f", "--format", choices=("table", "json"), default="table",
        help="table: one line per metric (value, verdict, detail), then the run's verdict; "
        "json: the same as data (default: table)",
    )
    p.add_argument(
        "--print-run", action="store_true",
        help="print the step's standalone AnalysisRun (YAML) and exit",
    )
    p.add_argument(
        "--record", metavar="PATH",
        help="record the verdict as the step's gate result in the rendered Git tree at PATH "
        "(one commit, as `dgdgen gate`)",
    )
    p.add_argument(
        "--push", action="store_true", help="with --record: push the commit",
    )
    p.add_argument(
        "--stable-url", metavar="URL",
        help="quality gate: the stable frontend's base URL (default: its in-cluster Service)",
    )
    p.add_argument(
        "--candidate-url", metavar="URL",
        help="quality gate: the candidate frontend's base URL (default: its in-cluster Service)",
    )
    p.add_argument(
        "--hook", action="store_true",
        help="with --print-run: add the Argo CD PostSync hook annotations",
    )
    p.add_argument(
        "--cluster", metavar="NAME",
        help="with spec.gitops.clusters: the cluster whose series the gate reads",
    )


def _time(text: str | None) -> float | None:
    from datetime import datetime

    from dgdgen.errors import InputError

    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InputError(f"--time: expected unix seconds or RFC 3339, got {text!r}") from None


def run(args: argparse.Namespace) -> int:
    # --record: the premise before the imports (see commands._gitops.premise)
    early = _gitops.premise(args.record) if args.record and not args.calibrate else None
    import json

    from dgdgen import yamlio
    from dgdgen.analysis import expr, gates, prom
    from dgdgen.errors import InputError
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render.analysis import analysis_run, analysis_runs

    if args.calibrate:
        if args.step is not None or args.print_run or args.record:
            raise InputError("--calibrate runs the judge's calibration alone: no --step, "
                             "--print-run or --record")
        return _calibrate(args)
    if args.step is None:
        raise InputError("--step N is required (or --calibrate)")
    prepared = prepare(args.spec)
    plan = prepared.plan
    if not 1 <= args.step < len(plan.steps):
        raise InputError(f"--step: the plan has steps 1..{len(plan.steps) - 1}, not {args.step}")
    state = plan.state(args.step)
    analysis = prepared.loaded.spec.spec.analysis
    if not analysis.enabled:
        raise InputError(
            "spec.analysis.enabled is false: the rollout renders no gates",
            location=prepared.loaded.location(("spec", "analysis")), field=("spec", "analysis"),
        )
    sg = gates.step_gate(prepared, state)
    if sg is None:
        raise InputError(f"step {args.step} has no gate (set spec.steps[{args.step - 1}].gate)")
    cluster = _cluster(prepared, args)
    if args.print_run:
        runs = ([analysis_run(prepared, args.step, hook=args.hook, cluster=cluster)]
                if cluster or not prepared.loaded.spec.spec.gitops.clusters
                else analysis_runs(prepared, args.step, hook=args.hook))
        sys.stdout.write("---\n".join(yamlio.dump(r) for r in runs if r is not None))
        return 0
    if cluster is None and prepared.loaded.spec.spec.gitops.clusters:
        names = ", ".join(c.name for c in prepared.loaded.spec.spec.gitops.clusters)
        raise InputError(f"--cluster: each cluster of spec.gitops.clusters ({names}) is gated "
                         "on its own series: name one")
    arg_map = sg.arg_map | ({"cluster": cluster} if cluster else {})
    if args.record and cluster is not None:
        # the gate result is the rollout's: one promotion commit moves every cluster
        raise InputError("--record: one cluster's verdict does not pass the gate of every "
                         "cluster in spec.gitops.clusters; run each cluster, then record the "
                         "result with dgdgen gate")
    seconds, max_bytes = _query_limits(args)
    # a --record target that is not a rendered Git tree is refused before Prometheus is asked
    target = _record_target(args, early) if args.record else None
    url = args.prometheus or analysis.prometheus
    if not url and any(gates.METRICS[n].family != "probe" for n in sg.metrics):
        raise InputError("no Prometheus address: pass --prometheus URL or set "
                         "spec.analysis.prometheus")
    at = _time(args.time)
    deadline: prom.Deadline | None = None  # starts with the first query
    rows: list[dict[str, object]] = []
    for name in sg.metrics:
        if name == "probe":
            rows.append({"metric": name, "value": None, "phase": "Skipped",
                         "detail": "a Job in the cluster; not run by analyze"})
            continue
        if name == "quality":
            from dgdgen.analysis.quality_job import run_local

            phase, detail = run_local(prepared, sg.arg_map, stable_url=args.stable_url,
                                      candidate_url=args.candidate_url,
                                      judge_url=args.judge_url)
            rows.append({"metric": name, "value": None, "phase": phase, "detail": detail})
            continue
        assert url is not None
        metric = gates.resolve_args(
            gates.argo_metric(analysis, name, sg.timing,
                              cluster_label=gates.cluster_label(prepared)), arg_map)
        deadline = deadline or prom.Deadline.after(seconds)
        try:
            value = prom.query(url, metric["provider"]["prometheus"]["query"], at=at,
                               deadline=deadline, max_bytes=max_bytes)
        except prom.PromError as exc:
            if exc.unreachable:
                raise InputError(str(exc)) from None
            rows.append({"metric": name, "value": None, "phase": expr.ERROR, "detail": str(exc)})
            continue
        phase, why = expr.measurement_phase(
            value, metric["successCondition"], metric["failureCondition"]
        )
        rows.append({"metric": name, "value": value, "phase": phase,
                     "detail": why or _bound(metric["successCondition"])})
    measured = [str(r["phase"]) for r in rows if r["phase"] != "Skipped"]
    # A gate nothing could be measured for here (a probe-only gate: the probe is a Job in the
    # cluster) is Inconclusive, never a pass: recording it as passed would let `promote` skip it.
    verdict = expr.run_phase(measured) if measured else expr.INCONCLUSIVE
    if args.format == "json":
        out = {"step": args.step, "gate": sg.gate, "args": arg_map, "metrics": rows,
               "phase": verdict}
        sys.stdout.write(json.dumps(out, indent=2, default=_json_float) + "\n")
    else:
        sys.stdout.write(_table(sg, rows, verdict))
    if target is not None:
        _record(target, args, verdict, rows)
    if verdict == expr.SUCCESSFUL:
        return 0
    return EXIT_INCONCLUSIVE if verdict == expr.INCONCLUSIVE else EXIT_FAILED


def _query_limits(args: argparse.Namespace) -> tuple[float, int]:
    """The seconds the gate's queries may take together and the largest answer read."""
    import math

    from dgdgen.errors import InputError
    from dgdgen.yamlio.limits import parse_size

    seconds = args.prometheus_timeout
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"--prometheus-timeout: expected a positive number of seconds, got "
                         f"{seconds:g}")
    try:
        max_bytes = parse_size(args.prometheus_max_bytes)
    except ValueError as exc:
        raise InputError(f"--prometheus-max-bytes: {exc}") from None
    if max_bytes < 1:
        raise InputError("--prometheus-max-bytes: expected at least 1 byte")
    return seconds, max_bytes


def _calibrate(args: argparse.Namespace) -> int:
    """The judge's calibration alone: 0 when the judge would gate, 1 when not."""
    import json
    import os

    from dgdgen.analysis.calibration import calibrate
    from dgdgen.analysis.quality import Judge
    from dgdgen.analysis.quality_job import load_calibration_set
    from dgdgen.errors import InputError
    from dgdgen.pipeline.prepare import prepare

    loaded = prepare(args.spec).loaded
    q = loaded.spec.spec.analysis.quality
    labelled = load_calibration_set(loaded)
    if q is None or q.judge is None or q.judge.calibration is None or labelled is None:
        field = ("spec", "analysis", "quality", "judge", "calibration")
        raise InputError("--calibrate: the spec has no judge calibration set",
                         location=loaded.location(("spec", "analysis")), field=field)
    judge = Judge(args.judge_url or q.judge.url, q.judge.model, q.judge.rubric, q.seed,
                  api_key=os.environ.get("DGDGEN_JUDGE_API_KEY"), timeout=q.timeout_seconds,
                  max_calls=q.judge.max_calls)
    cal = calibrate(judge, labelled[1], q.judge.calibration.min_agreement)
    if args.format == "json":
        out = {"judge": judge.url, "calibration": q.judge.calibration.pairs, **cal.as_dict(),
               "maxCalls": judge.max_calls}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        sys.stdout.write(_calibration_table(judge.url, q.judge.calibration.pairs, cal,
                                            judge.max_calls))
    return 0 if cal.passed else EXIT_FAILED


def _calibration_table(url: str, pairs: str, cal: Calibration, max_calls: int | None) -> str:
    def share(x: float | None, k: int, n: int) -> str:
        return ("n/a" if x is None else f"{x:.2f}") + f" ({k} of {n})"

    lo, hi = cal.interval
    rows = [
        ("agreement", share(cal.agreement, cal.agreed, cal.asked)),
        ("interval", f"[{lo:.2f}, {hi:.2f}] (95% Wilson)"),
        ("minAgreement", f"{cal.min_agreement:g} (lower bound must reach it)"),
        ("precision (candidate worse)", share(cal.precision, cal.caught, cal.called_worse)),
        ("recall (candidate worse)", share(cal.recall, cal.caught, cal.labelled_worse)),
        ("position consistency", share(cal.consistency, cal.consistent, cal.asked)),
        ("errors", str(cal.errors)),
        ("judge calls", f"{cal.calls}" + (f" of maxCalls {max_calls}" if max_calls is not None
                                          else ", no budget")),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"judge {url}: calibration {pairs}, {cal.pairs} labelled pairs", ""]
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    lines += ["", ("would gate: " if cal.passed else "would not gate: ") + cal.reason()]
    return "\n".join(lines) + "\n"


def _cluster(prepared: Prepared, args: argparse.Namespace) -> str | None:
    from dgdgen.errors import InputError

    if args.cluster is None:
        return None
    names = [c.name for c in prepared.loaded.spec.spec.gitops.clusters]
    if args.cluster not in names:
        listed = ", ".join(names) if names else "none"
        raise InputError(f"--cluster: {args.cluster!r} is not in spec.gitops.clusters "
                         f"({listed})")
    return str(args.cluster)


# the run's phase → the gate result `dgdgen gate` records (Error aborts a Rollout like Failed:
# argo-rollouts v1.9.1 rollout/analysis.go)
_RESULT = {"Successful": "passed", "Failed": "failed", "Error": "failed",
           "Inconclusive": "inconclusive"}


def _record_target(args: argparse.Namespace, early: _gitops.Premise | None) -> Target:
    from dgdgen.errors import InputError
    from dgdgen.gitops import target

    t = target.open_target(args.spec, args.record, early=early)
    if t.top is None:
        raise InputError(f"--record: {t.into} is not inside a Git work tree",
                         hint="render it first: dgdgen render SPEC --into PATH --init")
    _idx, state, _prev = target.current(t)
    if state.index != args.step or state.kind != "step":
        raise InputError(f"--record: {t.rel} is at {state.label}, not step {args.step}; a gate "
                         "result is recorded for the current step only")
    return t


def _record(target: Target, args: argparse.Namespace, verdict: str,
            rows: list[dict[str, object]]) -> None:
    from dgdgen.analysis.gateline import verdict_line
    from dgdgen.gitops import actions

    # the result keeps what failed and by how much (the same line the table ends with)
    message = f"dgdgen analyze: {verdict_line(verdict, rows)}"
    out = actions.record_gate(target, _RESULT[verdict],
                              step=args.step, message=message, push=args.push)
    sys.stderr.write(out.message if out.message.endswith("\n") else out.message + "\n")


def _json_float(v: object) -> object:
    return str(v)


def _bound(condition: str) -> str:
    # "... && result[0] <= 2" -> "<= 2": the comparison a reader needs next to the value
    return "pass if " + condition.rsplit("result[0] ", 1)[-1]


def _fmt(value: object) -> str:
    from dgdgen.analysis.gateline import figure

    return figure(value)


def _table(sg: StepGate, rows: list[dict[str, object]], verdict: str) -> str:
    a = sg.arg_map
    head = (f"step {sg.index} gate {sg.gate}: candidate "
            f"{a.get('candidate')}" + (f" vs stable {a['stable']}" if "stable" in a else "")
            + (f", window {a['window']}, min requests {a['min-requests']}"
               if "window" in a else ""))
    table = [["metric", "value", "verdict", "detail"]]
    table += [[str(r["metric"]), _fmt(r["value"]), str(r["phase"]), str(r["detail"])]
              for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = [head, ""]
    for j, r in enumerate(table):
        lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    from dgdgen.analysis.gateline import VERDICT, verdict_line

    # the verdict names each metric that did not pass, with its figure and threshold
    lines += ["", VERDICT + verdict_line(verdict, rows)]
    return "\n".join(lines) + "\n"
