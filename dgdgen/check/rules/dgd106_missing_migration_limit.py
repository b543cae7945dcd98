"""DGD106 missing-migration-limit."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context, DgdPair
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import Category
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import ANN_MAX_SURGE, ANN_MAX_UNAVAILABLE, ANN_STRATEGY

RULE = RuleMeta(
    code="DGD106",
    slug="missing-migration-limit",
    severity=Severity.WARNING,
    summary="The frontend of a DGD whose workers roll has no request-migration limit.",
    rationale=(
        "During a rolling update old workers drain and stop; a request in flight on a stopping "
        "worker fails unless the frontend migrates it to another worker, which it only does "
        "with a migration limit above 0 (`--migration-limit` is a frontend flag, "
        "ai-dynamo 1.6.1 frontend_args.py; the frontend exports "
        "dynamo_frontend_model_migration_total, prometheus_names.py). "
        "Streaming requests of long generations are the ones cut. On Dynamo 1.7 the limit also "
        "lets the frontend migrate eligible in-flight requests off a worker that goes (v1.7.0 "
        "release notes; source, not run: dgdgen.check.releases)."
    ),
    remediation=(
        "Set a migration limit on the frontend, e.g. args `--migration-limit 3` or env "
        "`DYN_MIGRATION_LIMIT=3`."
    ),
    help="set `--migration-limit 3` (or DYN_MIGRATION_LIMIT) on the frontend",
)

_ROLLOUT_ANNOTATIONS = (ANN_MAX_SURGE, ANN_MAX_UNAVAILABLE, ANN_STRATEGY)


def _rolls(pair: DgdPair) -> bool:
    """The workers will roll: a worker changes (beyond replicas), or rollout annotations say a
    managed rolling update is configured."""
    if pair.verdict is not None and not pair.verdict.in_place:
        return False  # a new generation beside the old one: no worker of a serving DGD drains
    if pair.verdict is not None:
        workers = {c.name for c in pair.head.workers()}
        for change in pair.verdict.changes:
            if change.component in workers and (change.category is not Category.SAFE
                                                 or change.field not in ("replicas",
                                                                         "component")):
                return True
    return any(k in comp.annotations for comp in pair.head.workers()
               for k in _ROLLOUT_ANNOTATIONS)


def _limit(value: str | None) -> int:
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 1  # a templated value: assume it is set on purpose


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        if not _rolls(pair):
            continue
        h = pair.head
        for fe in h.frontends():
            s = fe.flags.get("--migration-limit")
            if _limit(s.value if s else None) > 0:
                continue
            path = s.path if s is not None else (fe.container_path or fe.path)
            loc = h.dgd.location(path)
            yield RULE.finding(
                file=h.file, line=loc.line, column=loc.column,
                message=f"{fe.name}: no request-migration limit while the workers of "
                        f"{h.name!r} roll; in-flight requests on draining workers fail",
                object=h.object, component=fe.name, key=fe.name,
            )
