"""A component's environment and mounted files, resolved against the checked files' objects.

Reads the typed pod view of the DGD model (:class:`dgdgen.model.dgdpod.ComponentPod`), never the
document: the effective environment in the kubelet's order (DGD-wide, per-service, ``envFrom``,
``env``), each ``valueFrom`` / ``envFrom`` reference resolved against the ConfigMaps and Secrets
(key names only) of the checked files (:class:`Objects`), and the files the main container reads
from mounted ConfigMap volumes (:func:`mounted_file`). A value from an object that is not among
the checked files is recorded as :class:`~dgdgen.check.cmdline.Unresolved`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dgdgen.check.cmdline import Setting, Unresolved
from dgdgen.model.dgdpod import (
    CONFIG_MAP_KEY_REF,
    SECRET_KEY_REF,
    ComponentPod,
    ConfigMapSource,
    EnvFromSource,
    EnvVar,
    ValueFrom,
)
from dgdgen.yamlio import FieldPath


@dataclass(frozen=True)
class Objects:
    """The ConfigMaps (name → data) and Secrets (name → key names only: a Secret's values are
    never read) of the checked files, which env references and mounted files resolve against."""

    configmaps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    secrets: Mapping[str, frozenset[str]] = field(default_factory=dict)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def configmaps_of(documents: Iterable[Any]) -> dict[str, dict[str, str]]:
    """ConfigMap name → data, from the plain documents of one file."""
    out: dict[str, dict[str, str]] = {}
    for d in documents:
        if isinstance(d, dict) and d.get("kind") == "ConfigMap" and d.get("apiVersion") == "v1":
            meta = d.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            data = d.get("data")
            if isinstance(name, str) and isinstance(data, dict):
                out[name] = {str(k): str(v) for k, v in data.items()}
    return out


def secrets_of(documents: Iterable[Any]) -> dict[str, frozenset[str]]:
    """Secret name → its key names (``data`` and ``stringData``), never the values."""
    out: dict[str, frozenset[str]] = {}
    for d in documents:
        if isinstance(d, dict) and d.get("kind") == "Secret" and d.get("apiVersion") == "v1":
            meta = d.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if isinstance(name, str):
                keys = {str(k) for part in ("data", "stringData")
                        if isinstance(d.get(part), dict) for k in d[part]}
                out[name] = frozenset(keys)
    return out


# --------------------------------------------------------------------------- environment


def _env_list(entries: tuple[EnvVar, ...], source: str, objects: Objects,
              unresolved: list[Unresolved]) -> Iterator[tuple[str, Setting]]:
    for var in entries:
        if var.value is not None:
            text = var.value
        else:
            assert var.ref is not None
            text = value_from(var.name, var.ref, var.path, objects, unresolved)
        yield var.name, Setting(text, var.path, source, var.name)


def value_from(name: str, ref: ValueFrom, path: FieldPath, objects: Objects,
               unresolved: list[Unresolved]) -> str:
    """The value of a ``valueFrom`` variable: a ConfigMap key's value when the ConfigMap is among
    the checked files; a Secret key only by name and presence (its value is never read); else
    the reference itself, recorded as unresolved."""
    if ref.kind == CONFIG_MAP_KEY_REF:
        data = objects.configmaps.get(ref.name)
        if data is not None:
            return data.get(ref.key, f"configMapKeyRef:{ref.name}/{ref.key} (no such key)")
        if name.startswith("DYN_"):
            unresolved.append(Unresolved(f"env {name}", "ConfigMap", ref.name, path, None))
    elif ref.kind == SECRET_KEY_REF:
        keys = objects.secrets.get(ref.name)
        if keys is not None:
            there = "present" if ref.key in keys else "absent"
            return f"secretKeyRef:{ref.name}/{ref.key} ({there})"
        if name.startswith("DYN_"):
            # Only the variables Dynamo reads as flags (Dynamo's ``add_argument``); a token is not.
            unresolved.append(Unresolved(f"env {name}", "Secret", ref.name, path, None))
    return ref.text


def _env_from(sources: tuple[EnvFromSource, ...], objects: Objects,
              unresolved: list[Unresolved]) -> Iterator[tuple[str, Setting]]:
    """The variables ``envFrom`` brings in: each key of a ConfigMap of the checked files (with
    its prefix), a Secret's keys by presence only; an object not in the files is unresolved."""
    for src in sources:
        prefix = src.prefix
        if src.kind == "configMap":
            data = objects.configmaps.get(src.name)
            if data is None:
                unresolved.append(Unresolved("envFrom", "ConfigMap", src.name, src.path, None))
                continue
            for key, value in data.items():
                yield prefix + key, Setting(value, src.path, "env", prefix + key)
        else:
            keys = objects.secrets.get(src.name)
            if keys is None:
                # A Secret brought in whole is credentials (the hf-token Secret of every
                # upstream example, like v1alpha1 `envFromSecret`): not reported; a `DYN_*`
                # variable taken from a Secret key is (`value_from`).
                continue
            for key in sorted(keys):
                yield prefix + key, Setting(f"secret:{src.name} (present)", src.path, "env",
                                            prefix + key)


