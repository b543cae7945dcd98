"""The rehearsal loop: commit a state through the GitOps commands, apply it, bake, gate, move.

Why one module: :class:`Rehearsal` is one loop over the plan's states (commit through the
GitOps commands, apply, bake, gate, move or roll back) whose phases share the running processes,
the load and the sampler; the parts it drives (cluster, load, proxy, Prometheus, report) are
modules of their own.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dgdgen import yamlio
from dgdgen.analysis.gateline import from_output
from dgdgen.cluster.model import mounted_config_maps
from dgdgen.model.generation import LABEL_ROLE
from dgdgen.pipeline.prepare import prepare
from dgdgen.pipeline.report import gate_summary
from dgdgen.plan import PlanStep
from dgdgen.plan.prepared import Prepared
from dgdgen.rehearse.cluster import LocalCluster, key_of
from dgdgen.rehearse.load import Load, Record
from dgdgen.rehearse.prometheus import Prometheus
from dgdgen.rehearse.proxy import Proxy, route_backends, route_preview
from dgdgen.rehearse.scale import ScaledSpec, write_scaled_spec
from dgdgen.runtime.forkserver import ForkServer
from dgdgen.runtime.mocker import KV_TRANSFER_SECONDS, rehearsal_flags
from dgdgen.runtime.model import make_model_dir
from dgdgen.runtime.podserver import PodServer
from dgdgen.runtime.procs import LocalDynamo, Proc, inherited_env, memory_kb
from dgdgen.spec import TrafficProvider
from dgdgen.traffic import preview

VERDICTS = {0: "Successful", 1: "Failed", 3: "Inconclusive"}
# An experiment step without a decision (no samples, or fewer than planned): the rollout stops
# there, neither promoted nor rolled back, as the workflow waits at the step (docs/rehearse.md).
NO_DECISION = "No decision"
# The load's default rate, requests per second (`dgdgen rehearse --rate`).
DEFAULT_RATE = 40.0
# `--min-requests auto` asks for this share of the requests a gate's bake is expected to bring:
# the split settles after the move, Prometheus sees a request one scrape late, and the load's
# arrivals are random (a 30 s bake expected to bring 30 counted 27 in one run).
AUTO_MARGIN = 0.6
# Where a gate reads the answers (the quality gate), the workers are dgdgen's answering engine
# (dgdgen.runtime.answerer) instead of the mocker, whose answers are empty through the 1.6.1
# frontend (a quality gate behind it can only tie). Elsewhere the mocker stays: it simulates an
# engine's timing (prefill by prompt length, decode batching, KV cache), which the latency
# gates measure; the answering engine waits a fixed time per token. Every report names it.
ANSWERING_ENGINE = "dgdgen's answering engine (tests the gate, not a model)"
# The seed of the hash that picks the prompts a degraded candidate answers wrongly.
ANSWER_SEED = 0
# A quality gate scored by a judge is gated by dgdgen's stand-in judge (dgdgen.rehearse.judge),
# started inside the rehearsal's network namespace: the spec's judge is an in-cluster or
# external URL the namespace cannot reach, and a model there would answer unknown verdicts.
# Every report names it.
STAND_IN_JUDGE = ("dgdgen's stand-in judge, decides by the prompt set's references — tests the "
                  "gate, not a model")


def key_name(obj: Mapping[str, Any]) -> str:
    kind, name = key_of(obj)
    return f"{kind}/{name}"


@dataclass(frozen=True)
class Options:
    spec: Path
    time_scale: float = 0.05
    rate: float = DEFAULT_RATE
    min_requests: int | None = None  # the gates' minimum sample; None: the spec's
    # lower the gates' minimum sample to what every gate's scaled bake collects at the load
    # (auto_min_requests); min_requests, when given, wins
    auto_min_requests: bool = False
    candidate_slowdown: float = 1.0
    # the share of prompts the candidate's answering engine answers wrongly (--candidate-quality)
    candidate_quality: float = 0.0
    # the share of requests the stand-in judge answers right (--judge-accuracy)
    judge_accuracy: float = 1.0
    traffic_path: str = "reload"  # reload | runtime-api
    workdir: Path | None = None
    settle: float = 2.0  # seconds after a weight move before the split is counted
    stop_grace: float = 60.0  # SIGTERM → SIGKILL for a stopped process (a pod's grace period)
    # the A/B experiment's samples (`dgdgen experiment --samples`); None: the experiment step
    # ends with no decision
    experiment_samples: Path | None = None


@dataclass
class StateObservation:
    label: str  # step-01, rollback, cleanup …
    index: int
    planned: dict[str, int]  # revision → weight %
    replicas_planned: dict[str, dict[str, int]]
    started: float = 0.0  # seconds since t0: the commit of this state
    traffic_moved: float = 0.0  # the proxy carries the new weights
    ended: float = 0.0
    gate: str | None = None
    # what the plan says the gate measures and decides (planreport.gate_summary)
    gate_plan: tuple[str, ...] = ()
    verdict: str | None = None
    analyze_output: str = ""
    replicas_observed: dict[str, dict[str, int]] = field(default_factory=dict)
    commit: str = ""


@dataclass
class Outcome:
    exit_code: int
    result: str  # completed | rolled-back
    states: list[StateObservation]
    records: list[Record]
    scaled: ScaledSpec
    provider: str
    stand_in: bool
    t0_wall: float
    duration: float
    prometheus: Prometheus
    rss_peak_mb: float
    pss_peak_mb: float
    # CPU seconds of the GitOps commands, gates and drain hooks (each its own process)
    commands_cpu: float
    processes_peak: int
    drains: list[tuple[str, float, int]]
    events: list[tuple[float, str]]
    workdir: Path
    options: Options
    reloads: int
    prepared: Prepared
    # where the wall time went, seconds per phase (PHASES), in that order
    phases: dict[str, float] = field(default_factory=dict)
    # (generation, frontend process, requests it served by its own metrics), every frontend
    # replica that ran
    frontends: list[tuple[str, str, int]] = field(default_factory=list)
    # ``gamma``: the requests of callers outside the mesh, through the parent Service's selector
    out_of_mesh: list[Record] = field(default_factory=list)
    parent_service: str | None = None
    # the workers answered with dgdgen's answering engine (a quality gate reads the answers)
    answering: bool = False
    # the stand-in judge's accuracy, None when no gate is scored by a judge
    judge_accuracy: float | None = None
    # ``spec.traffic.preview``: the requests sent with its header or cookie value, and what
    # they carried ("header X-Dgd-Preview: on")
    previewed: list[Record] = field(default_factory=list)
    preview: str | None = None


# The share of the load that callers outside a GAMMA mesh send on top of the route's, through
# the parent Service's selector (docs/rehearse.md): enough to see a state that leaves them on a
# generation that cannot serve, small enough not to crowd the gates' samples.
OUT_OF_MESH_SHARE = 0.25
# The share of the load sent on top with the preview's header or cookie value (a spec with
# spec.traffic.preview): at 20 requests/s and a 12 s bake, 60 previewed requests per state.
PREVIEW_SHARE = 0.25

# The phases of a rehearsal's wall time: the GitOps commands (separate dgdgen processes, each
# paying Python's start-up), applying a state (starting frontends and mockers, waiting for them
# to register, moving the traffic, draining), baking at the scaled clock, and the gates
# (`dgdgen analyze` against Prometheus).
PHASES = ("GitOps commands", "apply (processes start, register, traffic moves)", "bake",
          "gates")


class _Sampler(threading.Thread):
    """Peak RSS, PSS and process count of the local processes, sampled every second."""

    def __init__(self, rt: LocalDynamo, extra: Callable[[], list[int]]) -> None:
        super().__init__(daemon=True)
        self.rt = rt
        self.extra = extra
        self.rss_peak = 0.0
        self.pss_peak = 0.0
        self.procs_peak = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(1.0):
            pids = [p.popen.pid for p in list(self.rt.procs) if p.alive()] + self.extra()
            if self.rt.pods is not None and self.rt.pods.pid:  # what they fork from
                pids.append(self.rt.pods.pid)
            rss, pss, _ = memory_kb(pids)
            self.rss_peak = max(self.rss_peak, rss / 1024)
            self.pss_peak = max(self.pss_peak, pss / 1024)
            self.procs_peak = max(self.procs_peak, len(pids))


def sample_warnings(original: Prepared, scaled: Prepared, opts: Options) -> list[str]:
    """Before the run: the gates whose minimum sample cannot arrive in the step's scaled bake at
    the rehearsal's load, each with what would let it (a higher rate, a larger time scale, or a
    lower ``--min-requests``). Such a gate reads Inconclusive, and Inconclusive never passes, so
    a healthy candidate would be rolled back for want of data (docs/rehearse.md)."""
    from dgdgen.analysis.gates import METRICS, step_gate

    steps = scaled.plan.steps
    # each state's bake after its split moved (the apply before it is not counted: the estimate
    # errs towards warning)
    waits = [max(st.pause_seconds or 0, opts.settle + 1.0) for st in steps]
    out = []
    for n, step in enumerate(steps):
        sg = step_gate(scaled, step) if step.gate else None
        if sg is None or sg.min_requests is None:
            continue
        if not any(METRICS[m].family != "probe" for m in sg.metrics):
            continue
        relative = any(METRICS[m].relative for m in sg.metrics)
        gens = ("candidate", "stable") if relative else ("candidate",)
        # the requests each generation serves inside the gate's window, which reaches back into
        # the states before this one
        counts = {}
        for gen in gens:
            left, count = float(sg.window_seconds), 0.0
            for k in range(n, -1, -1):
                took = min(waits[k], left)
                count += opts.rate * getattr(steps[k], gen).weight / 100 * took
                left -= took
                if left <= 0:
                    break
            counts[gen] = count
        gen = min(counts, key=lambda g: counts[g])
        expected = counts[gen]
        if expected >= sg.min_requests:
            continue
        factor = sg.min_requests / max(expected, 1e-9)
        fixes = [f"--rate {math.ceil(opts.rate * factor)}"]
        if original.plan.steps[n].pause_seconds:
            fixes.append(f"--time-scale {math.ceil(100 * opts.time_scale * factor) / 100:g}")
        if math.floor(AUTO_MARGIN * expected) >= 1:
            fixes.append(f"--min-requests {math.floor(AUTO_MARGIN * expected)}")
        out.append(
            f"warning: gate {step.gate!r} of step {n} cannot collect its sample: it needs "
            f"{sg.min_requests} requests per generation in its {sg.window_seconds} s window but "
            f"the {gen} gets about {expected:.0f} at {opts.rate:g} requests/s and time scale "
            f"{opts.time_scale:g}, so it will read Inconclusive and the rollout rolls back; use "
            + " or ".join(fixes))
    return out


def experiment_warnings(scaled: Prepared, opts: Options) -> list[str]:
    """Before the run: an experiment step whose metric the rehearsal cannot measure. The metric
    (spec.analysis.experiment.metric) is what one user or request is worth to you, a rating or
    a conversion, named in words: the mocker's answers have no such value, and a latency the
    rehearsal could time is not the metric the experiment names. Without --experiment-samples
    the step ends with no decision, neither promoted nor rolled back (docs/rehearse.md)."""
    from dgdgen.analysis.gates import EXPERIMENT

    cfg = scaled.loaded.spec.spec.analysis.experiment
    if opts.experiment_samples is not None or cfg is None:
        return []
    return [f"warning: step {st.index} is an A/B experiment on {cfg.metric!r}, a value only "
            "your users give: the rehearsal cannot measure it, so without --experiment-samples "
            f"FILE step {st.index} ends with no decision (the rollout is neither promoted nor "
            "rolled back)"
            for st in scaled.plan.steps if st.kind == "step" and st.gate == EXPERIMENT]


def auto_min_requests(scaled: Prepared, opts: Options) -> int | None:
    """The gates' minimum sample under which every gate of the rehearsal can collect it: the
    fewest requests a gated generation is expected to get in its own step's scaled bake at the
    load (for a gate that compares with the stable, the smaller of the two generations), times
    AUTO_MARGIN; never above a gate's own minimum sample. None when no gate counts requests. A
    scaled clock cannot collect a production-sized sample; the report lists the value used."""
    from dgdgen.analysis.gates import METRICS, step_gate

    best: int | None = None
    for step in scaled.plan.steps:
        sg = step_gate(scaled, step) if step.gate else None
        if sg is None or not any(METRICS[m].family != "probe" for m in sg.metrics):
            continue
        w = step.candidate.weight
        share = (min(w, 100 - w) if any(METRICS[m].relative for m in sg.metrics) else w) / 100
        bake = max(step.pause_seconds or 0, opts.settle + 1.0)
        n = min(sg.min_requests, max(1, math.floor(AUTO_MARGIN * opts.rate * share * bake)))
        best = n if best is None else min(best, n)
    return best


# Scorers that read only how long an answer is, or why it ended: the mocker produces those as an
# engine does (up to max_tokens, cut short by the context length), while the answering engine's
# short answers would tie every pair. A gate scored so keeps the mocker.
LENGTH_SCORERS = frozenset({"length", "untruncated"})


def answer_set(prepared: Prepared) -> Path | None:
    """The quality gate's prompt set when a step's gate reads the answers' text, else None: then
    the workers are the answering engine, its table the prompt set's references."""
    from dgdgen.analysis import gates
    from dgdgen.analysis.quality_job import prompt_path

    q = prepared.loaded.spec.spec.analysis.quality
    if q is None or q.scorer in LENGTH_SCORERS:
        return None
    for step in prepared.plan.steps:
        sg = gates.step_gate(prepared, step) if step.gate else None
        if sg is not None and "quality" in sg.metrics:
            return prompt_path(prepared.loaded)
    return None


