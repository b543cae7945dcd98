"""The in-place strategy as the Dynamo operator rolls it: one DGD edited in place, its worker pods
replaced by the operator, with no gate, no pause and no rollback but another roll.

What is played (Dynamo's operator guide, "Rolling Updates"; ``dynamo/common/utils/namespace.py``
``get_worker_namespace`` in the ai-dynamo 1.6.1 wheel):

* ``hashed`` worker namespaces (the operator's managed rolling update; Grove and LWS since 1.5.0,
  ai-dynamo/dynamo#12769): every worker pod gets ``DYN_NAMESPACE_WORKER_SUFFIX=<worker hash>`` and
  registers in Dynamo namespace ``{k8s-ns}-{dgd}-{hash}``; the hash is of the worker components'
  spec, so an edit puts the new workers in a new namespace. Frontends are not hashed: they run
  with ``DYN_NAMESPACE_PREFIX={k8s-ns}-{dgd}`` (no ``--namespace``) and serve every worker
  namespace under that prefix side by side, each in proportion to its ready workers.
* ``shared``: old and new workers in one Dynamo namespace ``{k8s-ns}-{dgd}`` (releases before the
  managed rolling update, Grove before 1.5.0, DGDs not run by the operator). The frontend keeps
  the first configuration it accepted and ignores workers with another ModelDeploymentCard
  checksum until the last old worker is gone.
* Pods are replaced the way Kubernetes replaces a Deployment's pods: per component, at most
  ``replicas + maxSurge`` pods and at least ``replicas - maxUnavailable`` available, from the
  component's ``nvidia.com/deployment-rolling-update-max-surge`` / ``-max-unavailable``
  annotations (operator defaults 25 % / 25 %; a percentage of surge rounds up, of unavailability
  down, as Kubernetes rounds them). A multinode component (Grove) is replaced one pod at a time
  (maxUnavailable 1, maxSurge 0). A new worker pod counts as available once it is ready by its own
  ``/health`` (the readiness probe) and, with hashed namespaces, listed by the frontend's
  ``/v1/models/{model}/ready``; only then may old pods go. Components roll concurrently, as their
  Deployments do. A frontend whose spec changed is replaced the same way behind its Service.
* The load goes at the frontend Service (a round-robin HAProxy over the ready frontend pods, no
  weights, no health checks: a Service is its selector); every request asks the frontend which
  worker served it (``nvext.extra_fields: ["worker_id"]``), and each worker's id is read from its
  own metrics (``dynamo_component_requests_total{worker_id, dynamo_namespace}``), so the report
  knows which configuration served every request.
"""

from __future__ import annotations

import hashlib
import json
import math
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgdgen import dgd as dgdmod
from dgdgen.check.facts import dgd_facts
from dgdgen.dgd import Role
from dgdgen.picture import (
    FONT_FAMILY,
    GRID,
    INK,
    MUTED,
    generation_colours,
    legend_row,
    nice_ticks,
    sub,
    text_width,
    time_axis,
    value_axis,
)
from dgdgen.pipeline import prepare
from dgdgen.planpicture import generation_names
from dgdgen.prepared import Prepared
from dgdgen.rehearse.cluster import ApplyError
from dgdgen.rehearse.load import Load, Record
from dgdgen.rehearse.proxy import Proxy
from dgdgen.rehearse.report import WIDTH, split_text
from dgdgen.runtime.metrics import scrape
from dgdgen.runtime.mocker import mocker_invocation
from dgdgen.runtime.model import make_model_dir
from dgdgen.runtime.procs import LocalDynamo, Proc, count_ready_workers

# The operator's defaults when a component has no rolling-update annotation (Dynamo's operator
# guide, "Rolling Updates": maxSurge 25 %, maxUnavailable 25 %, as a Deployment's).
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
WORKER_NAMESPACES = ("hashed", "shared")
# Seconds between taking a frontend pod out of its Service and its SIGTERM.
FRONTEND_DEREGISTRATION_SECONDS = 1.0


@dataclass(frozen=True)
class InPlaceOptions:
    spec: Path
    rate: float = 20.0
    candidate_slowdown: float = 1.0
    worker_namespaces: str = "hashed"  # hashed | shared
    # seconds between the Deployment creating a new worker pod and its process starting (image
    # pull and model load take minutes on a real cluster; the mocker is ready in about a second).
    # Not the mocker's ``--startup-time``: with it the worker registers, and is routed to, before
    # its simulated start-up ends.
    pod_startup: float = 4.0
    before: float = 4.0  # seconds of the stable configuration alone under load, before the edit
    after: float = 6.0  # seconds under load once the roll is done
    workdir: Path | None = None
    stop_grace: float = 60.0


@dataclass(frozen=True)
class Budget:
    replicas: int
    max_surge: int
    max_unavailable: int
    source: str  # where the numbers come from, for the report


@dataclass
class Pod:
    proc: Proc
    config: str  # "stable" or "candidate" (the configuration it runs)
    component: str
    role: Role
    namespace: str  # Dynamo namespace it registers in
    worker_id: str = ""  # hex, from its own metrics
    started: float = 0.0
    available: float | None = None  # ready (and admitted, with hashed namespaces)
    stopped: float | None = None

    @property
    def name(self) -> str:
        return self.proc.name


@dataclass(frozen=True)
class Creating:
    """A pod the Deployment created whose container has not started yet."""

    component: str
    index: int
    name: str
    due: float  # seconds since t0 when its process starts


