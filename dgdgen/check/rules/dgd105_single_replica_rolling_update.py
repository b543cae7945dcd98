"""DGD105 single-replica-rolling-update."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context, DgdPair
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.inplace import RunBy
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import ANN_MAX_SURGE, ANN_STRATEGY, Role

GROVE_STRATEGY = "nvidia.com/grove-update-strategy"

RULE = RuleMeta(
    code="DGD105",
    slug="single-replica-rolling-update",
    severity=Severity.WARNING,
    summary="A single-replica component is updated one replica at a time without surge: its "
            "capacity drops to zero during the rollout.",
    rationale=(
        "Grove replaces pods one at a time with fixed maxUnavailable 1 / maxSurge 0 "
        "(RollingRecreate, ai-dynamo/grove; multinode components always run on Grove or "
        "LWS), `nvidia.com/deployment-strategy: Recreate` scales the old pods to 0 first, and "
        "a max-surge of 0 leaves only maxUnavailable to make progress (ai-dynamo/dynamo #6110, "
        "the operator's rolling-update guide). With one "
        "replica each of these takes the component's whole capacity away until the new pod is "
        "ready — minutes for a GPU worker. Grove bug #697 can even delete all replicas at once. "
        "Worker pods run by Grove or LeaderWorkerSet (`--workers-run-by grove|lws`, "
        "`check.workers-run-by`) are never surged, whatever their annotations: Dynamo's "
        "rolling-update task guide (docs/fern/pages/kubernetes/operations/rolling-updates.md) "
        "says a zero-downtime roll needs at least 2 replicas per worker component there "
        "(RollingRecreate replaces one pod at a time, Coherent the whole set of one-replica "
        "components together; OnDelete replaces nothing by itself)."
    ),
    remediation=(
        "Run at least two replicas of the component, or allow a surge (Deployment-backed "
        "components: `nvidia.com/deployment-rolling-update-max-surge: \"1\"`), or roll out "
        "into a separate generation with `dgdgen plan`."
    ),
    help="run two replicas, allow a surge, or roll out with `dgdgen plan`",
)


def _reason(comp_annotations: dict[str, str], dgd_annotations: dict[str, str], multinode: bool
            ) -> str | None:
    if comp_annotations.get(ANN_STRATEGY, "").lower() == "recreate":
        return f"{ANN_STRATEGY}: Recreate"
    if comp_annotations.get(ANN_MAX_SURGE, "").strip() in ("0", "0%"):
        return f"{ANN_MAX_SURGE}: 0"
    if multinode:
        return "multinode components are updated by Grove/LWS one replica at a time"
    if dgd_annotations.get(GROVE_STRATEGY) == "RollingRecreate":
        return f"{GROVE_STRATEGY}: RollingRecreate replaces one replica at a time"
    return None


def _no_surge(ctx: Context, pair: DgdPair) -> tuple[str, str] | None:
    """Why the operator's roll of this DGD's workers never surges (Grove / LWS backing), in a
    few words and whole, or None (Deployment-backed: the annotations decide; OnDelete: nothing
    rolls by itself)."""
    roll = ctx.roll(pair)
    s = roll.strategy
    if roll.run_by not in (RunBy.GROVE, RunBy.LWS) or not s.automatic or s.max_surge != "0":
        return None
    whole = (f"{roll.run_by.label} are rolled by {s.name} without surge (Dynamo "
             f"{roll.target.release}; a zero-downtime roll needs at least 2 replicas per worker "
             "component)")
    return f"{s.name} without surge", whole


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        backing: list[tuple[str, str] | None] = []  # once per DGD, when a worker needs it
        for comp in h.components.values():
            if comp.replicas != 1 or not (comp.is_worker or comp.role is Role.FRONTEND):
                continue
            said = _reason(dict(comp.annotations), dict(h.annotations), comp.multinode)
            reasons = None if said is None else (said, said)
            if reasons is None and comp.is_worker:
                if not backing:
                    backing.append(_no_surge(ctx, pair))
                reasons = backing[0]
            if reasons is None:
                continue
            short, reason = reasons
            written = h.dgd.pod(comp.name).replicas_written
            path = comp.path + (("replicas",) if written else ())
            loc = h.dgd.location(path)
            yield RULE.finding(
                file=h.file, line=loc.line, column=loc.column,
                message=f"{comp.name}: 1 replica and {short}: capacity drops to zero during "
                        "a rollout",
                details="" if short == reason else (
                    f"{comp.name}: 1 replica and {reason}: capacity drops to zero during a "
                    "rollout"),
                object=h.object, component=comp.name, key=comp.name,
            )
