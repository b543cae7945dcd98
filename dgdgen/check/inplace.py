"""What applying a change to a running DGD in place does: one model, per Dynamo release and per
way the operator runs the DGD's worker pods.

Every consumer says the consequence from here: the checker's in-place rules (DGD201–DGD203) and
their rule pages and SARIF help, ``dgdgen plan`` / ``validate`` notes (``isolation: auto`` and
``in-place``), and the admission policy's messages.

Two worlds (measured with the real Dynamo 1.6.1 frontend and mocker, docs/checker.md
"What applying in place does"):

* **Hashed worker namespaces** — the operator's managed rolling update. Every worker pod gets
  ``DYN_NAMESPACE_WORKER_SUFFIX=<worker hash>`` (operator ``component_worker.go``) and the Python
  runtime registers in ``{DYN_NAMESPACE}-{suffix}`` (ai-dynamo 1.6.1
  ``dynamo/common/utils/namespace.py`` ``get_worker_namespace``: "to support multiple sets of
  workers for the same model"). Frontends are not hashed: they are replaced in place and select
  workers by ``DYN_NAMESPACE_PREFIX`` = the base namespace (``dynamo/frontend/frontend_args.py``
  ``--namespace-prefix``: "Discovers models from namespaces starting with this prefix"). Different
  namespaces are different WorkerSets, picked in proportion to their workers
  (``lib/llm/src/discovery/model.rs``; different checksums per namespace allowed since #7368), so
  nothing is rejected: old and new serve side by side while pods are replaced — ungated.
* **One shared namespace** — old and new workers register in the same Dynamo namespace: the
  frontend's per-release reaction to two checksums of one model applies (skip ≤1.4, tear-down
  1.5, reject 1.6; ``lib/llm/src/discovery/watcher.rs`` / ``controller.rs``, #12890).

Which one a DGD gets:

* Deployment-backed workers (the operator without Grove): hashed on every release covered here —
  the managed rolling update (#6110, merged 2026-02-17) predates 1.3; Dynamo's operator guide
  "Rolling Updates" (editions 1.2.0 – 1.4.0) says "DGDs backed by Kubernetes Deployments benefit
  from managed rolling updates with namespace isolation".
* Grove (PodCliques) and LeaderWorkerSet workers: the same guide says they "use their native
  update mechanisms" — one shared namespace — until #12769 (2026-08-19, first in 1.5.0) labelled
  their pods with the worker hash (issue #12796 was the rejected-MDC report). ai-dynamo 1.6.1's
  planner (``dynamo/planner/connectors/kubernetes.py`` ``get_worker_runtime_namespace``) reads the
  effective namespace from the component status on newer operators.
* Settings that defeat the suffix, on any release: a worker given ``--endpoint
  dyn://<ns>.<component>.<endpoint>`` registers in the namespace that string names — ai-dynamo
  1.6.1 ``dynamo/vllm/args.py``: "If user provided --endpoint, override namespace/component/
  endpoint" (the mocker and the other backends parse it the same way).
* ``unmanaged``: the user says old and new workers share one namespace whatever the release
  (worker pods not replaced by the operator's roll).

How pods are replaced — every update strategy is one :class:`Strategy` value (what is replaced,
in which order, surge / unavailable, whether prefill and decode go together, whether scaling is
blocked, whether anything happens before pods are deleted):

* Deployment-backed components: the component's ``nvidia.com/deployment-rolling-update-max-surge``
  / ``-max-unavailable`` annotations (default 25 % / 25 %), or ``nvidia.com/deployment-strategy:
  Recreate`` (every old pod stops first).
* Grove: the DGD's ``nvidia.com/grove-update-strategy`` annotation, passed to the PodCliqueSet's
  ``spec.updateStrategy.type`` (#11085): ``RollingRecreate`` (Grove's own default: each clique's
  pods deleted and recreated one at a time, maxUnavailable 1, maxSurge 0), ``OnDelete`` (GREP-291:
  nothing is replaced until a pod is deleted) or ``Coherent`` (GREP-393, Grove v0.1.0-alpha.14:
  minimum viable units — minAvailable replicas of every updated clique — replaced together as one
  new gang, no surge; Dynamo's operator refuses replica changes while one is in progress).
  Resolved from the annotation, else ``--grove-update-strategy`` (``.dgdgen.yaml``
  ``check.grove-update-strategy``), else :data:`GROVE_DEFAULT` of the release for the graph.
* LeaderWorkerSet: one group at a time (its defaults maxUnavailable 1, maxSurge 0).

The release default (read 2026-11-26 from the ai-dynamo/dynamo source index, one commit per file,
none of them known to be the v1.6.1 tag): the platform chart's README at commit
``0398ccf253c2c9cb2b78acf6399fa8b92a8f55dc`` (chart version 1.6.0), "v1.6.0 — Coherent updates for
disaggregated Grove deployments": "Grove-backed graphs containing both ``type: prefill`` and
``type: decode`` components now default to the ``Coherent`` PCS update strategy ... Other graphs
keep Grove's default strategy", existing DGDs adopting it on reconciliation. An operator test of
the 1.6 line (``grove_update_strategy_test.go`` ``TestGroveUpdateStrategyPolicy``, stored version
without a commit) defaults DGDs created by a 1.6.0 operator to Coherent. The newest stored
operator source — ``deploy/operator/internal/dynamo/grove_update_strategy.go`` at
``07c98544e555ec45606732f5c3e7d0e0842ee312`` and ``9387d1a204095a21ae45dfa4f984175bbe2288b6`` —
returns to "Without an annotation, Grove defaults to RollingRecreate", and the DGD reference says
"an operator upgrade does not opt any DGD into Coherent". The two agree that a disaggregated DGD
created under the 1.6.0 operator gets Coherent, which is what the release notes promise the
release does; the opt-in-only source is later than any 1.6 release note found and may be 1.7's.
So 1.6 defaults disaggregated graphs to Coherent here, and every earlier release (whose operator
accepts only RollingRecreate and OnDelete: ``consts.go`` "Supported values match Grove exactly:
RollingRecreate and OnDelete") to RollingRecreate. ``--grove-update-strategy RollingRecreate``
says what an operator that no longer defaults to Coherent does.

1.7 (source, not run): the v1.7.0 DGD reference says Grove uses ``RollingRecreate`` unless the
annotation selects another, for aggregated, disaggregated and LPX graphs alike, Coherent being
opt-in (Grove ≥ v0.1.0-alpha.14, no surge, can stall: ai-dynamo/grove#873) — the opt-in-only
``grove_update_strategy.go`` above is 1.7's. So 1.7 defaults every graph to RollingRecreate.

Why one module: the consequence texts are read off the strategy model — which backing, release
and update strategy put which generations side by side, and at what pace — so the model and the
words every consumer prints stay one table that cannot drift apart.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from dgdgen.check.flags import RELEASES, Category, release_key
from dgdgen.check.releases import from_source, source_note
from dgdgen.errors import InputError
from dgdgen.model.dgd import ANN_GROVE_STRATEGY, ANN_MAX_SURGE, ANN_MAX_UNAVAILABLE, ANN_STRATEGY

DEFAULT_SURGE = "25%"
DEFAULT_UNAVAILABLE = "25%"


class RunBy(str, enum.Enum):
    """How the operator runs the DGD's worker pods (what the user's cluster does)."""

    DEPLOYMENT = "deployment"
    GROVE = "grove"
    LWS = "lws"
    UNMANAGED = "unmanaged"

    @property
    def label(self) -> str:
        return _RUN_BY_LABEL[self]


_RUN_BY_LABEL = {
    RunBy.DEPLOYMENT: "Deployment-backed workers",
    RunBy.GROVE: "Grove-backed workers",
    RunBy.LWS: "LeaderWorkerSet-backed workers",
    RunBy.UNMANAGED: "workers outside the operator's roll",
}

DEFAULT_RUN_BY = RunBy.DEPLOYMENT

# The first release whose operator gives these workers hash-suffixed namespaces (None: never).
HASHED_SINCE: dict[RunBy, str | None] = {
    RunBy.DEPLOYMENT: RELEASES[0],  # #6110 (2026-02-17) predates every release covered
    RunBy.GROVE: "1.5",  # #12769 (2026-08-19): "1.5.0, not 1.4.0"
    RunBy.LWS: "1.5",  # #12769 / #13886: Grove and LWS use hash-suffixed runtime namespaces
    RunBy.UNMANAGED: None,
}

RUN_BY_HELP = (
    "how the operator runs the DGD's worker pods: deployment (default: Kubernetes Deployments, "
    "the operator's managed rolling update with hash-suffixed worker namespaces on every "
    "release), grove or lws (hash-suffixed from 1.5; one shared namespace before), unmanaged "
    "(old and new workers share one Dynamo namespace whatever the release)")


class Namespaces(str, enum.Enum):
    """Where old and new workers of an in-place roll register."""

    HASHED = "hashed"  # each worker generation in {ns}-{dgd}-{hash}, the frontend by prefix
    SHARED = "shared"  # both generations in one Dynamo namespace

    @property
    def label(self) -> str:
        return ("hash-suffixed worker namespaces" if self is Namespaces.HASHED
                else "one shared Dynamo namespace")


def parse_run_by(value: str | None) -> RunBy:
    if value is None:
        return DEFAULT_RUN_BY
    try:
        return RunBy(value.strip().lower())
    except ValueError:
        raise InputError(
            f"unknown worker backing {value!r}",
            hint=f"choose from {', '.join(r.value for r in RunBy)} (default "
                 f"{DEFAULT_RUN_BY.value})") from None


# --------------------------------------------------------------------------- update strategies


class GroveStrategy(str, enum.Enum):
    """The values of ``nvidia.com/grove-update-strategy`` (spelled exactly as the operator
    accepts them: ``ParseGroveUpdateStrategy`` is case-sensitive)."""

    ROLLING_RECREATE = "RollingRecreate"
    ON_DELETE = "OnDelete"
    COHERENT = "Coherent"


# The first release whose operator accepts Coherent (Grove v0.1.0-alpha.14, bundled with 1.6.0).
COHERENT_SINCE = "1.6"

# The strategy the operator of each release gives a Grove DGD without the annotation:
# (disaggregated graph — both prefill and decode workers, other graphs). See the module docstring
# for the sources and why 1.6 is Coherent for disaggregated graphs.
# The first release whose operator no longer opts any DGD into Coherent (the v1.7.0 DGD
# reference; source, not run).
COHERENT_OPT_IN_SINCE = "1.7"
GROVE_DEFAULT: dict[str, tuple[GroveStrategy, GroveStrategy]] = {
    r: ((GroveStrategy.COHERENT
         if release_key(COHERENT_SINCE) <= release_key(r) < release_key(COHERENT_OPT_IN_SINCE)
         else GroveStrategy.ROLLING_RECREATE), GroveStrategy.ROLLING_RECREATE)
    for r in RELEASES
}

GROVE_STRATEGY_HELP = (
    "the update strategy of Grove-backed DGDs without an nvidia.com/grove-update-strategy "
    "annotation: RollingRecreate, OnDelete or Coherent (default: the release's — Coherent for "
    "a graph with prefill and decode workers on 1.6, RollingRecreate otherwise — every graph "
    "on 1.7, from its DGD reference: source, not run)")


def parse_grove_strategy(value: str | None, release: str) -> GroveStrategy | None:
    """An annotation or option value, spelled as the operator accepts it; Coherent only from
    :data:`COHERENT_SINCE`. Raises InputError (the caller adds where the value was)."""
    if value is None:
        return None
    try:
        strategy = GroveStrategy(value)
    except ValueError:
        raise InputError(
            f"unknown Grove update strategy {value!r}",
            hint=f"choose from {', '.join(s.value for s in GroveStrategy)} (spelled exactly: "
                 "the operator rejects other spellings)") from None
    if strategy is GroveStrategy.COHERENT and release_key(release) < release_key(COHERENT_SINCE):
        raise InputError(
            f"the Grove update strategy Coherent needs Dynamo {COHERENT_SINCE} or later (and "
            f"Grove v0.1.0-alpha.14); the operator of Dynamo {release} accepts only "
            "RollingRecreate and OnDelete",
            hint="choose RollingRecreate or OnDelete, or name a newer --dynamo-version")
    return strategy


class Pace(str, enum.Enum):
    """How a strategy replaces pods, for whoever plays the roll (``dgdgen rehearse``)."""

    SURGE = "surge"  # per component, a Deployment's maxSurge / maxUnavailable
    RECREATE = "recreate"  # per component, every old pod gone before a new one starts
    ONE_AT_A_TIME = "one-at-a-time"  # per clique or group: maxUnavailable 1, maxSurge 0
    COHERENT = "coherent"  # minAvailable of every updated component, taken down together
    ON_DELETE = "on-delete"  # nothing, until someone deletes pods
    AS_REPLACED = "as-replaced"  # not the operator's roll: whatever replaces the pods


@dataclass(frozen=True)
class Strategy:
    """What one update strategy does to the worker pods of an in-place roll, as data."""

    name: str  # "Grove Coherent", "RollingUpdate", ...
    replaces: str  # what is replaced, in which order
    max_surge: str  # extra pods while replacing ("0": none)
    max_unavailable: str  # pods missing at once
    together: bool  # prefill and decode replaced in one step
    scaling_blocked: bool  # replica changes refused while the roll runs
    automatic: bool  # False: nothing is replaced until someone deletes pods
    text: str  # how the pods are replaced and what that does to traffic, for messages
    keeps_ratio: bool = False  # the prefill:decode ratio holds at every step (GREP-393)
    pace: Pace = Pace.SURGE  # how the pods are replaced, for the rehearsal that plays it


def grove_strategy_of(strategy: GroveStrategy, *, single_replicas: bool = False) -> Strategy:
    """Grove's semantics (ai-dynamo/grove ``operator/api/core/v1alpha1/podcliqueset.go``
    ``UpdateStrategyType``; GREP-291 OnDelete, GREP-393 Coherent)."""
    if strategy is GroveStrategy.ON_DELETE:
        return Strategy(
            "Grove OnDelete", "nothing, until a pod is deleted; then that pod", "0", "0",
            together=False, scaling_blocked=False, automatic=False, pace=Pace.ON_DELETE,
            text="nothing rolls until you delete pods: the PodCliqueSet takes the new template "
                 "but every running pod keeps the old configuration, so the change is silently "
                 "pending (the DGD does not say so); each pod you delete comes back with the new "
                 "one")
    if strategy is GroveStrategy.COHERENT:
        whole = (" — here every worker component runs one replica, so the model has no worker "
                 "until the new set is ready" if single_replicas else "")
        return Strategy(
            "Grove Coherent", "minAvailable replicas of every worker component per step, "
            "replaced together as one new gang", "0", "minAvailable of every component",
            together=True, scaling_blocked=True, automatic=True,
            text="prefill and decode are replaced together, in steps of minAvailable replicas "
                 "(default 1) of every worker component scheduled as one new gang, with no "
                 "surge: each step deletes that set before its replacement is ready, so the "
                 f"set's capacity drops to 0 during the step{whole}; replica changes are refused "
                 "until the update ends, and an update can stall (ai-dynamo/grove#873)",
            keeps_ratio=True, pace=Pace.COHERENT)
    return Strategy(
        "Grove RollingRecreate", "each clique's pods one at a time, oldest first; the "
        "components independently", "0", "1 per clique",
        together=False, scaling_blocked=False, automatic=True, pace=Pace.ONE_AT_A_TIME,
        text="Grove replaces one pod at a time in each component (maxUnavailable 1, maxSurge 0): "
             "prefill and decode independently, each one pod short while its pod is replaced")


LWS_STRATEGY = Strategy(
    "LeaderWorkerSet RollingUpdate", "one group (leader and workers) at a time", "0", "1 group",
    together=False, scaling_blocked=False, automatic=True, pace=Pace.ONE_AT_A_TIME,
    text="one group at a time (LeaderWorkerSet rolling update: maxUnavailable 1, maxSurge 0)")

UNMANAGED_STRATEGY = Strategy(
    "unmanaged", "as the pods are replaced", "?", "?", together=False, scaling_blocked=False,
    automatic=True, text="as the pods are replaced", pace=Pace.AS_REPLACED)


def deployment_strategy(workers: list[tuple[str, bool, dict[str, str], str | None]]) -> Strategy:
    """The operator's managed rolling update of Deployment-backed workers (#6110; Recreate
    #11909), from each worker component's annotations."""
    recreate = [n for n, _, ann, _ in workers if ann.get(ANN_STRATEGY, "").lower() == "recreate"]
    if recreate:
        return Strategy(
            "Recreate", "every old pod stops before a new one starts", "0", "100%",
            together=True, scaling_blocked=False, automatic=True, pace=Pace.RECREATE,
            text=f"Recreate ({', '.join(recreate)}): every old pod stops before a new one "
                 "starts, so the model has no worker in between")
    paces = sorted({(ann.get(ANN_MAX_SURGE, DEFAULT_SURGE).strip(),
                     ann.get(ANN_MAX_UNAVAILABLE, DEFAULT_UNAVAILABLE).strip())
                    for _, _, ann, _ in workers})
    if not paces:
        paces = [(DEFAULT_SURGE, DEFAULT_UNAVAILABLE)]
    text = ", ".join(f"maxSurge {s} / maxUnavailable {u}" for s, u in paces)
    return Strategy(
        "RollingUpdate", "each component's pods by its surge and unavailability",
        " / ".join(s for s, _ in paces), " / ".join(u for _, u in paces),
        together=False, scaling_blocked=False, automatic=True,
        text=f"pods replaced with {text}")