@dataclass
class Snapshot:
    t: float
    workers: dict[str, dict[str, int]]  # config → component → available worker pods
    event: str


@dataclass
class InPlaceOutcome:
    options: InPlaceOptions
    prepared: Prepared
    stable_revision: str
    candidate_revision: str
    namespaces: dict[str, str]  # config → Dynamo namespace of its workers
    frontend_mode: str  # how the frontend selects workers
    budgets: dict[str, Budget]
    frontend_rolled: bool
    records: list[Record]
    configs: dict[str, str]  # worker id → config
    snapshots: list[Snapshot]
    events: list[tuple[float, str]]
    edit_at: float  # seconds since t0: the edit applied (the operator starts rolling)
    rolled_at: float  # the last old pod gone
    duration: float
    rejected: list[str]  # worker pods ready by their own /health but never listed by the frontend
    exit_code: int = 0
    result: str = ""


def parse_budget(value: Any, replicas: int, *, round_up: bool) -> int:
    """A Deployment's intOrString budget for ``replicas`` pods (Kubernetes rounds a percentage of
    maxSurge up and of maxUnavailable down)."""
    text = str(value).strip()
    if text.endswith("%"):
        pct = float(text[:-1])
        exact = round(pct * replicas / 100, 9)
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(text)


def component_budget(dgd: dgdmod.Dgd, name: str) -> Budget:
    comp = dgd.components[name]
    replicas = comp.replicas
    if comp.node_count > 1:
        # Grove replaces the pods of a multinode component one at a time
        return Budget(replicas, 0, 1, "multinode (Grove): one at a time")
    ann = dgd.copy().component_annotations(name)
    surge_v = ann.get(dgdmod.ANN_MAX_SURGE)
    unavail_v = ann.get(dgdmod.ANN_MAX_UNAVAILABLE)
    surge = parse_budget(surge_v or DEFAULT_MAX_SURGE, replicas, round_up=True)
    unavail = parse_budget(unavail_v or DEFAULT_MAX_UNAVAILABLE, replicas, round_up=False)
    if surge == 0 and unavail == 0:
        # Kubernetes refuses a Deployment with both at 0; with one replica and the defaults
        # (ceil(0.25) = 1, floor(0.25) = 0) this does not happen
        raise ApplyError(f"component {name}: maxSurge and maxUnavailable are both 0 for "
                         f"{replicas} replicas: Kubernetes rejects such a rolling update")
    source = ("annotations" if surge_v is not None or unavail_v is not None
              else "operator defaults")
    shown = f"maxSurge {surge_v or DEFAULT_MAX_SURGE}, maxUnavailable " \
            f"{unavail_v or DEFAULT_MAX_UNAVAILABLE}"
    return Budget(replicas, surge, unavail, f"{source} ({shown})")


def _spec_without_replicas(dgd: dgdmod.Dgd, name: str) -> dict[str, Any]:
    node = dict(dgd.component_doc(name))
    node.pop("replicas", None)
    return node


def worker_hash(dgd: dgdmod.Dgd) -> str:
    """A short deterministic hash of the worker components' spec (replica counts left out: a
    scale is not a new generation), standing in for the operator's worker hash."""
    spec = {name: _spec_without_replicas(dgd, name)
            for name, c in sorted(dgd.components.items()) if c.role.is_worker}
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


def edited_dgd(prepared: Prepared) -> dgdmod.Dgd:
    """The DGD as it reads after the in-place edit: with ``isolation: in-place`` what dgdgen renders
    (the candidate under the stable's name, the capacity budget as rolling-update annotations);
    otherwise the candidate's changes applied to the stable DGD by hand, its annotations as they
    are (the operator's defaults where there are none)."""
    from dgdgen.render import dgds

    if prepared.mode == "in-place":
        step = prepared.plan.steps[-1]
        return dgdmod.parse(dgds.in_place(prepared, step)[0].obj)
    # by hand: the candidate's own changes only (not the termination grace periods dgdgen gives
    # the pods of a candidate DGD it renders)
    d = prepared.candidate.dgd.copy()
    d.doc["metadata"]["name"] = prepared.stable.dgd.name
    d.refresh()
    return d


