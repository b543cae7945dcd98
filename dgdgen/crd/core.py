"""Core Kubernetes kinds (Service, Deployment, ConfigMap, Job ...) against the OpenAPI schemas
bundled with the ``kubernetes-validate`` package, in its strict variant (unknown fields are
errors). The package is optional and imported lazily; without it core kinds are "unknown".

kubernetes-validate's own ``validate()`` stops at the first error and re-reads the schema files on
every call; here each validator is built once and reports every error.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from dgdgen.crd.violation import Violation


@functools.lru_cache(maxsize=1)
def kubernetes_version() -> str | None:
    """The newest Kubernetes version kubernetes-validate has schemas for, or None if absent."""
    try:
        from kubernetes_validate import utils  # type: ignore[import-untyped]
    except ImportError:
        return None
    return str(utils.latest_version())


def _schema_file(api_version: str, kind: str) -> str:
    # kubernetes-validate's naming: apps/v1 Deployment -> deployment-apps-v1.json, v1 -> -v1.
    mangled = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{mangled}.json"


def _schema_dir() -> Any:
    from importlib import resources

    version = kubernetes_version()
    return resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{version}-local-strict"


# A few of the bundled schemas are for sub-objects (ServiceSpec ...), not API kinds; only objects
# whose schema declares apiVersion and kind count.
@functools.cache
def _validator(api_version: str, kind: str) -> Any:
    if kubernetes_version() is None or "/" in kind:
        return None
    path = _schema_dir() / _schema_file(api_version, kind)
    if not path.is_file():
        return None
    schema = json.loads(path.read_text(encoding="utf-8"))
    kinds = ((schema.get("properties") or {}).get("kind") or {}).get("enum") or []
    if kind not in kinds:
        return None
    import jsonschema
    from referencing import Registry, Resource

    definitions = json.loads((_schema_dir() / "_definitions.json").read_text(encoding="utf-8"))
    registry: Registry[Any] = Resource.from_contents(definitions) @ Registry()
    return jsonschema.Draft202012Validator(schema, registry=registry)


def known(api_version: str, kind: str) -> bool:
    return _validator(api_version, kind) is not None


def validate(obj: dict[str, Any]) -> list[Violation] | None:
    """Every schema violation of a core object; None if the kind is not a bundled core kind."""
    validator = _validator(str(obj.get("apiVersion")), str(obj.get("kind")))
    if validator is None:
        return None
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
    if not obj.get("metadata"):
        out.append(Violation(("metadata",), "metadata is required (name or generateName)",
                             "required"))
    return sorted(set(out))
