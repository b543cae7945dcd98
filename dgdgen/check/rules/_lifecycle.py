"""Shared by DGD103 / DGD104: flags the target Dynamo release deprecates or removed."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.cmdline import Setting
from dgdgen.check.context import Context
from dgdgen.check.facts import line_of
from dgdgen.check.findings import Finding
from dgdgen.check.flags import FLAG_LIFECYCLE, FlagStatus
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import Backend


def lifecycle(ctx: Context, rule: RuleMeta, state: str) -> Iterator[Finding]:
    # The flags in this state in the target release, per backend and spelling: decided once,
    # not per worker, and each flag a worker sets is looked up once.
    statuses = [s for s in FLAG_LIFECYCLE if s.state(ctx.release) == state]
    by_flag: dict[Backend, dict[str, list[FlagStatus]]] = {}
    by_env: dict[Backend, list[tuple[FlagStatus, str]]] = {}
    for b in Backend:
        mine = [st for st in statuses if b in st.backends]
        by_flag[b] = {}
        for st in mine:
            by_flag[b].setdefault(st.flag, []).append(st)
        by_env[b] = [(st, st.env) for st in mine if st.env]
    for pair in ctx.dgds:
        h = pair.head
        for comp in h.components.values():
            flags = by_flag[comp.backend]
            if not flags or not comp.is_worker:
                continue
            hits: list[tuple[FlagStatus, str, Setting]] = []
            for raw, setting in comp.raw_flags:
                for status in flags.get("--" + raw[2:].replace("_", "-"), ()):
                    hits.append((status, raw, setting))
            for status, env in by_env[comp.backend]:
                if env in comp.env:
                    hits.append((status, env, comp.env[env]))
            for status, raw, setting in hits:
                line, col = line_of(h.dgd, setting.path, setting.offset)
                yield rule.finding(
                    file=h.file, line=line, column=col,
                    message=(f"{comp.name}: {raw} is {state} for {comp.backend.value} in "
                             f"Dynamo {ctx.release}; use {status.replacement}"),
                    details=(f"{comp.name}: {raw} is {state} for {comp.backend.value} in "
                             f"Dynamo {ctx.release}; use {status.replacement} "
                             f"({status.cite})"),
                    object=h.object, component=comp.name, key=raw,
                )