@dataclass(frozen=True)
class Target:
    """The Dynamo release and worker backing the user runs, and the Grove update strategy they
    name for DGDs without the annotation (None: the release's default)."""

    release: str
    run_by: RunBy = DEFAULT_RUN_BY
    grove_strategy: GroveStrategy | None = None

    @property
    def namespaces(self) -> Namespaces:
        return namespaces_for(self.release, self.run_by)

    def describe(self) -> str:
        ahead = " (from source, not run)" if from_source(self.release) else ""
        return f"Dynamo {self.release}{ahead}, {self.run_by.label} ({self.namespaces.label})"

    def brief(self) -> str:
        """:meth:`describe` in fewer words, for a report's summary line."""
        ns = ("hashed worker namespaces" if self.namespaces is Namespaces.HASHED
              else "one shared namespace")
        who = "unmanaged workers" if self.run_by is RunBy.UNMANAGED else self.run_by.label
        return f"Dynamo {self.release}, {who}, {ns}"


def namespaces_for(release: str, run_by: RunBy) -> Namespaces:
    since = HASHED_SINCE[run_by]
    if since is None or release_key(release) < release_key(since):
        return Namespaces.SHARED
    return Namespaces.HASHED


# --------------------------------------------------------------------------- one DGD


@dataclass(frozen=True)
class Roll:
    """What the operator does with an in-place edit of one DGD's workers."""

    target: Target
    run_by: RunBy  # the target's, or LWS for a multinode DGD under "deployment"
    namespaces: Namespaces
    why: str  # why these namespaces, for messages
    strategy: Strategy  # how pods are replaced
    strategy_source: str = ""  # where a Grove strategy came from, for messages
    disaggregated: bool = False  # prefill and decode workers: a roll can leave a generation half

    @property
    def hashed(self) -> bool:
        return self.namespaces is Namespaces.HASHED

    @property
    def pace(self) -> str:
        """How pods are replaced, naming a Grove strategy and where it came from."""
        if self.strategy_source:
            return f"{self.strategy.name}, {self.strategy_source}: {self.strategy.text}"
        return self.strategy.text


