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
* Pods are replaced by the update strategy the checker's one model names for the DGD
  (:func:`dgdgen.check.context.roll_of_dgd`, :class:`dgdgen.check.inplace.Pace`: the release and
  worker backing of ``spec.dynamo`` or ``--workers-run-by``, a Grove DGD's
  ``nvidia.com/grove-update-strategy`` annotation, else ``--grove-update-strategy``, else the
  release's default for the graph):

  - Deployment-backed (``Pace.SURGE``): the way Kubernetes replaces a Deployment's pods, per
    component, at most ``replicas + maxSurge`` pods and at least ``replicas - maxUnavailable``
    available, from the component's ``nvidia.com/deployment-rolling-update-max-surge`` /
    ``-max-unavailable`` annotations (operator defaults 25 % / 25 %; a percentage of surge rounds
    up, of unavailability down). Every component is sized on its own, as the operator's managed
    rolling update sizes each worker component's old and new replicas on its own
    (ai-dynamo/dynamo ``deploy/operator/internal/controller/dgd_worker_rollout_reconciler.go``
    ``buildRollingUpdateContext`` at 03dfed81c3d05d88bf4ca06d21f021160c7cb97d, not the v1.6.1
    tag). ``Pace.RECREATE``: a component annotated ``nvidia.com/deployment-strategy: Recreate``
    loses every old pod before a new one is created. A multinode component (LeaderWorkerSet) is
    replaced one pod at a time.
  - Grove ``RollingRecreate`` and LeaderWorkerSet (``Pace.ONE_AT_A_TIME``): every rolled
    component one pod at a time (maxUnavailable 1, maxSurge 0), concurrently.
  - Grove ``Coherent`` (``Pace.COHERENT``, ai-dynamo/grove GREP-393 "Coherent Rolling Updates",
    docs/proposals/393-coherent-rolling-updates/README.md at
    0cc5019f5b14cc2227443272f68c542bfa6f821b, "Coherent update flow"): one minimal viable unit
    at a time — minAvailable (1) old pods of every rolled component are taken down together
    ("Coherent always replaces in place": no surge), their replacements are created as one gang,
    and the next step waits until every pod of that gang is available; the last step takes the
    residual pods. The take-down set's decode pods get SIGTERM first (the kubelets' order is not
    fixed on a cluster).
  - Grove ``OnDelete`` (``Pace.ON_DELETE``, GREP-291): nothing is replaced; the rehearsal says so
    and the old configuration keeps serving.

  A new worker pod counts as available once it is ready by its own ``/health`` (the readiness
  probe) and, with hashed namespaces, listed by the frontend's ``/v1/models/{model}/ready``; only
  then may old pods go. Pods created at the same instant start prefill first. A frontend whose
  spec changed is replaced the same way behind its Service.
* The load goes at the frontend Service (a round-robin HAProxy over the ready frontend pods, no
  weights, no health checks: a Service is its selector); every request asks the frontend which
  worker served it (``nvext.extra_fields: ["worker_id"]``), and each worker's id is read from its
  own metrics (``dynamo_component_requests_total{worker_id, dynamo_namespace}``), so the report
  knows which configuration served every request.

What was observed is read and reported by :mod:`dgdgen.rehearse.inplace_report`.

