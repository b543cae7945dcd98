"""Build the ValidatingAdmissionPolicy and its binding from the checker's flag tables.

Pure: options in, plain documents out (no I/O). The policy has one variable per stage of
:mod:`dgdgen.policy.cel`, one validation per rule (DGD201, DGD202, DGD203), an audit annotation
that records every use of the escape hatch, and match conditions that leave dgdgen's own
bookkeeping and metadata-only updates alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dgdgen.check.flags import Category
from dgdgen.check.inplace import Target, consequence, parse_run_by
from dgdgen.errors import InputError
from dgdgen.model.dgd import GROUP, VERSIONS
from dgdgen.policy import cel
from dgdgen.policy.tables import keys, release

ACTIONS = ("Deny", "Warn", "Audit")
FAILURE_POLICIES = ("Fail", "Ignore")
DEFAULT_NAME = "dgdgen-dgd-in-place-changes"

# code, slug, category, the variable holding its messages
RULES: tuple[tuple[str, str, Category, str], ...] = (
    ("DGD201", "mdc-change-in-place", Category.MDC, "mdcChanges"),
    ("DGD202", "kv-transfer-change-in-place", Category.KV, "kvChanges"),
    ("DGD203", "runtime-change-in-place", Category.RUNTIME, "runtimeChanges"),
)
_WHY = {
    Category.MDC: "a ModelDeploymentCard checksum input of a worker changes in place",
    Category.KV: "a KV-transfer / KV-layout setting of a disaggregated graph changes in place",
    Category.RUNTIME: "a worker or frontend image (the Dynamo runtime) changes in place",
}


@dataclass(frozen=True)
class Options:
    dynamo_version: str | None = None
    workers_run_by: str | None = None  # dgdgen.check.inplace.RunBy (default: deployment)
    actions: tuple[str, ...] = ("Deny",)
    failure_policy: str = "Fail"
    name: str = DEFAULT_NAME


def check_actions(actions: tuple[str, ...]) -> tuple[str, ...]:
    """The API server accepts each action once and never Deny together with Warn."""
    out = tuple(sorted(set(actions), key=ACTIONS.index))
    if not out:
        raise InputError("at least one validation action is needed (Deny, Warn or Audit)")
    if "Deny" in out and "Warn" in out:
        raise InputError("validationActions Deny and Warn cannot be combined "
                         "(the API server rejects the binding); use Deny or Warn, with Audit")
    return out


def variables(rel: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [
        {"name": "escapeHatch", "expression": cel.escape_hatch()},
        {"name": "aliases", "expression": cel.aliases_map()},
    ]
    for side, obj in (("new", "object"), ("old", "oldObject")):
        out += [
            {"name": f"{side}Raw", "expression": cel.raw_components(obj)},
            {"name": f"{side}Cmd", "expression": cel.commands(f"variables.{side}Raw")},
            {"name": f"{side}Script", "expression": cel.scripts(f"variables.{side}Cmd")},
            {"name": f"{side}Tokens", "expression": cel.tokens(f"variables.{side}Script")},
            {"name": f"{side}Backend",
             "expression": cel.dgd_backend(obj, f"variables.{side}Tokens")},
            {"name": f"{side}Positions", "expression": cel.positions(
                f"variables.{side}Tokens", f"variables.{side}Backend")},
            {"name": f"{side}Pairs", "expression": cel.raw_flags(f"variables.{side}Positions")},
            {"name": f"{side}Spelled", "expression": cel.spelled(f"variables.{side}Pairs")},
            {"name": f"{side}Normalised",
             "expression": cel.normalised(f"variables.{side}Spelled", "variables.aliases")},
            {"name": f"{side}Effective",
             "expression": cel.effective(f"variables.{side}Normalised")},
            {"name": f"{side}Components",
             "expression": cel.flags(f"variables.{side}Effective")},
        ]
    new, old = "variables.newComponents", "variables.oldComponents"
    out.append({"name": "newOnly", "expression": cel.unmatched(new, old)})
    out.append({"name": "oldOnly", "expression": cel.unmatched(old, new)})
    out.append({"name": "pairs", "expression": cel.pairs(new, old, "variables.newOnly",
                                                         "variables.oldOnly")})
    out.append({"name": "disaggregated", "expression": cel.disaggregated(
        "variables.newComponents", "variables.oldComponents")})
    out.append({"name": "changed", "expression": cel.changed("variables.pairs")})
    table = keys(rel)
    # Flag rules read only `changed` (usually empty): an update that changes no worker flag
    # costs one comparison per component pair.
    mdc = cel.concat([cel.key_list(k, "variables.changed") for k in table
                      if k.category is Category.MDC])
    kv = cel.concat([cel.key_list(k, "variables.changed") for k in table
                     if k.category is Category.KV])
    structural = cel.structural_list("variables.pairs")
    out.append({"name": "mdcChanges", "expression":
                f"{structural} + (size(variables.changed) == 0 ? [] : {mdc})"})
    out.append({"name": "kvChanges", "expression":
                f"variables.disaggregated ? {structural} + "
                f"(size(variables.changed) == 0 ? [] : {kv}) : []"})
    out.append({"name": "runtimeChanges", "expression": cel.runtime_list("variables.pairs")})
    return out


def validations(target: Target | None = None) -> list[dict[str, str]]:
    """One validation per in-place rule; its message says what the operator would do with the
    change on ``target`` (the checker's one model, dgdgen.check.inplace)."""
    from dgdgen.check.flags import NEWEST

    target = target or Target(NEWEST)
    out = []
    hatch = cel.ESCAPE_ANNOTATION
    for code, slug, category, var in RULES:
        effect = consequence(category, target.release, target.namespaces) or ""
        out.append({
            "expression": f"variables.escapeHatch || size(variables.{var}) == 0",
            # used when the messageExpression result is unusable (empty, line breaks, too long)
            "message": f"{code} {slug}: {_WHY[category]} (annotation {hatch} with a reason "
                       f"admits it)",
            "messageExpression": (
                f"{cel.lit(f'{code} {slug}: ')} + variables.{var}.join(\"; \") + "
                + cel.lit(f" ({_WHY[category]}; applied in place on {target.describe()}: "
                          f"{effect}). Roll it out with dgdgen (isolated generations, gated "
                          f"steps), or set the annotation {hatch} to the reason for this "
                          f"change.")),
            "reason": "Forbidden",
        })
    return out


def audit_annotations() -> list[dict[str, str]]:
    hatch = cel._ann("object", cel.ESCAPE_ANNOTATION)
    changes = " + ".join(f"variables.{var}" for *_, var in RULES)
    return [{
        "key": "in-place-override",
        "valueExpression": (
            f"variables.escapeHatch && size({changes}) > 0 ? \"allowed in place: \" + "
            f"({changes}).join(\"; \") + \" — reason: \" + {hatch} : \"\""),
    }]


def match_conditions() -> list[dict[str, str]]:
    return [
        {"name": "spec-changes",
         "expression": "!has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec"},
        {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
        {"name": "not-a-dgdgen-generation-beside-its-stable",
         "expression": "!(" + cel.generation_beside() + ")"},
    ]


def build(options: Options) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding."""
    rel = release(options.dynamo_version)
    target = Target(rel, parse_run_by(options.workers_run_by))
    actions = check_actions(options.actions)
    if options.failure_policy not in FAILURE_POLICIES:
        raise InputError(f"failurePolicy must be one of {', '.join(FAILURE_POLICIES)}")
    labels = {"app.kubernetes.io/managed-by": "dgdgen"}
    annotations = {"dgdgen.dev/dynamo-version": rel,
                   "dgdgen.dev/workers-run-by": target.run_by.value,
                   "dgdgen.dev/escape-hatch-annotation": cel.ESCAPE_ANNOTATION}
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": options.name, "labels": labels, "annotations": annotations},
        "spec": {
            "failurePolicy": options.failure_policy,
            "matchConstraints": {
                "matchPolicy": "Equivalent",
                "resourceRules": [{
                    "apiGroups": [GROUP],
                    "apiVersions": list(VERSIONS),
                    "operations": ["UPDATE"],
                    "resources": ["dynamographdeployments"],
                    "scope": "Namespaced",
                }],
            },
            "matchConditions": match_conditions(),
            "variables": variables(rel),
            "validations": validations(target),
            "auditAnnotations": audit_annotations(),
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": options.name, "labels": labels},
        "spec": {"policyName": options.name, "validationActions": list(actions)},
    }
    return [policy, binding]
