"""dgdgen rehearse SPEC: the whole rollout, step by step, against the real Dynamo runtime."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

HELP = "rehearse a whole rollout against the real Dynamo frontend and mocker workers"
DESCRIPTION = """\
Run the rollout end to end on this machine before a GPU is spent: every rendered DGD of every
state becomes local processes (one Dynamo frontend per frontend replica, one mocker worker per
worker replica, engine flags carried over), traffic goes through a real HAProxy (the rendered
haproxy.cfg, or a stand-in with the HTTPRoute's weights), a real Prometheus scrapes what the
rendered PodMonitors select, a bounded streaming + unary load runs throughout, and the GitOps
commands (render --into, analyze --record, promote, rollback, cleanup) move the rollout in a
scratch Git repository. Everything runs in a private network namespace with only loopback (as
root directly, otherwise inside an unprivileged user namespace).

Needs the `rehearse` extra and the Dynamo wheels, `haproxy`, `prometheus` and `git`
(docs/rehearse.md). Nothing is fetched from the network (HF_HUB_OFFLINE=1).

In place: a spec whose isolation is (or resolves to) `in-place`, or any spec with --in-place, is
rehearsed as the Dynamo operator rolls an edited DGD: worker generations in hash-suffixed Dynamo
namespaces ({k8s-ns}-{dgd}-{hash}) or old and new in one namespace, as the spec's Dynamo release
and worker backing (spec.dynamo) say the operator would (--worker-namespaces overrides), the
frontend selecting them by prefix, pods replaced by the update strategy `dgdgen check` names
(--workers-run-by and --grove-update-strategy override the spec and the release default):
Deployment-backed per the components' maxSurge/maxUnavailable annotations (operator defaults
25%/25%; Recreate; multinode one at a time), Grove RollingRecreate one pod at a time per
component, Grove Coherent prefill and decode together one unit at a time, Grove OnDelete not at
all (the report says no pod rolled); no gate and no rollback. The report shows the share of each
configuration over the roll and, for a disaggregated graph, every window in which no generation
was complete or an incomplete one received traffic, with the requests that failed in it.

--side-by-side rehearses the change four times — in place and as the gated rollout (the spec's
isolating mode; separate-dgd when it says in-place), each with a healthy candidate and one slowed
down by --candidate-slowdown (default 4 here) — and writes side-by-side.md/json: requests the
candidate served before anything could stop it, worst p95 TTFT/ITL, failures, time to rollback.
It exits 0 once all four ran (what they found is in the report), 3 if one could not run.

Where a gate reads the answers (the quality gate), every worker is dgdgen's answering engine
instead of a mocker: it answers each prompt deterministically from the prompt (the prompt set's
reference, simple arithmetic, else a fixed sentence), so the gate sees real, different answers
through the real frontend. It tests the gate, not a model; every report says so.
--candidate-quality F makes the candidate answer a fraction F of the prompts wrongly. A gate
scored by a judge (scorer: judge) is judged by dgdgen's stand-in judge, started inside the
rehearsal's network namespace in place of the spec's judge URL: it decides by the prompt set's
references (the answer that contains it wins), so it too tests the gate, not a model;
--judge-accuracy P makes it right on a share P of its calls only, to play a worse judge.

An A/B experiment step (gate: experiment) is decided by `dgdgen experiment --record` on the
samples of --experiment-samples FILE; the rehearsal cannot measure a metric only users give, so
without the file the step ends with no decision: neither promoted nor rolled back (exit 3).
With --side-by-side the gated runs decide it on the same file.

exit codes: 0 the rollout completed (cleanup reached) and no request failed, 1 a gate rolled it back
or clients saw failed or truncated requests, 2 bad input or the
extra is missing, 3 the rehearsal could not run here (no haproxy / prometheus / namespace), or
an experiment step had no decision (no samples, or fewer than planned).

examples:
  dgdgen rehearse examples/vllm-disagg-block-size/rollout.yaml --min-requests 40
  dgdgen rehearse examples/vllm-disagg-block-size/rollout.yaml --candidate-slowdown 4
  dgdgen rehearse examples/trtllm-disagg-v1beta1/rollout.yaml --candidate-quality 0.3
  dgdgen rehearse examples/vllm-agg-auto/rollout.yaml            # in place (auto → in-place)
  dgdgen rehearse examples/vllm-disagg-block-size/rollout.yaml --in-place --candidate-slowdown 4
  dgdgen rehearse examples/vllm-disagg-image-bump/rollout.yaml --side-by-side --min-requests 30
