"""The one model of a DynamoGraphDeployment that the generator and the checker share.

A DGD comes in two shapes (the upstream CRD, schemas/crds/dynamo):

* ``nvidia.com/v1alpha1``: ``spec.services`` is a map of name → service; the main container is
  ``extraPodSpec.mainContainer``; GPUs are ``resources.limits.gpu``; the role is
  ``componentType`` (+ ``subComponentType`` for prefill/decode workers).
* ``nvidia.com/v1beta1`` (storage version): ``spec.components`` is a list keyed by ``name``; the
  main container is the container named ``main`` in ``podTemplate.spec.containers``; GPUs are the
  container's ``nvidia.com/gpu`` limit; the role is ``type``.

:class:`Dgd` wraps the plain document (never copied into a narrower model, so fields dgdgen does
not model survive every edit) and gives a uniform :class:`Component` view and edit helpers.

Why one module: both shapes are read by one shape checker into one component view, and the
raw accessors the generator edits through must agree with that reading path for path; the typed
pod view the checker reads lives apart (:mod:`dgdgen.model.dgdpod`).
"""

from __future__ import annotations

import copy
import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dgdgen.errors import InputError, Location
from dgdgen.model.dgdpod import ComponentPod, EnvVar, component_pod, env_list
from dgdgen.yamlio import Document, FieldPath

GROUP = "nvidia.com"
KIND = "DynamoGraphDeployment"
VERSIONS = ("v1alpha1", "v1beta1")

# Rolling-update annotations of the Deployment-backed managed rollout (ai-dynamo/dynamo #6110;
# docs/fern/pages/developer-guide/knowledge-base/kubernetes/kubernetes-operator/rolling-update.md).
ANN_MAX_SURGE = "nvidia.com/deployment-rolling-update-max-surge"
ANN_MAX_UNAVAILABLE = "nvidia.com/deployment-rolling-update-max-unavailable"
ANN_STRATEGY = "nvidia.com/deployment-strategy"
# The PodCliqueSet update strategy of a Grove-backed DGD, on the DGD's metadata (#11085;
# deploy/operator/internal/consts/consts.go KubeAnnotationGroveUpdateStrategy).
ANN_GROVE_STRATEGY = "nvidia.com/grove-update-strategy"
# Operator bookkeeping of the worker generation (ai-dynamo/dynamo
# deploy/operator/internal/consts/consts.go).
ANN_WORKER_HASH_V1 = "nvidia.com/current-worker-hash"
ANN_WORKER_HASH_V2 = "nvidia.com/current-worker-hash-v2"

WORKER_TYPES = frozenset({"worker", "prefill", "decode"})


class Role(str, enum.Enum):
    FRONTEND = "frontend"
    AGGREGATED = "aggregated"
    PREFILL = "prefill"
    DECODE = "decode"
    OTHER = "other"  # planner, epp, anything else: not serving capacity

    @property
    def is_worker(self) -> bool:
        return self in _WORKER_ROLES


_WORKER_ROLES = (Role.AGGREGATED, Role.PREFILL, Role.DECODE)


class Backend(str, enum.Enum):
    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"
    UNKNOWN = "unknown"


_BACKEND_NAMES = frozenset(b.value for b in Backend)
_MODULE_BACKEND = {
    "dynamo.vllm": Backend.VLLM,
    "dynamo.sglang": Backend.SGLANG,
    "dynamo.trtllm": Backend.TRTLLM,
}
# A module named as a word of its own (not `mydynamo.vllm` or `dynamo.vllm_x`), in the order of
# _MODULE_BACKEND.
_MODULE_PATTERNS = tuple(
    (module, re.compile(rf"(?<![\w.]){re.escape(module)}(?![\w])"), backend)
    for module, backend in _MODULE_BACKEND.items())


