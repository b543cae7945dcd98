"""Strict validation of a plain object against a CRD's structural schema, with its CEL rules.

This follows what kube-apiserver does with a custom resource (k8s.io/apiextensions-apiserver,
pkg/apiserver/schema): defaults are applied first, then the OpenAPI value validations, then the
``x-kubernetes-validations`` CEL rules. Where the API server would *silently prune* a field that
the schema does not declare, we report an error instead: a rendered manifest that loses fields
on apply is a defect (kubectl's ``--validate=strict`` reports them the same way).

Why one module: it is one recursive walk, as the API server's is — defaulting, the value
validations of each keyword and the CEL rules apply at each node in that order and share the
walk's path and budget; the CEL evaluation itself lives in :mod:`dgdgen.crd.celcpp` and
:mod:`dgdgen.crd.cel`.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from dgdgen.crd import celcpp
from dgdgen.crd.violation import FieldPath, Violation
from dgdgen.errors import did_you_mean

Schema = Mapping[str, Any]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()

_TYPE_NAMES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def _is_type(value: Any, expected: str) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- ObjectMeta

# Custom resources get ObjectMeta from the API machinery, not from the CRD (whose schema may only
# constrain name/generateName): these are its fields (k8s.io/apimachinery meta/v1 ObjectMeta).
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT_META: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "generateName": {"type": "string"},
        "namespace": {"type": "string"},
        "selfLink": {"type": "string"},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer", "format": "int64"},
        "creationTimestamp": {"type": "string", "format": "date-time", "nullable": True},
        "deletionTimestamp": {"type": "string", "format": "date-time", "nullable": True},
        "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "name": {"type": "string"},
                    "uid": {"type": "string"},
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "managedFields": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
}

# k8s.io/apimachinery/pkg/util/validation: qualified names, label values, DNS labels.
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ANNOTATIONS_MAX = 256 * 1024


def _qualified_name_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return "prefix must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            "name part must be 63 characters or less, alphanumeric, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def metadata_problems(meta: Mapping[str, Any], path: FieldPath) -> list[Violation]:
    """ObjectMeta checks the API server applies to every object (ValidateObjectMeta)."""
    out: list[Violation] = []
    if not meta.get("name") and not meta.get("generateName"):
        out.append(Violation(path + ("name",), "name or generateName is required", "required"))
    name = meta.get("name")
    if isinstance(name, str) and name and (name in (".", "..") or "/" in name or "%" in name):
        out.append(
            Violation(path + ("name",), f"invalid name {name!r}: may not be '.', '..' or "
                      "contain '/' or '%'", "name")
        )
    ns = meta.get("namespace")
    if isinstance(ns, str) and ns and (len(ns) > 63 or not _DNS1123_LABEL.match(ns)):
        out.append(Violation(path + ("namespace",), f"{ns!r} is not a DNS-1123 label", "name"))
    labels = meta.get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            problem = _qualified_name_problem(k)
            if problem:
                out.append(Violation(path + ("labels", k), f"label key {k!r}: {problem}", "key"))
            if isinstance(v, str) and (len(v) > 63 or not _LABEL_VALUE.match(v)):
                out.append(
                    Violation(path + ("labels", k), f"label value {v!r} must be 63 characters "
                              "or less, alphanumeric, '-', '_' or '.', starting and ending with "
                              "an alphanumeric character", "labelValue")
                )
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        total = 0
        for k, v in annotations.items():
            problem = _qualified_name_problem(k)
            if problem:
                out.append(
                    Violation(path + ("annotations", k), f"annotation key {k!r}: {problem}", "key")
                )
            total += len(k) + (len(v) if isinstance(v, str) else 0)
        if total > _ANNOTATIONS_MAX:
            out.append(
                Violation(path + ("annotations",), f"annotations total {total} bytes, must "
                          f"be at most {_ANNOTATIONS_MAX}", "maxLength")
            )
    return out


def with_metadata(crd_meta: Schema | None) -> dict[str, Any]:
    """ObjectMeta, plus the name constraints a CRD may add to ``metadata``."""
    extra = (crd_meta or {}).get("properties") or {}
    if not extra:
        return OBJECT_META
    props = dict(OBJECT_META["properties"])
    for field in ("name", "generateName"):
        if field in extra:
            props[field] = {**props[field], **extra[field]}
    return {**OBJECT_META, "properties": props}


# --------------------------------------------------------------------------- defaulting


def copy_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: copy_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_plain(v) for v in value]
    return value


def defaulted(value: Any, schema: Schema) -> Any:
    """``value`` with schema defaults set on absent fields (structuraldefaulting.Default), as a
    new object that shares every part no default changes (``value`` is not modified). Only the schema nodes with a
    default at or below them are visited (:func:`_defaults_plan`): copying and defaulting every
    DGD whole was 14 % of ``dgdgen verify``."""
    plan = _defaults_plan(schema)
    if plan is None:
        return value
    direct, children, extra, props, items = plan
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for name, default in direct:
            if name not in value:
                if out is None:
                    out = dict(value)
                out[name] = copy_plain(default)
        for name, sub in children:
            current = value if out is None else out
            if name in current:
                child = current[name]
                new = defaulted(child, sub)
                if new is not child:
                    if out is None:
                        out = dict(value)
                    out[name] = new
        if extra is not None:
            for k, v in list((value if out is None else out).items()):
                if k not in props:
                    new = defaulted(v, extra)
                    if new is not v:
                        if out is None:
                            out = dict(value)
                        out[k] = new
        return value if out is None else out
    if isinstance(value, list) and items is not None:
        changed = [defaulted(v, items) for v in value]
        if any(a is not b for a, b in zip(changed, value)):
            return changed
    return value


# What defaulting does at one schema node: (properties with a default, properties with a
# default somewhere below them, additionalProperties and items when they have one, the declared
# property names), or None when no default is set at or below the node.
_Plan = tuple[tuple[tuple[str, Any], ...], tuple[tuple[str, Schema], ...], "Schema | None",
              frozenset[str], "Schema | None"]
# id(schema node) -> (the node, its plan). The node is kept so that its id cannot be reused
# while the entry lives.
_PLANS: dict[int, tuple[Schema, _Plan | None]] = {}


def _defaults_plan(schema: Schema) -> _Plan | None:
    hit = _PLANS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    direct = tuple((name, sub["default"]) for name, sub in props.items()
                   if isinstance(sub, Mapping) and "default" in sub)
    children = tuple((name, sub) for name, sub in props.items()
                     if isinstance(sub, Mapping) and _defaults_plan(sub) is not None)
    extra = schema.get("additionalProperties")
    extra = extra if isinstance(extra, Mapping) and _defaults_plan(extra) is not None else None
    items = schema.get("items")
    items = items if isinstance(items, Mapping) and _defaults_plan(items) is not None else None
    plan: _Plan | None = None
    if direct or children or extra is not None or items is not None:
        plan = (direct, children, extra, frozenset(props), items)
    if len(_PLANS) >= 100_000:
        _PLANS.clear()
    _PLANS[id(schema)] = (schema, plan)
    return plan


def default_paths(schema: Schema) -> list[list[str]]:
    """Where defaulting acts, as :func:`_defaults_plan` finds it by walking ``schema``: the path
    (``properties`` and a name, ``items``, ``additionalProperties``) from the root to every
    property schema whose ``default`` is set. The compiled CRDs carry these paths
    (:mod:`dgdgen.crd.catalog`) and a run rebuilds the plan from them (:func:`seed_defaults`)."""
    out: list[list[str]] = []
    todo: list[tuple[Schema, list[str]]] = [(schema, [])]
    while todo:
        node, path = todo.pop()
        plan = _defaults_plan(node)
        if plan is None:
            continue
        direct, children, extra, _, items = plan
        out.extend([*path, "properties", name] for name, _ in direct)
        todo.extend((sub, [*path, "properties", name]) for name, sub in children)
        todo.extend((sub, [*path, key]) for key, sub in (("additionalProperties", extra),
                                                        ("items", items)) if sub is not None)
    return sorted(out)


def seed_defaults(schema: Schema, paths: Iterable[Iterable[str]]) -> None:
    """Record the defaulting plan of ``schema`` and of the nodes below it from ``paths``, the
    places its defaults sit (:func:`default_paths`), so that
    :func:`defaulted` never walks the whole schema: only the nodes on those paths have a plan,
    every other node it could reach has none. Building the plans node by node (about 3,800 nodes
    for a DGD's schema) was 1.4 % of the instructions of a ``dgdgen validate``
    (docs/performance.md); ``tests/crd/test_defaults_plan.py`` shows the seeded plans are the
    walked ones for every vendored schema."""
    on_path: dict[int, Schema] = {}
    for path in paths:
        node: Any = schema
        steps = iter(path)
        for step in steps:  # "properties" is followed by the property's name
            if not isinstance(node, Mapping):
                break
            on_path[id(node)] = node
            node = node.get(step) if step != "properties" else (
                node.get("properties") or {}).get(next(steps, None))
    for node in on_path.values():
        props = node.get("properties")
        props = props if isinstance(props, Mapping) else {}
        direct = tuple((name, sub["default"]) for name, sub in props.items()
                       if isinstance(sub, Mapping) and "default" in sub)
        children = tuple((name, sub) for name, sub in props.items() if id(sub) in on_path)
        extra, items = node.get("additionalProperties"), node.get("items")
        plan: _Plan = (direct, children, extra if id(extra) in on_path else None,
                       frozenset(props), items if id(items) in on_path else None)
        _PLANS[id(node)] = (node, plan)
    if id(schema) not in on_path:
        _PLANS[id(schema)] = (schema, None)


# --------------------------------------------------------------------------- formats


def _valid_date_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


def _valid_byte(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:
        return False
    return True


# Only the formats the vendored CRDs use and kube-openapi checks; int32/int64 are range checks
# so that a value the controllers' typed clients would overflow on is caught here.
_STRING_FORMATS = {"date-time": _valid_date_time, "datetime": _valid_date_time, "byte": _valid_byte}
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


# --------------------------------------------------------------------------- the walker


_FIELD_PATH_TOKEN = re.compile(r"\.([A-Za-z0-9_\-$]+)|\['((?:[^'\\]|\\.)*)'\]|\[([0-9]+)\]")


def parse_field_path(text: str | None) -> FieldPath:
    """A CEL rule's ``fieldPath`` (``.spec.foo['a.b']``) as path parts; () if unparsable."""
    if not text:
        return ()
    parts: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _FIELD_PATH_TOKEN.match(text, pos)
        if not m:
            return ()
        name, quoted, index = m.groups()
        parts.append(int(index) if index is not None else (name if name is not None else quoted))
        pos = m.end()
    return tuple(parts)


class Walker:
    """One validation run: collects violations while walking value and schema together."""

    def __init__(self, *, strict: bool = True, run_cel: bool = True) -> None:
        self.strict = strict
        self.run_cel = run_cel
        self.violations: list[Violation] = []
        # CEL runs after the whole structural walk, and not at all when a value has the wrong
        # type (apiextensions-apiserver customResourceStrategy.validate: hasBlockingErr).
        self._deferred: list[tuple[Any, Schema, FieldPath, Any]] = []
        self._type_errors = 0

    def add(self, path: FieldPath, message: str, rule: str | None, reason: str | None = None) -> None:
        self.violations.append(Violation(path, message, rule, reason))

    # The entry point for a whole object: apiVersion/kind/metadata are the API machinery's.
    def root(self, obj: dict[str, Any], schema: Schema, old: Any = MISSING) -> None:
        self.walk(obj, _with_object_meta(schema), (), old)
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            self.violations.extend(metadata_problems(meta, ("metadata",)))
        elif meta is None:
            self.add(("metadata",), "metadata is required (name or generateName)", "required")
        self.run_deferred()

    def run_deferred(self) -> None:
        deferred, self._deferred = self._deferred, []
        if self._type_errors:
            if deferred:
                self.add((), "CEL validation rules were not checked because the object has type "
                         "errors; correct them to complete validation", "x-kubernetes-validations")
            return
        for value, schema, path, old in deferred:
            self._cel(value, schema, path, old)

    def walk(self, value: Any, schema: Schema, path: FieldPath, old: Any = MISSING) -> None:
        node = _NODES.get(id(schema))
        if node is None or node.schema is not schema:
            node = _compile(schema)
        if value is None:
            if not node.nullable:
                # The API server drops a null for a non-nullable field; in generated output that
                # is always a mistake (a field meant to be set, or one to leave out).
                self.add(path, "must not be null (the field is not nullable)", "nullable")
            return
        t = type(value)
        integer = t is int or t not in _PLAIN and isinstance(value, int) and t is not bool
        if integer and not _INT64_MIN <= value <= _INT64_MAX:
            # The API server decodes every JSON integer as int64 and rejects larger ones; CEL
            # could not even convert it (a type error: CEL is skipped).
            self._type_errors += 1
            self.add(path, f"{value} does not fit in a 64-bit integer", "type")
            return
        if node.int_or_string:
            if not (_is_type(value, "integer") or isinstance(value, str)):
                self._type_errors += 1
                self.add(path, f"must be an integer or a string, got {type_name(value)}", "type")
                return
        elif node.type is not None and not (_EXACT.get(node.type) is t or
                                            _is_type(value, node.type)):
            self._type_errors += 1
            self.add(path, f"must be of type {node.type}, got {type_name(value)} "
                     f"{_short(value)}", "type")
            return
        if node.value_checks:
            self._value_validations(value, schema, path)
        if t is dict or t is not list and isinstance(value, dict):
            self._object(value, node, path, old)
        elif t is list or isinstance(value, list):
            self._array(value, node, path, old)
        if node.cel and self.run_cel:
            self._deferred.append((value, schema, path, old))

    # ----------------------------------------------------------------------- types

    def _value_validations(self, value: Any, schema: Schema, path: FieldPath) -> None:
        enum = schema.get("enum")
        if enum is not None and value not in enum:
            allowed = ", ".join(json.dumps(e) for e in enum)
            self.add(path, f"unsupported value {_short(value)}: supported values: {allowed}", "enum")
        if isinstance(value, str):
            self._string(value, schema, path)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            self._number(value, schema, path)
        elif isinstance(value, list):
            n = len(value)
            if "maxItems" in schema and n > schema["maxItems"]:
                self.add(path, f"must have at most {schema['maxItems']} items, has {n}", "maxItems")
            if "minItems" in schema and n < schema["minItems"]:
                self.add(path, f"must have at least {schema['minItems']} items, has {n}", "minItems")
        elif isinstance(value, dict):
            n = len(value)
            if "maxProperties" in schema and n > schema["maxProperties"]:
                self.add(path, f"must have at most {schema['maxProperties']} entries, has {n}",
                         "maxProperties")
            if "minProperties" in schema and n < schema["minProperties"]:
                self.add(path, f"must have at least {schema['minProperties']} entries, has {n}",
                         "minProperties")
        for keyword in ("allOf", "anyOf", "oneOf", "not"):
            if keyword in schema:
                self._combinator(keyword, value, schema[keyword], path)

    def _string(self, value: str, schema: Schema, path: FieldPath) -> None:
        n = len(value)  # characters, as kube-openapi counts (utf8.RuneCountInString)
        if "maxLength" in schema and n > schema["maxLength"]:
            self.add(path, f"may not be longer than {schema['maxLength']} characters, is {n}",
                     "maxLength")
        if "minLength" in schema and n < schema["minLength"]:
            self.add(path, f"must be at least {schema['minLength']} characters, is {n}",
                     "minLength")
        pattern = schema.get("pattern")
        if pattern is not None and not _compiled(pattern).search(value):
            self.add(path, f"{_short(value)} does not match the pattern {pattern}", "pattern")
        check = _STRING_FORMATS.get(schema.get("format", ""))
        if check is not None and not check(value):
            self.add(path, f"{_short(value)} is not a valid {schema['format']}", "format")

    def _number(self, value: float, schema: Schema, path: FieldPath) -> None:
        if "maximum" in schema:
            limit = schema["maximum"]
            if value > limit or (schema.get("exclusiveMaximum") and value == limit):
                op = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
                self.add(path, f"{value} must be {op} {limit}", "maximum")
        if "minimum" in schema:
            limit = schema["minimum"]
            if value < limit or (schema.get("exclusiveMinimum") and value == limit):
                op = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
                self.add(path, f"{value} must be {op} {limit}", "minimum")
        if "multipleOf" in schema and value % schema["multipleOf"] != 0:
            self.add(path, f"{value} must be a multiple of {schema['multipleOf']}", "multipleOf")
        bounds = _INT_RANGES.get(schema.get("format", ""))
        if bounds is not None and isinstance(value, int) and not bounds[0] <= value <= bounds[1]:
            self.add(path, f"{value} is out of range for {schema['format']}", "format")

    def _combinator(self, keyword: str, value: Any, subs: Any, path: FieldPath) -> None:
        # Structural schemas allow these only for value validations (no new fields), so a
        # sub-walk without the unknown-field check and without CEL decides each branch.
        def ok(sub: Schema) -> bool:
            w = Walker(strict=False, run_cel=False)
            w.walk(value, sub, path)
            return not w.violations

        if keyword == "not":
            if ok(subs):
                self.add(path, "must not match the schema in 'not'", "not")
            return
        passed = sum(1 for sub in subs if ok(sub))
        if keyword == "allOf" and passed != len(subs):
            for sub in subs:
                w = Walker(strict=False, run_cel=False)
                w.walk(value, sub, path)
                self.violations.extend(w.violations)
        elif keyword == "anyOf" and passed == 0:
            self.add(path, f"{_short(value)} must match at least one schema in anyOf", "anyOf")
        elif keyword == "oneOf" and passed != 1:
            self.add(path, f"{_short(value)} must match exactly one schema in oneOf, matches "
                     f"{passed}", "oneOf")

    # ----------------------------------------------------------------------- containers

    def _object(self, value: dict[str, Any], node: _Node, path: FieldPath, old: Any) -> None:
        props: Mapping[str, Any] = node.props
        extra = node.extra
        if node.embedded:
            for field in ("apiVersion", "kind"):
                if not value.get(field):
                    self.add(path + (field,), f"{field} is required in an embedded object",
                             "x-kubernetes-embedded-resource")
        for field in node.required:
            if field not in value:
                self.add(path + (field,), "required field is missing", "required")
        old_map = old if isinstance(old, dict) else None
        walk = self.walk
        for key, item in value.items():
            child_old = old_map.get(key, MISSING) if old_map is not None else MISSING
            sub = props.get(key)
            if sub is not None:
                walk(item, sub, path + (key,), child_old)
            elif isinstance(extra, dict):
                walk(item, extra, path + (key,), child_old)
            elif extra is True or node.preserve or not self.strict:
                continue
            else:
                hint = did_you_mean(key, props) if props else None
                message = f"unknown field {key!r}: the schema does not declare it, so the API " \
                    "server would drop it"
                if hint:
                    message += f" (did you mean {hint!r}?)"
                self.add(path + (key,), message, "unknown-field")

    def _array(self, value: list[Any], node: _Node, path: FieldPath, old: Any) -> None:
        items = node.items
        list_type = node.list_type
        keys = node.list_keys
        # Transition rules see old items only where they correlate: by key in map lists.
        old_by_key: dict[str, Any] = {}
        if list_type == "map" and keys and isinstance(old, list):
            for o in old:
                if isinstance(o, dict):
                    old_by_key[_key_of(o, keys)] = o
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            child_old = MISSING
            if list_type == "map" and keys and isinstance(item, dict):
                k = _key_of(item, keys)
                child_old = old_by_key.get(k, MISSING)
                if k in seen:
                    shown = ", ".join(f"{f}={_short(item.get(f))}" for f in keys)
                    self.add(path + (i,), f"duplicate entry with key {shown} (also item "
                             f"{seen[k]})", "x-kubernetes-list-map-keys")
                seen.setdefault(k, i)
            elif list_type == "set":
                k = json.dumps(item, sort_keys=True, check_circular=False)
                if k in seen:
                    self.add(path + (i,), f"duplicate value {_short(item)} in a set (also item "
                             f"{seen[k]})", "x-kubernetes-list-type")
                seen.setdefault(k, i)
            if isinstance(items, dict):
                self.walk(item, items, path + (i,), child_old)

    # ----------------------------------------------------------------------- CEL

    def _cel(self, value: Any, schema: Schema, path: FieldPath, old: Any) -> None:
        memo_key = ""  # made when a rule is first evaluated: a transition rule is skipped on create
        converted: dict[str, Any] = {}  # self / oldSelf as CEL values, converted on first need
        fast_data: dict[str, Any] = {}  # the same for cel-cpp, shared by the node's rules

        def activation(program: Any, optional: bool) -> dict[str, Any]:
            from dgdgen.crd import cel

            if "self" not in converted:
                converted["self"] = cel.to_cel(value, schema)
            out: dict[str, Any] = {"self": converted["self"]}
            if program.uses_old_self:
                if "old" not in converted and old is not MISSING:
                    converted["old"] = cel.to_cel(old, schema)
                if optional:
                    out["oldSelf"] = (cel.Optional() if old is MISSING
                                      else cel.Optional(converted["old"], True))
                else:
                    out["oldSelf"] = converted["old"]
            return out

        for rule in schema["x-kubernetes-validations"]:
            source = rule.get("rule", "")
            optional = bool(rule.get("optionalOldSelf"))
            # cel-cpp first: a rule it finds to hold is done; cel-python (imported only then)
            # decides everything else, so each violation is reported as before (celcpp.py).
            fast = celcpp.program(source, optional)
            program: Any = fast
            if fast is None:
                from dgdgen.crd import cel

                try:
                    program = cel.compile_rule(source)
                except cel.Unsupported as exc:
                    self.add(path, f"CEL rule not evaluated ({exc}): {source}", source,
                             "Unsupported")
                    continue
            if program.uses_old_self and not optional and old is MISSING:
                continue  # a transition rule: only checked on update, against the old value
            # The outcome is looked up before self is converted: converting a large object to
            # CEL values costs more than evaluating most rules (docs/performance.md). cel-cpp's
            # conversion of the node is made once for all its rules.
            if not memo_key:
                memo_key = _memo_key(value, old)
            key = (source, optional, memo_key)
            outcome = _RESULTS.get(key)
            if outcome is None and fast is not None and celcpp.holds(fast, value, schema, old,
                                                                    old is not MISSING,
                                                                    fast_data):
                outcome = ""
            if outcome is None:
                from dgdgen.crd import cel

                try:
                    program = cel.compile_rule(source)
                    result = cel.evaluate(program, activation(program, optional))
                    outcome = "" if cel.is_true(result) else "F"
                    if not cel.is_bool(result):
                        outcome = f"E the rule returned {type(result).__name__}, not a bool"
                except cel.EvalError as exc:
                    outcome = f"E{exc}"
                except cel.Unsupported as exc:
                    self.add(path, f"CEL rule not evaluated ({exc}): {source}", source,
                             "Unsupported")
                    continue
            if key not in _RESULTS:
                if len(_RESULTS) >= _RESULTS_MAX:
                    _RESULTS.clear()
                _RESULTS[key] = outcome
            if not outcome:
                continue
            if outcome.startswith("E"):
                self.add(path, f"CEL rule failed to evaluate ({outcome[1:]}): {source}", source)
                continue
            where = path + parse_field_path(rule.get("fieldPath"))
            self.add(where, self._message(rule, activation(program, optional)), source,
                     rule.get("reason"))

    @staticmethod
    def _message(rule: Mapping[str, Any], activation: dict[str, Any]) -> str:
        from dgdgen.crd import cel

        expr = rule.get("messageExpression")
        if expr:
            try:
                text = cel.evaluate(cel.compile_rule(expr), activation)
            except (cel.Unsupported, cel.EvalError):
                text = None
            if isinstance(text, str) and text.strip():
                return str(text)
        message = rule.get("message")
        if message:
            return str(message)
        return f"failed rule: {rule.get('rule', '')}"


# Rendered objects repeat the same sub-values (path matches, components) many times, and
# cel-python's interpreter costs about a millisecond per rule: outcomes are memoised by rule and
# by the canonical JSON of self and oldSelf.
_RESULTS: dict[tuple[str, bool, str], str] = {}
_RESULTS_MAX = 100_000


def _memo_key(value: Any, old: Any) -> str:
    """The JSON text of self (and oldSelf): equal texts are equal values, so equal outcomes.
    In the key order of the data (equal values in another order only miss the memo) and
    without the encoder's cycle check (the data is a tree): sorting the keys and checking for
    cycles made it 3.4 times as slow (docs/performance.md)."""
    new_text = _JSON_KEY(value)
    if old is MISSING:
        return new_text
    return new_text + "\x00" + _JSON_KEY(old)


_JSON_KEY = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _key_of(item: Mapping[str, Any], keys: Iterable[str]) -> str:
    return json.dumps([item.get(k) for k in keys], sort_keys=True, check_circular=False)


# --------------------------------------------------------------------------- compiled nodes


class _Node:
    """What the walk asks of one schema node, read from it once (a DGD's schema has about
    3,800 nodes; a walk visits each value's node, and asked the same dict the same questions
    for every file): whether a value may be null, the type, whether any value validation
    applies (most nodes have none), the object and array keywords, and whether it has CEL
    rules."""

    __slots__ = ("cel", "embedded", "extra", "int_or_string", "items", "list_keys",
                 "list_type", "nullable", "preserve", "props", "required", "schema", "type",
                 "value_checks")

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.nullable = bool(schema.get("nullable"))
        self.int_or_string = bool(schema.get("x-kubernetes-int-or-string"))
        self.type: str | None = schema.get("type")
        fmt = schema.get("format", "")
        self.value_checks = any(k in schema for k in _VALUE_KEYWORDS) or \
            fmt in _STRING_FORMATS or fmt in _INT_RANGES
        self.props: Mapping[str, Any] = schema.get("properties") or {}
        self.extra = schema.get("additionalProperties")
        self.embedded = bool(schema.get("x-kubernetes-embedded-resource", False))
        if self.embedded:  # an embedded object is a Kubernetes object: ObjectMeta included
            self.props = {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                **self.props,
                "metadata": with_metadata(self.props.get("metadata")),
            }
        self.required: tuple[str, ...] = tuple(schema.get("required") or ())
        self.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields", False))
        self.items = schema.get("items")
        self.list_type = schema.get("x-kubernetes-list-type", "atomic")
        self.list_keys: list[str] = schema.get("x-kubernetes-list-map-keys") or []
        self.cel = "x-kubernetes-validations" in schema


# Every keyword _value_validations reads (formats apart: only some are checked).
_VALUE_KEYWORDS = ("enum", "maxLength", "minLength", "pattern", "maximum", "minimum",
                   "multipleOf", "maxItems", "minItems", "maxProperties", "minProperties",
                   "allOf", "anyOf", "oneOf", "not")
_INT64_MIN, _INT64_MAX = _INT_RANGES["int64"]
_PLAIN = frozenset({str, dict, list, bool, float, int})
# the Python type that is exactly a JSON type's (a bool is an int, an int a number: _is_type)
_EXACT: dict[str, type] = {"object": dict, "array": list, "string": str, "boolean": bool,
                           "integer": int, "number": float}

# id(schema node) -> its _Node, which keeps the node (its id cannot be reused while it lives).
_NODES: dict[int, _Node] = {}


def _compile(schema: Schema) -> _Node:
    if len(_NODES) >= 100_000:
        _NODES.clear()
    node = _NODES[id(schema)] = _Node(schema)
    return node


# id(a kind's schema) -> (the schema, the same with ObjectMeta's fields under metadata)
_ROOTS: dict[int, tuple[Schema, Schema]] = {}


def _with_object_meta(schema: Schema) -> Schema:
    """``schema`` with ObjectMeta under ``metadata`` (:func:`with_metadata`), made once per
    schema rather than once per object (a new schema would be compiled again)."""
    hit = _ROOTS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    props = dict(schema.get("properties") or {})
    props["metadata"] = with_metadata(props.get("metadata"))
    wrapped = {**schema, "properties": props}
    if len(_ROOTS) >= 1024:
        _ROOTS.clear()
    _ROOTS[id(schema)] = (schema, wrapped)
    return wrapped


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    compiled = _PATTERNS.get(pattern)
    if compiled is None:
        compiled = _PATTERNS[pattern] = re.compile(pattern)
    return compiled
