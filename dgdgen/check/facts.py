"""Facts of a DGD component, as the rollout-safety rules need them: the assembly.

Built on the shared model (:mod:`dgdgen.model.dgd`): role, backend, image and replicas come from
:class:`~dgdgen.model.dgd.Component`, the pod's environment, mounts, annotations and labels from its
typed view :class:`~dgdgen.model.dgdpod.ComponentPod`. This module puts together what a checker needs on
top: the parsed arguments of the main process (:mod:`dgdgen.check.cmdline`), the effective
environment with its ConfigMap / Secret references resolved (:mod:`dgdgen.check.podenv`;
``DYN_*`` variables are flags too, Dynamo's ``add_argument``), files of mounted ConfigMaps named by
a flag, and for TRT-LLM the effective engine arguments (:mod:`dgdgen.check.trtllm`).

Every setting keeps the field path it came from, so a finding can point at the line
(:func:`line_of`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dgdgen.check.cmdline import (
    SPLIT_NAMES,
    Setting,
    Unresolved,
    canonical_flag,
    command_tokens,
    env_flag,
    expand_vars,
    parse_flags,
)
from dgdgen.check.flags import ALIASES_KEY
from dgdgen.check.podenv import Objects, component_env, digest, mounted_file
from dgdgen.check.trtllm import engine_settings
from dgdgen.errors import InputError
from dgdgen.model.dgd import ANN_WORKER_HASH_V1, ANN_WORKER_HASH_V2, Backend, Component, Dgd, Role
from dgdgen.model.dgdpod import str_map
from dgdgen.yamlio import FieldPath


class ComponentFacts(NamedTuple):
    """What the rules read of one component. (A NamedTuple, immutable as a frozen dataclass
    but built in a third of the time: one per component of every checked DGD.)"""

    name: str
    role: Role
    backend: Backend
    image: str | None
    replicas: int
    node_count: int
    multinode: bool
    program: str | None  # `dynamo.vllm`, `dynamo.frontend`, a script, or None (image default)
    flags: Mapping[str, Setting]  # canonical flag → effective setting (CLI beats env)
    raw_flags: tuple[tuple[str, Setting], ...]  # every flag as written, in order
    env: Mapping[str, Setting]  # effective environment (component beats DGD-wide)
    engine: Mapping[str, Setting]  # TRT-LLM effective engine keys (`engine:<dotted>`)
    engine_file_resolved: bool  # True when the --extra-engine-args file was read
    runtime_version_override: str | None
    path: FieldPath
    container_path: FieldPath | None
    annotations: Mapping[str, str]  # component-level (v1alpha1) / pod-template annotations
    pod_labels: Mapping[str, str]
    global_namespace: bool
    # Values read from ConfigMaps / Secrets that are not among the checked files.
    unresolved: tuple[Unresolved, ...] = ()

    @property
    def is_worker(self) -> bool:
        return self.role.is_worker

    def setting(self, key: str) -> Setting | None:
        if key.startswith("engine:"):
            return self.engine.get(key)
        return self.flags.get(key)

    @property
    def model(self) -> str | None:
        for key in ("--model", "--model-path"):
            s = self.flags.get(key)
            if s is not None:
                return s.value
        return None

    @property
    def served_model_name(self) -> str | None:
        """The name clients call: ``--served-model-name`` (its first value), else the model path,
        as the backends register it."""
        for key in ("--served-model-name", "--model", "--model-path"):
            s = self.flags.get(key)
            if s is not None and s.value:
                return s.value.split()[0]
        return None


@dataclass(frozen=True)
class DgdFacts:
    name: str
    namespace: str | None
    version: str
    backend: Backend
    disaggregated: bool
    components: Mapping[str, ComponentFacts]
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    file: str
    dgd: Dgd = field(repr=False, compare=False)

    @property
    def object(self) -> str:
        ns = f"{self.namespace}/" if self.namespace else ""
        return f"DynamoGraphDeployment/{ns}{self.name}"

    def workers(self) -> Iterator[ComponentFacts]:
        return (c for c in self.components.values() if c.is_worker)

    def frontends(self) -> Iterator[ComponentFacts]:
        return (c for c in self.components.values() if c.role is Role.FRONTEND)

    @property
    def worker_hash_annotations(self) -> dict[str, str]:
        return {k: v for k, v in self.annotations.items()
                if k in (ANN_WORKER_HASH_V1, ANN_WORKER_HASH_V2)}



# --------------------------------------------------------------------------- assembly


def component_facts(dgd: Dgd, comp: Component,
                    configmaps: Mapping[str, Mapping[str, str]] | None = None,
                    objects: Objects | None = None) -> ComponentFacts:
    backend = comp.backend
    if backend is Backend.UNKNOWN and comp.is_worker:
        backend = dgd.backend  # `backendFramework`, or another component's module
    objects = objects or Objects(configmaps or {})
    configmaps = objects.configmaps
    unresolved: list[Unresolved] = []
    tokens, assigns, shell, (program_at, program) = command_tokens(comp.command, comp.args,
                                                                    comp.container_path)
    pod = dgd.pod(comp.name)
    env = component_env(pod, objects, unresolved)
    raw = [(flag, expand_vars(s, flag, env, shell, unresolved) if "$" in s.value else s)
           for flag, s in parse_flags(tokens, backend, program_at)]
    for t in assigns:
        name, value = t[0].split("=", 1)
        env[name] = Setting(value, t[1], "env", name, t[2])

    flags: dict[str, Setting] = {}
    # Environment first, CLI after: the parsers take env values as defaults (``add_argument``).
    for name, s in env.items():
        flag = env_flag(name, backend)
        if flag is not None:
            flags[flag] = s
    for flag, s in raw:
        if flag.startswith("--no-") and not flag.startswith("--no-trtllm"):
            flags[canonical_flag("--" + flag[5:], backend)] = Setting(
                "false", s.path, s.source, flag, s.offset)
            continue
        flags[canonical_flag(flag, backend)] = s
    # `--is-prefill-worker` is the old spelling of `--disaggregation-mode prefill` (#6483).
    if "--is-prefill-worker" in flags and "--disaggregation-mode" not in flags:
        s = flags["--is-prefill-worker"]
        if s.value != "false":
            flags["--disaggregation-mode"] = Setting("prefill", s.path, s.source, s.raw, s.offset)
    flags.pop("--is-prefill-worker", None)
    _refuse_blank_names(dgd, flags, backend)
    names = flags.get("--served-model-name")
    if names is not None and backend in SPLIT_NAMES:
        parts = [n for n in re.split(r"[\s,]+", names.value.strip()) if n]
        if parts:
            flags["--served-model-name"] = names._replace(value=parts[0])
        if len(parts) > 1:
            flags[ALIASES_KEY] = names._replace(value=" ".join(parts[1:]))

    # A flag naming a file in a mounted ConfigMap (`--custom-jinja-template
    # /etc/tmpl/chat.jinja`): the file's contents are what the worker reads, so the value
    # compared is the path with a digest of the contents when the ConfigMap is among the checked
    # files. The engine-args file is read whole below.
    for flag, s in list(flags.items()):
        if flag == "--extra-engine-args" or not s.value.startswith("/"):
            continue
        m = mounted_file(pod, s.value, configmaps)
        if m is None:
            continue  # a file of the image: the image is compared
        if not m.seen:
            unresolved.append(Unresolved(f"{flag} {s.value}", "ConfigMap", m.configmap, s.path,
                                         flag))
        elif m.text is not None:
            flags[flag] = s._replace(
                value=f"{s.value} (ConfigMap {m.configmap}/{m.key} sha256:{digest(m.text)})")
        else:
            flags[flag] = s._replace(value=f"{s.value} (not in ConfigMap {m.configmap})")
    for i, u in enumerate(unresolved):
        if u.flag is None and u.what.startswith("env "):
            unresolved[i] = u._replace(flag=env_flag(u.what[4:], backend))

    engine: dict[str, Setting] = {}
    resolved = False
    if backend is Backend.TRTLLM:
        engine, resolved = engine_settings(flags, raw, pod, configmaps or {})

    return ComponentFacts(
        name=comp.name,
        role=comp.role,
        backend=backend,
        image=comp.image,
        replicas=comp.replicas,
        node_count=comp.node_count,
        multinode=pod.multinode,
        program=program,
        flags=flags,
        raw_flags=tuple(raw),
        env=env,
        engine=engine,
        engine_file_resolved=resolved,
        runtime_version_override=pod.runtime_version_override,
        path=comp.path,
        container_path=comp.container_path,
        annotations=pod.annotations,
        pod_labels=pod.labels,
        global_namespace=comp.global_namespace,
        unresolved=tuple(unresolved),
    )


def _refuse_blank_names(dgd: Dgd, flags: Mapping[str, Setting], backend: Backend) -> None:
    """A model name that is only whitespace (and, where Dynamo splits served names, commas)
    names nothing: the worker would fail at start, and no client could call it. Refused at the
    value's field, where the flag's first word would otherwise be taken from nothing."""
    for key in ("--served-model-name", "--model", "--model-path"):
        s = flags.get(key)
        if s is None or not s.value:
            continue  # unset or empty: the next of the three names the model
        blank = not s.value.strip() or (key == "--served-model-name" and backend in SPLIT_NAMES
                                        and not re.sub(r"[\s,]+", "", s.value))
        if blank:
            raise InputError(f"{s.raw or key} {s.value!r}: a model name that is blank (only "
                             "whitespace" + (" and commas" if s.value.strip() else "") + ")",
                             location=dgd.location(s.path), field=s.path,
                             hint="give the model's name, or leave the flag out")


def dgd_facts(dgd: Dgd, configmaps: Mapping[str, Mapping[str, str]] | None = None,
              objects: Objects | None = None) -> DgdFacts:
    objects = objects or Objects(configmaps or {})
    comps = {name: component_facts(dgd, c, objects=objects)
             for name, c in dgd.components.items()}
    meta = dgd.doc.get("metadata") or {}
    file = dgd.source.file if dgd.source is not None else "<inline>"
    return DgdFacts(
        name=dgd.name,
        namespace=dgd.namespace,
        version=dgd.version,
        backend=dgd.backend,
        disaggregated=dgd.disaggregated,
        components=comps,
        annotations=str_map(meta.get("annotations")),
        labels=str_map(meta.get("labels")),
        file=file,
        dgd=dgd,
    )


def line_of(dgd: Dgd, setting_path: FieldPath, offset: int | None, value: str | None = None
            ) -> tuple[int | None, int | None]:
    """Line and column of a setting; inside a multi-line shell string, the line of the word."""
    loc = dgd.location(setting_path)
    line, col = loc.line, loc.column
    if offset is None or line is None:
        return line, col
    node: Any = dgd.doc
    try:
        for part in setting_path:
            node = node[part]
    except (KeyError, IndexError, TypeError):
        return line, col
    if isinstance(node, str) and "\n" in node:
        # A literal block scalar: its text starts on the line after the `|` indicator. Offsets
        # refer to the continuation-joined text, which keeps line breaks only where no
        # backslash preceded them; count breaks in the original up to the same point.
        joined_to_orig = _joined_offset_to_original(node, offset)
        return line + 1 + node[:joined_to_orig].count("\n"), None
    return line, col


def _joined_offset_to_original(text: str, offset: int) -> int:
    orig = 0
    joined = 0
    while orig < len(text) and joined < offset:
        m = re.match(r"\\\r?\n", text[orig:])
        if m:
            orig += len(m.group(0))
            joined += 1
        else:
            orig += 1
            joined += 1
    return orig