class Component(NamedTuple):
    """A read-only view of one service (v1alpha1) / component (v1beta1). (A NamedTuple,
    immutable as a frozen dataclass but built in half the time: a bulk check builds one per
    component of every DGD.)"""

    name: str
    role: Role
    type: str  # the raw componentType / type
    replicas: int
    image: str | None
    command: tuple[str, ...]
    args: tuple[str, ...]
    gpus_per_replica: int  # GPUs of one replica, all nodes of a multinode replica included
    node_count: int
    backend: Backend
    path: FieldPath  # path of the component in the document
    container_path: FieldPath | None  # path of the main container, if present
    global_namespace: bool = False
    # The pod's terminationGracePeriodSeconds (v1alpha1 ``extraPodSpec``, v1beta1
    # ``podTemplate.spec``); None: unset, Kubernetes' default of 30 s applies.
    grace_seconds: int | None = None

    @property
    def is_worker(self) -> bool:
        return self.role.is_worker


@dataclass
class Dgd:
    """A DGD document plus the uniform view of its components."""

    doc: dict[str, Any]
    version: str
    source: Document | None = None
    components: dict[str, Component] = field(default_factory=dict)
    # Copies of a parsed DGD, and the DGDs dgdgen edits from them, hold only fields whose
    # shapes were checked when it was read (or that dgdgen wrote): their component views are
    # built without checking again every env entry and volume (each state of a render copies
    # the DGDs, and the checks cost as much as the rest of its work).
    checked: bool = False
    # The typed pod views :meth:`pod` built, with the :class:`Component` each was built for (a
    # view is built again once :meth:`refresh` made a new one), and the DGD-wide environment.
    _pods: dict[str, tuple[Component, ComponentPod]] = field(
        default_factory=dict, repr=False, compare=False)
    _env: tuple[EnvVar, ...] | None = field(default=None, repr=False, compare=False)

    # ----------------------------------------------------------------- identity

    @property
    def name(self) -> str:
        return str(self.doc.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = self.doc.get("metadata", {}).get("namespace")
        return str(ns) if ns is not None else None

    @property
    def components_key(self) -> str:
        return "services" if self.version == "v1alpha1" else "components"

    def location(self, path: FieldPath = ()) -> Location:
        if self.source is None:
            return Location("<generated>")
        return self.source.location(path)

    @property
    def backend(self) -> Backend:
        declared = self.doc.get("spec", {}).get("backendFramework")
        if declared in _BACKEND_NAMES:
            return Backend(declared)
        for comp in self.components.values():
            if comp.backend is not Backend.UNKNOWN:
                return comp.backend
        return Backend.UNKNOWN

    @property
    def disaggregated(self) -> bool:
        roles = {c.role for c in self.components.values()}
        return Role.PREFILL in roles or Role.DECODE in roles

    def workers(self) -> Iterator[Component]:
        return (c for c in self.components.values() if c.is_worker)

    def frontends(self) -> Iterator[Component]:
        return (c for c in self.components.values() if c.role is Role.FRONTEND)

    # ----------------------------------------------------------------- typed reads

    def pod(self, name: str) -> ComponentPod:
        """What the main container of component ``name`` takes from its pod, parsed from the
        document on first use (:mod:`dgdgen.model.dgdpod`): the checker's view, never edited."""
        comp = self.components[name]
        cached = self._pods.get(name)
        if cached is not None and cached[0] is comp:
            return cached[1]
        if self._env is None:
            key = "envs" if self.version == "v1alpha1" else "env"
            self._env = env_list(self.doc.get("spec", {}).get(key), ("spec", key))
        node = self.component_doc(name)
        main: Any = None
        if comp.container_path is not None:  # the main container's path, below the component's
            main = node
            for part in comp.container_path[len(comp.path):]:
                main = main[part]
        view = component_pod(self.version, node, main, comp.container_path, comp.path, self._env)
        self._pods[name] = (comp, view)
        return view

    # ----------------------------------------------------------------- raw access

    def component_doc(self, name: str) -> dict[str, Any]:
        """The mutable mapping of one component inside :attr:`doc`."""
        comp = self.components[name]
        node: Any = self.doc
        for part in comp.path:
            node = node[part]
        assert isinstance(node, dict)
        return node

    def main_container(self, name: str, *, create: bool = False) -> dict[str, Any] | None:
        """The mutable main container of a component (created empty when ``create``)."""
        node = self.component_doc(name)
        if self.version == "v1alpha1":
            eps = node.get("extraPodSpec")
            if eps is None:
                if not create:
                    return None
                eps = node["extraPodSpec"] = {}
            mc = eps.get("mainContainer")
            if mc is None:
                if not create:
                    return None
                mc = eps["mainContainer"] = {}
            assert isinstance(mc, dict)
            return mc
        pt = node.get("podTemplate")
        if pt is None:
            if not create:
                return None
            pt = node["podTemplate"] = {}
        spec = pt.setdefault("spec", {}) if create else pt.get("spec")
        if spec is None:
            return None
        containers = spec.setdefault("containers", []) if create else spec.get("containers")
        if containers is None:
            return None
        for c in containers:
            if isinstance(c, dict) and c.get("name") == "main":
                return c
        if not create:
            return None
        main: dict[str, Any] = {"name": "main"}
        containers.insert(0, main)
        return main

    def pod_labels(self, name: str) -> dict[str, Any]:
        """The mutable pod-label map of a component (created when absent)."""
        node = self.component_doc(name)
        if self.version == "v1alpha1":
            meta = node.setdefault("extraPodMetadata", {})
        else:
            meta = node.setdefault("podTemplate", {}).setdefault("metadata", {})
        labels = meta.setdefault("labels", {})
        assert isinstance(labels, dict)
        return labels

    def doc_annotations(self, name: str) -> dict[str, Any]:
        """The component's rolling-update annotations as written (read only: nothing is
        created)."""
        node = self.component_doc(name)
        if self.version == "v1alpha1":
            ann = node.get("annotations")
        else:
            tmpl = node.get("podTemplate")
            meta = tmpl.get("metadata") if isinstance(tmpl, dict) else None
            ann = meta.get("annotations") if isinstance(meta, dict) else None
        return ann if isinstance(ann, dict) else {}

    def component_annotations(self, name: str) -> dict[str, Any]:
        """Where the operator reads per-component rolling-update annotations (upstream #6110)."""
        node = self.component_doc(name)
        if self.version == "v1alpha1":
            ann = node.setdefault("annotations", {})
        else:
            ann = node.setdefault("podTemplate", {}).setdefault("metadata", {})
            ann = ann.setdefault("annotations", {})
        assert isinstance(ann, dict)
        return ann

    def pod_spec(self, name: str) -> dict[str, Any]:
        """The mutable pod spec of a component: v1alpha1 ``extraPodSpec``, v1beta1
        ``podTemplate.spec`` (created when absent, with the ``main`` container the schema
        requires of a v1beta1 pod spec)."""
        node = self.component_doc(name)
        if self.version == "v1alpha1":
            spec = node.setdefault("extraPodSpec", {})
        else:
            self.main_container(name, create=True)
            spec = node["podTemplate"]["spec"]
        assert isinstance(spec, dict)
        return spec

    def copy(self) -> Dgd:
        return Dgd(doc=_copied(self.doc), version=self.version, source=self.source,
                   components=dict(self.components), checked=True)

    def refresh(self) -> None:
        """Recompute the component view after :attr:`doc` was edited."""
        self.components = _components(self.doc, self.version, self.source,
                                      checked=self.checked)
        self._pods = {}
        self._env = None


def _copied(value: Any) -> Any:
    """A deep copy of plain data (what the loaders and dgdgen's edits build: dicts, lists and
    immutable scalars), several times faster than :func:`copy.deepcopy`, which keeps a memo of
    every node for the shared references and cycles plain data does not have."""
    t = type(value)
    if t is dict:
        return {k: _copied(v) for k, v in value.items()}
    if t is list:
        return [_copied(v) for v in value]
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    return copy.deepcopy(value)


# --------------------------------------------------------------------------- parsing


def is_dgd(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and doc.get("kind") == KIND
        and isinstance(doc.get("apiVersion"), str)
        and doc["apiVersion"].startswith(GROUP + "/")
    )


def parse(doc: Any, *, source: Document | None = None) -> Dgd:
    """Build the :class:`Dgd` view, or raise :class:`InputError` for something that is not a DGD."""

    def where(path: FieldPath = ()) -> Location:
        return source.location(path) if source is not None else Location("<inline>")

    if not isinstance(doc, dict):
        raise InputError("expected a DynamoGraphDeployment mapping", location=where())
    kind = doc.get("kind")
    api = doc.get("apiVersion")
    if kind != KIND:
        raise InputError(
            f"not a DynamoGraphDeployment (kind is {kind!r})",
            location=where(("kind",)),
            field=("kind",),
        )
    if not isinstance(api, str) or "/" not in api or api.split("/")[0] != GROUP:
        raise InputError(
            f"expected apiVersion {GROUP}/v1alpha1 or {GROUP}/v1beta1, got {api!r}",
            location=where(("apiVersion",)),
            field=("apiVersion",),
        )
    version = api.split("/", 1)[1]
    if version not in VERSIONS:
        raise InputError(
            f"unsupported DynamoGraphDeployment version {version!r} "
            f"(supported: {', '.join(VERSIONS)})",
            location=where(("apiVersion",)),
            field=("apiVersion",),
        )
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InputError(
            "a DynamoGraphDeployment needs metadata.name",
            location=where(("metadata",)),
            field=("metadata", "name"),
        )
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise InputError(
            "a DynamoGraphDeployment needs a spec mapping", location=where(), field=("spec",)
        )
    t = _Shape(source)
    t.text(meta, "namespace", ("metadata",))
    t.mapping(meta, "labels", ("metadata",))
    t.mapping(meta, "annotations", ("metadata",))
    t.text(spec, "backendFramework", ("spec",))
    _env_shape(t, spec, "envs" if version == "v1alpha1" else "env", ("spec",))
    key = "services" if version == "v1alpha1" else "components"
    comps = spec.get(key)
    expected = "a mapping" if version == "v1alpha1" else "a list"
    if not isinstance(comps, dict if version == "v1alpha1" else list):
        raise InputError(
            f"spec.{key} must be {expected} in {GROUP}/{version}",
            location=where(("spec", key) if key in spec else ("spec",)),
            field=("spec", key),
        )
    return Dgd(doc=doc, version=version, source=source, components=_components(doc, version, source))


def _components(doc: dict[str, Any], version: str, source: Document | None, *,
                checked: bool = False) -> dict[str, Component]:
    out: dict[str, Component] = {}
    spec = doc["spec"]
    t = _Shape(source, checked)
    if version == "v1alpha1":
        for name, svc in spec["services"].items():
            path: FieldPath = ("spec", "services", name)
            if not isinstance(svc, dict):
                raise _bad(source, path, "a service must be a mapping")
            out[str(name)] = _component_v1alpha1(str(name), svc, path, t)
    else:
        for i, comp in enumerate(spec["components"]):
            path = ("spec", "components", i)
            if not isinstance(comp, dict) or not isinstance(comp.get("name"), str):
                raise _bad(source, path, "a component must be a mapping with a string name")
            out[comp["name"]] = _component_v1beta1(comp["name"], comp, path, t)
    return out


def _entries(t: _Shape, node: dict[str, Any], key: str, path: FieldPath
             ) -> list[tuple[dict[str, Any], FieldPath]]:
    """The items of a list of mappings (env, volumes, volumeMounts ...), each with its path."""
    out = []
    for i, item in enumerate(t.items(node, key, path)):
        if not isinstance(item, dict):
            raise _bad(t.source, path + (key, i), f"must be a mapping, got {_type_name(item)}")
        out.append((item, path + (key, i)))
    return out


def _env_shape(t: _Shape, node: dict[str, Any], key: str, path: FieldPath) -> None:
    """An environment list as the checker reads it (``value``, ``valueFrom`` references)."""
    if t.checked:
        return
    for item, ipath in _entries(t, node, key, path):
        t.text(item, "name", ipath)
        ref = t.mapping(item, "valueFrom", ipath)
        for kind in ("configMapKeyRef", "secretKeyRef"):
            sel = t.mapping(ref, kind, ipath + ("valueFrom",))
            t.text(sel, "name", ipath + ("valueFrom", kind))
            t.text(sel, "key", ipath + ("valueFrom", kind))


def _pod_shape(t: _Shape, pod: dict[str, Any], ppath: FieldPath, main: dict[str, Any],
               mpath: FieldPath) -> None:
    """The pod and main-container fields the checker reads (:class:`dgdgen.model.dgdpod.ComponentPod`):
    a wrong shape there is an error at its line, as everywhere past :func:`parse`."""
    if t.checked:
        return
    for vol, vpath in _entries(t, pod, "volumes", ppath):
        t.text(vol, "name", vpath)
        sources = [(vol, vpath)]
        projected = t.mapping(vol, "projected", vpath)
        sources += _entries(t, projected, "sources", vpath + ("projected",))
        for src, spath in sources:
            cm = t.mapping(src, "configMap", spath)
            t.text(cm, "name", spath + ("configMap",))
            for item, ipath in _entries(t, cm, "items", spath + ("configMap",)):
                t.text(item, "key", ipath)
                t.text(item, "path", ipath)
    _env_shape(t, main, "env", mpath)
    for src, spath in _entries(t, main, "envFrom", mpath):
        t.text(src, "prefix", spath)
        for kind in ("configMapRef", "secretRef"):
            t.text(t.mapping(src, kind, spath), "name", spath + (kind,))
    for mount, mp in _entries(t, main, "volumeMounts", mpath):
        for key in ("name", "mountPath", "subPath"):
            t.text(mount, key, mp)


def _bad(source: Document | None, path: FieldPath, message: str) -> InputError:
    loc = source.location(path) if source is not None else Location("<inline>")
    return InputError(message, location=loc, field=path)


_INT32_MAX = 2**31 - 1  # replicas, nodeCount: int32 in the CRD (schemas/crds/dynamo)


@dataclass(frozen=True)
class _Shape:
    """Typed reads of the fields the model looks at: a field that is present with the wrong
    shape is one :class:`InputError` at its file:line, never a crash or a silent default (the
    typed boundary: code past :func:`parse` trusts what it gets)."""

    source: Document | None
    checked: bool = False  # the deep shapes (env, volumes) were checked when it was read

    def _get(self, node: dict[str, Any], key: str, path: FieldPath, want: type | tuple[type, ...],
             what: str) -> Any:
        value = node.get(key)
        if value is None or type(value) is want:  # most fields: read and of the exact type
            return value
        if not isinstance(value, want) or (isinstance(value, bool) and bool not in _tuple(want)):
            raise _bad(self.source, path + (key,), f"must be {what}, got {_type_name(value)}")
        return value

    # The three most read shapes take their common answers first, without calling _get: the
    # model reads about 26 fields of every component.

    def mapping(self, node: dict[str, Any], key: str, path: FieldPath) -> dict[str, Any]:
        value = node.get(key)
        if type(value) is dict:
            return value
        return self._get(node, key, path, dict, "a mapping") or {}

    def items(self, node: dict[str, Any], key: str, path: FieldPath) -> list[Any]:
        value = node.get(key)
        if type(value) is list:
            return value
        return self._get(node, key, path, list, "a list") or []

    def text(self, node: dict[str, Any], key: str, path: FieldPath) -> str | None:
        value = node.get(key)
        if value is None or type(value) is str:
            return value
        checked: str | None = self._get(node, key, path, str, "a string")
        return checked

    def flag(self, node: dict[str, Any], key: str, path: FieldPath) -> bool:
        return bool(self._get(node, key, path, bool, "true or false"))

    def count(self, node: dict[str, Any], key: str, path: FieldPath, default: int) -> int:
        value = self._get(node, key, path, int, "a whole number")
        if value is None:
            return default
        if not 0 <= value <= _INT32_MAX:
            raise _bad(self.source, path + (key,), f"{value} is out of range (0 to {_INT32_MAX})")
        return int(value)

    def seconds(self, node: dict[str, Any], key: str, path: FieldPath) -> int | None:
        """A non-negative whole number of seconds (int64 in the pod spec), or None when unset."""
        value = self._get(node, key, path, int, "a whole number of seconds")
        if value is not None and not 0 <= value < 2**63:
            raise _bad(self.source, path + (key,), f"{value} is out of range (0 to 2^63-1)")
        return None if value is None else int(value)

    def strs(self, node: dict[str, Any], key: str, path: FieldPath) -> tuple[str, ...]:
        items = self.items(node, key, path)
        for v in items:
            if type(v) is not str:
                break
        else:  # only strings (a command line, almost always): as they are
            return tuple(items)
        for i, v in enumerate(items):
            if isinstance(v, (dict, list)):
                raise _bad(self.source, path + (key, i), f"must be a string, got {_type_name(v)}")
        return tuple(_text(v) for v in items)

    def gpus(self, node: dict[str, Any], key: str, path: FieldPath) -> int:
        """A GPU quantity: an integer or an integer string (a Kubernetes quantity)."""
        value = node.get(key)
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT32_MAX:
            return value
        if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
                and int(value) <= _INT32_MAX:
            return int(value.strip())
        raise _bad(self.source, path + (key,),
                   f"must be a whole number of GPUs, got {_type_name(value)} {value!r}")


def _tuple(want: type | tuple[type, ...]) -> tuple[type, ...]:
    return want if isinstance(want, tuple) else (want,)


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value), "a value")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _role(ctype: str, sub: str | None, args: tuple[str, ...]) -> Role:
    ctype = (ctype or "").lower()
    sub = (sub or "").lower()
    if ctype == "frontend":
        return Role.FRONTEND
    if ctype in ("prefill", "decode"):
        return Role(ctype)
    if ctype == "worker":
        if sub in ("prefill", "decode"):
            return Role(sub)
        mode = disaggregation_mode(args)
        if mode in ("prefill", "decode"):
            return Role(mode)
        return Role.AGGREGATED
    return Role.OTHER


