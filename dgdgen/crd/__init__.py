"""Validate manifests as the Kubernetes API server would: upstream CRD schemas, strictly, with CEL.

* Custom resources (DynamoGraphDeployment, HTTPRoute, InferencePool, Argo Rollouts analysis,
  Argo CD, Argo Workflows ``WorkflowTemplate``) are checked against the vendored upstream CRDs
  (``schemas/crds/``): defaults applied, every OpenAPI value validation, fields the API server
  would prune reported as errors, and the ``x-kubernetes-validations`` CEL rules evaluated with
  cel-python (:mod:`dgdgen.crd.cel`); a rule that cel-cpp finds to hold is not evaluated again
  (:mod:`dgdgen.crd.celcpp`).
* Core kinds (Service, Deployment, ConfigMap, RBAC, Job ...) are checked against the strict
  Kubernetes JSON Schemas vendored under ``schemas/kubernetes/`` (:mod:`dgdgen.crd.core`;
  jsonschema-rs says "valid", the ``jsonschema`` package words the errors).
* Fields proposed upstream but in no released CRD are rejected unless an overlay that declares
  them is asked for (:mod:`dgdgen.crd.overlays`).

Everything is compiled once per process and cached.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from dgdgen.crd import catalog, core
from dgdgen.crd import overlays as overlay_schemas
from dgdgen.crd.structural import MISSING, Walker, defaulted, seed_defaults
from dgdgen.crd.violation import Violation
from dgdgen.yamlio import Document, content_key

__all__ = [
    "MAX_OBJECT_BYTES",
    "TOO_LARGE",
    "UNKNOWN_KIND",
    "Violation",
    "kinds",
    "known",
    "unsupported_rules",
    "validate",
    "validate_documents",
]

# The ``rule`` of the one violation returned for an object whose kind has no schema here.
UNKNOWN_KIND = "unknown-kind"
# The ``rule`` of the one violation of an object too large to store.
TOO_LARGE = "object-size"
# The largest object Kubernetes stores: etcd refuses a request over its --max-request-bytes,
# 1.5 MiB by default, and the API server stores a custom resource as its JSON. A larger object
# can never be applied; it is refused before anything else (and before every state of a
# render copies and validates it).
MAX_OBJECT_BYTES = 3 * 512 * 1024


def _too_large(obj: Any) -> Violation | None:
    import json

    size = len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False, default=str)
               .encode("utf-8", "surrogatepass"))
    if size <= MAX_OBJECT_BYTES:
        return None
    return Violation((), f"the object is {size:,} bytes as JSON, over the {MAX_OBJECT_BYTES:,} "
                     "bytes (1.5 MiB) Kubernetes stores (etcd's default request limit)", TOO_LARGE)


@functools.cache
def _schema(api_version: str, kind: str, overlay_names: tuple[str, ...]) -> dict[str, Any] | None:
    entry = catalog.load(api_version, kind)
    if entry is None:
        return None
    schema: dict[str, Any] = entry["schema"]
    if overlay_names:
        # A merged schema is a new object: its defaulting plan is built by walking it.
        schema = overlay_schemas.apply(schema, api_version, kind, overlay_names)
    elif "defaultPaths" in entry:
        seed_defaults(schema, entry["defaultPaths"])
    return schema


def known(api_version: str, kind: str) -> bool:
    """Whether objects of this apiVersion/kind can be validated (vendored CRD or core kind)."""
    return catalog.load(api_version, kind) is not None or core.known(api_version, kind)


def kinds() -> list[tuple[str, str]]:
    """The (apiVersion, kind) pairs validated against vendored CRDs."""
    return catalog.kinds()


def validate(
    obj: Any,
    *,
    overlays: Sequence[str] = (),
    old: dict[str, Any] | None = None,
    reuse: bool = False,
) -> list[Violation]:
    """Every reason the API server would reject (or silently change) ``obj``; [] when valid.

    ``overlays`` names schema overlays to merge (e.g. ``"dgd-proposed-rollout-fields"``).
    ``old`` is the object being replaced: CEL transition rules (those using ``oldSelf``) are
    evaluated only when it is given, as on an update. An object whose kind has no schema gives
    one violation with ``rule == UNKNOWN_KIND``. ``obj`` is not modified. With ``reuse``, the
    outcome for an identical object validated before (with ``reuse``) is returned again: for
    callers that validate many equal objects, such as a render's states.
    """
    if not isinstance(obj, dict):
        return [Violation((), f"a Kubernetes object must be a mapping, got {type(obj).__name__}",
                          "type")]
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    missing = [
        Violation((field,), f"{field} is required and must be a string", "required")
        for field, value in (("apiVersion", api_version), ("kind", kind))
        if not isinstance(value, str) or not value
    ]
    if missing:
        return missing
    assert isinstance(api_version, str) and isinstance(kind, str)
    names = tuple(overlays)
    for name in names:
        overlay_schemas.load(name)  # an unknown overlay name is a usage error, even for core kinds
    schema = _schema(api_version, kind, names)
    if schema is None:
        found = core.validate(obj)
        if found is not None:
            return found
        return [Violation((), _unknown_message(api_version, kind), UNKNOWN_KIND)]
    key = content_key(obj) if reuse and old is None else None
    if key is not None:
        known_outcome = _VALIDATED.get((key, names))
        if known_outcome is not None:
            return list(known_outcome)
    large = _too_large(obj)
    if large is not None:
        return [large]
    new = defaulted(obj, schema)
    previous: Any = MISSING
    if old is not None:
        previous = defaulted(old, schema)
    walker = Walker()
    walker.root(new, schema, previous)
    violations = _dedupe(walker.violations)
    if key is not None:
        if len(_VALIDATED) >= _VALIDATED_MAX:
            _VALIDATED.clear()
        _VALIDATED[(key, names)] = tuple(violations)
    return violations


# A render validates every state, and most objects are identical in several states. Validation is a function of the object's content
# and the overlays only (on create, without ``old``), so the outcome is kept by content
# (:func:`dgdgen.yamlio.content_key`: equal exactly when the plain data trees are identical).
_VALIDATED: dict[tuple[Hashable, tuple[str, ...]], tuple[Violation, ...]] = {}
_VALIDATED_MAX = 4096


def _unknown_message(api_version: str, kind: str) -> str:
    hint = ""
    served = [av for av, k in catalog.kinds() if k == kind]
    if served:
        hint = f" (vendored versions of {kind}: {', '.join(served)})"
    return f"no schema for apiVersion {api_version!r} kind {kind!r}; not validated{hint}"


def _dedupe(violations: Iterable[Violation]) -> list[Violation]:
    seen: set[Violation] = set()
    out = []
    for v in violations:
        if v not in seen:
            seen.add(v)
            out.append(v)
    return out


def validate_documents(
    docs: Sequence[Document],
    *,
    overlays: Sequence[str] = (),
    skip_unknown_kinds: bool = False,
) -> list[tuple[Document, Violation]]:
    """:func:`validate` for every document, in order; pair each violation with its document
    (``doc.location(v.path)`` gives file:line:column). Unknown kinds are left out when
    ``skip_unknown_kinds``, otherwise reported with ``rule == UNKNOWN_KIND``."""
    out: list[tuple[Document, Violation]] = []
    for doc in docs:
        for v in validate(doc.data, overlays=overlays):
            if skip_unknown_kinds and v.rule == UNKNOWN_KIND:
                continue
            out.append((doc, v))
    return out


def unsupported_rules(
    api_version: str, kind: str, *, overlays: Sequence[str] = ()
) -> list[tuple[str, str, str]]:
    """CEL rules (and messageExpressions) of a kind that dgdgen cannot evaluate:
    ``(schema location, expression, why)``. Tests require this to be empty for every kind
    dgdgen renders; :func:`validate` reports such a rule as a violation wherever it applies."""
    from dgdgen.crd import cel

    schema = _schema(api_version, kind, tuple(overlays))
    if schema is None:
        raise KeyError(f"{api_version} {kind} is not a vendored CRD")
    out: list[tuple[str, str, str]] = []
    for where, rule in _rules(schema, ""):
        for expr in (rule.get("rule"), rule.get("messageExpression")):
            if not expr:
                continue
            try:
                cel.compile_rule(expr)
            except cel.Unsupported as exc:
                out.append((where or ".", expr, str(exc)))
    return out


def _rules(schema: Any, where: str) -> Iterable[tuple[str, dict[str, Any]]]:
    if not isinstance(schema, dict):
        return
    for rule in schema.get("x-kubernetes-validations") or ():
        yield where, rule
    for name, sub in (schema.get("properties") or {}).items():
        yield from _rules(sub, f"{where}.{name}")
    for key, suffix in (("items", "[*]"), ("additionalProperties", "[*]")):
        yield from _rules(schema.get(key), where + suffix)
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(key) or ():
            yield from _rules(sub, where)