_ENDPOINT = re.compile(r"^dyn://([^.\s]+)\.")


def roll_of(target: Target, workers: list[tuple[str, bool, dict[str, str], str | None]], *,
            disaggregated: bool = False, annotated: GroveStrategy | None = None,
            single_replicas: bool = False) -> Roll:
    """The roll of one DGD: ``workers`` is (component, multinode, annotations, --endpoint value)
    per worker component of the head DGD; ``disaggregated``: it has prefill and decode workers;
    ``annotated``: its ``nvidia.com/grove-update-strategy``; ``single_replicas``: every worker
    component runs one replica."""
    run_by = target.run_by
    if run_by is RunBy.DEPLOYMENT and any(multi for _, multi, _, _ in workers):
        # Multinode components never run as Deployments: Grove or LeaderWorkerSet
        # (operator graph.go; DGD105 says the same).
        run_by = RunBy.LWS
    strategy, source = _strategy(target, run_by, workers, disaggregated=disaggregated,
                                 annotated=annotated, single_replicas=single_replicas)
    pinned = [(name, ep) for name, _, _, ep in workers if ep and _ENDPOINT.match(ep)]
    ns = namespaces_for(target.release, run_by)
    if ns is Namespaces.HASHED and pinned:
        name, ep = pinned[0]
        return Roll(target, run_by, Namespaces.SHARED,
                    f"{name} pins --endpoint {ep}, which overrides the worker's namespace (the "
                    "hash suffix is not applied: ai-dynamo dynamo/vllm/args.py), so old and new "
                    "workers share one Dynamo namespace", strategy, source, disaggregated)
    if ns is Namespaces.HASHED:
        why = (f"on Dynamo {target.release} the operator rolls {run_by.label} into a new "
               "hash-suffixed Dynamo namespace")
    elif run_by is RunBy.UNMANAGED:
        why = "old and new workers share one Dynamo namespace (worker backing: unmanaged)"
    else:
        why = (f"on Dynamo {target.release} {run_by.label} keep one Dynamo namespace across a "
               f"roll (hash-suffixed only from {HASHED_SINCE[run_by]}, Dynamo #12769)")
    return Roll(target, run_by, ns, why, strategy, source, disaggregated)