_DISAGGREGATION_MODE = re.compile(r"--disaggregation-mode[= ]+([A-Za-z]+)")


def disaggregation_mode(args: tuple[str, ...]) -> str | None:
    """``--disaggregation-mode`` from an argument list (also inside one ``sh -c`` string)."""
    flat = list(args)
    for i, a in enumerate(flat):
        if a == "--disaggregation-mode" and i + 1 < len(flat):
            return flat[i + 1].lower()
        if a.startswith("--disaggregation-mode="):
            return a.split("=", 1)[1].lower()
        if " " in a and (m := _DISAGGREGATION_MODE.search(a)):
            return m.group(1).lower()
    if "--is-prefill-worker" in flat:
        return "prefill"
    return None


def _backend(command: tuple[str, ...], args: tuple[str, ...]) -> Backend:
    text = " ".join(command + args)
    if "dynamo." not in text:
        return Backend.UNKNOWN
    for module, pattern, backend in _MODULE_PATTERNS:
        if module in text and pattern.search(text):  # the pattern only where it can match
            return backend
    return Backend.UNKNOWN


def _component_v1alpha1(name: str, svc: dict[str, Any], path: FieldPath, t: _Shape) -> Component:
    eps = t.mapping(svc, "extraPodSpec", path)
    mc = t.mapping(eps, "mainContainer", path + ("extraPodSpec",))
    mpath = path + ("extraPodSpec", "mainContainer")
    command, args = t.strs(mc, "command", mpath), t.strs(mc, "args", mpath)
    res = t.mapping(svc, "resources", path)
    gpus = t.gpus(t.mapping(res, "limits", path + ("resources",)), "gpu",
                  path + ("resources", "limits")) or \
        t.gpus(t.mapping(res, "requests", path + ("resources",)), "gpu",
               path + ("resources", "requests"))
    if not gpus:
        mres = t.mapping(mc, "resources", mpath)
        gpus = t.gpus(t.mapping(mres, "limits", mpath + ("resources",)), "nvidia.com/gpu",
                      mpath + ("resources", "limits"))
    multinode = t.mapping(svc, "multinode", path)
    nodes = t.count(multinode, "nodeCount", path + ("multinode",), 2) if multinode else 1
    epm = t.mapping(svc, "extraPodMetadata", path)
    t.mapping(epm, "labels", path + ("extraPodMetadata",))
    t.mapping(epm, "annotations", path + ("extraPodMetadata",))
    t.mapping(svc, "annotations", path)
    t.text(svc, "runtimeVersionOverride", path)
    _env_shape(t, svc, "envs", path)
    _pod_shape(t, eps, path + ("extraPodSpec",), mc, mpath)
    ctype = t.text(svc, "componentType", path) or ""
    return Component(
        name=name,
        role=_role(ctype, t.text(svc, "subComponentType", path), command + args),
        type=ctype,
        replicas=t.count(svc, "replicas", path, 1),
        image=t.text(mc, "image", mpath),
        command=command,
        args=args,
        gpus_per_replica=gpus * nodes,
        node_count=nodes,
        backend=_backend(command, args),
        path=path,
        container_path=mpath if mc else None,
        global_namespace=t.flag(svc, "globalDynamoNamespace", path),
        grace_seconds=t.seconds(eps, "terminationGracePeriodSeconds", path + ("extraPodSpec",)),
    )


