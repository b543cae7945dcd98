"""Generated names: DNS-1123 labels within Kubernetes limits, stable for the same input, and no
generated Dynamo namespace a prefix of another in the same Kubernetes namespace."""

from __future__ import annotations

from dgdgen.errors import PlanError
from dgdgen.model import dgd as dgdmod
from dgdgen.spec import DNS1035_LABEL

LABEL_MAX = 63
HASH_SUFFIX = 9  # "-" + 8 hex: the operator's worker-hash suffix of child names, GetDCDResourceName
SERVICE_SUFFIX = "-fe"


def frontend_service(dgd_name: str) -> str:
    return f"{dgd_name}{SERVICE_SUFFIX}"


def candidate_dgd_name(base: str, revision: str) -> str:
    """``{revision}-{base}``: the revision goes *in front* so that neither generation's Dynamo
    namespace (``{k8s-ns}-{dgd-name}``) is a string prefix of the other's — the frontend
    discovers every namespace that starts with its own (lib/llm/src/namespace.rs), so ``qwen`` and
    ``qwen-r2`` would cross-talk while ``qwen`` and ``r2-qwen`` cannot."""
    return f"{revision}-{base}"


def check_dgd_name(name: str, component_names: list[str], field: tuple[str | int, ...]) -> None:
    """Refuse a DGD name the operator could not turn into valid child names."""
    if not DNS1035_LABEL.match(name):
        raise PlanError(
            f"DGD name {name!r} is not a DNS-1035 label (lower-case letters, digits, '-', starting "
            "with a letter); Services are named after it",
            field=field,
        )
    longest = max(component_names, key=len, default="")
    need = len(name) + 1 + len(longest) + HASH_SUFFIX
    if need > LABEL_MAX or len(frontend_service(name)) > LABEL_MAX:
        raise PlanError(
            f"DGD name {name!r} ({len(name)} characters) cannot fit the length limits: the "
            f"operator names worker children '{{dgd}}-{longest.lower()}-<8-hex hash>' "
            f"({need} > {LABEL_MAX} characters). Choose a shorter spec.candidate.name or "
            "shorter revision ids",
            field=field,
        )


def check_prefix_free(k8s_namespace: str, dgd_names: dict[str, str]) -> None:
    """Refuse generated names where one Dynamo namespace is a prefix of another."""
    spaces = {owner: dgdmod.dynamo_namespace(k8s_namespace, n) for owner, n in dgd_names.items()}
    conflicts = dgdmod.prefix_conflicts(spaces)
    if conflicts:
        a, b = conflicts[0]
        raise PlanError(
            f"Dynamo namespace {spaces[a]!r} ({a}) is a prefix of {spaces[b]!r} ({b}): the "
            f"{a} frontend would discover the {b} workers. Choose a candidate name that does not "
            f"start with {dgd_names[a]!r}",
            field=("spec", "candidate", "name"),
        )