class InPlaceRehearsal:
    def __init__(self, opts: InPlaceOptions, progress: Callable[[str], None]) -> None:
        if opts.worker_namespaces not in WORKER_NAMESPACES:
            raise ValueError(opts.worker_namespaces)
        self.opts = opts
        self.say = progress
        self.t0 = time.monotonic()
        self.events: list[tuple[float, str]] = []
        self.snapshots: list[Snapshot] = []
        self.pods: list[Pod] = []
        self.rejected: list[str] = []
        self._stoppers: list[threading.Thread] = []
        self.model = ""
        self.creating: list[Creating] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    def event(self, text: str) -> None:
        self.events.append((self.now(), text))
        self.say(f"  [{self.now():6.1f} s] {text}")

    # ------------------------------------------------------------------ main

    def run(self) -> InPlaceOutcome:
        opts = self.opts
        prepared = prepare(str(opts.spec))
        self.prepared = prepared
        stable = prepared.stable.dgd.copy()
        edited = edited_dgd(prepared)
        k8s_ns = prepared.loaded.spec.metadata.namespace
        base = dgdmod.dynamo_namespace(stable.namespace or k8s_ns, stable.name)
        hashed = opts.worker_namespaces == "hashed"
        old_hash, new_hash = worker_hash(stable), worker_hash(edited)
        self.ns = {"stable": f"{base}-{old_hash}" if hashed else base,
                   "candidate": f"{base}-{new_hash}" if hashed else base}
        self.suffix = {"stable": old_hash, "candidate": new_hash}
        self.base = base
        workdir = (opts.workdir or Path(tempfile.mkdtemp(prefix="dgdgen-inplace-"))).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        self.model_dir = make_model_dir(workdir / "model")
        self.facts = {"stable": dgd_facts(stable), "candidate": dgd_facts(edited)}
        self.dgds = {"stable": stable, "candidate": edited}
        budgets = {name: component_budget(edited, name) for name in edited.components}
        frontend_names = [n for n, c in edited.components.items() if c.role is Role.FRONTEND]
        fe_changed = {n for n in frontend_names
                      if _spec_without_replicas(stable, n) != _spec_without_replicas(edited, n)}
        workers = [n for n, c in edited.components.items() if c.role.is_worker]
        # With hashed namespaces every worker pod's suffix changes with any worker's spec, so
        # every worker component rolls; in one shared namespace only the changed ones do.
        rolled = workers if hashed else [
            n for n in workers
            if _spec_without_replicas(stable, n) != _spec_without_replicas(edited, n)]
        self.say(f"in-place rehearsal of {opts.spec} in {workdir}: worker namespaces "
                 f"{opts.worker_namespaces} (stable {self.ns['stable']}, candidate "
                 f"{self.ns['candidate']}), {opts.rate:g} requests/s")
        proxy = Proxy(workdir)
        load: Load | None = None
        with LocalDynamo(workdir / "dynamo") as rt:
            self.rt = rt
            try:
                # the stable DGD as it runs today
                fes = [self._start_frontend(n, "stable", i) for n in frontend_names
                       for i in range(stable.components[n].replicas)]
                olds = [self._start_worker(n, "stable", i) for n in workers
                        for i in range(stable.components[n].replicas)]
                for pod in fes:
                    rt.wait_frontend_up(pod.proc, timeout=60)
                for pod in olds:
                    rt.wait_worker_ready(pod.proc, timeout=90)
                    self._available(pod)
                for pod in fes:
                    rt.wait_model_ready(pod.proc, self.model, timeout=90, workers=len(olds))
                    self._available(pod)
                self._service(proxy)
                self._snapshot("stable running")
                load = Load(proxy.port, self.model, rate=opts.rate, t0=self.t0, worker_ids=True)
                load.start()
                self.say(f"load: {opts.rate:g} requests/s at the frontend Service (port "
                         f"{proxy.port})")
                self._sleep(opts.before)
                edit_at = self.now()
                self._snapshot("edit applied")
                self.event("edit applied in place: the operator rolls "
                           + ", ".join(f"{n} ({budgets[n].source})" for n in rolled
                                       + sorted(fe_changed)))
                self._roll(rolled, fe_changed, budgets, proxy)
                rolled_at = self.now()
                self.event("roll done: every old pod replaced")
                self._snapshot("roll done")
                self._sleep(opts.after)
                load.stop()
                self.say(f"load stopped: {len(load.records)} requests")
            finally:
                if load is not None:
                    load.stop(timeout=5)
                for t in self._stoppers:
                    t.join(opts.stop_grace + 10)
                proxy.stop()
        records = load.snapshot() if load else []
        configs = {p.worker_id: p.config for p in self.pods if p.worker_id}
        failed = any(not r.outcome.ok for r in records)
        return InPlaceOutcome(
            options=opts, prepared=prepared, stable_revision=prepared.plan.stable_revision,
            candidate_revision=prepared.plan.candidate_revision, namespaces=dict(self.ns),
            frontend_mode=(f"DYN_NAMESPACE_PREFIX={base}" if hashed else f"--namespace {base}"),
            budgets={n: budgets[n] for n in rolled + sorted(fe_changed)},
            frontend_rolled=bool(fe_changed), records=records, configs=configs,
            snapshots=list(self.snapshots), events=list(self.events), edit_at=edit_at,
            rolled_at=rolled_at, duration=self.now(), rejected=list(self.rejected),
            exit_code=1 if failed else 0,
            result="rolled (ungated)" + (" with client failures" if failed else ""),
        )

    # ------------------------------------------------------------------ the roll

    def _roll(self, workers: list[str], fe_changed: set[str], budgets: Mapping[str, Budget],
              proxy: Proxy) -> None:
        """Every changed component's Deployment rolls at once, each within its own budget."""
        comps = list(workers) + sorted(fe_changed)
        counter = {n: 0 for n in comps}
        while True:
            progressed = False
            for n in comps:
                b = budgets[n]
                old = [p for p in self._pods(n, "stable") if p.stopped is None]
                new = [p for p in self._pods(n, "candidate") if p.stopped is None]
                creating = [c for c in self.creating if c.component == n]
                ready_new = [p for p in new if p.available is not None]
                # scale up: never more than replicas + maxSurge pods
                want = min(b.replicas, b.replicas + b.max_surge - len(old))
                for _ in range(max(0, want - len(new) - len(creating))):
                    counter[n] += 1
                    self._create(n, counter[n] - 1)
                    progressed = True
                # scale down: keep replicas - maxUnavailable available
                available = len(old) + len(ready_new)
                removable = min(len(old), available - (b.replicas - b.max_unavailable))
                for p in old[:max(0, removable)]:
                    self._stop(p, proxy)
                    progressed = True
            if progressed:
                continue  # a Deployment reconciles again at once after a change
            if all(not [p for p in self._pods(n, "stable") if p.stopped is None]
                   and len([p for p in self._pods(n, "candidate") if p.available is not None])
                   >= budgets[n].replicas for n in comps):
                return
            if not self.creating and not any(
                    p.config == "candidate" and p.available is None and p.stopped is None
                    for p in self.pods):
                raise ApplyError("the roll made no progress (no pod to start, none to stop)")
            first = self._wait_any()
            if first.role is Role.FRONTEND:
                self._service(proxy)
            self._snapshot(f"{first.name} available")

    def _create(self, component: str, index: int) -> None:
        """A new pod of the candidate: scheduled now, its process started ``pod_startup`` seconds
        later (image pull and model load; the mocker itself is ready in about a second)."""
        role = self.dgds["candidate"].components[component].role
        startup = 0.0 if role is Role.FRONTEND else self.opts.pod_startup
        name = f"candidate-{component.lower()}-{index}"
        self.creating.append(Creating(component, index, name, self.now() + startup))
        self.event(f"create pod {name}" + (f" (starts in {startup:g} s)" if startup else ""))

    def _launch_due(self) -> None:
        for c in [c for c in self.creating if c.due <= self.now()]:
            self.creating.remove(c)
            role = self.dgds["candidate"].components[c.component].role
            if role is Role.FRONTEND:
                self._start_frontend(c.component, "candidate", c.index)
            else:
                self._start_worker(c.component, "candidate", c.index)

    # ------------------------------------------------------------------ pods

    def _pods(self, component: str, config: str) -> list[Pod]:
        return [p for p in self.pods if p.component == component and p.config == config]

    def _start_frontend(self, name: str, config: str, index: int) -> Pod:
        label = f"{config}-{name.lower()}-{index}"
        if self.opts.worker_namespaces == "hashed":
            proc = self.rt.frontend(prefix=self.base, name=label)
        else:
            proc = self.rt.frontend(self.base, name=label)
        pod = Pod(proc, config, name, Role.FRONTEND, self.base, started=self.now())
        self.pods.append(pod)
        self.event(f"start frontend {label} ({self.rt_frontend_mode()})")
        return pod

    def rt_frontend_mode(self) -> str:
        return (f"DYN_NAMESPACE_PREFIX={self.base}" if self.opts.worker_namespaces == "hashed"
                else f"--namespace {self.base}")

    def _start_worker(self, name: str, config: str, index: int) -> Pod:
        cf = self.facts[config].components[name]
        extra: dict[str, str] = {}
        if config == "candidate" and self.opts.candidate_slowdown != 1.0:
            ratio = f"{1.0 / self.opts.candidate_slowdown:g}"
            extra = {"--speedup-ratio": ratio, "--decode-speedup-ratio": ratio}
        inv = mocker_invocation(cf, model_dir=self.model_dir, extra=extra)
        self.model = self.model or inv.served_model_name
        env = {}
        if self.opts.worker_namespaces == "hashed":
            env["DYN_NAMESPACE_WORKER_SUFFIX"] = self.suffix[config]
        label = f"{config}-{name.lower()}-{index}"
        proc = self.rt.mocker(self.base, inv.args, env=env, name=label)
        pod = Pod(proc, config, name, cf.role, self.ns[config], started=self.now())
        self.pods.append(pod)
        self.event(f"start worker {label} (Dynamo namespace {self.ns[config]})")
        return pod

    def _stop(self, pod: Pod, proxy: Proxy) -> None:
        pod.stopped = self.now()
        if pod.role is Role.FRONTEND:
            # The Service stops sending to it before it gets SIGTERM (what a preStop delay gives
            # a frontend pod on a cluster); the connections the proxy accepted before its reload
            # finish first. Without such a delay a cluster's endpoint propagation races the
            # SIGTERM, which is not rehearsed here.
            self._service(proxy)
            time.sleep(FRONTEND_DEREGISTRATION_SECONDS)
        self.event(f"stop {pod.proc.name} (SIGTERM)")
        self._snapshot(f"{pod.proc.name} terminating")
        t = threading.Thread(target=self.rt.stop, args=(pod.proc,),
                             kwargs={"grace": self.opts.stop_grace}, daemon=True)
        t.start()
        self._stoppers.append(t)

    def _frontends(self) -> list[Pod]:
        return [p for p in self.pods if p.role is Role.FRONTEND and p.stopped is None
                and p.available is not None]

    def _listed(self, pod: Pod) -> bool:
        """The frontend lists ``pod``: its namespace carries at least as many workers of its type
        as there are available-or-this pods of that type in it."""
        want = 1 + sum(1 for p in self.pods if p is not pod and p.namespace == pod.namespace
                       and p.role is pod.role and p.available is not None and p.stopped is None)
        for fe in self._frontends():
            data = self.rt.model_ready(fe.proc, self.model)
            ns = ((data or {}).get("namespaces") or {}).get(pod.namespace) or {}
            types = ns.get("worker_types") or {}
            kind = "aggregated" if pod.role is Role.AGGREGATED else pod.role.value
            got = (types.get(kind) or {}).get("workers", 0)
            if not isinstance(got, int) or got < want:
                return False
        return True

    def _ready(self, pod: Pod) -> bool:
        if pod.role is Role.FRONTEND:
            from dgdgen.runtime.procs import http_get

            if http_get(pod.proc.port, "/health")[0] != 200:
                return False
            # Ready once it sees every worker the running frontends see: a frontend lists the
            # model as ready from its first worker set (the prefill workers, say) and answers 503
            # until the decode set is in too (seen with 1.6.1 while replacing a frontend).
            data = self.rt.model_ready(pod.proc, self.model)
            if not data or not data.get("ready"):
                return False
            others = [self.rt.model_ready(fe.proc, self.model) for fe in self._frontends()]
            return count_ready_workers(data) >= max(
                (count_ready_workers(o) for o in others if o), default=0)
        from dgdgen.runtime.procs import http_json

        health = http_json(pod.proc.system_port, "/health")
        return health is not None and health.get("status") == "ready"

    def _wait_any(self, timeout: float = 180.0) -> Pod:
        """The next candidate pod to become available, launching the pods that are due."""
        deadline = time.monotonic() + timeout
        admit = self.opts.worker_namespaces == "hashed"
        while True:
            self._launch_due()
            pending = [p for p in self.pods if p.config == "candidate" and p.available is None
                       and p.stopped is None]
            for pod in pending:
                if not pod.proc.alive():
                    raise ApplyError(f"{pod.proc.name} exited with {pod.proc.popen.returncode}:"
                                     f"\n{pod.proc.log_tail()}")
                if self._ready(pod):
                    if pod.role.is_worker:
                        if admit and not self._listed(pod):
                            continue
                        if not admit:
                            self._note_admission(pod)
                    self._available(pod)
                    return pod
            if time.monotonic() > deadline:
                names = ", ".join([p.name for p in pending] + [c.name for c in self.creating])
                raise ApplyError(f"no pod of {names} became available in {timeout:.0f} s")
            time.sleep(0.05)

    def _note_admission(self, pod: Pod) -> None:
        """One shared namespace: Kubernetes counts the pod ready by its own probe; say whether the
        frontend took it (it does not when its card differs from the incumbent's)."""
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if self._listed(pod):
                return
            time.sleep(0.1)
        self.rejected.append(pod.proc.name)
        self.event(f"{pod.proc.name} is ready by its own /health but the frontend's "
                   "/v1/models/{model}/ready does not list it (one Dynamo namespace: the first "
                   "configuration accepted is kept)")

    def _available(self, pod: Pod) -> None:
        pod.available = self.now()
        if pod.role.is_worker:
            pod.worker_id = _worker_id(pod.proc)
        self.event(f"{pod.proc.name} available" + (f" (worker {pod.worker_id})"
                                                   if pod.worker_id else ""))

    def _service(self, proxy: Proxy) -> None:
        """The frontend Service: every available frontend pod that is not terminating, in round
        robin (kube-proxy does not weigh)."""
        backends: list[tuple[str, int, list[int]]] = [
            (p.proc.name, 1, [p.proc.port]) for p in self._frontends()]
        proxy.kind = "service"
        proxy.apply(proxy.stand_in(backends))

    def _snapshot(self, text: str) -> None:
        workers: dict[str, dict[str, int]] = {}
        for p in self.pods:
            if p.role.is_worker and p.available is not None and p.stopped is None:
                comp = workers.setdefault(p.config, {})
                comp[p.component] = comp.get(p.component, 0) + 1
        self.snapshots.append(Snapshot(self.now(), workers, text))

    def _sleep(self, seconds: float) -> None:
        end = self.now() + seconds
        while self.now() < end:
            time.sleep(min(0.2, end - self.now()))