def _strategy(target: Target, run_by: RunBy,
              workers: list[tuple[str, bool, dict[str, str], str | None]], *,
              disaggregated: bool, annotated: GroveStrategy | None,
              single_replicas: bool) -> tuple[Strategy, str]:
    """The strategy the operator applies, and where a Grove strategy came from."""
    if run_by is RunBy.DEPLOYMENT:
        return deployment_strategy(workers), ""
    if run_by is RunBy.LWS:
        return LWS_STRATEGY, ""  # the annotation "does not affect ... LWS-backed DGDs"
    if run_by is RunBy.UNMANAGED:
        return UNMANAGED_STRATEGY, ""
    if annotated is not None:
        chosen, source = annotated, f"set by the DGD's {ANN_GROVE_STRATEGY} annotation"
    elif target.grove_strategy is not None:
        chosen, source = target.grove_strategy, "named by --grove-update-strategy"
    else:
        graph = ("a disaggregated graph (prefill and decode workers)" if disaggregated
                 else "a graph without both prefill and decode workers")
        chosen = GROVE_DEFAULT[target.release][0 if disaggregated else 1]
        source = f"the default of Dynamo {target.release} for {graph}"
    return grove_strategy_of(chosen, single_replicas=single_replicas), source


# --------------------------------------------------------------------------- consequences

