"""The local cluster: the committed tree of a state, applied the way Argo CD and the Dynamo
operator would, with processes instead of pods.

* Objects are applied in ``argocd.argoproj.io/sync-wave`` order; a wave starts only when the
  previous one is healthy (docs/gitops.md §3, Argo CD sync waves). A DGD is healthy when every
  replica of every component runs and its frontend serves the model with all its workers.
* Objects that left the tree are pruned after the last wave (``PruneLast=true``).
* A DGD component becomes ``replicas`` processes: a ``dynamo.frontend`` (exact Dynamo namespace
  ``{k8s-namespace}-{dgd-name}``, as the operator derives it) or a ``dynamo.mocker`` per worker
  replica (engine flags carried by :mod:`dgdgen.runtime.mocker`); with ``answering``, dgdgen's
  answering engine (:mod:`dgdgen.runtime.answerer`) on the same flags instead. A component whose arguments
  change is replaced surge-first: new processes ready, then the old ones stop.
* A frontend runs with the request-migration limit its component sets (``--migration-limit``
  or ``DYN_MIGRATION_LIMIT``; :mod:`dgdgen.render.migration`), as the pod would.
* A Service is its selector; it reaches the frontend processes whose pod labels match.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dgdgen.check.facts import dgd_facts
from dgdgen.model import dgd as dgdmod
from dgdgen.model.dgd import Role
from dgdgen.render import migration
from dgdgen.runtime.mocker import mocker_invocation
from dgdgen.runtime.procs import POLL, LocalDynamo, Proc

WAVE = "argocd.argoproj.io/sync-wave"
# The labels the Dynamo operator sets on every component pod (ai-dynamo/dynamo
# deploy/operator/internal/consts/consts.go); rendered Services and PodMonitors may select on them.
OP_LABEL_DGD = "nvidia.com/dynamo-graph-deployment-name"
OP_LABEL_COMPONENT_TYPE = "nvidia.com/dynamo-component-type"
OP_LABEL_COMPONENT = "nvidia.com/dynamo-component"
REVISION = "dgdgen.dev/revision"

Key = tuple[str, str]  # (kind, name)


def key_of(obj: Mapping[str, Any]) -> Key:
    return (str(obj.get("kind")), str((obj.get("metadata") or {}).get("name")))


def wave_of(obj: Mapping[str, Any]) -> int:
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    try:
        return int(ann.get(WAVE, "0"))
    except ValueError:
        return 0


@dataclass
class ComponentRun:
    dgd: str
    name: str
    role: Role
    namespace: str  # Dynamo namespace
    args: tuple[str, ...]
    labels: dict[str, str]
    procs: list[Proc] = field(default_factory=list)


@dataclass
class DgdRun:
    name: str
    revision: str
    namespace: str
    model: str
    components: dict[str, ComponentRun] = field(default_factory=dict)

    def frontends(self) -> list[Proc]:
        return [p for c in self.components.values() if c.role is Role.FRONTEND for p in c.procs]

    def workers(self) -> list[Proc]:
        return [p for c in self.components.values() if c.role.is_worker for p in c.procs]


class ApplyError(RuntimeError):
    """A state could not be applied (a process failed to start, a model never became ready)."""


Event = Callable[[str], None]


class LocalCluster:
    def __init__(
        self,
        rt: LocalDynamo,
        *,
        model_dir: Path,
        k8s_namespace: str,
        revisions: Mapping[str, str] | None = None,
        extra_args: Callable[[str], Mapping[str, str]] | None = None,
        stop_grace: float = 60.0,
        event: Event | None = None,
        before_stop: Callable[[Proc], None] | None = None,
        answering: bool = False,
    ) -> None:
        self.rt = rt
        self.model_dir = model_dir
        self.k8s_namespace = k8s_namespace
        self.revisions = dict(revisions or {})  # DGD name → generation, for DGDs without
        # the revision annotation (the stable DGD as it runs today)
        self.extra_args = extra_args or (lambda revision: {})
        self.stop_grace = stop_grace
        self.event = event or (lambda text: None)
        self.before_stop = before_stop or (lambda proc: None)
        # workers run dgdgen's answering engine instead of the mocker (its flags and more:
        # dgdgen.runtime.answerer), where a gate reads the answers
        self.answering = answering
        self.objects: dict[Key, dict[str, Any]] = {}
        self.dgds: dict[str, DgdRun] = {}

    # ------------------------------------------------------------------ queries

    def service_frontends(self, service: str) -> list[Proc]:
        """Frontend processes a Service's selector reaches."""
        svc = self.objects.get(("Service", service))
        if svc is None:
            return []
        selector = (svc.get("spec") or {}).get("selector") or {}
        if not selector:
            return []
        out = []
        for run in self.dgds.values():
            for comp in run.components.values():
                if comp.role is Role.FRONTEND and all(
                    comp.labels.get(k) == v for k, v in selector.items()
                ):
                    out += comp.procs
        return out

    def generation_of(self, proc: Proc) -> str:
        for run in self.dgds.values():
            for comp in run.components.values():
                if proc in comp.procs:
                    return run.revision
        return ""

    def replicas(self) -> dict[str, dict[str, int]]:
        """revision → component → running processes."""
        out: dict[str, dict[str, int]] = {}
        for run in self.dgds.values():
            for comp in run.components.values():
                out.setdefault(run.revision, {})[comp.name] = len(comp.procs)
        return out

    def processes(self) -> Iterable[tuple[DgdRun, ComponentRun, Proc]]:
        for run in self.dgds.values():
            for comp in run.components.values():
                for p in comp.procs:
                    yield run, comp, p

    # ------------------------------------------------------------------ apply

    def apply(
        self,
        objects: list[dict[str, Any]],
        *,
        on_wave: Callable[[int, list[dict[str, Any]]], None],
    ) -> None:
        """Apply a state's objects wave by wave, then prune what left the tree."""
        new = {key_of(o): o for o in objects}
        waves = sorted({wave_of(o) for o in objects})
        for wave in waves:
            batch = [o for o in objects if wave_of(o) == wave]
            for obj in batch:
                self.objects[key_of(obj)] = obj
            for obj in batch:
                if obj.get("kind") == "DynamoGraphDeployment":
                    self._apply_dgd(obj)
            on_wave(wave, batch)
        gone = [k for k in self.objects if k not in new]
        for k in gone:
            obj = self.objects.pop(k)
            if k[0] == "DynamoGraphDeployment" and k[1] in self.dgds:
                run = self.dgds[k[1]]
                for p in _all(run):
                    self.before_stop(p)
                del self.dgds[k[1]]
                self.event(f"prune DGD {k[1]}: stop {len(list(_all(run)))} processes")
                self.rt.stop_many(_all(run))
        if gone:
            on_wave(max(waves, default=0) + 1, [])

    def _apply_dgd(self, obj: dict[str, Any]) -> None:
        dgd = dgdmod.parse(obj)
        facts = dgd_facts(dgd)
        name = dgd.name
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        revision = str(annotations.get(REVISION) or self.revisions.get(name, name))
        ns = dgdmod.dynamo_namespace(dgd.namespace or self.k8s_namespace, name)
        model = ""
        wanted: dict[str, tuple[Role, tuple[str, ...], int, dict[str, str]]] = {}
        for cname, cf in facts.components.items():
            # the pod labels: the component's own, plus those the operator puts on every pod
            labels = {str(k): str(v) for k, v in dgd.pod_labels(cname).items()}
            labels.update({
                OP_LABEL_DGD: name,
                OP_LABEL_COMPONENT_TYPE: dgd.components[cname].type,
                OP_LABEL_COMPONENT: cname,
            })
            if cf.role is Role.FRONTEND:
                # the frontend flags the rendered DGD sets that change what a client sees while
                # workers stop: its request-migration limit (dgdgen.render.migration)
                limit = migration.frontend_limits(dgd).get(cname, 0)
                args: tuple[str, ...] = (migration.FLAG, str(limit)) if limit > 0 else ()
            else:
                inv = mocker_invocation(cf, model_dir=self.model_dir,
                                        extra=self.extra_args(revision))
                args = inv.args
                model = model or inv.served_model_name
            wanted[cname] = (cf.role, args, cf.replicas, labels)
        run = self.dgds.get(name)
        if run is None:
            run = self.dgds[name] = DgdRun(name, revision, ns, model)
        run.model = model or run.model
        # grow first (new processes ready before anything stops), then shrink
        shrink: list[tuple[ComponentRun, int, tuple[str, ...]]] = []
        started: list[Proc] = []
        for cname, (role, args, replicas, labels) in wanted.items():
            comp = run.components.get(cname)
            if comp is None:
                comp = run.components[cname] = ComponentRun(name, cname, role, ns, args, labels)
            comp.labels = labels
            if comp.args != args and comp.procs:
                # arguments changed: surge a full new set; the old one (kept first in the list,
                # so the shrink below stops it first) retires once the new set is ready
                old = comp.procs
                comp.procs, comp.args = [], args
                started += self._start(run, comp, replicas)
                comp.procs = old + comp.procs
                shrink.append((comp, replicas, args))
            elif len(comp.procs) < replicas:
                comp.args = args
                started += self._start(run, comp, replicas - len(comp.procs))
            elif len(comp.procs) > replicas:
                shrink.append((comp, replicas, args))
        for gone in [c for c in run.components if c not in wanted]:
            shrink.append((run.components[gone], 0, ()))
        self._wait_healthy(run, started)
        stopping: list[Proc] = []
        for comp, keep, _ in shrink:
            # stop the oldest processes (they carry the old arguments when args changed)
            while len(comp.procs) > keep:
                p = comp.procs.pop(0)
                self.event(f"stop {p.name}")
                self.before_stop(p)
                stopping.append(p)
            if keep == 0 and comp.name not in wanted:
                run.components.pop(comp.name, None)
        # together, as the pods of a scale-down are terminated
        self.rt.stop_many(stopping, grace=self.stop_grace)
        if shrink:
            self._wait_healthy(run, [])

    def _start(self, run: DgdRun, comp: ComponentRun, count: int) -> list[Proc]:
        out = []
        for _ in range(count):
            idx = len(comp.procs)
            label = f"{run.name}-{comp.name.lower()}-{idx}"
            if comp.role is Role.FRONTEND:
                p = self.rt.frontend(run.namespace, args=comp.args, name=label)
            elif self.answering:
                p = self.rt.answerer(run.namespace, comp.args, name=label)
            else:
                p = self.rt.mocker(run.namespace, comp.args, name=label)
            p.labels = dict(comp.labels)
            comp.procs.append(p)
            out.append(p)
            self.event(f"start {label} ({comp.role.value}, Dynamo namespace {run.namespace})")
        return out

    def _wait_healthy(self, run: DgdRun, started: list[Proc], timeout: float = 90.0) -> None:
        try:
            for p in started:
                if p.kind == "frontend":
                    self.rt.wait_frontend_up(p, timeout)
                else:
                    self.rt.wait_worker_ready(p, timeout)
            workers = len(run.workers())
            if workers and run.model:
                for fe in run.frontends():
                    self._wait_workers(fe, run, workers, timeout)
        except RuntimeError as exc:
            raise ApplyError(f"DGD {run.name} did not become healthy: {exc}") from exc
        self.event(f"DGD {run.name} healthy: {len(_all(run))} processes, every worker routed")

    def _wait_workers(self, fe: Proc, run: DgdRun, workers: int, timeout: float) -> None:
        from dgdgen.runtime.routing import (
            count_ready_workers,
            prefill_namespaces,
            prefill_routers_active,
        )

        deadline = time.monotonic() + timeout
        while True:
            data = self.rt.model_ready(fe, run.model)
            # Healthy once every worker is counted and, in a disaggregated graph, the frontend
            # can route to them: it activates a namespace's prefill router a few milliseconds
            # after /ready counts its workers (prefill_routers_active). A readiness probe or a
            # sync wave in a cluster comes seconds later; here the next wave could be at once.
            if (data and data.get("ready") and count_ready_workers(data) == workers
                    and prefill_routers_active(fe, prefill_namespaces(data))):
                return
            if time.monotonic() > deadline:
                raise ApplyError(
                    f"frontend of {run.name} lists {count_ready_workers(data or {})} of "
                    f"{workers} workers for {run.model!r} after {timeout:.0f} s"
                )
            time.sleep(POLL)


def _all(run: DgdRun) -> list[Proc]:
    return [p for c in run.components.values() for p in c.procs]
