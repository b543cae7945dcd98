"""Overlay schemas: fields that are proposed upstream but in no released CRD, merged on request.

An overlay (``schemas/overlays/NAME.yaml``) lists patches; each names an apiVersion/kind, a place
in the schema (``at: spec.components.*``, ``*`` meaning map values or list items), the fields to
declare there (with the operator capability each needs) and extra CEL rules. Merging copies only
the schema nodes along the patched path, so the cached upstream schema is never modified.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from dgdgen import resources
from dgdgen.errors import InputError

OVERLAY_DIR = "overlays"


@dataclass(frozen=True)
class Field:
    name: str
    capability: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Patch:
    api_version: str
    kind: str
    at: tuple[str, ...]
    fields: tuple[Field, ...]
    rules: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Overlay:
    name: str
    description: str
    reference: str
    patches: tuple[Patch, ...]

    def capabilities(self) -> dict[str, str]:
        """Field name -> the operator capability it requires."""
        return {f.name: f.capability for p in self.patches for f in p.fields}


def available() -> list[str]:
    folder = resources.data("schemas", OVERLAY_DIR)
    if not folder.is_dir():
        return []
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


@functools.cache
def load(name: str) -> Overlay:
    if name not in available():
        known = ", ".join(available()) or "none"
        raise InputError(f"unknown schema overlay {name!r} (available: {known})")
    import yaml

    # Shipped data, read by libyaml when present (PyYAML's pure-Python reader cost 10 ms of
    # every `plan`); the same resolver as yaml.safe_load either way.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load(resources.read_text("schemas", OVERLAY_DIR, f"{name}.yaml"), Loader=loader)
    patches = []
    for p in raw["patches"]:
        fields = tuple(
            Field(fname, f["capability"], " ".join(f["description"].split()), f["schema"])
            for fname, f in p["fields"].items()
        )
        patches.append(
            Patch(p["apiVersion"], p["kind"], tuple(p["at"].split(".")), fields,
                  tuple(p.get("rules") or ()))
        )
    return Overlay(raw["name"], raw["description"], raw["reference"], tuple(patches))


def apply(schema: dict[str, Any], api_version: str, kind: str, names: tuple[str, ...]) -> dict[str, Any]:
    """The schema with every matching patch of the named overlays merged in."""
    for name in names:
        for patch in load(name).patches:
            if (patch.api_version, patch.kind) == (api_version, kind):
                schema = _merge(schema, patch, name)
    return schema


def _merge(schema: dict[str, Any], patch: Patch, overlay: str) -> dict[str, Any]:
    def at(node: dict[str, Any], rest: tuple[str, ...]) -> dict[str, Any]:
        if not rest:
            props = dict(node.get("properties") or {})
            for field in patch.fields:
                if field.name in props:
                    # Upstream now declares it: the overlay is stale and must not override.
                    raise InputError(
                        f"overlay {overlay!r}: {patch.kind} {patch.api_version} already declares "
                        f"{'.'.join(patch.at)}.{field.name}; the overlay is out of date"
                    )
                props[field.name] = {**field.schema, "description": field.description}
            rules = list(node.get("x-kubernetes-validations") or ()) + list(patch.rules)
            return {**node, "properties": props, "x-kubernetes-validations": rules}
        head, tail = rest[0], rest[1:]
        if head == "*":
            if isinstance(node.get("additionalProperties"), dict):
                return {**node, "additionalProperties": at(node["additionalProperties"], tail)}
            if isinstance(node.get("items"), dict):
                return {**node, "items": at(node["items"], tail)}
        elif head in (node.get("properties") or {}):
            return {**node, "properties": {**node["properties"], head: at(node["properties"][head], tail)}}
        raise InputError(
            f"overlay {overlay!r}: {patch.kind} {patch.api_version} has no schema at "
            f"{'.'.join(patch.at)}"
        )

    return at(schema, patch.at)