# One shared namespace: the frontend's reaction to two ModelDeploymentCard checksums for one model.
SHARED_MDC: dict[str, str] = {
    # ≤1.4: lib/llm/src/discovery/watcher.rs before #12890.
    "1.3": "the frontend skips the new workers ('Checksum for new worker does not match "
           "existing WorkerSet's checksum'): they are ready but idle while old workers remain",
    "1.4": "the frontend skips the new workers ('Checksum for new worker does not match "
           "existing WorkerSet's checksum'): they are ready but idle while old workers remain",
    # 1.5: #12890 cohorts, reported as a regression in #14215.
    "1.5": "the frontend sees two checksum cohorts and tears the model down (no serving) until "
           "only one cohort remains",
    # 1.6: measured on the 1.6.1 runtime (tests/check/test_runtime_truth.py).
    "1.6": "the frontend rejects the new workers ('Rejected incompatible workers'): they pass "
           "their own health check but get 0 requests, so the roll loses capacity step by step "
           "and flips all traffic to the new configuration when the last old worker goes",
    # 1.7: source, not run — the newest stored lib/llm/src/discovery/controller.rs (untagged,
    # later than 1.6.1) keeps the first accepted checksum cohort and logs the rest as "Rejected
    # incompatible workers; the first accepted configuration retains the WorkerSet".
    "1.7": "the frontend rejects the new workers ('Rejected incompatible workers', as 1.6; "
           "from source, not run): they pass their own health check but get 0 requests, so the "
           "roll loses capacity step by step and flips all traffic to the new configuration "
           "when the last old worker goes",
}

# Hashed worker namespaces: measured on the 1.6.1 runtime, frontend by prefix, old and new
# workers with different suffixes (tests/check/test_runtime_truth.py, hashed probes).
HASHED_MDC = (
    "nothing is rejected: the frontend, selecting workers by prefix, serves the old and the new "
    "configuration side by side, each in proportion to its ready workers, so the new "
    "configuration takes a growing share of real traffic with no gate, no pause and no "
    "rollback but another roll")

HASHED_KV = (
    "new prefill workers hand KV blocks only to new decode workers (their own namespace), so "
    "transfers stay within a generation, but the new KV configuration takes a growing share of "
    "real traffic with no gate, no pause and no rollback but another roll")

# A KV edit that leaves the head's own prefill and decode workers disagreeing (DGD108): the
# operator's worker hash covers every worker component, so an edit of the prefill workers alone
# re-rolls the decode workers too, into the same new namespace — new prefill hands over only to
# new decode, which cannot read it (vLLM's NIXL handshake refuses the peer; SGLang's decode
# refuses the page size or dtype). Measured shape: a transfer the pair cannot do fails from the
# first request (DGD108's rationale).
HASHED_KV_SPLIT = (
    "the operator's worker hash covers every worker component, so the workers this edit leaves "
    "alone are rolled too, into the same new namespace: there the new prefill workers hand KV "
    "blocks only to the new decode workers, which disagree with them ({what}: prefill {prefill}, "
    "decode {decode}; DGD108) and cannot read them — every request the new generation takes "
    "fails, a growing share of real traffic as the roll goes on, with no gate to stop it")

