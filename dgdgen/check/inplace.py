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

How pods are replaced on the hashed path: Deployment-backed components by the component's
``nvidia.com/deployment-rolling-update-max-surge`` / ``-max-unavailable`` annotations (default
25 % / 25 %), or ``nvidia.com/deployment-strategy: Recreate`` (every old pod stops first); Grove
one pod at a time (RollingRecreate, maxUnavailable 1, maxSurge 0); LeaderWorkerSet one group at a
time (its defaults maxUnavailable 1, maxSurge 0).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from dgdgen.check.flags import RELEASES, Category, release_key
from dgdgen.dgd import ANN_MAX_SURGE, ANN_MAX_UNAVAILABLE, ANN_STRATEGY
from dgdgen.errors import InputError

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


@dataclass(frozen=True)
class Target:
    """The Dynamo release and worker backing the user runs."""

    release: str
    run_by: RunBy = DEFAULT_RUN_BY

    @property
    def namespaces(self) -> Namespaces:
        return namespaces_for(self.release, self.run_by)

    def describe(self) -> str:
        return f"Dynamo {self.release}, {self.run_by.label} ({self.namespaces.label})"


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
    pace: str  # how pods are replaced

    @property
    def hashed(self) -> bool:
        return self.namespaces is Namespaces.HASHED


_ENDPOINT = re.compile(r"^dyn://([^.\s]+)\.")


def roll_of(target: Target, workers: list[tuple[str, bool, dict[str, str], str | None]]) -> Roll:
    """The roll of one DGD: ``workers`` is (component, multinode, annotations, --endpoint value)
    per worker component of the head DGD."""
    run_by = target.run_by
    if run_by is RunBy.DEPLOYMENT and any(multi for _, multi, _, _ in workers):
        # Multinode components never run as Deployments: Grove or LeaderWorkerSet
        # (operator graph.go; DGD105 says the same).
        run_by = RunBy.LWS
    pinned = [(name, ep) for name, _, _, ep in workers if ep and _ENDPOINT.match(ep)]
    ns = namespaces_for(target.release, run_by)
    if ns is Namespaces.HASHED and pinned:
        name, ep = pinned[0]
        return Roll(target, run_by, Namespaces.SHARED,
                    f"{name} pins --endpoint {ep}, which overrides the worker's namespace (the "
                    "hash suffix is not applied: ai-dynamo dynamo/vllm/args.py), so old and new "
                    "workers share one Dynamo namespace", _pace(run_by, workers))
    if ns is Namespaces.HASHED:
        why = (f"on Dynamo {target.release} the operator rolls {run_by.label} into a new "
               "hash-suffixed Dynamo namespace")
    elif run_by is RunBy.UNMANAGED:
        why = "old and new workers share one Dynamo namespace (worker backing: unmanaged)"
    else:
        why = (f"on Dynamo {target.release} {run_by.label} keep one Dynamo namespace across a "
               f"roll (hash-suffixed only from {HASHED_SINCE[run_by]}, Dynamo #12769)")
    return Roll(target, run_by, ns, why, _pace(run_by, workers))


def _pace(run_by: RunBy, workers: list[tuple[str, bool, dict[str, str], str | None]]) -> str:
    if run_by is RunBy.GROVE:
        return "Grove replaces one pod at a time"  # RollingRecreate: maxUnavailable 1, maxSurge 0
    if run_by is RunBy.LWS:
        return "one group at a time (LeaderWorkerSet / Grove)"
    if run_by is RunBy.UNMANAGED:
        return "as the pods are replaced"
    recreate = [n for n, _, ann, _ in workers if ann.get(ANN_STRATEGY, "").lower() == "recreate"]
    if recreate:
        return (f"Recreate ({', '.join(recreate)}): every old pod stops before a new one starts, "
                "so the model has no worker in between")
    paces = sorted({(ann.get(ANN_MAX_SURGE, DEFAULT_SURGE).strip(),
                     ann.get(ANN_MAX_UNAVAILABLE, DEFAULT_UNAVAILABLE).strip())
                    for _, _, ann, _ in workers})
    if not paces:
        paces = [(DEFAULT_SURGE, DEFAULT_UNAVAILABLE)]
    text = ", ".join(f"maxSurge {s} / maxUnavailable {u}" for s, u in paces)
    return f"pods replaced with {text}"


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

# A new served model name is another model in every release and every namespace layout.
RENAME = (
    "the new workers serve another model name: requests for the old name lose capacity step by "
    "step and find no worker (404) once the last old worker goes")
RENAME_FIELDS = frozenset({"--served-model-name"})

# A served model no worker serves any more (a worker component removed, or the last one renamed).
MODEL_REMOVED = (
    "no worker serves the model any more: its clients get 404 once the last old worker goes")


def consequence(category: Category, release: str, namespaces: Namespaces, *,
                rename: bool = False, replaced: frozenset[str] = BOTH) -> str | None:
    """What applying a change of ``category`` in place does, in one sentence. ``replaced``:
    whose image a runtime change replaces (:data:`FRONTEND`, :data:`WORKERS`)."""
    if rename:
        return RENAME
    hashed = namespaces is Namespaces.HASHED
    if category is Category.MDC:
        return HASHED_MDC if hashed else SHARED_MDC.get(release)
    if category is Category.KV:
        return HASHED_KV if hashed else SHARED_KV
    if category is Category.RUNTIME:
        if WORKERS not in replaced:
            return RUNTIME_FRONTEND
        if FRONTEND not in replaced:
            return HASHED_RUNTIME_WORKERS if hashed else SHARED_RUNTIME_WORKERS
        return HASHED_RUNTIME if hashed else SHARED_RUNTIME
    return None


def roll_consequence(category: Category, roll: Roll, *, rename: bool = False,
                     replaced: frozenset[str] = BOTH) -> str:
    """The consequence of one change on one DGD's roll, with why and how fast, for a message."""
    effect = consequence(category, roll.target.release, roll.namespaces, rename=rename,
                         replaced=replaced) or ""
    if category is Category.RUNTIME and WORKERS not in replaced:
        return effect  # no worker rolls: neither the workers' namespaces nor their pace apply
    parts = [f"{roll.why}: {effect}" if effect else roll.why]
    if roll.hashed and not rename:
        parts.append(f"({roll.pace}; {HASHED_CAVEATS})")
    elif roll.hashed:
        parts.append(f"({roll.pace})")
    return " ".join(parts)


def table(category: Category) -> tuple[tuple[str, str, str], ...]:
    """(release, hashed worker namespaces, one shared namespace) per release, for rule pages."""
    out = []
    for r in RELEASES:
        hashed = consequence(category, r, Namespaces.HASHED) or ""
        shared = consequence(category, r, Namespaces.SHARED) or ""
        out.append((r, hashed, shared))
    return tuple(out)


def which_runs_hashed(release: str) -> str:
    """Which worker backings get hash-suffixed namespaces on ``release``, for the docs."""
    hashed = [rb.value for rb in RunBy if namespaces_for(release, rb) is Namespaces.HASHED]
    shared = [rb.value for rb in RunBy if namespaces_for(release, rb) is Namespaces.SHARED]
    return f"hashed: {', '.join(hashed) or '—'}; shared: {', '.join(shared) or '—'}"