def _component_v1beta1(name: str, comp: dict[str, Any], path: FieldPath, t: _Shape) -> Component:
    pt = t.mapping(comp, "podTemplate", path)
    pmeta = t.mapping(pt, "metadata", path + ("podTemplate",))
    t.mapping(pmeta, "labels", path + ("podTemplate", "metadata"))
    t.mapping(pmeta, "annotations", path + ("podTemplate", "metadata"))
    t.text(comp, "runtimeVersionOverride", path)
    pspec = t.mapping(pt, "spec", path + ("podTemplate",))
    cpath = path + ("podTemplate", "spec")
    containers = t.items(pspec, "containers", cpath)
    main: dict[str, Any] = {}
    index = None
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            raise _bad(t.source, cpath + ("containers", i),
                       f"a container must be a mapping, got {_type_name(c)}")
        if c.get("name") == "main":
            main, index = c, i
            break
    mpath = cpath + ("containers", index if index is not None else 0)
    command, args = t.strs(main, "command", mpath), t.strs(main, "args", mpath)
    _pod_shape(t, pspec, cpath, main, mpath)
    mres = t.mapping(main, "resources", mpath)
    gpus = t.gpus(t.mapping(mres, "limits", mpath + ("resources",)), "nvidia.com/gpu",
                  mpath + ("resources", "limits"))
    multinode = t.mapping(comp, "multinode", path)
    nodes = t.count(multinode, "nodeCount", path + ("multinode",), 2) if multinode else 1
    ctype = t.text(comp, "type", path) or ""
    return Component(
        name=name,
        role=_role(ctype, None, command + args),
        type=ctype,
        replicas=t.count(comp, "replicas", path, 1),
        image=t.text(main, "image", mpath),
        command=command,
        args=args,
        gpus_per_replica=gpus * nodes,
        node_count=nodes,
        backend=_backend(command, args),
        path=path,
        container_path=mpath if index is not None else None,
        global_namespace=t.flag(comp, "globalDynamoNamespace", path),
        grace_seconds=t.seconds(pspec, "terminationGracePeriodSeconds", cpath),
    )