Why one module: :class:`InPlaceRehearsal` is one loop that creates, waits for and stops pods
in the order the strategy gives, while the load runs and the frontends are watched; its steps
share the running processes and the snapshot list. What it observed is read elsewhere
(:mod:`dgdgen.rehearse.inplace_report`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgdgen.check.context import roll_of_dgd
from dgdgen.check.facts import dgd_facts
from dgdgen.check.inplace import Pace, Roll, RunBy, parse_grove_strategy
from dgdgen.model import dgd as dgdmod
from dgdgen.model.dgd import Role
from dgdgen.pipeline.prepare import prepare, target_of
from dgdgen.plan.prepared import Prepared
from dgdgen.rehearse.cluster import ApplyError
from dgdgen.rehearse.load import Load, Record
from dgdgen.rehearse.proxy import Proxy
from dgdgen.runtime.metrics import scrape
from dgdgen.runtime.mocker import mocker_invocation, rehearsal_flags
from dgdgen.runtime.model import make_model_dir
from dgdgen.runtime.podserver import PodServer
from dgdgen.runtime.procs import LocalDynamo, Proc, inherited_env
from dgdgen.runtime.routing import (
    count_ready_workers,
    prefill_namespaces,
    prefill_router_windows,
    prefill_routers_active,
)

# The operator's defaults when a component has no rolling-update annotation (Dynamo's operator
# guide, "Rolling Updates": maxSurge 25 %, maxUnavailable 25 %, as a Deployment's).
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"
WORKER_NAMESPACES = ("hashed", "shared")
# Seconds between taking a frontend pod out of its Service and its SIGTERM.
FRONTEND_DEREGISTRATION_SECONDS = 1.0
# How long the roll waits for a candidate pod to become available (its process started after
# --pod-startup, ready, and for a hashed worker listed by the frontend) before it gives up.
POD_WAIT_SECONDS = 180.0


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
    # the worker backing and Grove update strategy, over the spec's spec.dynamo (None: the spec's,
    # and for Grove the DGD's annotation, else the release's default)
    workers_run_by: str | None = None
    grove_strategy: str | None = None


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
    roll: Roll | None = None  # the checker's model of the roll that was played
    roles: dict[str, Role] = dataclasses.field(default_factory=dict)  # component → role
    # (frontend, namespace, from, to): listed with both worker types, its prefill router not active
    router_windows: list[tuple[str, str, float, float]] = dataclasses.field(default_factory=list)
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


def roll_for(prepared: Prepared, edited: dgdmod.Dgd, opts: InPlaceOptions) -> Roll:
    """The checker's model of the operator's roll of ``edited``: the spec's release and worker
    backing (``spec.dynamo``), the options over them."""
    target = target_of(prepared.loaded)
    if opts.workers_run_by is not None:
        target = dataclasses.replace(target, run_by=RunBy(opts.workers_run_by))
    if opts.grove_strategy is not None:
        target = dataclasses.replace(
            target, grove_strategy=parse_grove_strategy(opts.grove_strategy, target.release))
    return roll_of_dgd(target, dgd_facts(edited))


def budget_for(roll: Roll, dgd: dgdmod.Dgd, name: str) -> Budget:
    """How the strategy of ``roll`` replaces the pods of component ``name``."""
    comp = dgd.components[name]
    pace, label = roll.strategy.pace, roll.strategy.name
    if pace is Pace.ONE_AT_A_TIME and roll.run_by is RunBy.GROVE:
        return Budget(comp.replicas, 0, 1, f"{label}: one pod at a time")
    if pace is Pace.COHERENT:
        return Budget(comp.replicas, 0, 1, f"{label}: minAvailable (1) per step, with the other "
                                           "rolled components, as one gang")
    if pace is Pace.ON_DELETE:
        return Budget(comp.replicas, 0, 0, f"{label}: nothing replaced until pods are deleted")
    ann = dgd.copy().component_annotations(name)
    if comp.node_count <= 1 and str(ann.get(dgdmod.ANN_STRATEGY, "")).lower() == "recreate":
        return Budget(comp.replicas, 0, comp.replicas,
                      f"annotations ({dgdmod.ANN_STRATEGY}: Recreate)")
    return component_budget(dgd, name)


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
        self.wall0 = time.time()  # t0 on the clock the processes' logs are stamped with
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

    def run(self, *, pods: PodServer | None = None) -> InPlaceOutcome:
        """The roll; with ``pods``, its processes start from that server (the caller's), else
        from one of its own."""
        if pods is not None:
            self.podserver = pods
            return self._run()
        with PodServer(inherited_env()) as self.podserver:
            return self._run()

    def _run(self) -> InPlaceOutcome:
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
        roll = roll_for(prepared, edited, opts)
        self.roll = roll
        budgets = {name: budget_for(roll, edited, name) for name in edited.components}
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
        self.say(f"update strategy: {strategy_line(roll)}")
        proxy = Proxy(workdir)
        load: Load | None = None
        with LocalDynamo(workdir / "dynamo", pods=self.podserver) as rt:
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
                # the edit's time is its snapshot's: the segment before it ends exactly there
                # (read twice, the clock moved between them, and rounded in the report the
                # stable's segment could end a hundredth of a second after the edit)
                edit_at = self._snapshot("edit applied")
                pace = roll.strategy.pace
                if pace is Pace.ON_DELETE:
                    self.event(f"edit applied in place: {roll.strategy.name} — nothing rolls "
                               "until pods are deleted: every pod keeps the old configuration")
                    rolled_at = self.now()
                else:
                    self.event(f"edit applied in place: the operator rolls ({roll.strategy.name}) "
                               + ", ".join(f"{n} ({budgets[n].source})" for n in rolled
                                           + sorted(fe_changed)))
                    if pace is Pace.COHERENT:
                        self._roll_coherent(rolled + sorted(fe_changed), proxy)
                    else:
                        self._roll(rolled, fe_changed, budgets, proxy)
                    self.event("roll done: every old pod replaced")
                    rolled_at = self._snapshot("roll done")
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
        windows = self._router_windows()
        failed = any(not r.outcome.ok for r in records)
        return InPlaceOutcome(
            options=opts, prepared=prepared, stable_revision=prepared.plan.stable_revision,
            candidate_revision=prepared.plan.candidate_revision, namespaces=dict(self.ns),
            frontend_mode=(f"DYN_NAMESPACE_PREFIX={base}" if hashed else f"--namespace {base}"),
            budgets={n: budgets[n] for n in rolled + sorted(fe_changed)},
            frontend_rolled=bool(fe_changed), records=records, configs=configs,
            snapshots=list(self.snapshots), events=sorted(self.events + [
                (t, (f"{fe} lists {ns} with both worker types, its prefill router not active "
                     f"for {(end - t) * 1000:.0f} ms (a request it routes there meanwhile: 503)"))
                for fe, ns, t, end in windows], key=lambda e: e[0]),
            router_windows=windows, edit_at=edit_at,
            rolled_at=rolled_at, duration=self.now(), rejected=list(self.rejected), roll=roll,
            roles={n: c.role for n, c in edited.components.items()},
            exit_code=1 if failed else 0,
            result=("not rolled (OnDelete: no pod replaced, the old configuration serves)"
                    if roll.strategy.pace is Pace.ON_DELETE else "rolled (ungated)")
            + (" with client failures" if failed else ""),
        )

    def _router_windows(self) -> list[tuple[str, str, float, float]]:
        """(frontend, namespace, from, to) in seconds since t0: each frontend's windows in which
        it listed a disaggregated namespace before activating its prefill router (its log)."""
        return [(p.proc.name, ns, start - self.wall0, end - self.wall0)
                for p in self.pods if p.role is Role.FRONTEND
                for ns, start, end in prefill_router_windows(p.proc.log_path)]

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

    def _roll_coherent(self, comps: list[str], proxy: Proxy) -> None:
        """Grove Coherent (GREP-393): one minimal viable unit at a time — take down minAvailable
        (1) old pods of every rolled component together, create their replacements as one gang,
        wait until the whole gang is available; the last step takes the residual pods."""
        olds = {n: [p for p in self._pods(n, "stable") if p.stopped is None] for n in comps}
        wanted = {n: self.dgds["candidate"].components[n].replicas for n in comps}
        steps = coherent_steps({n: len(olds[n]) for n in comps}, wanted)
        made = {n: 0 for n in comps}
        for i, (down, up) in enumerate(steps):
            gone = [p for n in comps for p in olds[n][sum(s[0][n] for s in steps[:i]):][:down[n]]]
            self.event(f"Coherent step {i + 1}/{len(steps)}: take down "
                       f"{', '.join(p.name for p in gone) or 'nothing'} together; create one "
                       "gang of " + ", ".join(f"{up[n]} {n}" for n in comps if up[n]))
            for pod in sorted(gone, key=_take_down_order):
                self._stop(pod, proxy, snapshot=False)
            self._snapshot("take-down set terminating")
            for n in comps:
                for _ in range(up[n]):
                    self._create(n, made[n])
                    made[n] += 1
            for _ in range(sum(up.values())):
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
        roles = self.dgds["candidate"].components
        for c in sorted([c for c in self.creating if c.due <= self.now()],
                        key=lambda c: (c.due, _launch_rank(roles[c.component].role))):
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
        extra = rehearsal_flags(self.opts.candidate_slowdown if config == "candidate" else 1.0)
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

    def _stop(self, pod: Pod, proxy: Proxy, *, snapshot: bool = True) -> None:
        pod.stopped = self.now()
        if pod.role is Role.FRONTEND:
            # The Service stops sending to it before it gets SIGTERM (what a preStop delay gives
            # a frontend pod on a cluster); the connections the proxy accepted before its reload
            # finish first. Without such a delay a cluster's endpoint propagation races the
            # SIGTERM, which is not rehearsed here.
            start = time.monotonic()
            if self._service(proxy) and not proxy.drain(self.opts.stop_grace):
                self.event(f"the proxy still holds connections accepted while {pod.proc.name} "
                           f"was in its Service after {self.opts.stop_grace:g} s")
            time.sleep(max(0.0, FRONTEND_DEREGISTRATION_SECONDS - (time.monotonic() - start)))
        self.event(f"stop {pod.proc.name} (SIGTERM)")
        if snapshot:
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
            if count_ready_workers(data) < max(
                    (count_ready_workers(o) for o in others if o), default=0):
                return False
            # and can route to them: the 1.6.1 frontend lists a disaggregated namespace's workers
            # before it activates that namespace's prefill router, and answers 503 to a request
            # routed there in between (prefill_routers_active) — milliseconds on a quiet machine,
            # half a second on a busy one. A real pod's readiness probe comes seconds later; the
            # Service here would move at once (as the gated rehearsal's waves wait, cluster.py).
            return prefill_routers_active(pod.proc, prefill_namespaces(data))
        from dgdgen.runtime.procs import http_json

        health = http_json(pod.proc.system_port, "/health")
        return health is not None and health.get("status") == "ready"

    def _wait_any(self, timeout: float = POD_WAIT_SECONDS) -> Pod:
        """The next candidate pod to become available, launching the pods that are due."""
        deadline = time.monotonic() + timeout
        admit = self.opts.worker_namespaces == "hashed"
        while True:
            self._launch_due()
            pending = [p for p in self.pods if p.config == "candidate" and p.available is None
                       and p.stopped is None]
            for pod in pending:
                if not pod.proc.alive():
                    raise ApplyError(pod.proc.exit_story())
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

    def _service(self, proxy: Proxy) -> bool:
        """The frontend Service: every available frontend pod that is not terminating, in round
        robin (kube-proxy does not weigh). True if it changed."""
        backends: list[tuple[str, int, list[int]]] = [
            (p.proc.name, 1, [p.proc.port]) for p in self._frontends()]
        proxy.kind = "service"
        return proxy.apply(proxy.stand_in(backends))

    def _snapshot(self, text: str) -> float:
        """Record the available workers now; the time recorded."""
        workers: dict[str, dict[str, int]] = {}
        for p in self.pods:
            if p.role.is_worker and p.available is not None and p.stopped is None:
                comp = workers.setdefault(p.config, {})
                comp[p.component] = comp.get(p.component, 0) + 1
        t = self.now()
        self.snapshots.append(Snapshot(t, workers, text))
        return t

    def _sleep(self, seconds: float) -> None:
        end = self.now() + seconds
        while self.now() < end:
            time.sleep(min(0.2, end - self.now()))


def strategy_line(roll: Roll) -> str:
    """The strategy played, where it came from and what it does, for the progress output."""
    s = roll.strategy
    source = f", {roll.strategy_source}" if roll.strategy_source else ""
    return f"{s.name}{source} ({roll.run_by.label}): {s.text}"


def coherent_steps(old: Mapping[str, int],
                   new: Mapping[str, int]) -> list[tuple[dict[str, int], dict[str, int]]]:
    """Grove Coherent's steps for the rolled components: (pods taken down, pods created) per
    component and step. One minimal viable unit — minAvailable (1) pod of every component — per
    step; pods that cannot fill another whole unit join the last step (GREP-393: "Residual
    standalone-PCLQ pods that cannot fill a complete MVU are absorbed into the last MPG")."""
    if not old:
        return []
    count = max(1, min(min(old[n], new[n]) for n in old))
    steps = []
    for i in range(count):
        last = i == count - 1
        down = {n: old[n] - i if last else min(1, old[n] - i) for n in old}
        up = {n: new[n] - i if last else min(1, new[n] - i) for n in old}
        steps.append(({n: max(0, v) for n, v in down.items()},
                      {n: max(0, v) for n, v in up.items()}))
    return steps


def _launch_rank(role: Role) -> int:
    """Pods due at the same instant start prefill first (a gang's pods start together; which
    registers first is not fixed on a cluster)."""
    return {Role.PREFILL: 0, Role.FRONTEND: 2}.get(role, 1)


def _take_down_order(pod: Pod) -> int:
    """A take-down set's SIGTERMs: decode (and aggregated) workers first, then prefill, then
    frontends — the order that never leaves a listed decode worker without its prefill."""
    return {Role.PREFILL: 1, Role.FRONTEND: 2}.get(pod.role, 0)


def _worker_id(proc: Proc, timeout: float = 10.0) -> str:
    """The worker's instance id, as its own metrics label it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for s in scrape(proc.system_port):
            if s.name == "dynamo_component_requests_total" and s.labels.get("worker_id"):
                return str(s.labels["worker_id"])
        time.sleep(0.1)
    return ""
