"""What a DGD component's main container takes from its pod, as one typed, immutable value.

:class:`dgdgen.model.dgd.Dgd` keeps the plain document (the generator edits it in place); the checker
reads a component through :class:`ComponentPod` instead, parsed once from the document by
:meth:`dgdgen.model.dgd.Dgd.pod`: the environment in the order the kubelet applies it (DGD-wide
``spec.envs`` / ``spec.env``, v1alpha1 per-service ``envs``, the container's ``envFrom`` and
``env``), the volume mounts and the ConfigMap volumes they reach, and the component fields the
checker reads beside them (annotations, labels, ``runtimeVersionOverride``, ``multinode``).

The shapes were checked when the DGD was read (:func:`dgdgen.model.dgd.parse` raises
:class:`~dgdgen.errors.InputError` at the field's line); an entry that is still not of its shape
here (a DGD that dgdgen built or edited itself) is skipped, never a crash. Every entry keeps its
field path, so a finding can point at its line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from dgdgen.yamlio import FieldPath

_EMPTY: Mapping[str, Any] = {}  # an absent mapping, read only

# The kinds of a ``valueFrom`` reference (Kubernetes EnvVarSource); "" for none of them.
CONFIG_MAP_KEY_REF = "configMapKeyRef"
SECRET_KEY_REF = "secretKeyRef"
FIELD_REF = "fieldRef"
RESOURCE_FIELD_REF = "resourceFieldRef"


class ValueFrom(NamedTuple):
    """An env entry's ``valueFrom``. ``kind`` is the reference the kubelet follows first: a
    ConfigMap or Secret key naming its object (``name``, ``key``), else a pod field
    (``field``: the ``fieldPath``) or a container resource (``field``: the ``resource``)."""

    kind: str  # CONFIG_MAP_KEY_REF, SECRET_KEY_REF, FIELD_REF, RESOURCE_FIELD_REF or ""
    name: str  # the ConfigMap / Secret (key references only)
    key: str  # its key as written (``"None"`` when the key is missing)
    field: str | None  # fieldRef.fieldPath / resourceFieldRef.resource
    text: str  # the reference itself, ``valueFrom:<JSON>``: the value when it is not resolved


class EnvVar(NamedTuple):
    """One ``env`` / ``envs`` entry: a literal ``value`` (as text: ``true``/``false`` for a
    boolean, JSON for a mapping or list, ``""`` for null) or, without one, its ``valueFrom``."""

    name: str
    value: str | None  # None: no ``value`` key, the variable comes from ``ref``
    ref: ValueFrom | None
    path: FieldPath


class EnvFromSource(NamedTuple):
    """One ``envFrom`` entry that names a ConfigMap (``configMapRef``, read first) or a
    Secret (``secretRef``)."""

    kind: str  # "configMap" or "secret"
    name: str
    prefix: str
    optional: bool
    path: FieldPath


class ConfigMapSource(NamedTuple):
    """A ConfigMap a volume projects: its name and its ``items`` as path in the volume → key
    (None: no ``items``, every key is a file of its own name)."""

    name: str
    items: Mapping[str, str] | None


class VolumeMount(NamedTuple):
    """One ``volumeMounts`` entry of the main container."""

    volume: str | None  # the volume's name
    mount_path: str  # "" when unset
    sub_path: str | None  # None when unset or empty
    path: FieldPath


class ComponentPod(NamedTuple):
    """What the checker reads of one component besides :class:`dgdgen.model.dgd.Component`."""

    dgd_env: tuple[EnvVar, ...]  # spec.envs (v1alpha1) / spec.env (v1beta1)
    service_env: tuple[EnvVar, ...]  # v1alpha1 per-service ``envs``
    env_from: tuple[EnvFromSource, ...]  # the main container's, in order
    env: tuple[EnvVar, ...]  # the main container's
    mounts: tuple[VolumeMount, ...]  # the main container's
    # volume name → the ConfigMaps it projects, in order (a ``configMap`` volume, or a
    # ``projected`` one with ``configMap`` sources); volumes without one are left out.
    configmap_volumes: Mapping[str | None, tuple[ConfigMapSource, ...]]
    annotations: Mapping[str, str]  # v1alpha1 component + extraPodMetadata; v1beta1 pod template
    labels: Mapping[str, str]  # the pod's labels
    runtime_version_override: str | None
    multinode: bool  # a non-empty ``multinode`` mapping
    replicas_written: bool  # ``replicas`` is in the document (not the default)


def scalar_text(value: Any) -> str:
    """A YAML scalar as the checker compares it: ``true``/``false``, JSON for a mapping or list
    (keys sorted), ``null``, else its text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "null" if value is None else str(value)