# --------------------------------------------------------------------------- Dynamo namespaces


def dynamo_namespace(k8s_namespace: str, dgd_name: str) -> str:
    """The Dynamo namespace the operator derives for a DGD: ``{k8s-ns}-{dgd-name}``, dots in the
    name replaced by ``-`` (ai-dynamo/dynamo PR #4126, ``ComputeDynamoNamespace``)."""
    return f"{k8s_namespace}-{dgd_name.replace('.', '-')}"


def prefix_conflicts(namespaces: dict[str, str]) -> list[tuple[str, str]]:
    """Pairs (a, b) of owners whose Dynamo namespace ``a`` is a string prefix of ``b``'s.

    The frontend discovers every namespace that *starts with* its own (``NamespaceFilter::Prefix``
    in ai-dynamo/dynamo ``lib/llm/src/namespace.rs``), so such a pair cross-talks.
    """
    items = sorted(namespaces.items(), key=lambda kv: (kv[1], kv[0]))
    out = []
    for owner_a, ns_a in items:
        for owner_b, ns_b in items:
            if owner_a != owner_b and ns_b.startswith(ns_a) and (ns_a != ns_b or owner_a < owner_b):
                out.append((owner_a, owner_b))
    return out


def read_dgds(documents: list[Document]) -> list[Dgd]:
    """Every DGD in a list of YAML documents (other kinds are skipped)."""
    return [parse(d.data, source=d) for d in documents if is_dgd(d.data)]