def judge_scored(prepared: Prepared) -> bool:
    """Whether a step's quality gate is scored by a judge (``scorer: judge``)."""
    q = prepared.loaded.spec.spec.analysis.quality
    return answer_set(prepared) is not None and q is not None and q.scorer == "judge"


def judge_note(accuracy: float | None) -> str | None:
    """Who judged the answers, for every report; None without a judge."""
    if accuracy is None:
        return None
    return (f"judge: {STAND_IN_JUDGE}" + ("" if accuracy == 1 else
            f"; playing a worse judge, right on {accuracy:.0%} of its calls (--judge-accuracy)"))


def engine_note(answering: bool, candidate_quality: float) -> str:
    """What answered the requests, for every report."""
    if not answering:
        return (f"workers: dynamo.mocker (simulated timing, with a {KV_TRANSFER_SECONDS:g} s KV "
                "transfer between prefill and decode: docs/rehearse.md, Engine flags; empty "
                "answers)")
    return (f"workers: {ANSWERING_ENGINE}; the candidate answers "
            f"{candidate_quality:.0%} of the prompts wrongly, the stable none")


def parent_service(prepared: Prepared) -> str | None:
    """The GAMMA parent Service that callers outside the mesh call, or None."""
    traffic = prepared.loaded.spec.spec.traffic
    if traffic.provider is TrafficProvider.GAMMA and traffic.gamma is not None:
        return str(traffic.gamma.service)
    return None