def str_map(value: Any) -> dict[str, str]:
    """A mapping with its values as :func:`scalar_text` (anything else: empty)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): scalar_text(v) for k, v in value.items()}


def env_list(value: Any, path: FieldPath) -> tuple[EnvVar, ...]:
    """The entries of an environment list that are mappings with a string ``name``."""
    if not isinstance(value, list):
        return ()
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if "value" in item:
            v = item["value"]
            text = "" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))
            if isinstance(v, bool):
                text = "true" if v else "false"
            out.append(EnvVar(item["name"], text, None, path + (i,)))
        else:
            out.append(EnvVar(item["name"], None, _value_from(item.get("valueFrom")),
                              path + (i,)))
    return tuple(out)


def _value_from(ref: Any) -> ValueFrom:
    text = "valueFrom:" + json.dumps(ref, sort_keys=True)
    if not isinstance(ref, dict):
        return ValueFrom("", "", "", None, text)
    for kind in (CONFIG_MAP_KEY_REF, SECRET_KEY_REF):
        sel = ref.get(kind)
        if isinstance(sel, dict) and isinstance(sel.get("name"), str):
            return ValueFrom(kind, sel["name"], str(sel.get("key")), None, text)
    for kind, key in ((FIELD_REF, "fieldPath"), (RESOURCE_FIELD_REF, "resource")):
        sel = ref.get(kind)
        if isinstance(sel, dict):
            got = sel.get(key)
            return ValueFrom(kind, "", "", got if isinstance(got, str) else None, text)
    return ValueFrom("", "", "", None, text)


def _env_from(value: Any, path: FieldPath) -> tuple[EnvFromSource, ...]:
    if not isinstance(value, list):
        return ()
    out = []
    for i, src in enumerate(value):
        if not isinstance(src, dict):
            continue
        prefix = str(src.get("prefix") or "")
        for key, kind in (("configMapRef", "configMap"), ("secretRef", "secret")):
            sel = src.get(key)
            if isinstance(sel, dict) and isinstance(sel.get("name"), str):
                out.append(EnvFromSource(kind, sel["name"], prefix, sel.get("optional") is True,
                                         path + (i,)))
                break
    return tuple(out)


def _items(items: Any) -> dict[str, str] | None:
    """A ConfigMap volume source's ``items`` (key → path in the volume), as path → key; None when
    it has none (every key is a file of its own name)."""
    if not isinstance(items, list):
        return None
    return {str(i["path"]): str(i["key"]) for i in items
            if isinstance(i, dict) and "key" in i and "path" in i}


def _configmap_volumes(volumes: Any) -> dict[str | None, tuple[ConfigMapSource, ...]]:
    """Kubernetes: a projected volume merges its sources into one directory."""
    out: dict[str | None, tuple[ConfigMapSource, ...]] = {}
    for v in volumes or []:
        if not isinstance(v, dict):
            continue
        sources = [v["configMap"]] if isinstance(v.get("configMap"), dict) else []
        projected = v.get("projected")
        if isinstance(projected, dict) and isinstance(projected.get("sources"), list):
            sources += [src["configMap"] for src in projected["sources"]
                        if isinstance(src, dict) and isinstance(src.get("configMap"), dict)]
        if sources:
            out[v.get("name")] = tuple(ConfigMapSource(str(src.get("name")),
                                                       _items(src.get("items")))
                                       for src in sources)
    return out


def _mounts(value: Any, path: FieldPath) -> tuple[VolumeMount, ...]:
    out = []
    for i, m in enumerate(value or []):
        if isinstance(m, dict):
            mount_path, sub = m.get("mountPath"), m.get("subPath")
            out.append(VolumeMount(m.get("name"), str(mount_path) if mount_path else "",
                                   str(sub) if sub else None, path + (i,)))
    return tuple(out)


def component_pod(version: str, node: Mapping[str, Any], main: Mapping[str, Any] | None,
                  container_path: FieldPath | None, path: FieldPath,
                  dgd_env: tuple[EnvVar, ...]) -> ComponentPod:
    """The :class:`ComponentPod` of a component's mapping ``node`` at ``path`` (``main``: its
    main container, at ``container_path``; ``dgd_env``: the DGD's :func:`env_list`). A bulk
    check builds one per component of every DGD: absent fields cost one lookup each."""
    get = node.get
    service_env: tuple[EnvVar, ...] = ()
    if version == "v1alpha1":
        pod = get("extraPodSpec") or _EMPTY
        envs = get("envs")
        if envs:
            service_env = env_list(envs, path + ("envs",))
        meta = get("extraPodMetadata") or _EMPTY
        written = get("annotations")
        annotations = str_map(written) if written else {}
        written = meta.get("annotations")
        if written:
            annotations.update(str_map(written))
    else:
        template = get("podTemplate") or _EMPTY
        pod = template.get("spec") or _EMPTY
        meta = template.get("metadata") or _EMPTY
        written = meta.get("annotations")
        annotations = str_map(written) if written else {}
    written = meta.get("labels")
    labels = str_map(written) if written else {}
    env_from: tuple[EnvFromSource, ...] = ()
    env: tuple[EnvVar, ...] = ()
    mounts: tuple[VolumeMount, ...] = ()
    if container_path is not None and main:
        if written := main.get("envFrom"):
            env_from = _env_from(written, container_path + ("envFrom",))
        if written := main.get("env"):
            env = env_list(written, container_path + ("env",))
        if written := main.get("volumeMounts"):
            mounts = _mounts(written, container_path + ("volumeMounts",))
    volumes = pod.get("volumes")
    rvo = get("runtimeVersionOverride")
    return ComponentPod(
        dgd_env=dgd_env,
        service_env=service_env,
        env_from=env_from,
        env=env,
        mounts=mounts,
        configmap_volumes=_configmap_volumes(volumes) if volumes else {},
        annotations=annotations,
        labels=labels,
        runtime_version_override=str(rvo) if rvo is not None else None,
        multinode=bool(get("multinode")),
        replicas_written="replicas" in node,
    )