SHARED_KV = (
    "old decode workers take KV blocks from new prefill workers (and the reverse) while both "
    "run: the transfer fails or reads a mismatched layout")

# What an image bump replaces: the frontend, the workers, or both. The consequence names only
# what is replaced (an image bump that leaves the frontend alone does not replace it).
FRONTEND, WORKERS = "frontend", "workers"
BOTH: frozenset[str] = frozenset({FRONTEND, WORKERS})

_WINDOW = "Dynamo documents only an N-2 frontend/worker window (#13886)"

HASHED_RUNTIME = (
    "the new workers serve beside the old ones, ungated, and the frontend is not hashed: it is "
    "replaced in place, so new frontends serve old workers (and old frontends new workers) "
    f"during the roll; {_WINDOW}")

SHARED_RUNTIME = (
    "old and new workers share one Dynamo namespace and the frontend is replaced in place: new "
    f"frontends serve old workers and the reverse during the roll; {_WINDOW}")

# Only worker images change: the frontend keeps its image and serves both worker runtimes.
HASHED_RUNTIME_WORKERS = (
    "the new workers serve beside the old ones, ungated, and the frontend keeps its image: the "
    "same frontend serves the old and the new worker runtime during the roll, and the new one "
    f"after it; {_WINDOW}")

SHARED_RUNTIME_WORKERS = (
    "old and new workers share one Dynamo namespace and the frontend keeps its image: the same "
    f"frontend serves the old and the new worker runtime during the roll; {_WINDOW}")

# Only the frontend image changes: the workers are not replaced (their hash does not change).
RUNTIME_FRONTEND = (
    "the frontend is replaced in place (frontends are not hashed on any release) while the "
    f"workers stay: new frontends serve the unchanged workers; {_WINDOW}")

# Common to every hashed roll (the operator's managed rolling update, facts of Dynamo's issues).
HASHED_CAVEATS = (
    "prefill:decode ratios drift during the roll, Dynamo #10936; the DGD may say `successful` "
    "before the roll ends, #3567")
# A strategy replacing prefill and decode together keeps their ratio (GREP-393).
TOGETHER_CAVEATS = "the DGD may say `successful` before the roll ends, Dynamo #3567"

# A disaggregated graph rolled into hashed namespaces by a strategy that paces prefill and decode
# apart. The operator's managed rolling update sizes each worker component's old and new replicas
# on its own (ai-dynamo/dynamo deploy/operator/internal/controller/dgd_worker_rollout_reconciler.go
# ``buildRollingUpdateContext`` at 03dfed81c3d05d88bf4ca06d21f021160c7cb97d — not the v1.6.1
# tag, which the source index does not hold: one loop over the worker components, each with its
# own maxSurge / maxUnavailable, nothing coupling prefill to decode; the roll completes only when
# every component is done, ``completedWorkerComponents``). Grove's RollingRecreate updates the
# standalone cliques concurrently, each one pod at a time (ai-dynamo/grove
# docs/designs/update-strategy.md), and LeaderWorkerSets roll each set alone. Measured in the
# in-place rehearsal (docs/rehearse.md, "The disaggregated gap").
#
# What the frontend does with a generation that has one role alone: it routes only to a worker
# namespace whose workers' ``needs`` are met. Every 1.6.1 backend registers a decode worker
# needing a prefill peer and a prefill worker needing a decode peer (ai-dynamo 1.6.1
# dynamo/vllm/worker_factory.py ``needs_set = [WorkerType.Prefill]`` / ``prefill_needs_set =
# [WorkerType.Decode]``; dynamo/sglang/init_llm.py ``init_decode`` / ``init_prefill``;
# dynamo/trtllm/workers/llm_worker.py), and so does the mocker. Measured on the real 1.6.1
# frontend with workers registering exactly so (tests/check/test_runtime_needs.py;
# docs/rehearse.md, "Incomplete generations"): a namespace with decode workers alone, or prefill
# workers alone, beside a complete one gets none of the requests and none fails; alone, the
# model is not ready (``/v1/models/{model}/ready`` 503, "missing worker types") and every
# request gets 503.
NEEDS_ROUTING = (
    "the frontend routes only to a generation whose prefill and decode workers are both ready "
    "(each declares the other in its model card's `needs`, measured on the 1.6.1 runtime), so "
    "that generation's workers serve nothing while the other carries the traffic")
NO_COMPLETE = (
    "if at that moment neither generation is complete (the old one left with decode workers "
    "only, the new one with prefill workers only), the model is not ready and every request "
    "gets 503")
GAP_WHEN = (
    "prefill and decode are replaced independently, so whichever finishes first leaves a "
    "generation with one role alone (the old one with decode workers and no prefill worker, or "
    f"a new one with decode workers before its prefill workers): {NEEDS_ROUTING}, at its own "
    f"capacity; {NO_COMPLETE} — for as long as the two components finish apart: 0.1–0.4 s in "
    "the rehearsal, where both start alike, as long as the difference in their pods' start-up "
    "on a cluster")
