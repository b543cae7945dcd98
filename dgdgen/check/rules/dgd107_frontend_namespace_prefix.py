"""DGD107 frontend-namespace-prefix."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.facts import line_of
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import Role

RULE = RuleMeta(
    code="DGD107",
    slug="frontend-namespace-prefix",
    severity=Severity.WARNING,
    summary="A frontend selects its Dynamo namespaces by prefix (DYN_NAMESPACE_PREFIX / "
            "--namespace-prefix): it serves every namespace that starts with it.",
    rationale=(
        "A frontend given a namespace prefix discovers every Dynamo namespace that "
        "string-starts-with it (lib/llm/src/namespace.rs NamespaceFilter::Prefix), "
        "and the prefix wins over an exact --namespace. On Dynamo 1.6.1 "
        "a frontend with DYN_NAMESPACE_PREFIX=inference-foo listed the models of namespace "
        "inference-foo-bar and split one model's requests 11/19 across both namespaces although "
        "their ModelDeploymentCard checksums differed (tests/check/test_runtime_truth.py): "
        "traffic goes to every generation and every other DGD "
        "whose namespace matches, weighted by worker count, with no gate and no per-generation "
        "metric (the frontend's metrics carry no namespace label). The operator itself gives "
        "each frontend its own DGD's namespace as the prefix, to follow the worker-hash "
        "generations of that DGD (ai-dynamo/dynamo deploy/operator/); DGD101 reports other DGDs that prefix "
        "reaches. This rule reports a prefix written into the manifest, which overrides that "
        "scope (--namespace-prefix takes precedence over --namespace, ai-dynamo 1.6.1 "
        "frontend_args.py)."
    ),
    remediation=(
        "Remove the prefix from the frontend and let it serve its own DGD's namespace exactly; "
        "move traffic between generations with `dgdgen render` (each generation has its own "
        "DGD, frontend and Dynamo namespace, and an HTTPRoute or HAProxy splits the traffic)."
    ),
    help="remove the prefix; split traffic between generations instead",
)

_SPELLINGS = ("--namespace-prefix",)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        h = pair.head
        for comp in h.components.values():
            if comp.role is not Role.FRONTEND:
                continue
            for key in _SPELLINGS:
                s = comp.flags.get(key)
                if s is None or s.value in ("", "false"):
                    continue
                line, col = line_of(h.dgd, s.path, s.offset)
                how = s.raw or key
                yield RULE.finding(
                    file=h.file, line=line, column=col,
                    message=(f"{comp.name}: {how}={s.value} makes the frontend serve every "
                             f"Dynamo namespace starting with {s.value!r}: one model's traffic "
                             "is split across all of them, whatever their checksums"),
                    object=h.object, component=comp.name, key=f"{comp.name}\x1f{s.value}",
                )
