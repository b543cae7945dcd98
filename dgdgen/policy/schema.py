"""Validate emitted policy objects strictly against the vendored upstream
``admissionregistration.k8s.io/v1`` schema (schemas/kubernetes/, see its SOURCE.md), plus the
API server's own checks that a JSON schema cannot express (k8s.io/kubernetes
pkg/apis/admissionregistration/validation): the allowed validationActions combinations,
qualified names of match conditions, CEL identifiers of variables, unique keys, and cel-go's
parser limit on expression size.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from dgdgen.resources import read_text

SCHEMA_FILE = ("kubernetes", "admissionregistration-v1.schema.json")
# cel-go's parser default (ParserExpressionSizeCodePointLimit), which the API server keeps.
MAX_EXPRESSION_CODE_POINTS = 100_000
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_CEL_IDENT = re.compile(r"^[_a-zA-Z][_a-zA-Z0-9]*$")


@functools.cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_text("schemas", *SCHEMA_FILE))
    return data


@functools.cache
def _validator(kind: str) -> Any:
    import jsonschema

    root = _schema()
    schema = dict(root["kinds"][kind])
    schema["$defs"] = root["$defs"]
    return jsonschema.Draft7Validator(schema)


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


def expressions(doc: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, CEL source) of every expression of a policy."""
    spec = doc.get("spec") or {}
    for i, c in enumerate(spec.get("matchConditions") or []):
        yield f"spec.matchConditions[{i}].expression", c["expression"]
    for i, v in enumerate(spec.get("variables") or []):
        yield f"spec.variables[{i}].expression", v["expression"]
    for i, v in enumerate(spec.get("validations") or []):
        yield f"spec.validations[{i}].expression", v["expression"]
        if "messageExpression" in v:
            yield f"spec.validations[{i}].messageExpression", v["messageExpression"]
    for i, a in enumerate(spec.get("auditAnnotations") or []):
        yield f"spec.auditAnnotations[{i}].valueExpression", a["valueExpression"]


def violations(doc: Mapping[str, Any]) -> list[str]:
    """Every problem of one emitted object ("path: message"); empty when valid."""
    kind = doc.get("kind")
    if doc.get("apiVersion") != "admissionregistration.k8s.io/v1" or kind not in _schema()["kinds"]:
        return [f"(document): not an admissionregistration.k8s.io/v1 policy object ({kind})"]
    out = [f"{_path(e.absolute_path)}: {e.message}"
           for e in sorted(_validator(kind).iter_errors(doc), key=lambda e: list(e.path))]
    spec = doc.get("spec") or {}
    if kind == "ValidatingAdmissionPolicyBinding":
        actions = spec.get("validationActions") or []
        if len(set(actions)) != len(actions):
            out.append("spec.validationActions: duplicate actions")
        if "Deny" in actions and "Warn" in actions:
            out.append("spec.validationActions: Deny and Warn cannot be combined")
        return out
    names = [c.get("name", "") for c in spec.get("matchConditions") or []]
    for i, name in enumerate(names):
        if not _QUALIFIED_NAME.match(name) or len(name) > 63:
            out.append(f"spec.matchConditions[{i}].name: not a qualified name: {name!r}")
    if len(set(names)) != len(names):
        out.append("spec.matchConditions: duplicate names")
    seen: set[str] = set()
    for i, v in enumerate(spec.get("variables") or []):
        if not _CEL_IDENT.match(v.get("name", "")) or v["name"] in seen:
            out.append(f"spec.variables[{i}].name: not a unique CEL identifier: {v.get('name')!r}")
        seen.add(v.get("name", ""))
    keys = [a.get("key", "") for a in spec.get("auditAnnotations") or []]
    if len(set(keys)) != len(keys):
        out.append("spec.auditAnnotations: duplicate keys")
    for i, key in enumerate(keys):
        if not _QUALIFIED_NAME.match(key) or len(key) > 63:
            out.append(f"spec.auditAnnotations[{i}].key: not a qualified name part: {key!r}")
    for path, source in expressions(doc):
        if len(source) > MAX_EXPRESSION_CODE_POINTS:
            out.append(f"{path}: {len(source)} code points, over cel-go's parser limit of "
                       f"{MAX_EXPRESSION_CODE_POINTS}")
    return out