GAP_AVOID: dict[RunBy, str] = {
    RunBy.DEPLOYMENT: (
        "no setting of Deployment-backed workers avoids it (each component's maxSurge / "
        "maxUnavailable paces that component alone); Grove-backed workers with the Coherent "
        "update strategy (Dynamo 1.6 and later) replace prefill and decode together"),
    RunBy.GROVE: (
        "the Coherent update strategy avoids it (nvidia.com/grove-update-strategy: Coherent, "
        "Dynamo 1.6 and later; the default for such a graph on 1.6, opt-in on 1.7): prefill and "
        "decode replaced together"),
    RunBy.LWS: (
        "no LeaderWorkerSet setting avoids it; Grove-backed workers with the Coherent update "
        "strategy (Dynamo 1.6 and later) replace prefill and decode together"),
}
GAP_AVOID_BEFORE_COHERENT = (
    "no setting of this release avoids it: the Grove Coherent update strategy, which replaces "
    "prefill and decode together, needs Dynamo 1.6")


def gap_text(roll: Roll) -> str | None:
    """The disaggregated gap of ``roll``, or None where it cannot arise: not disaggregated, one
    shared namespace (no generations), prefill and decode replaced together, or nothing rolls."""
    s = roll.strategy
    if not (roll.disaggregated and roll.hashed and s.automatic) or s.together:
        return None
    avoid = GAP_AVOID.get(roll.run_by)
    if avoid is None:
        return None
    if release_key(roll.target.release) < release_key(COHERENT_SINCE):
        avoid = GAP_AVOID_BEFORE_COHERENT
    return f"{GAP_WHEN}; {avoid}"


# A new served model name is another model in every release and every namespace layout.
RENAME = (
    "the new workers serve another model name: requests for the old name lose capacity step by "
    "step and find no worker (404) once the last old worker goes")
RENAME_FIELDS = frozenset({"--served-model-name"})

# A served model no worker serves any more (a worker component removed, or the last one renamed).
MODEL_REMOVED = (
    "no worker serves the model any more: its clients get 404 once the last old worker goes")


def consequence(category: Category, release: str, namespaces: Namespaces, *,
                rename: bool = False, replaced: frozenset[str] = BOTH,
                split: tuple[str, str, str] | None = None) -> str | None:
    """What applying a change of ``category`` in place does, in one sentence. ``replaced``:
    whose image a runtime change replaces (:data:`FRONTEND`, :data:`WORKERS`); ``split``: what
    the head's own prefill and decode workers disagree on (what, prefill's, decode's value)."""
    if rename:
        return RENAME
    hashed = namespaces is Namespaces.HASHED
    if category is Category.MDC:
        return HASHED_MDC if hashed else SHARED_MDC.get(release)
    if category is Category.KV:
        if hashed and split is not None:
            return HASHED_KV_SPLIT.format(what=split[0], prefill=split[1], decode=split[2])
        return HASHED_KV if hashed else SHARED_KV
    if category is Category.RUNTIME:
        if WORKERS not in replaced:
            return RUNTIME_FRONTEND
        if FRONTEND not in replaced:
            return HASHED_RUNTIME_WORKERS if hashed else SHARED_RUNTIME_WORKERS
        return HASHED_RUNTIME if hashed else SHARED_RUNTIME
    return None


def roll_consequence(category: Category, roll: Roll, *, rename: bool = False,
                     replaced: frozenset[str] = BOTH,
                     split: tuple[str, str, str] | None = None) -> str:
    """The consequence of one change on one DGD's roll, with why and how fast, for a message."""
    effect = consequence(category, roll.target.release, roll.namespaces, rename=rename,
                         replaced=replaced, split=split) or ""
    if category is Category.RUNTIME and WORKERS not in replaced:
        return effect  # no worker rolls: neither the workers' namespaces nor their pace apply
    if not roll.strategy.automatic:
        # OnDelete: the consequence waits for someone to delete pods.
        return (f"{roll.pace} ({roll.why}); once pods are deleted: {effect}" if effect
                else f"{roll.pace} ({roll.why})")
    parts = [f"{roll.why}: {effect}" if effect else roll.why]
    caveats = TOGETHER_CAVEATS if roll.strategy.keeps_ratio else HASHED_CAVEATS
    if roll.hashed and not rename:
        parts.append(f"({roll.pace}; {caveats})")
        gap = gap_text(roll)
        if gap:
            parts.append(f"— disaggregated: {gap}")
    elif roll.hashed or roll.strategy_source:
        parts.append(f"({roll.pace})")
    note = source_note(roll.target.release)
    if note and "not run" not in effect:
        parts.append(f"[{note}]")
    return " ".join(parts)


# --------------------------------------------------------------------------- headlines

# The same consequences in a few words, for a finding's headline (STYLE.md principle 12): the
# texts above stay whole in the finding's details, the rule pages and SARIF's help. The release
# and worker backing are not repeated here: a report says them once per run (:func:`roll_summary`).
SHARED_MDC_SHORT: dict[str, str] = {
    "1.3": "the frontend skips the new workers: ready but idle, capacity shrinks",
    "1.4": "the frontend skips the new workers: ready but idle, capacity shrinks",
    "1.5": "the frontend tears the model down while both checksums serve",
    "1.6": "the frontend rejects the new workers: capacity shrinks, then traffic flips",
    "1.7": "the frontend rejects the new workers: capacity shrinks, then traffic flips",
}
# A release without a short text of its own (a table that gained a release): still short, and
# the details say what that release does.
SHARED_MDC_SHORT_OTHER = "the frontend meets two checksums for one model (see --verbose)"
HASHED_MDC_SHORT = "old and new configuration serve side by side, ungated"
HASHED_KV_SHORT = "the new KV setup serves a growing share, ungated"
HASHED_KV_SPLIT_SHORT = ("new decode workers cannot read new prefill's KV: every request of the "
                         "new generation fails")