def component_env(pod: ComponentPod, objects: Objects,
                  unresolved: list[Unresolved]) -> dict[str, Setting]:
    """The main container's effective environment, name → setting (a later source wins)."""
    env: dict[str, Setting] = {}
    if pod.dgd_env:
        env.update(_env_list(pod.dgd_env, "dgd-env", objects, unresolved))
    if pod.service_env:
        env.update(_env_list(pod.service_env, "env", objects, unresolved))
    # envFrom first: an explicit `env` entry wins over it, as in the kubelet.
    if pod.env_from:
        env.update(_env_from(pod.env_from, objects, unresolved))
    if pod.env:
        env.update(_env_list(pod.env, "env", objects, unresolved))
    return env


# --------------------------------------------------------------------------- mounted files


class _Mount(NamedTuple):
    """A ConfigMap-backed volume mounted into the main container."""

    path: str  # mountPath
    sub: str | None  # subPath
    sources: tuple[ConfigMapSource, ...]  # the ConfigMaps it projects, in order


def _mounted_configmaps(pod: ComponentPod) -> list[_Mount]:
    """The main container's mounts of ConfigMap volumes, each with the sources it projects."""
    volumes = pod.configmap_volumes
    return [_Mount(m.mount_path, m.sub_path, volumes[m.volume]) for m in pod.mounts
            if m.volume in volumes and m.mount_path]


def _volume_path(mount: _Mount, path: str) -> str | None:
    """Where ``path`` lies inside the volume of ``mount`` (through its subPath), or None when
    it lies outside the mount."""
    mount_dir = mount.path.rstrip("/")
    if path in (mount.path, mount_dir):
        rel = ""
    elif path.startswith(mount_dir + "/"):
        rel = path[len(mount_dir) + 1:]
    else:
        return None
    if mount.sub:
        return mount.sub.strip("/") + (f"/{rel}" if rel else "")
    return rel or None


class MountedFile(NamedTuple):
    """A file the worker reads from a mounted ConfigMap: its ConfigMap and key, and its text when
    the ConfigMap is among the checked files (``seen``) and holds the key."""

    configmap: str
    key: str | None
    seen: bool
    text: str | None


def mounted_file(pod: ComponentPod, path: str,
                 configmaps: Mapping[str, Mapping[str, str]]) -> MountedFile | None:
    """The file at ``path`` when it lies in a ConfigMap volume of the main container, or None
    (a file of the image). Each source the volume projects is tried in order: the first that holds
    the file gives its text; a source whose ConfigMap is not among the checked files may be the
    one that holds it, so the file is then not seen."""
    for mount in _mounted_configmaps(pod):
        rel = _volume_path(mount, path)
        if rel is None:
            continue
        first: tuple[str, str | None] | None = None
        for cm_name, items in mount.sources:
            key = rel if items is None else items.get(rel)
            first = first or (cm_name, key)
            if key is None:
                continue  # this source does not project the path
            data = configmaps.get(cm_name)
            if data is None:
                return MountedFile(cm_name, key, False, None)
            if key in data:
                return MountedFile(cm_name, key, True, data[key])
        assert first is not None
        return MountedFile(first[0], first[1], True, None)
    return None