"""


def _positive(value: str) -> float:
    try:
        f = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not (f > 0 and math.isfinite(f)):
        raise argparse.ArgumentTypeError(f"must be a finite number greater than 0, got {value!r}")
    return f


def _fraction(value: str) -> float:
    try:
        f = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not 0 <= f <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {value!r}")
    return f


def _min_requests(value: str) -> int | str:
    if value in ("auto", "spec"):
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number, `auto` or `spec`, got {value!r}") from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", nargs="?", help="rollout spec file")
    p.add_argument("--clean", action="store_true",
                   help="only remove what rehearsals killed with SIGKILL left in the temp folder "
                   "(every rehearsal does this first too) and exit")
    p.add_argument("--time-scale", type=_positive, default=0.05, metavar="F",
                   help="multiply pauses and analysis windows by F (default 0.05: 10m → 30s)")
    p.add_argument("--rate", type=_positive, default=40.0, metavar="RPS",
                   help="requests per second through the proxy (default 40)")
    p.add_argument("--min-requests", type=_min_requests, default="auto", metavar="N|auto|spec",
                   help="the gates' minimum requests per window in the rehearsal: N, `auto` "
                   "(default: what every gate's scaled bake collects at --rate; a scaled clock "
                   "cannot collect a production-sized sample) or `spec` (the spec's own)")
    p.add_argument("--candidate-slowdown", type=_positive, default=None, metavar="X",
                   help="make the candidate X times slower (the mocker's speedup ratios 1/X and "
                   "its simulated KV transfer X times slower), "
                   "to rehearse a regression the gates must catch (default 1; with "
                   "--side-by-side, the slowed runs' factor, default 4)")
    p.add_argument("--candidate-quality", type=_fraction, default=0.0, metavar="F",
                   help="a spec with a quality gate: make the candidate answer the fraction F "
                   "(0..1, default 0) of prompts wrongly (a wrong value, a truncated answer or "
                   "broken tool-call JSON), the stable none, to rehearse a quality regression "
                   "the gate must catch. Where a gate reads answers the workers are dgdgen's "
                   "answering engine, which answers each prompt deterministically from the "
                   "prompt: it tests the gate, not a model")
    p.add_argument("--judge-accuracy", type=_fraction, default=1.0, metavar="P",
                   help="a spec whose quality gate is scored by a judge: the stand-in judge the "
                   "rehearsal runs in its place answers the share P (0..1, default 1) of its "
                   "calls right and the rest wrongly, to play a worse judge (with a calibration "
                   "set, one near 0.5 leaves the gate Inconclusive)")
    p.add_argument("--experiment-samples", metavar="FILE",
                   help="the A/B experiment step's samples, as `dgdgen experiment --samples` "
                   "reads them: the step is decided from them; without, it ends with no "
                   "decision (the rehearsal cannot measure a metric only users give)")
    p.add_argument("--in-place", action="store_true",
                   help="rehearse the candidate applied in place (the operator's roll, ungated) "
                   "whatever the spec's isolation; implied when the isolation is in-place")
    p.add_argument("--side-by-side", action="store_true",
                   help="rehearse the change in place and as the gated rollout, each with a "
                   "healthy and a slowed candidate, and compare them (side-by-side.md/json)")
    p.add_argument("--worker-namespaces", choices=("hashed", "shared"), default=None,
                   help="in place: each worker generation in its own hash-suffixed Dynamo "
                   "namespace behind a prefix-selecting frontend (the operator's managed rolling "
                   "update) or old and new in one namespace (older releases, Grove before "
                   "1.5.0, DGDs not run by the operator, a worker pinning --endpoint). Default: "
                   "what the spec's spec.dynamo (version, workersRunBy) says the operator does")
    p.add_argument("--workers-run-by", default=None, metavar="BACKING",
                   choices=("deployment", "grove", "lws", "unmanaged"),
                   help="in place: how the operator runs the worker pods (deployment, grove, lws, "
                   "unmanaged), over the spec's spec.dynamo.workersRunBy; it decides the update "
                   "strategy played and, without --worker-namespaces, the worker namespaces")
    p.add_argument("--grove-update-strategy", default=None, metavar="STRATEGY",
                   choices=("RollingRecreate", "OnDelete", "Coherent"),
                   help="in place, Grove-backed workers: the update strategy of a DGD without an "
                   "nvidia.com/grove-update-strategy annotation (the annotation wins): "
                   "RollingRecreate (one pod at a time per component), OnDelete (nothing rolls), "
                   "Coherent (prefill and decode replaced together; 1.6+); default: the "
                   "release's, as `dgdgen check` says")
    p.add_argument("--pod-startup", type=float, default=4.0, metavar="S",
                   help="in place: seconds from a new worker pod's creation to its process start "
                   "(image pull and model load; default 4)")
    p.add_argument("--traffic-path", choices=("reload", "runtime-api"), default="reload",
                   help="haproxy provider: move weights by reloading the rendered config (the "
                   "Git path, default) or through the runtime API first (the fast path)")
    p.add_argument("--report", metavar="DIR", default="rehearsal",
                   help="write report.md, report.json and chart.svg here (default ./rehearsal)")
    p.add_argument("--workdir", metavar="DIR",
                   help="keep processes' logs, the scratch repository and Prometheus data here "
                   "(default: a temporary folder, removed afterwards)")


def run(args: argparse.Namespace) -> int:
    import os
    import shutil
    from pathlib import Path

    from dgdgen import runtime
    from dgdgen.errors import InputError
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.rehearse.prometheus import prometheus_binary
    from dgdgen.rehearse.proxy import haproxy_binary
    from dgdgen.runtime import scratch

    if args.clean:
        if args.spec is not None:
            raise InputError("--clean takes no SPEC: it only removes what killed rehearsals left")
        for path in scratch.sweep():
            print(f"removed {path}")
        return 0
    if args.spec is None:
        raise InputError("the following arguments are required: SPEC")
    if isinstance(args.min_requests, int) and args.min_requests < 1:
        raise runtime.MissingExtra("--min-requests must be at least 1")
    auto_min = args.min_requests == "auto"
    min_requests = args.min_requests if isinstance(args.min_requests, int) else None
    from dgdgen.rehearse.inplace import POD_WAIT_SECONDS

    if not 0 <= args.pod_startup < POD_WAIT_SECONDS:  # (NaN fails it too)
        raise runtime.MissingExtra(
            f"--pod-startup must be 0 or more and under {POD_WAIT_SECONDS:g} s (how long the "
            f"roll waits for a pod to become available), got {args.pod_startup:g}")
    if args.side_by_side and args.in_place:
        raise runtime.MissingExtra("--side-by-side rehearses in place and gated: drop --in-place")
    runtime.require()
    prepared = prepare(args.spec)  # bad input: exit 2 before anything starts
    in_place = args.in_place or prepared.mode == "in-place"
    samples = _experiment_samples(prepared, args.experiment_samples)
    _check_candidate_quality(prepared, args.candidate_quality, in_place or args.side_by_side)
    _check_judge_accuracy(prepared, args.judge_accuracy, in_place or args.side_by_side)
    if in_place or args.side_by_side:
        from dgdgen.rehearse.inplace import InPlaceOptions, edited_dgd, roll_for

        # the checker's model, as the rehearsal plays it (bad --grove-update-strategy: exit 2)
        roll = roll_for(prepared, edited_dgd(prepared), InPlaceOptions(
            spec=Path(args.spec), workers_run_by=args.workers_run_by,
            grove_strategy=args.grove_update_strategy))
        if args.worker_namespaces is None:
            args.worker_namespaces = "hashed" if roll.hashed else "shared"
            sys.stderr.write(f"worker namespaces: {args.worker_namespaces} ({roll.why}; "
                             "--worker-namespaces overrides)\n")
    for name, found in (("haproxy", haproxy_binary()), ("prometheus", prometheus_binary()),
                        ("git", shutil.which("git"))):
        if not found:
            raise runtime.RuntimeUnavailable(
                f"`{name}` is not installed; the rehearsal runs the real one "
                "(Debian: apt-get install haproxy prometheus git)"
            )
    from dgdgen.rehearse.report import summary_lines, wall_text, write_report
    from dgdgen.rehearse.run import Options, Rehearsal
    from dgdgen.runtime.netns import enter_private_netns, fork_first_process

    for path in scratch.sweep():
        sys.stderr.write(f"removed {path}, left behind by an earlier rehearsal\n")
    # One private folder for every temporary file of the run, and a PID namespace for every
    # process: this process waits outside it and removes the folder whatever ends the run; a
    # SIGKILL of this process ends the namespace's first process and with it every other
    # (dgdgen.runtime.netns, dgdgen.runtime.scratch).
    box = scratch.Scratch.create()
    try:
        enter_private_netns(pid_namespace=True)
        code = fork_first_process(_stop_once)
    except BaseException:
        box.remove()
        raise
    if code is not None:
        box.remove()
        return code
    box.adopt()
    os.environ["HF_HUB_OFFLINE"] = "1"
    keep = args.workdir is not None
    # absolute: the processes started below run in folders of their own
    workdir = Path(args.workdir).resolve() if keep else box.path / "work"

    def say(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    if args.side_by_side or in_place:
        return _run_in_place(args, workdir, keep, say, side_by_side=args.side_by_side,
                             samples=samples)
    opts = Options(
        spec=Path(args.spec), time_scale=args.time_scale, rate=args.rate,
        min_requests=min_requests, auto_min_requests=auto_min,
        candidate_slowdown=args.candidate_slowdown or 1.0,
        candidate_quality=args.candidate_quality, judge_accuracy=args.judge_accuracy,
        traffic_path=args.traffic_path, workdir=workdir, experiment_samples=samples,
    )
    try:
        with could_not_run(keep):
            outcome = Rehearsal(opts, say).run()
        try:
            data = write_report(outcome, Path(args.report))
        finally:
            outcome.prometheus.stop()
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"rehearsal {data['result']}: {data['requests']} requests, {data['failed']} failed, "
          f"{data['truncated']} truncated, {data['wallSeconds']} s")
    print(f"  wall time: {wall_text(data['wallSecondsBy'])}")
    print(f"  {data['workers']}")
    if data["judge"] is not None:
        print(f"  {data['judge']}")
    for line in summary_lines(data):
        print(line)
    print(f"report: {Path(args.report) / 'report.md'}")
    return int(outcome.exit_code)


def _stop_once() -> None:
    """Ctrl-C, SIGTERM and SIGHUP stop the rehearsal once: the first raises (KeyboardInterrupt,
    or SystemExit with 128 + the signal) and the finally blocks stop every process; the same
    signal passed on by the waiting process outside the namespace a moment later (a terminal's
    Ctrl-C reaches both) does not cut that short. One more after a second ends it at once —
    whatever is left ends with the namespace."""
    import signal
    import time

    first: dict[int, float] = {}

    def stop(signum: int, _frame: object) -> None:
        now = time.monotonic()
        if signum in first and now - first[signum] < 1.0:
            return
        first[signum] = now
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def _check_candidate_quality(prepared: Prepared, fraction: float, in_place: bool) -> None:
    """--candidate-quality needs a gate that reads answers (the quality gate) in the gated
    rehearsal: elsewhere the workers are mockers and a wrong answer would go unread."""
    from dgdgen.errors import InputError
    from dgdgen.rehearse.run import LENGTH_SCORERS, answer_set

    if fraction == 0:
        return
    if in_place:
        raise InputError("--candidate-quality: the in-place and side-by-side rehearsals run no "
                         "quality gate; rehearse the gated rollout")
    q = prepared.loaded.spec.spec.analysis.quality
    if q is not None and q.scorer in LENGTH_SCORERS:
        raise InputError(
            f"--candidate-quality: the quality gate's scorer {q.scorer!r} reads only how long "
            "each answer is and why it ended, which the mocker produces as an engine does; "
            "wrong answers need a scorer that reads them (exact, prefix, contains, regex, json, "
            "toolcall or judge)")
    if answer_set(prepared) is None:
        raise InputError("--candidate-quality: no step of the rollout has a quality gate "
                         "(spec.analysis.quality), so nothing would read the answers")


def _check_judge_accuracy(prepared: Prepared, accuracy: float, in_place: bool) -> None:
    """--judge-accuracy plays the stand-in judge of a quality gate scored by a judge in the
    gated rehearsal (the side-by-side one judges with an accurate stand-in)."""
    from dgdgen.errors import InputError
    from dgdgen.rehearse.run import judge_scored

    if accuracy == 1:
        return
    if in_place:
        raise InputError("--judge-accuracy: the in-place and side-by-side rehearsals judge with "
                         "an accurate stand-in (or none); rehearse the gated rollout")
    if not judge_scored(prepared):
        raise InputError("--judge-accuracy: no quality gate of the rehearsed rollout is scored "
                         "by a judge (spec.analysis.quality.scorer: judge)")


def _experiment_samples(prepared: Prepared, path: str | None) -> Path | None:
    """The --experiment-samples file, read before anything starts (a bad line: exit 2 at
    file:line, as `dgdgen experiment`); refused without an experiment step to decide."""
    from dgdgen.analysis.gates import EXPERIMENT
    from dgdgen.commands.experiment import read_samples
    from dgdgen.errors import InputError

    if path is None:
        return None
    steps = [s for s in prepared.plan.steps if s.kind == "step" and s.gate == EXPERIMENT]
    if not steps:
        raise InputError("--experiment-samples: the rollout has no experiment step (a step "
                         "with gate: experiment)")
    read_samples(path, steps[0].stable.revision, steps[0].candidate.revision,
                 flag="--experiment-samples")
    return Path(path).resolve()


@contextlib.contextmanager
def could_not_run(keep: bool) -> Iterator[None]:
    """What fails once the rehearsal has started is the rehearsal, not the input (the spec was
    checked before anything started): exit 3 with the reason, never a traceback."""
    from dgdgen import runtime
    from dgdgen.errors import DgdgenError

    try:
        yield
    except DgdgenError as exc:
        if exc.exit_code == 3:
            raise
        raise runtime.RuntimeUnavailable(f"the rehearsal could not run: {exc}") from exc
    except RuntimeError as exc:
        raise runtime.RuntimeUnavailable(
            f"the rehearsal could not run: {exc}"
            + ("" if keep else " (keep the logs with --workdir DIR)")
        ) from exc


def _run_in_place(args: argparse.Namespace, workdir: Path, keep: bool,
                  say: Callable[[str], None], *, side_by_side: bool,
                  samples: Path | None = None) -> int:
    """The operator's in-place roll, alone or side by side with the gated rollout."""
    import shutil

    from dgdgen.rehearse import inplace, inplace_report, sidebyside

    report = Path(args.report)
    try:
        with could_not_run(keep):
            if side_by_side:
                result = sidebyside.run(sidebyside.SideBySideOptions(
                    spec=Path(args.spec), slowdown=args.candidate_slowdown or 4.0,
                    time_scale=args.time_scale, rate=args.rate,
                    min_requests=args.min_requests if isinstance(args.min_requests, int) else None,
                    auto_min_requests=args.min_requests == "auto",
                    worker_namespaces=args.worker_namespaces, pod_startup=args.pod_startup,
                    workers_run_by=args.workers_run_by,
                    grove_strategy=args.grove_update_strategy,
                    workdir=workdir, report=report, experiment_samples=samples), say)
                for line in sidebyside.table_rows(result):
                    print(line)
                print(f"report: {report / 'side-by-side.md'}")
                return 0
            out = inplace.InPlaceRehearsal(inplace.InPlaceOptions(
                spec=Path(args.spec), rate=args.rate,
                candidate_slowdown=args.candidate_slowdown or 1.0,
                worker_namespaces=args.worker_namespaces, pod_startup=args.pod_startup,
                workers_run_by=args.workers_run_by, grove_strategy=args.grove_update_strategy,
                workdir=workdir), say).run()
        data = inplace_report.write_report(out, report)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"in-place rehearsal {data['result']}: {data['requests']} requests, {data['failed']} "
          f"failed, {data['truncated']} truncated, the candidate served "
          f"{data['candidateServed']}, {data['wallSeconds']} s")
    for line in inplace_report.summary_lines(data):
        print(line)
    print(f"report: {report / 'report.md'}")
    return int(out.exit_code)