SHARED_KV_SHORT = "old decode workers get new prefill's KV: transfers fail"
RUNTIME_SHORT = "new frontends serve old workers (and the reverse) during the roll, ungated"
RUNTIME_WORKERS_SHORT = "one frontend serves the old and the new worker runtime, ungated"
RUNTIME_FRONTEND_SHORT = "new frontends serve the unchanged workers, ungated"
RENAME_SHORT = "clients of the old name get 404 once the last old worker goes"
MODEL_REMOVED_SHORT = "the model's clients get 404 once the last old worker goes"
PENDING_SHORT = "nothing rolls until pods are deleted; then"


def headline(category: Category, release: str, namespaces: Namespaces, *,
             rename: bool = False, replaced: frozenset[str] = BOTH,
             split: tuple[str, str, str] | None = None) -> str | None:
    """:func:`consequence` in a few words, for a finding's headline."""
    if rename:
        return RENAME_SHORT
    hashed = namespaces is Namespaces.HASHED
    if category is Category.MDC:
        return HASHED_MDC_SHORT if hashed else SHARED_MDC_SHORT.get(release,
                                                                     SHARED_MDC_SHORT_OTHER)
    if category is Category.KV:
        if hashed and split is not None:
            return HASHED_KV_SPLIT_SHORT
        return HASHED_KV_SHORT if hashed else SHARED_KV_SHORT
    if category is Category.RUNTIME:
        if WORKERS not in replaced:
            return RUNTIME_FRONTEND_SHORT
        return RUNTIME_WORKERS_SHORT if FRONTEND not in replaced else RUNTIME_SHORT
    return None


def roll_headline(category: Category, roll: Roll, *, rename: bool = False,
                  replaced: frozenset[str] = BOTH,
                  split: tuple[str, str, str] | None = None) -> str:
    """:func:`roll_consequence` in a few words: the consequence alone (how the roll goes is
    :func:`roll_summary`'s, said once per DGD)."""
    short = headline(category, roll.target.release, roll.namespaces, rename=rename,
                     replaced=replaced, split=split) or ""
    if category is Category.RUNTIME and WORKERS not in replaced:
        return short
    if not roll.strategy.automatic:
        return f"{PENDING_SHORT} {short}" if short else PENDING_SHORT
    return short


def roll_summary(roll: Roll) -> str:
    """How an in-place roll of one DGD goes, in one line: where the new workers register, the
    strategy's pace, and the disaggregated gap where it can arise — the context every in-place
    finding of the DGD shares, said once."""
    s = roll.strategy
    where = ("a new hash-suffixed namespace" if roll.hashed
             else "the same Dynamo namespace as the old ones")
    pace = (f"{s.name}: maxSurge {s.max_surge} / maxUnavailable {s.max_unavailable}"
            if s.automatic and roll.strategy.pace is not Pace.AS_REPLACED
            else "nothing rolls until pods are deleted" if not s.automatic
            else "as the pods are replaced")
    text = f"the new workers register in {where} ({pace})"
    if gap_text(roll) is not None:
        text += "; prefill and decode roll apart: 503s possible in between"
    elif s.together and roll.disaggregated:
        text += "; prefill and decode replaced together"
    return text


def table(category: Category) -> tuple[tuple[str, str, str], ...]:
    """(release, hashed worker namespaces, one shared namespace) per release, for rule pages."""
    out = []
    for r in RELEASES:
        hashed = consequence(category, r, Namespaces.HASHED) or ""
        shared = consequence(category, r, Namespaces.SHARED) or ""
        out.append((r, hashed, shared))
    return tuple(out)


def strategies() -> tuple[tuple[str, Strategy], ...]:
    """(worker backing, strategy) for every strategy the model knows, for the rule pages."""
    return (("deployment", deployment_strategy([])),
            ("deployment", deployment_strategy([("w", False, {ANN_STRATEGY: "Recreate"}, None)])),
            *(("grove", grove_strategy_of(g)) for g in GroveStrategy),
            ("lws", LWS_STRATEGY))


def grove_default_text(release: str) -> str:
    """The Grove strategy of ``release`` for a DGD without the annotation, for the docs."""
    disagg, other = GROVE_DEFAULT[release]
    if disagg is other:
        return disagg.value
    return f"{disagg.value} (prefill and decode workers), {other.value} (other graphs)"


def which_runs_hashed(release: str) -> str:
    """Which worker backings get hash-suffixed namespaces on ``release``, for the docs."""
    hashed = [rb.value for rb in RunBy if namespaces_for(release, rb) is Namespaces.HASHED]
    shared = [rb.value for rb in RunBy if namespaces_for(release, rb) is Namespaces.SHARED]
    return f"hashed: {', '.join(hashed) or '—'}; shared: {', '.join(shared) or '—'}"
