"""Evaluate the policy the way the API server does for one UPDATE, with cel-python and the
Kubernetes CEL libraries of :mod:`dgdgen.crd.cel`: match conditions (all must hold), then the
variables in order, then every validation; a CEL error counts as ``failurePolicy`` says.

Used by ``dgdgen policy test`` and by the tests that compare the policy with ``dgdgen diff``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import celpy.celtypes as ct

from dgdgen.crd import cel as kcel


@dataclass(frozen=True)
class Outcome:
    matched: bool  # every match condition held
    denied: tuple[tuple[str, str], ...] = ()  # (rule code, message) of failing validations
    errors: tuple[str, ...] = ()  # CEL runtime errors (failurePolicy decides)
    audit: Mapping[str, str] = field(default_factory=dict)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(sorted({code for code, _ in self.denied}))


def _code(message: str) -> str:
    return message.split(" ", 1)[0]


def _lists(value: Any) -> Any:
    """cel-python's ``+`` returns plain Python lists and strings, which its ``size()`` and
    ``contains()`` then refuse; give every value back its CEL type (as cel-go keeps it)."""
    if isinstance(value, str) and not isinstance(value, ct.StringType):
        return ct.StringType(value)
    if isinstance(value, list):
        return ct.ListType([_lists(v) for v in value])
    if isinstance(value, dict):
        return ct.MapType({k: _lists(v) for k, v in value.items()})
    return value


class _Lazy(ct.MapType):
    """``variables``: evaluated on first use, once, as the API server does (a variable that is
    never read is never evaluated, so its errors cannot matter)."""

    def __init__(self, spec: list[Mapping[str, str]], activation: dict[str, Any]) -> None:
        super().__init__()
        self._spec = {v["name"]: v["expression"] for v in spec}
        self._activation = activation

    def __getitem__(self, key: Any) -> Any:
        name = str(key)
        if not super().__contains__(ct.StringType(name)):
            program = kcel.compile_rule(self._spec[name])
            value = _lists(kcel.evaluate(program, self._activation))
            super().__setitem__(ct.StringType(name), value)
        return super().__getitem__(ct.StringType(name))

    def __contains__(self, key: Any) -> bool:
        return str(key) in self._spec


def evaluate(policy: Mapping[str, Any], old: Any, new: Any) -> Outcome:
    """The outcome of UPDATE ``old`` → ``new`` (plain documents) under ``policy``."""
    spec = policy["spec"]
    act: dict[str, Any] = {
        "object": kcel.to_cel(new, None),
        "oldObject": kcel.to_cel(old, None),
        "request": kcel.to_cel({"operation": "UPDATE", "kind": {
            "group": "nvidia.com", "version": str(new.get("apiVersion", "")).split("/")[-1],
            "kind": "DynamoGraphDeployment"}}, None),
        "params": None,
    }
    act["variables"] = _Lazy(spec.get("variables", []), act)
    errors: list[str] = []
    for cond in spec.get("matchConditions", []):
        try:
            result = kcel.evaluate(kcel.compile_rule(cond["expression"]), act)
        except kcel.EvalError as exc:
            errors.append(f"matchCondition {cond['name']}: {exc}")
            return Outcome(True, (), tuple(errors))
        if not kcel.is_true(result):
            return Outcome(False)
    denied: list[tuple[str, str]] = []
    for v in spec.get("validations", []):
        try:
            ok = kcel.is_true(kcel.evaluate(kcel.compile_rule(v["expression"]), act))
        except kcel.EvalError as exc:
            errors.append(f"{v['expression'][:60]}: {exc}")
            continue
        if not ok:
            msg = str(kcel.evaluate(kcel.compile_rule(v["messageExpression"]), act))
            denied.append((_code(msg), msg))
    audit: dict[str, str] = {}
    for a in spec.get("auditAnnotations", []):
        try:
            value = kcel.evaluate(kcel.compile_rule(a["valueExpression"]), act)
        except kcel.EvalError as exc:
            errors.append(f"auditAnnotation {a['key']}: {exc}")
            continue
        if value is not None and str(value) != "":  # null or "" omit the annotation
            audit[a["key"]] = str(value)
    return Outcome(True, tuple(denied), tuple(errors), audit)
