"""How long a Dynamo pod may take to stop: the termination grace period of the frontends and
workers dgdgen renders, and the plan note when the running stable's is too short.

A pod that Kubernetes stops gets SIGTERM, then SIGKILL after its
``terminationGracePeriodSeconds`` (unset: 30 s, the CRD's field description). A generation that
still serves part of the traffic and loses replicas has no drain to wait for (docs/planning.md):
the pods that go must finish their in-flight requests on SIGTERM, and a request may run for the
route's whole-request timeout. So the grace period must cover the request timeout plus what a
stopping Dynamo process needs around it.

What a Dynamo 1.6.1 process does on SIGTERM (``tests/rehearse/test_sigterm.py`` shows the
observed parts against the real runtime with a 6 s stream; a 68 s stream behaved the same in a
one-off run):

* frontend (observed): answers new requests with 503 at once, finishes every in-flight stream,
  then exits ≈0.4 s after the last one;
* mocker worker (observed): unregisters ``generate`` at once, finishes the in-flight stream,
  exits ≈0.3 s after it;
* vLLM / SGLang / TRT-LLM workers (read in the 1.6.1 wheel,
  ``dynamo/common/utils/graceful_shutdown.py``; no engine runs here): unregister from discovery,
  then keep serving for ``DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS`` (default 5 s) so requests a
  frontend routed before it saw the unregistration still land, then wait for in-flight requests.

A request may therefore still start up to 5 s after SIGTERM and run ``requestTimeout``; the
process exits well under a second after it. :data:`MARGIN_SECONDS` covers both: 5 s of
late-routed requests plus 5 s for the exit (observed under 1 s, rounded up for a busy node).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.model.dgd import Dgd
    from dgdgen.plan import Plan
    from dgdgen.spec import RolloutBody

# DYN_GRACEFUL_SHUTDOWN_GRACE_PERIOD_SECS (5 s) + the process's exit (observed < 1 s; 5 s).
MARGIN_SECONDS = 10
KUBERNETES_DEFAULT_GRACE = 30  # the pod spec's default (the CRD's field description)
FIELD = "terminationGracePeriodSeconds"


def stream_bound_seconds(body: RolloutBody) -> int:
    """The longest a request may run: ``traffic.requestTimeout``; ``0s`` (no route timeout) is
    bounded by ``gitops.workflow.waitTimeout``, as the drain hook is."""
    from dgdgen.spec import parse_duration

    return (parse_duration(body.traffic.request_timeout)
            or parse_duration(body.gitops.workflow.wait_timeout))


def required_seconds(body: RolloutBody) -> int:
    """The termination grace period every rendered frontend and worker gets at least."""
    return stream_bound_seconds(body) + MARGIN_SECONDS


def serving_components(d: Dgd) -> list[str]:
    """Components whose pods hold requests: frontends and workers (not planner, epp …)."""
    from dgdgen.model.dgd import Role

    return [n for n, c in d.components.items() if c.role is Role.FRONTEND or c.is_worker]


def apply(d: Dgd, seconds: int, only: set[str] | None = None) -> None:
    """Raise the grace period of the frontends and workers of ``d`` (those in ``only``, when
    given) to ``seconds``; a longer one already set is kept (never lowered)."""
    for name in serving_components(d):
        if only is not None and name not in only:
            continue
        have = d.components[name].grace_seconds
        if have is None or have < seconds:
            d.pod_spec(name)[FIELD] = seconds
    d.refresh()


def rolled_components(stable: Dgd, candidate: Dgd) -> set[str]:
    """Components whose pods the candidate replaces when one DGD carries both (in place,
    partitioned): those whose definition differs apart from the replica count. The others keep
    their pods, and touching their grace period would roll them for nothing."""
    out = set()
    for name in stable.components:
        if name not in candidate.components:
            continue
        a = {k: v for k, v in stable.component_doc(name).items() if k != "replicas"}
        b = {k: v for k, v in candidate.component_doc(name).items() if k != "replicas"}
        if a != b:
            out.add(name)
    return out


@dataclass(frozen=True)
class Shortfall:
    component: str
    seconds: int  # what its pods get
    explicit: bool  # set in the DGD (False: Kubernetes' default)


def shortfalls(d: Dgd, seconds: int, among: set[str]) -> list[Shortfall]:
    """Frontends and workers of ``d`` (of those in ``among``) whose pods get less than
    ``seconds`` to stop."""
    out = []
    for name in serving_components(d):
        if name not in among:
            continue
        have = d.components[name].grace_seconds
        got = KUBERNETES_DEFAULT_GRACE if have is None else have
        if got < seconds:
            out.append(Shortfall(name, got, have is not None))
    return out


def stable_stops_while_serving(plan: Plan, rolled: set[str]) -> tuple[list[int], set[str]]:
    """The steps, and the components, at which stable pods stop while the stable still takes
    traffic. In place and partitioned, the operator replaces the ``rolled`` components' pods
    under traffic. Otherwise a step whose stable makes room before the candidate grows (it still
    serves the previous share), or shrinks after the shift and keeps weight (no drain:
    docs/planning.md)."""
    steps = plan.steps
    if plan.mode in ("in-place", "partition"):
        return ([s.index for s in steps[1:]] if rolled else []), set(rolled)
    at: list[int] = []
    comps: set[str] = set()
    for before, st in itertools.pairwise(steps):
        # the stable's replicas at the peak: the peak less the candidate's new size
        room = {k: n - st.candidate.replicas.get(k, 0) for k, n in st.peak_replicas.items()}
        going = {k for k, n in before.stable.replicas.items() if room.get(k, n) < n}
        if st.stable.weight > 0:
            going |= {k for k, n in before.stable.replicas.items()
                      if st.stable.replicas.get(k, 0) < n}
        if going:
            at.append(st.index)
            comps |= going
    return at, comps