# What the GitOps commands and the drain hook import, loaded once by the fork server that runs
# them (dgdgen.runtime.forkserver): each then starts as a fork of it, not from a bare interpreter.
COMMAND_MODULES = (
    "dgdgen.cli", "dgdgen.pipeline.prepare", "dgdgen.commands._gitops", "dgdgen.commands.render",
    "dgdgen.commands.promote", "dgdgen.commands.rollback", "dgdgen.commands.cleanup",
    "dgdgen.commands.analyze", "dgdgen.commands.experiment", "dgdgen.commands.traffic",
    "dgdgen.gitops.actions", "dgdgen.gitops.drain", "dgdgen.analysis.gates",
    "dgdgen.analysis.prom", "dgdgen.analysis.custom", "dgdgen.render.analysis", "dgdgen.write",
)


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GIT_AUTHOR_NAME", "dgdgen rehearse")
    env.setdefault("GIT_AUTHOR_EMAIL", "rehearse@dgdgen.invalid")
    env.setdefault("GIT_COMMITTER_NAME", "dgdgen rehearse")
    env.setdefault("GIT_COMMITTER_EMAIL", "rehearse@dgdgen.invalid")
    return env


def _git(cwd: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                       check=False, env={**os.environ, "LC_ALL": "C"})
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def command_server(spec: Path) -> ForkServer:
    """The server the rehearsal's dgdgen commands fork from, warmed by reading ``spec``."""
    return ForkServer(COMMAND_MODULES, warm=lambda: prepare(str(spec)))


