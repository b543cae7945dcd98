"""DGD109 value-not-visible."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.flags import inputs_for
from dgdgen.check.rules import RuleMeta

RULE = RuleMeta(
    code="DGD109",
    slug="value-not-visible",
    severity=Severity.WARNING,
    summary="A DGD reads a value from a ConfigMap or Secret that is not among the checked files.",
    rationale=(
        "A worker's settings may come from `env[].valueFrom` (configMapKeyRef / secretKeyRef), "
        "`envFrom` or a file of a mounted ConfigMap passed as a flag (`--custom-jinja-template "
        "/etc/tmpl/chat.jinja`). Dynamo reads `DYN_*` variables as flags (ai-dynamo "
        "1.6.1 common/configuration/groups/runtime_args.py `env_var`), so such a value can be a ModelDeploymentCard or KV-transfer input. dgdgen "
        "resolves the reference when the object is in the checked files (the same file or "
        "folder); when it is not, a change to it cannot be seen, and this finding says so "
        "rather than reporting the DGD as unchanged. Reported: `DYN_*` variables from a "
        "ConfigMap or Secret key, `envFrom` ConfigMaps, mounted ConfigMap files named by a "
        "flag. A Secret is read by key names only; one brought in whole by `envFrom` is taken "
        "for credentials (as v1alpha1 `envFromSecret`) and not reported."
    ),
    remediation=(
        "Keep the ConfigMap (or Secret manifest) next to the DGD so it is checked with it, or "
        "suppress with the reason where the object is managed elsewhere."
    ),
    help="check the ConfigMap or Secret with the DGD, or suppress with a reason",
)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        for comp in h.components.values():
            for u in comp.unresolved:
                hits = inputs_for(u.flag, comp.backend, ctx.release, h.disaggregated) \
                    if u.flag is not None else ()
                feeds = (f"; it sets {u.flag}, a {' and '.join(e.category.value for e in hits)}"
                         " input") if hits else ""
                loc = h.dgd.location(u.path)
                yield RULE.finding(
                    file=h.file, line=loc.line, column=loc.column,
                    message=f"{comp.name}: {u.what} comes from {u.kind} {u.name!r}, which is "
                            f"not among the checked files: its value cannot be seen{feeds}",
                    object=h.object, component=comp.name, key=f"{comp.name}:{u.what}:{u.name}",
                )
