"""Core Kubernetes kinds (Service, Deployment, ConfigMap, RBAC, PodDisruptionBudget, Job ...)
against the strict Kubernetes JSON Schemas vendored under ``schemas/kubernetes/`` (verbatim copies
from the ``kubernetes-validate`` wheel; source, sha256 and licence in
``schemas/kubernetes/PROVENANCE.md``). Unknown fields are errors. They ship with dgdgen, so a
plain install validates every kind it renders; a core kind that is not vendored is "unknown".

kubernetes-validate's own ``validate()`` stops at the first error and re-reads the schema files on
every call; here each validator is built once and reports every error.

An object is first checked by jsonschema-rs (the Rust validator) against a compact bundle of the
same schema (``schemas/kubernetes/compiled/``: the kind's schema with only the definitions it
reaches, descriptions removed; derived by :func:`compile_sources`, a test keeps it fresh): when
it finds the object valid, that is the answer. Otherwise — or without jsonschema-rs — the Python
``jsonschema`` validator, imported only then, finds and words every error as before. Importing
and preparing the Python validator cost about 0.15 s, a third of ``dgdgen validate``
(docs/performance.md); ``tests/crd/test_core_schemas.py`` shows the two agree on valid.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from dgdgen import resources
from dgdgen.crd.violation import Violation

# The vendored schema set: schemas/kubernetes/<SCHEMA_SET>/.
KUBERNETES_VERSION = "1.37.0"
SCHEMA_SET = f"v{KUBERNETES_VERSION}-local-strict"
# The bundles the fast path validates against: schemas/kubernetes/<COMPILED_DIR>/.
COMPILED_DIR = "compiled"
_DEFINITIONS = "_definitions.json"
# Kind files refer to /api/_definitions.json#/$defs/..., definitions to each other as #/$defs/...
_REF = re.compile(r"^(?:(?:https://kubernetes\.io)?/api/_definitions\.json)?(#.*)$")


def kubernetes_version() -> str:
    """The Kubernetes version of the vendored core schemas."""
    return KUBERNETES_VERSION


def schema_file(api_version: str, kind: str) -> str:
    """kubernetes-validate's file naming: apps/v1 Deployment -> deployment-apps-v1.json,
    v1 Service -> service-v1.json, rbac.authorization.k8s.io/v1 Role -> role-rbac-v1.json."""
    mangled = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{mangled}.json"


def _schema_dir() -> Any:
    return resources.data("schemas", "kubernetes", SCHEMA_SET)


@functools.cache
def _definitions() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (_schema_dir() / "_definitions.json").read_text(encoding="utf-8"))
    return loaded


@functools.cache
def _registry() -> Any:
    from referencing import Registry, Resource

    registry: Registry[Any] = Resource.from_contents(_definitions()) @ Registry()
    return registry


def _declares(schema: dict[str, Any], kind: str) -> bool:
    # Only objects whose schema declares apiVersion and kind count (kubernetes-validate also has
    # files for sub-objects such as ServiceSpec).
    return kind in (((schema.get("properties") or {}).get("kind") or {}).get("enum") or [])


# What a Kubernetes kind and apiVersion can be spelt as (a kind is a Go type name; a group is a
# DNS subdomain, a version `v` and a number); only such a pair is looked for among the schema
# files: any other text of a document (a kind of 300 characters, `../x`) is an unknown kind,
# never a file name (one too long for the file system was an error naming a schema file).
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
_API_VERSION = re.compile(r"(?:[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?/)?v[0-9][a-z0-9]{0,15}")


@functools.cache
def _schema(api_version: str, kind: str) -> dict[str, Any] | None:
    if not _KIND.fullmatch(kind) or not _API_VERSION.fullmatch(api_version):
        return None
    path = _schema_dir() / schema_file(api_version, kind)
    if not path.is_file():
        return None
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema if _declares(schema, kind) else None


@functools.cache
def _validator(api_version: str, kind: str) -> Any:
    schema = _schema(api_version, kind)
    if schema is None:
        return None
    import jsonschema

    return jsonschema.Draft202012Validator(schema, registry=_registry())


@functools.cache
def _fast_validator(api_version: str, kind: str) -> Any:
    """jsonschema-rs over the kind's compiled bundle; None without either."""
    bundle = resources.data("schemas", "kubernetes", COMPILED_DIR, schema_file(api_version, kind))
    if _schema(api_version, kind) is None or not bundle.is_file():
        return None
    try:
        import jsonschema_rs
    except ImportError:
        return None
    return jsonschema_rs.Draft202012Validator(json.loads(bundle.read_text(encoding="utf-8")))