def _worker_id(proc: Proc, timeout: float = 10.0) -> str:
    """The worker's instance id, as its own metrics label it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for s in scrape(proc.system_port):
            if s.name == "dynamo_component_requests_total" and s.labels.get("worker_id"):
                return str(s.labels["worker_id"])
        time.sleep(0.1)
    return ""


# --------------------------------------------------------------------------- observation


def served_config(out: InPlaceOutcome, rec: Record) -> str:
    """The configuration whose worker served a request ("" when the frontend named none, e.g. a
    failed request; "mixed" when prefill and decode were of different configurations)."""
    d = out.configs.get(rec.outcome.decode_worker, "")
    pf = out.configs.get(rec.outcome.prefill_worker, "") if rec.outcome.prefill_worker else d
    if d and pf and d != pf:
        return "mixed"
    return d


def serving_role(out: InPlaceOutcome) -> Role:
    roles = {c.role for c in out.prepared.stable.dgd.components.values() if c.role.is_worker}
    return Role.DECODE if Role.DECODE in roles else Role.AGGREGATED


@dataclass(frozen=True)
class Segment:
    """A stretch of the roll with a constant set of available workers."""

    start: float
    end: float
    workers: dict[str, int]  # config → available workers of the serving role
    expected: float  # the candidate's share of those workers, %
    requests: int
    candidate: int
    observed: float | None  # % of the requests attributed, None without any


def segments(out: InPlaceOutcome, *, settle: float = 0.5) -> list[Segment]:
    """Per stretch between two pod changes: the candidate's share of the serving role's available
    workers, and the share of the requests that started in it (from ``settle`` seconds after the
    change: the frontend's discovery follows a removal within milliseconds) its workers served."""
    role = serving_role(out)
    comps = {n for n, c in out.prepared.stable.dgd.components.items() if c.role is role}
    rows = []
    snaps = out.snapshots
    for i, snap in enumerate(snaps):
        end = snaps[i + 1].t if i + 1 < len(snaps) else out.duration
        counts = {cfg: sum(n for c, n in m.items() if c in comps)
                  for cfg, m in snap.workers.items()}
        total = sum(counts.values())
        expected = 100.0 * counts.get("candidate", 0) / total if total else 0.0
        recs = [r for r in out.records if snap.t + settle <= r.start < end]
        served = [served_config(out, r) for r in recs]
        attributed = [s for s in served if s]
        cand = sum(1 for s in attributed if s == "candidate")
        rows.append(Segment(snap.t, end, counts, expected, len(recs), cand,
                            100.0 * cand / len(attributed) if attributed else None))
    return rows


def itl(rec: Record) -> float | None:
    """A stream's mean inter-token latency as its client saw it."""
    o = rec.outcome
    if not o.stream or o.ttft is None or o.tokens < 2:
        return None
    return (o.duration - o.ttft) / (o.tokens - 1)


def p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def worst_p95(records: list[Record], metric: Callable[[Record], float | None], *,
              window: float = 5.0, minimum: int = 10) -> float | None:
    """The worst p95 over consecutive ``window``-second stretches of request starts (stretches
    with fewer than ``minimum`` values are merged into the next)."""
    worst: float | None = None
    bucket: list[float] = []
    edge = None
    for r in sorted(records, key=lambda r: r.start):
        if edge is None:
            edge = r.start + window
        if r.start >= edge and len(bucket) >= minimum:
            v = p95(bucket)
            worst = v if worst is None or (v is not None and v > worst) else worst
            bucket, edge = [], r.start + window
        m = metric(r)
        if m is not None:
            bucket.append(m)
    if len(bucket) >= minimum or (worst is None and bucket):
        v = p95(bucket)
        worst = v if worst is None or (v is not None and v > worst) else worst
    return worst


def to_json(out: InPlaceOutcome) -> dict[str, Any]:
    recs = out.records
    served: dict[str, int] = {}
    for r in recs:
        s = served_config(out, r) or "unattributed"
        served[s] = served.get(s, 0) + 1
    segs = segments(out)
    return {
        "spec": str(out.options.spec),
        "strategy": "in-place (the operator's roll, ungated)",
        "result": out.result,
        "exitCode": out.exit_code,
        "workerNamespaces": out.options.worker_namespaces,
        "namespaces": out.namespaces,
        "frontend": out.frontend_mode,
        "frontendRolled": out.frontend_rolled,
        "revisions": {"stable": out.stable_revision, "candidate": out.candidate_revision},
        "requestRate": out.options.rate,
        "candidateSlowdown": out.options.candidate_slowdown,
        "podStartupSeconds": out.options.pod_startup,
        "budgets": {n: {"replicas": b.replicas, "maxSurge": b.max_surge,
                        "maxUnavailable": b.max_unavailable, "source": b.source}
                    for n, b in out.budgets.items()},
        "servingRole": serving_role(out).value,
        "editAt": round(out.edit_at, 2),
        "rolledAt": round(out.rolled_at, 2),
        "rollSeconds": round(out.rolled_at - out.edit_at, 1),
        "wallSeconds": round(out.duration, 1),
        "requests": len(recs),
        "streams": sum(1 for r in recs if r.outcome.stream),
        "failed": sum(1 for r in recs if not r.outcome.ok and not r.outcome.truncated),
        "truncated": sum(1 for r in recs if r.outcome.truncated),
        "served": dict(sorted(served.items())),
        "candidateServed": served.get("candidate", 0),
        "rejectedWorkers": out.rejected,
        "ttftP95Seconds": {cfg: _round(p95([r.outcome.ttft for r in recs
                                            if served_config(out, r) == cfg
                                            and r.outcome.ttft is not None]))
                           for cfg in ("stable", "candidate")},
        "worstTtftP95Seconds": _round(worst_p95(recs, lambda r: r.outcome.ttft)),
        "worstItlP95Seconds": _round(worst_p95(recs, itl)),
        "segments": [{"start": round(s.start, 2), "end": round(s.end, 2), "workers": s.workers,
                      "expectedCandidatePercent": round(s.expected, 1),
                      "requests": s.requests, "candidateServed": s.candidate,
                      "observedCandidatePercent": None if s.observed is None
                      else round(s.observed, 1)} for s in segs],
        "events": [{"t": round(t, 2), "event": e} for t, e in out.events],
        "failures": [{"t": round(r.start, 2), "servedBy": served_config(out, r),
                      "stream": r.outcome.stream, "status": r.outcome.status,
                      "truncated": r.outcome.truncated, "error": r.outcome.error}
                     for r in recs if not r.outcome.ok][:50],
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def to_markdown(out: InPlaceOutcome, data: dict[str, Any]) -> str:
    from dgdgen.runtime import DYNAMO_VERSION

    hashed = out.options.worker_namespaces == "hashed"
    how = (f"every worker pod with `DYN_NAMESPACE_WORKER_SUFFIX`: the stable's workers in "
           f"`{out.namespaces['stable']}`, the candidate's in `{out.namespaces['candidate']}`; "
           f"the frontend selects them with `{out.frontend_mode}`" if hashed else
           f"old and new workers in ONE Dynamo namespace `{out.namespaces['stable']}`, the "
           f"frontend with `{out.frontend_mode}`")
    lines = [
        f"# In-place rehearsal of `{out.options.spec}`",
        "",
        (f"**{out.result}** (exit {out.exit_code}) — {data['requests']} requests "
         f"({data['streams']} streamed), {data['failed']} failed, {data['truncated']} truncated; "
         f"the candidate configuration served {data['candidateServed']}; roll "
         f"{data['rollSeconds']} s, wall {data['wallSeconds']} s."),
        "",
        f"The edit applied to the running DGD and rolled the way the Dynamo operator rolls it "
        f"({'hashed' if hashed else 'shared'} worker namespaces): {how}. No gate, no pause, no "
        "rollback but another roll. Real Dynamo "
        f"{DYNAMO_VERSION} frontend and mocker workers; the load "
        f"({out.options.rate:g} requests/s) goes at the frontend Service; each request names the "
        "worker that served it (`nvext.extra_fields: [\"worker_id\"]`), each worker's id is read "
        "from its own metrics."
        + (f" Candidate slowed down {out.options.candidate_slowdown:g}×."
           if out.options.candidate_slowdown != 1 else "")
        + f" A new worker pod's process starts {out.options.pod_startup:g} s after the pod is "
        "created (image pull and model load).",
        "",
        "| component | replicas | maxSurge | maxUnavailable | from |",
        "| --- | ---: | ---: | ---: | --- |",
        *[f"| {n} | {b['replicas']} | {b['maxSurge']} | {b['maxUnavailable']} | {b['source']} |"
          for n, b in data["budgets"].items()],
        "",
        "Served by configuration: "
        + ", ".join(f"{k} {v}" for k, v in data["served"].items())
        + f". TTFT p95: stable {_fmt(data['ttftP95Seconds']['stable'])} s, candidate "
        f"{_fmt(data['ttftP95Seconds']['candidate'])} s; worst p95 over 5 s stretches: TTFT "
        f"{_fmt(data['worstTtftP95Seconds'])} s, ITL {_fmt(data['worstItlP95Seconds'])} s.",
        "",
    ]
    if data["rejectedWorkers"]:
        lines += [(f"Ready by their own `/health` (a Kubernetes readiness probe passes) but not "
                   f"listed by the frontend's `/v1/models/{{model}}/ready`: "
                   f"{', '.join(data['rejectedWorkers'])}."), ""]
    if data["served"].get("mixed"):
        lines += [(f"**{data['served']['mixed']} requests were prefilled by a worker of one "
                   "configuration and decoded by a worker of the other** (the frontend's answer "
                   "names both workers)."), ""]
    if data["served"].get("unattributed"):
        lines += [(f"{data['served']['unattributed']} requests name no worker (they failed "
                   "before one was chosen)."), ""]
    lines += [
        f"## Share of each configuration over the roll ({data['servingRole']} workers)",
        "",
        ("| from (s) | to (s) | available workers (stable/candidate) | candidate share of "
         "workers % | requests | candidate served | observed candidate % |"),
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for s in data["segments"]:
        if s["end"] - s["start"] < 0.01 and not s["requests"]:
            continue  # two pod changes in the same instant: the JSON keeps the stretch
        w = s["workers"]
        obs = "—" if s["observedCandidatePercent"] is None else f"{s['observedCandidatePercent']}"
        lines.append(f"| {s['start']} | {s['end']} | {w.get('stable', 0)}/{w.get('candidate', 0)}"
                     f" | {s['expectedCandidatePercent']} | {s['requests']} | "
                     f"{s['candidateServed']} | {obs} |")
    lines += ["", "![chart](chart.svg)", "", "## Events", "", "| t (s) | event |", "| ---: | --- |",
              *[f"| {e['t']} | {e['event']} |" for e in data["events"]], ""]
    if data["failures"]:
        lines += ["## Failed requests", "", "| start (s) | served by | what the client saw |",
                  "| ---: | --- | --- |"]
        for f in data["failures"]:
            what = "truncated stream" if f["truncated"] else f"HTTP {f['status']}"
            if f["error"]:
                what += f": {f['error']}"
            lines.append(f"| {f['t']} | {f['servedBy'] or '—'} | {what} |")
        lines.append("")
    return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def to_svg(out: InPlaceOutcome, data: dict[str, Any]) -> str:
    """Two panels on one time axis: the candidate configuration's share of the workers (what
    the operator's roll makes available, expected) and of the requests served (observed), and
    the available workers of each configuration; the edit and the end of the roll marked and
    named above the share. Each panel has its value axis (the top labelled) and the time axis."""
    width, left, right, h = 900, 70, 20, 160
    plot_right = width - right
    total = max(out.duration, 1.0)

    def x(t: float) -> float:
        return left + (plot_right - left) * max(0.0, min(t, total)) / total

    def path(pts: list[tuple[float, float]], y1: float, scale: float) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{x(t):.1f},{y1 - h * v / scale:.1f}"
                        for i, (t, v) in enumerate(pts))

    svg = ET.Element("svg", {"xmlns": "http://www.w3.org/2000/svg", "width": str(width),
                             "height": "0", "viewBox": "", "font-family": FONT_FAMILY})
    ET.SubElement(svg, "title").text = f"dgdgen rehearse (in place): {out.options.spec}"
    background = sub(svg, "rect", x=0, y=0, width=width, height=0, fill="#ffffff")
    names = generation_names(out.prepared)
    colour = generation_colours(out.stable_revision, out.candidate_revision)
    sub(svg, "text", f"In-place rehearsal of {out.options.spec}: {names['stable']} → "
        f"{names['candidate']}", x=12, y=18, font_size=13, font_weight="bold", fill=INK,
        class_="title")
    ticks = [t for t in nice_ticks(total, 8) if t <= total + 1e-9]
    time_name = "seconds since the rehearsal started"
    marks = [(out.edit_at, "edit applied", "edit"), (out.rolled_at, "roll done", "rolled")]

    def panel(title: str, name: str, top: float, band: float) -> tuple[ET.Element, float, float]:
        g = sub(svg, "g", class_="panel", data_title=name)
        sub(g, "text", title, x=left, y=top + 12, font_size=12, fill=INK, class_="panel-title")
        y0 = top + 20 + band
        y1 = y0 + h
        sub(g, "rect", x=left, y=y0, width=plot_right - left, height=h, fill="none",
            stroke=GRID)
        for t, _, cls in marks:
            sub(g, "line", class_=cls, x1=f"{x(t):.1f}", y1=y0, x2=f"{x(t):.1f}", y2=y1,
                stroke=MUTED, stroke_dasharray="2 2")
        time_axis(g, x, ticks, y1, left, plot_right, time_name)
        return g, y0, y1

    # panel 1: the candidate's share of the workers (expected) and of the requests (observed);
    # the edit and the end of the roll named above it, each in the first row that has room
    g, y0, y1 = panel("candidate configuration: share of the workers (expected) and of the "
                      "requests served (observed)", "candidate share (%)", 30.0, 26)
    ends = [float("-inf")] * 2
    for t, label, cls in marks:
        mx = x(t) + 3
        row = next((i for i, e in enumerate(ends) if mx >= e + 6), 1)
        ends[row] = mx + text_width(label, 9)
        sub(g, "text", label, x=f"{mx:.1f}", y=f"{y0 - 16 + 11 * row:.1f}", font_size=9,
            fill=MUTED, class_=f"mark-label {cls}")
    expected = []
    for s in data["segments"]:
        expected += [(s["start"], s["expectedCandidatePercent"]),
                     (s["end"], s["expectedCandidatePercent"])]
    if expected:
        sub(g, "path", d=path(expected, y1, 100), fill="none", stroke="#8c8c8c",
            stroke_width=2, stroke_dasharray="5 3", class_="expected")
    bucket = max(1.0, out.duration / 90)
    counts: dict[int, list[int]] = {}
    for r in out.records:
        cfg = served_config(out, r)
        if not cfg:
            continue
        b = counts.setdefault(int(r.start // bucket), [0, 0])
        b[0] += 1
        b[1] += cfg == "candidate"
    pts = [((k + 0.5) * bucket, 100.0 * c / n) for k, (n, c) in sorted(counts.items()) if n]
    if pts:
        sub(g, "path", d=path(pts, y1, 100), fill="none", stroke=INK, stroke_width=1.2,
            class_="observed")
    value_axis(g, [(y1 - h * v / 100, f"{v} %") for v in (0, 25, 50, 75, 100)], left, y0, y1,
               "share %")
    # panel 2: available workers per configuration
    peak = max([1] + [sum(s.workers.get(c, {}).values()) for s in out.snapshots
                      for c in ("stable", "candidate")])
    scale = nice_ticks(peak, min(peak, 4))
    g, y0, y1 = panel("available workers per configuration (all worker components)", "workers",
                      y1 + 44, 0)
    for cfg in ("stable", "candidate"):
        wpts: list[tuple[float, float]] = []
        for i, snap in enumerate(out.snapshots):
            end = out.snapshots[i + 1].t if i + 1 < len(out.snapshots) else out.duration
            n = sum(snap.workers.get(cfg, {}).values())
            wpts += [(snap.t, n), (end, n)]
        if wpts:
            sub(g, "path", d=path(wpts, y1, scale[-1]), fill="none", stroke=colour[cfg],
                stroke_width=WIDTH[cfg], class_="workers", data_config=cfg)
    value_axis(g, [(y1 - h * v / scale[-1], f"{v:g}") for v in scale], left, y0, y1, "workers")
    legend = sub(svg, "g", class_="legend")
    items: list[tuple[dict[str, object], str]] = [
        ({"stroke": colour[cfg], "stroke-width": WIDTH[cfg]}, f"{names[cfg]} configuration")
        for cfg in ("stable", "candidate")]
    items += [({"stroke": "#8c8c8c", "stroke-width": "2", "stroke-dasharray": "5 3"},
               "expected: candidate share of the workers"),
              ({"stroke": INK, "stroke-width": "1.2"}, "observed: candidate share of requests"),
              ({"stroke": MUTED, "stroke-dasharray": "2 2"},
               "dotted: the spec's edit applied, the last old pod gone")]
    y = legend_row(legend, items, left, y1 + 48, plot_right)
    height = int(y + 12)
    svg.set("height", str(height))
    svg.set("viewBox", f"0 0 {width} {height}")
    background.set("height", str(height))
    ET.indent(svg)
    return ET.tostring(svg, encoding="unicode") + "\n"


def write_report(out: InPlaceOutcome, dest: Path) -> dict[str, Any]:
    data = to_json(out)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report.json").write_text(json.dumps(data, indent=2) + "\n")
    (dest / "report.md").write_text(to_markdown(out, data))
    (dest / "chart.svg").write_text(to_svg(out, data))
    return data


def summary_lines(data: dict[str, Any]) -> list[str]:
    out = ["  served: " + ", ".join(f"{k} {v}" for k, v in data["served"].items())]
    for s in data["segments"]:
        obs = s["observedCandidatePercent"]
        workers = split_text(s["workers"], unit="")
        out.append(f"  {s['start']:>7.1f}–{s['end']:<7.1f} s workers {workers}, candidate "
                   f"{s['expectedCandidatePercent']} % of workers, "
                   f"{'—' if obs is None else obs} % of {s['requests']} requests")
    return out