class Rehearsal:
    def __init__(self, opts: Options, progress: Callable[[str], None]) -> None:
        self.drains: list[tuple[str, float, int]] = []  # (generation, seconds, exit code)
        self.parent: str | None = None  # the GAMMA parent Service callers outside the mesh use
        self.opts = opts
        self.say = progress
        self.events: list[tuple[float, str]] = []
        self.phases = dict.fromkeys(PHASES, 0.0)
        self.t0 = time.monotonic()
        self.served: dict[tuple[str, int], tuple[str, str, int]] = {}
        self.judge_url: str | None = None  # the stand-in judge, where a judge scores the answers

    def event(self, text: str) -> None:
        self.events.append((time.monotonic() - self.t0, text))

    def now(self) -> float:
        return time.monotonic() - self.t0

    # ------------------------------------------------------------------ main

    def run(self, *, commands: ForkServer | None = None, pods: PodServer | None = None
            ) -> Outcome:
        """The rehearsal; with ``commands`` and ``pods``, through those servers (the caller's,
        made while it had no other thread: --side-by-side hands one pair to all its runs),
        else through servers of its own."""
        with contextlib.ExitStack() as own:
            # the command server forked first, while this process has no other thread
            # (dgdgen.runtime.forkserver); reading the spec once builds the validators every
            # command would build on first use. The pod server is a fresh interpreter.
            self.commands = commands or own.enter_context(command_server(self.opts.spec))
            self.pods = pods or own.enter_context(PodServer(inherited_env()))
            self.commands_cpu0 = self.commands.cpu_seconds
            return self._run()

    def _run(self) -> Outcome:
        opts = self.opts
        prepared = prepare(str(opts.spec))
        spec = prepared.loaded.spec.spec
        provider = spec.traffic.provider
        if prepared.mode not in ("separate-dgd",):
            from dgdgen.runtime import RuntimeUnavailable

            raise RuntimeUnavailable(
                f"{opts.spec}: isolation {prepared.mode!r} is not rehearsed: the rehearsal plays "
                "what a released Dynamo operator does with separate DGDs; worker groups and "
                "partitions need operator capabilities no released operator has, and an in-place "
                "roll is the operator's own rolling update (docs/rehearse.md)"
            )
        workdir = opts.workdir or Path(tempfile.mkdtemp(prefix="dgdgen-rehearse-"))
        workdir.mkdir(parents=True, exist_ok=True)
        repo = workdir / "repo"
        repo.mkdir(exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
        min_requests = opts.min_requests
        if min_requests is None and opts.auto_min_requests:
            # what every gate's bake can collect, from the spec scaled with its own sample
            first = write_scaled_spec(
                prepared.loaded.document.data, opts.spec, workdir / "scaled-spec",
                time_scale=opts.time_scale, request_rate=opts.rate, min_requests=None)
            min_requests = auto_min_requests(prepare(str(first.path)), opts)
        scaled = write_scaled_spec(
            prepared.loaded.document.data, opts.spec, repo / "rollout",
            time_scale=opts.time_scale, request_rate=opts.rate, min_requests=min_requests,
            auto=opts.min_requests is None and min_requests is not None,
        )
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=dgdgen rehearse", "-c", "user.email=rehearse@dgdgen.invalid",
             "commit", "-q", "-m", "rollout spec (rehearsal: scaled clock)")
        self.spec_rel = "rollout/rollout.yaml"
        self.repo = repo
        self.deploy = repo / "deploy"
        scaled_prepared = prepare(str(repo / self.spec_rel))
        self.scaled_prepared = scaled_prepared
        self.plan = scaled_prepared.plan
        self.prepared = prepared
        candidate_rev = self.plan.candidate_revision
        slow = opts.candidate_slowdown
        answers = answer_set(prepared)
        judge_accuracy = opts.judge_accuracy if judge_scored(prepared) else None

        def extra(revision: str) -> dict[str, str]:
            out = rehearsal_flags(slow if revision == candidate_rev else 1.0)
            if answers is not None:
                wrong = opts.candidate_quality if revision == candidate_rev else 0.0
                out.update({"--answers": str(answers), "--wrong-fraction": f"{wrong:g}",
                            "--seed": str(ANSWER_SEED)})
            return out

        self.say(f"rehearsal of {opts.spec} in {workdir} (time scale {opts.time_scale:g}, "
                 f"{opts.rate:g} requests/s)")
        self.say(engine_note(answers is not None, opts.candidate_quality))
        if judge_accuracy is not None:
            self.say(judge_note(judge_accuracy) or "")
        for line in [*sample_warnings(prepared, scaled_prepared, opts),
                     *experiment_warnings(scaled_prepared, opts)]:
            self.say(line)
        model_dir = make_model_dir(workdir / "model")
        states: list[StateObservation] = []
        load: Load | None = None
        outside: Load | None = None
        previewing: Load | None = None
        route = preview.of(prepared)
        self.parent = parent_service(prepared)
        proxy = Proxy(workdir)
        prom = Prometheus(workdir, time_scale=opts.time_scale)
        with LocalDynamo(workdir / "dynamo", pods=self.pods) as rt:
            if answers is not None and judge_accuracy is not None:
                self.judge_url = self._start_judge(rt, answers, judge_accuracy)
            cluster = LocalCluster(rt, model_dir=model_dir,
                                   k8s_namespace=prepared.loaded.spec.metadata.namespace,
                                   revisions={prepared.base_name: self.plan.stable_revision,
                                              prepared.candidate_name: candidate_rev},
                                   extra_args=extra, stop_grace=opts.stop_grace,
                                   answering=answers is not None,
                                   event=self.event, before_stop=self._count_served)
            self.cluster, self.proxy, self.prom = cluster, proxy, prom
            sampler = _Sampler(rt, lambda: [p.pid for p in (proxy.popen, prom.popen)
                                            if p is not None and p.poll() is None])
            sampler.start()
            try:
                result = "completed"
                prom.start()  # gets ready while the first state is committed and applied
                self._commit("render", "--into", "deploy", "--commit")
                obs = self._apply_state(self.plan.steps[0], states)
                model = next(iter(cluster.dgds.values())).model
                load = Load(proxy.port, model, rate=opts.rate, t0=self.t0)
                load.start()
                self.say(f"load: {opts.rate:g} requests/s through the proxy on port {proxy.port}")
                if self.parent is not None:
                    outside = Load(proxy.parent_port, model, rate=opts.rate * OUT_OF_MESH_SHARE,
                                   t0=self.t0, entry="out-of-mesh")
                    outside.start()
                    self.say(f"load: {opts.rate * OUT_OF_MESH_SHARE:g} requests/s more from "
                             f"callers outside the mesh, through Service {self.parent}'s "
                             "selector")
                if route is not None:
                    previewing = Load(proxy.port, model, rate=opts.rate * PREVIEW_SHARE,
                                      t0=self.t0, entry="preview",
                                      headers=route.request_headers())
                    previewing.start()
                    self.say(f"load: {opts.rate * PREVIEW_SHARE:g} requests/s more with the "
                             f"preview's {route.describe()}, through the proxy")
                self._bake(obs, 0)
                last = len(self.plan.steps) - 1
                for n in range(1, last + 1):
                    self._commit("promote", "--into", "deploy")
                    obs = self._apply_state(self.plan.steps[n], states)
                    step = self.plan.steps[n]
                    self._bake(obs, step.pause_seconds or 0)
                    if step.gate:
                        rc = self._gate(obs, n)
                        if obs.verdict == NO_DECISION:
                            # held at the split, as the workflow waits for a decision: no
                            # promotion and no rollback the data did not ask for
                            result = "no decision"
                            break
                        if rc != 0:
                            # one commit per state of the rollback path, each applied (and
                            # healthy) before the next, as the workflow's exit handler does
                            for back in self.plan.rollback_from(n):
                                self._commit("rollback", "--into", "deploy")
                                obs = self._apply_state(back, states)
                                self._bake(obs, max(3.0, 4 * opts.settle))
                            result = "rolled-back"
                            break
                else:
                    self._commit("cleanup", "--into", "deploy")
                    obs = self._apply_state(self.plan.cleanup, states)
                    self._bake(obs, max(3.0, 4 * opts.settle))
                load.stop()
                for extra_load in (outside, previewing):
                    if extra_load is not None:
                        extra_load.stop()
                obs.ended = self.now()
                self.say(f"load stopped: {len(load.records)} requests"
                         + (f", {len(outside.records)} from outside the mesh" if outside else "")
                         + (f", {len(previewing.records)} previewed" if previewing else ""))
                for _, _, p in cluster.processes():
                    self._count_served(p)
            except BaseException:
                # Prometheus outlives a finished rehearsal (the report queries it), never a
                # failed one: left behind, it would scrape a deleted folder for ever.
                prom.stop()
                raise
            finally:
                if load is not None:
                    load.stop(timeout=5)
                for extra_load in (outside, previewing):
                    if extra_load is not None:
                        extra_load.stop(timeout=5)
                sampler.stopped.set()
                sampler.join()
                proxy.stop()
                drains = list(self.drains)
        records = load.snapshot() if load else []
        beside = outside.snapshot() if outside else []
        previewed = previewing.snapshot() if previewing else []
        if result == "completed" and any(not r.outcome.ok for r in records + beside + previewed):
            # the rollout went through, but clients saw it: not a success
            result = "completed with client failures"
        # Prometheus stays up for the report's range queries; the caller stops it.
        return Outcome(
            exit_code={"completed": 0, "no decision": 3}.get(result, 1), result=result,
            states=states,
            records=records, scaled=scaled, provider=provider.value,
            stand_in=provider is not TrafficProvider.HAPROXY, t0_wall=time.time() - self.now(),
            duration=self.now(), prometheus=prom, rss_peak_mb=sampler.rss_peak,
            pss_peak_mb=sampler.pss_peak,
            commands_cpu=self.commands.cpu_seconds - self.commands_cpu0,
            processes_peak=sampler.procs_peak, drains=drains, events=self.events,
            workdir=workdir, options=opts, reloads=proxy.reloads, prepared=prepared,
            phases={k: round(v, 1) for k, v in self.phases.items()},
            frontends=sorted(self.served.values()), out_of_mesh=beside,
            parent_service=self.parent, answering=answers is not None,
            judge_accuracy=judge_accuracy, previewed=previewed,
            preview=route.describe() if route is not None else None,
        )

    def _start_judge(self, rt: LocalDynamo, references: Path, accuracy: float) -> str:
        """The stand-in judge, a process of the namespace like the others, deciding by the
        prompt set's references (``accuracy`` below 1 plays a worse judge): the URL the gate's
        judge URL is replaced with (:meth:`_quality_urls`)."""
        proc = rt.server("stand-in-judge", "dgdgen.rehearse.judge", [
            "--references", str(references), "--accuracy", f"{accuracy:g}",
            "--seed", str(ANSWER_SEED)])
        rt.wait_http(proc, "/v1/models")
        url = f"http://127.0.0.1:{proc.port}"
        self.event(f"stand-in judge on {url} (accuracy {accuracy:g})")
        self.say(f"judge: the stand-in on {url} takes the place of the spec's judge URL")
        return url

    def _count_served(self, proc: Proc) -> None:
        """A frontend's own count of the requests it served (``dynamo_frontend_requests_total``),
        read before it stops and at the end: which replicas of a Service carried its traffic."""
        if proc.kind != "frontend":
            return
        from dgdgen.runtime.metrics import frontend_requests

        try:
            count = frontend_requests(proc)
        except (OSError, ValueError):
            return  # unreadable: the last reading stands
        self.served[(proc.name, proc.port)] = (self.cluster.generation_of(proc), proc.name, count)

    def _dgdgen(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``dgdgen ARGS`` in the scratch repository, as a process of its own."""
        return self.commands.run("dgdgen", args, cwd=self.repo, env=_git_env())

    def _timed(self, phase: str, began: float) -> None:
        self.phases[phase] += time.monotonic() - began

    def _commit(self, *args: str) -> str:
        began = time.monotonic()
        try:
            return self._commit_untimed(*args)
        finally:
            self._timed("GitOps commands", began)

    def _apply_state(self, state: PlanStep, states: list[StateObservation]) -> StateObservation:
        began = time.monotonic()
        try:
            return self._apply_state_untimed(state, states)
        finally:
            self._timed("apply (processes start, register, traffic moves)", began)

    def _bake(self, obs: StateObservation, seconds: float) -> None:
        began = time.monotonic()
        try:
            self._bake_untimed(obs, seconds)
        finally:
            self._timed("bake", began)

    def _gate(self, obs: StateObservation, n: int) -> int:
        began = time.monotonic()
        try:
            return self._gate_untimed(obs, n)
        finally:
            self._timed("gates", began)

    # ------------------------------------------------------------------ steps

    def _commit_untimed(self, *args: str) -> str:
        r = self._dgdgen(args[0], self.spec_rel, *args[1:])
        if r.returncode != 0:
            raise RuntimeError(f"dgdgen {' '.join(args)} failed ({r.returncode}):\n"
                               f"{r.stderr.strip()}")
        head = _git(self.repo, "log", "-1", "--format=%h %s")
        self.event(f"commit {head}")
        self.say(f"  git: {head}")
        return head

    def _tree(self) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self.deploy.glob("*.yaml")):
            for doc in yamlio.load_file(str(path)):
                if isinstance(doc.data, dict):
                    ann = (doc.data.get("metadata") or {}).get("annotations") or {}
                    if ann.get("argocd.argoproj.io/hook") not in (None, "Sync"):
                        continue  # PostSync analysis hooks: `dgdgen analyze` plays them
                    out.append(doc.data)
        return out

    def _run_hook(self, job: dict[str, Any], state: PlanStep) -> None:
        """A Sync hook Job of the tree, run as Argo CD runs it: inside its wave, which ends when
        the Job does. The drain Job's own command runs against the local frontend its URL names
        (the Service mapped to the frontend's port), with the timeout on the rehearsal's
        clock."""
        containers = (((job.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "containers") or []
        cmd = list((containers[0] if containers else {}).get("command") or [])
        if cmd[:3] != ["python3", "-m", "dgdgen.gitops.drain"]:
            raise RuntimeError(f"the rehearsal cannot run the hook Job {key_name(job)}: {cmd}")
        # the module comes from the dgdgen that runs the rehearsal (the fork server's), never
        # from a `dgdgen/` folder in the current one (a checkout the rehearsal was started in,
        # whose bytecode it would also leave behind)
        argv = list(cmd[3:])
        url = argv[argv.index("--url") + 1]
        host = url.split("//", 1)[1].split("/", 1)[0]
        port = self._service_port(host.split(".")[0])
        argv[argv.index("--url") + 1] = url.replace(host, f"127.0.0.1:{port or 9}")
        timeout = float(argv[argv.index("--timeout") + 1])
        argv[argv.index("--timeout") + 1] = f"{max(1.0, timeout * self.opts.time_scale):g}"
        argv += ["--interval", "0.25"]
        gen = str(((job.get("metadata") or {}).get("labels") or {}).get(
            "dgdgen.dev/generation", "?"))
        t = time.monotonic()
        with self._api() as (api, credentials):
            argv += ["--api-server", api, "--credentials", credentials]
            r = self.commands.run("dgdgen.gitops.drain", argv, cwd=self.repo)
        took = time.monotonic() - t
        last = (r.stdout.strip().splitlines() or [""])[-1]
        self.drains.append((gen, took, r.returncode))
        self.event(f"{state.label}: drain hook {key_name(job)} ({gen}): exit {r.returncode}, "
                   f"{took:.1f} s: {last}")
        self.say(f"[{state.label}] drain {gen}: {took:.1f} s ({last})")

    def _apply_state_untimed(self, state: PlanStep,
                             states: list[StateObservation]) -> StateObservation:
        planned = {state.stable.revision: state.stable.weight,
                   state.candidate.revision: state.candidate.weight}
        obs = StateObservation(
            label=state.label, index=state.index, planned=planned,
            replicas_planned={g.revision: dict(g.replicas) for g in (state.stable, state.candidate)
                              if g.present},
            started=self.now(), gate=state.gate,
            gate_plan=tuple(gate_summary(self.scaled_prepared, state.index))
            if state.kind == "step" else (),
        )
        obs.commit = _git(self.repo, "rev-parse", "--short", "HEAD")
        if states:
            states[-1].ended = obs.started
        states.append(obs)
        weights = "/".join(f"{r} {w}%" for r, w in planned.items())
        self.say(f"[{state.label}] apply ({weights})")

        def on_wave(wave: int, batch: list[dict[str, Any]]) -> None:
            for obj in batch:
                if obj.get("kind") == "Job":
                    self._run_hook(obj, state)
            if self._sync_traffic(state):
                obs.traffic_moved = self.now()
                self.event(f"{state.label}: traffic moved (wave {wave})")
            self._sync_prometheus()

        self.cluster.apply(self._tree(), on_wave=on_wave)
        if not obs.traffic_moved:
            obs.traffic_moved = self.now()
        obs.replicas_observed = self.cluster.replicas()
        self.event(f"{state.label}: applied")
        return obs

    def _bake_untimed(self, obs: StateObservation, seconds: float) -> None:
        wait = max(seconds, self.opts.settle + 1.0)
        end = obs.traffic_moved + wait
        self.say(f"[{obs.label}] bake {wait:.0f} s")
        while self.now() < end:
            time.sleep(min(0.5, end - self.now()))

    def _gate_untimed(self, obs: StateObservation, n: int) -> int:
        from dgdgen.analysis.gates import EXPERIMENT

        if obs.gate == EXPERIMENT:
            return self._experiment(obs, n)
        self.say(f"[{obs.label}] gate {obs.gate}: dgdgen analyze --step {n} --record deploy")
        r = self._dgdgen("analyze", self.spec_rel, "--step", str(n), "--prometheus",
                    self.prom.url, "--record", "deploy", *self._quality_urls(n))
        obs.verdict = VERDICTS.get(r.returncode, f"error (exit {r.returncode})")
        obs.analyze_output = (r.stdout + r.stderr).strip()
        self.event(f"{obs.label}: gate {obs.gate} {obs.verdict}")
        # the line `dgdgen analyze` ends with: a gate that did not pass names each metric
        # that did not, with its figure and threshold (report.md has the whole table)
        self.say(f"[{obs.label}] gate {obs.gate}: {from_output(r.stdout, obs.verdict)}")
        return r.returncode

    def _experiment(self, obs: StateObservation, n: int) -> int:
        """The experiment step, decided as in production: `dgdgen experiment --record` on the
        samples the user gave (the same command and statistics), whose exit code is the gate's
        (0 passed, 1 failed, 3 undecided). Without samples there is no decision to record."""
        samples = self.opts.experiment_samples
        if samples is None:
            obs.verdict = NO_DECISION
            obs.analyze_output = (
                f"no decision: step {n} is an A/B experiment on a metric only users give "
                "(spec.analysis.experiment.metric); the rehearsal cannot measure it and was given "
                "no --experiment-samples FILE, so the step is neither promoted nor rolled back")
        else:
            self.say(f"[{obs.label}] gate {obs.gate}: dgdgen experiment --samples {samples} "
                     "--record deploy")
            r = self._dgdgen("experiment", self.spec_rel, "--samples", str(samples),
                        "--record", "deploy")
            obs.verdict = {0: "Successful", 1: "Failed", 3: NO_DECISION}.get(
                r.returncode, f"error (exit {r.returncode})")
            obs.analyze_output = (r.stdout + r.stderr).strip()
            if r.returncode not in (0, 1, 3):
                raise RuntimeError(f"dgdgen experiment failed ({r.returncode}):\n"
                                   f"{obs.analyze_output}")
        self.event(f"{obs.label}: gate {obs.gate} {obs.verdict}")
        self.say(f"[{obs.label}] gate {obs.gate}: {obs.verdict}")
        return {"Successful": 0, "Failed": 1}.get(obs.verdict or "", 3)

    def _quality_urls(self, n: int) -> list[str]:
        """The quality gate's frontend URLs, each in-cluster Service mapped to the local frontend
        it selects (as the drain hook's URL): `analyze` then runs the rendered gate's command
        against the real frontends of this step; the judge's URL (in-cluster or external) is the
        stand-in judge's."""
        from dgdgen.analysis import gates

        sg = gates.step_gate(self.prepared, self.prepared.plan.state(n))
        if sg is None or "quality" not in sg.metrics:
            return []
        out = []
        for key in ("stable-url", "candidate-url"):
            host = sg.arg_map[key].split("//", 1)[1].split("/", 1)[0]
            port = self._service_port(host.split(".")[0])
            if key == "candidate-url" and preview.gate_entry(self.prepared) is not None:
                # the public entry point, with the preview's header: the proxy here
                port = self.proxy.port
            out += [f"--{key}", f"http://127.0.0.1:{port or 9}"]
        if self.judge_url is not None:
            out += ["--judge-url", self.judge_url]
        return out

    # ------------------------------------------------------------------ traffic and metrics

    @contextmanager
    def _api(self) -> Iterator[tuple[str, str]]:
        """The two Kubernetes API reads of the drain hook, answered from the rehearsal's cluster:
        a Service's EndpointSlices (one serving endpoint per running frontend process behind it)
        and the HTTPRoute. The rehearsal applies a route to its proxy synchronously, in the
        shift wave, before any hook runs: it reports the route Accepted and ResolvedRefs at the
        generation it holds, as a Gateway that has programmed it would."""
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        run = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                body: dict[str, Any] | None = None
                if path.endswith("/endpointslices"):
                    service = query.rsplit("%3D", 1)[-1]
                    n = len(run.cluster.service_frontends(service))
                    body = {"kind": "EndpointSliceList", "items": [{"endpoints": [
                        {"addresses": [f"127.0.0.{i + 1}"], "conditions": {"serving": True}}
                        for i in range(n)]}]}
                elif "/httproutes/" in path:
                    route = run.cluster.objects.get(("HTTPRoute", path.rsplit("/", 1)[-1]))
                    if route is not None:
                        ok = [{"type": t, "status": "True", "observedGeneration": 1}
                              for t in ("Accepted", "ResolvedRefs")]
                        body = {**route, "metadata": {**route["metadata"], "generation": 1},
                                "status": {"parents": [
                                    {"parentRef": ref, "conditions": ok}
                                    for ref in route["spec"].get("parentRefs") or []]}}
                data = json.dumps(body).encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        creds = Path(tempfile.mkdtemp(prefix="dgdgen-api-"))
        (creds / "token").write_text("rehearsal\n")
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}", str(creds)
        finally:
            server.shutdown()
            server.server_close()
            thread.join()
            shutil.rmtree(creds, ignore_errors=True)

    def _service_port(self, service: str) -> int | None:
        """The loopback port a Service's in-cluster URL reaches: its one frontend's, or the port
        that spreads connections over its several replicas (kube-proxy, :class:`Proxy`)."""
        ports = self._service_ports(service)
        if len(ports) > 1:
            return self.proxy.service_port(service) or ports[0]
        return ports[0] if ports else None

    def _service_ports(self, service: str) -> list[int]:
        return [p.port for p in self.cluster.service_frontends(service)]

    def _sync_traffic(self, state: PlanStep) -> bool:
        objects = self.cluster.objects
        # the config the proxy's Deployment mounts: until the prune the previous state's
        # (immutable, content-named) ConfigMap is there too
        mounted = {name for _ns, name in mounted_config_maps(
            {(kind, "", name): o for (kind, name), o in objects.items()})}
        cms = [o for (kind, name), o in sorted(objects.items())
               if kind == "ConfigMap" and name in mounted
               and "haproxy.cfg" in (o.get("data") or {})]
        if cms:
            self.proxy.kind = "rendered"
            config = self.proxy.adapt(str(cms[0]["data"]["haproxy.cfg"]), self._service_ports)
            if self.opts.traffic_path == "runtime-api" and self.proxy.popen is not None:
                self._runtime_api(state)
            return self.proxy.apply(config)
        backends = route_backends(objects, self.cluster.service_frontends, self._matching)
        if backends is None:
            backends = self._switch_backends()
        if backends is None:
            return False
        self.proxy.kind = "stand-in"
        named = [(self.cluster.generation_of(procs[0]) if procs else name, weight,
                  [p.port for p in procs]) for name, weight, procs in backends]
        rule = route_preview(objects, self.cluster.service_frontends, self._matching)
        previewed = None if rule is None else (rule[0], rule[1], [
            (self.cluster.generation_of(procs[0]) if procs else name, [p.port for p in procs])
            for name, _, procs in rule[2]])
        parent: list[tuple[str, list[int]]] | None = None
        if self.parent is not None:
            by_generation: dict[str, list[int]] = {}
            for proc in self.cluster.service_frontends(self.parent):
                by_generation.setdefault(self.cluster.generation_of(proc), []).append(proc.port)
            parent = sorted(by_generation.items())
        return self.proxy.apply(self.proxy.stand_in(named, parent, previewed))

    def _switch_backends(self) -> list[tuple[str, int, list[Proc]]] | None:
        """Provider ``none``: clients call the switch Service; like kube-proxy, it spreads them
        evenly over the frontends its selector reaches (docs/traffic.md)."""
        switches = [name for (kind, name), o in sorted(self.cluster.objects.items())
                    if kind == "Service"
                    and ((o.get("metadata") or {}).get("labels") or {}).get(LABEL_ROLE) == "switch"]
        if not switches:
            return None
        procs = self.cluster.service_frontends(switches[0])
        return [(switches[0], 1, procs)]

    def _runtime_api(self, state: PlanStep) -> None:
        """The fast path: `dgdgen traffic set-weights` on the running proxy's runtime API,
        before the new config rolls it (a rollback-step state has no selector: reload only)."""
        selector = {"step": str(state.index), "baseline": "0", "rollback": "rollback",
                    "cleanup": "cleanup"}.get(state.kind)
        if selector is None:
            return
        r = self._dgdgen("traffic", "set-weights", self.spec_rel, "--step", selector,
                    "--socket", self.proxy.admin_socket)
        self.event(f"traffic set-weights --step {selector}: exit {r.returncode}"
                   + (f" ({r.stderr.strip()})" if r.returncode else ""))

    def _matching(self, labels: Mapping[str, str]) -> list[Proc]:
        return [p for _, comp, p in self.cluster.processes()
                if p.kind == "frontend" and all(comp.labels.get(k) == v for k, v in labels.items())]

    def _sync_prometheus(self) -> None:
        monitors = [o for (kind, _), o in sorted(self.cluster.objects.items())
                    if kind == "PodMonitor"]
        ns = self.prepared.loaded.spec.metadata.namespace
        procs = [(ns, p) for _, _, p in self.cluster.processes()]
        workers = [(ns, p) for _, _, p in self.cluster.processes() if p.kind == "worker"]
        self.prom.configure(monitors, procs, workers)