def compile_sources(kubernetes_root: Path) -> dict[str, str]:
    """The compiled bundles, ``{file name: JSON text}``, from ``schemas/kubernetes/``: for each
    vendored kind, its schema with references made local and, under ``$defs``, exactly the
    definitions it reaches; descriptions and titles dropped (as for the CRDs,
    :func:`dgdgen.crd.catalog.compile_sources`). ``index.json`` records the sha256 of both
    sources of every bundle."""
    from dgdgen.crd.catalog import _strip

    set_dir = kubernetes_root / SCHEMA_SET
    raw_definitions = (set_dir / _DEFINITIONS).read_bytes()
    definitions = json.loads(raw_definitions)["$defs"]
    files: dict[str, str] = {}
    index: dict[str, Any] = {}
    for path in sorted(set_dir.glob("*.json")):
        if path.name == _DEFINITIONS:
            continue
        raw = path.read_bytes()
        schema = json.loads(raw)
        kinds = ((schema.get("properties") or {}).get("kind") or {}).get("enum") or []
        if not any(_declares(schema, k) for k in kinds):
            continue
        reached: set[str] = set()
        todo = _refs(schema)
        while todo:
            name = todo.pop()
            if name not in reached:
                reached.add(name)
                todo |= _refs(definitions[name]) - reached
        bundle = _local(_strip(schema))
        bundle["$defs"] = {n: _local(_strip(definitions[n])) for n in sorted(reached)}
        files[path.name] = json.dumps(bundle, sort_keys=True, separators=(",", ":")) + "\n"
        index[path.name] = {"sha256": hashlib.sha256(raw).hexdigest(),
                            "definitionsSha256": hashlib.sha256(raw_definitions).hexdigest()}
    files["index.json"] = json.dumps(index, sort_keys=True, indent=1) + "\n"
    return files


def _refs(node: Any) -> set[str]:
    """Names of the definitions ``node`` refers to directly."""
    out: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            m = _REF.match(ref)
            if m is None or not m.group(1).startswith("#/$defs/"):
                raise ValueError(f"unexpected $ref {ref!r}")
            out.add(m.group(1)[len("#/$defs/"):])
        for value in node.values():
            out |= _refs(value)
    elif isinstance(node, list):
        for item in node:
            out |= _refs(item)
    return out


def _local(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (_REF.sub(r"\1", v) if k == "$ref" and isinstance(v, str) else _local(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_local(item) for item in node]
    return node


def known(api_version: str, kind: str) -> bool:
    return _schema(api_version, kind) is not None


def validate(obj: dict[str, Any]) -> list[Violation] | None:
    """Every schema violation of a core object; None if the kind is not a bundled core kind."""
    api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    if _schema(api_version, kind) is None:
        return None
    out: list[Violation] = []
    fast = _fast_validator(api_version, kind)
    if fast is None or not fast.is_valid(obj):
        out = _errors(_validator(api_version, kind), obj)
    if not obj.get("metadata"):
        out.append(Violation(("metadata",), "metadata is required (name or generateName)",
                             "required"))
    return sorted(set(out))


def _errors(validator: Any, obj: dict[str, Any]) -> list[Violation]:
    out: list[Violation] = []
    for err in validator.iter_errors(obj):
        path = tuple(err.absolute_path)
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            declared = err.schema.get("properties") or {}
            for key in sorted(k for k in err.instance if k not in declared):
                out.append(
                    Violation(path + (key,), f"unknown field {key!r}: the schema does not declare "
                              "it, so the API server would reject or drop it", "unknown-field")
                )
            continue
        out.append(Violation(path, str(err.message), str(err.validator)))
    return out
