"""Facts of a DGD component, as the rollout-safety rules need them.

Built on the shared model (:mod:`dgdgen.dgd`): role, backend, image and replicas come from there;
this module adds what a checker needs on top — the parsed arguments of the main process (from a
YAML list, ``--flag=value`` / ``--flag value``, or one ``sh -c`` / ``bash -c`` string), the
environment (``DYN_*`` variables are flags too, Dynamo's ``add_argument``), and for TRT-LLM the
effective engine arguments (``--extra-engine-args`` YAML found in a ConfigMap of the same file,
``--override-engine-args`` JSON, ``--trtllm.<path>`` overrides).

Every setting keeps the field path it came from, so a finding can point at the line.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dgdgen.check.flags import ALIASES_KEY, TRTLLM_CLI_ENGINE_KEYS
from dgdgen.dgd import ANN_WORKER_HASH_V1, ANN_WORKER_HASH_V2, Backend, Component, Dgd, Role
from dgdgen.yamlio import FieldPath

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash"})
_BACKEND_MODULES = {"dynamo.vllm": Backend.VLLM, "dynamo.sglang": Backend.SGLANG,
                    "dynamo.trtllm": Backend.TRTLLM}
_SHELL_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "(", ")"})
_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SPACE = re.compile(r"\s")


def _has_space(text: str) -> bool:
    """Whether ``text`` holds a whitespace character (``\\s``). Every whitespace character but
    the ASCII space is unprintable, so a printable word without a space has none (most words:
    no pattern is run)."""
    return " " in text or (not text.isprintable() and _SPACE.search(text) is not None)

# Aliases accepted by the backends' parsers, mapped to one canonical spelling per backend.
# vLLM: `-tp/-pp/-dp/-dcp/-sc` short options (vllm 0.31.0 vllm/engine/arg_utils.py); SGLang:
# `--tensor-parallel-size` etc. are aliases of `--tp-size`, `--decode-context-parallel-size` of
# `--dcp-size`, `--attention-context-parallel-size` of `--attn-cp-size` (sglang 0.5.21
# sglang/srt/arg_groups/fields/parallel.py), `--tp`/`--dp` unique abbreviations argparse accepts
# (`--pp` and `--tokenizer` are ambiguous abbreviations there, refused at start; they are mapped
# to the flag they abbreviate so that a change to them still reads as one);
# TRT-LLM: `--model-path` is an obsolete alias of `--model`
# (ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/trtllm/backend_args.py).
_ALIASES: dict[Backend, dict[str, str]] = {
    Backend.VLLM: {
        "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size",
        "-dp": "--data-parallel-size", "--tp": "--tensor-parallel-size",
        "-dcp": "--decode-context-parallel-size", "-sc": "--speculative-config",
    },
    Backend.SGLANG: {
        "--tp": "--tp-size", "--tensor-parallel-size": "--tp-size",
        "--dp": "--dp-size", "--data-parallel-size": "--dp-size",
        "--pp": "--pp-size", "--pipeline-parallel-size": "--pp-size",
        "--model": "--model-path", "--tokenizer": "--tokenizer-path",
        "--decode-context-parallel-size": "--dcp-size",
        "--attention-context-parallel-size": "--attn-cp-size",
    },
    Backend.TRTLLM: {"--model-path": "--model", "--tp": "--tensor-parallel-size"},
    Backend.UNKNOWN: {},
}
# Alias spellings every Dynamo 1.6.1 process accepts, read from the installed argument parsers
# (ai-dynamo 1.6.1: dynamo/common/configuration/groups/{kv_router_args,runtime_args}.py, the
# worker router flags `add_worker_router_arguments`, and dynamo/frontend/frontend_args.py).
_COMMON_ALIASES: dict[str, str] = {
    "--kv-events": "--router-kv-events",
    "--kv-overlap-score-weight": "--router-kv-overlap-score-weight",
    "--track-active-blocks": "--router-track-active-blocks",
    "--track-output-blocks": "--router-track-output-blocks",
    "--assume-kv-reuse": "--router-assume-kv-reuse",
    "--dyn-endpoint-types": "--endpoint-types",
}
# Flags that take several values (argparse `nargs="+"` / `"*"`), per backend: the words after
# them up to the next flag are their values, not positional arguments. From the installed
# ai-dynamo 1.6.1 parsers: `--connector` and `--output-modalities` (nargs="*", common runtime
# args of every backend); vLLM's engine `--served-model-name` is nargs="+"
# (dynamo/vllm/args.py `update_dynamo_config_with_engine`: "vLLM's --served-model-name is
# nargs="+""). SGLang's `--served-model-name` is one string and TRT-LLM's one value.
_COMMON_MULTI = frozenset({"--connector", "--output-modalities"})
_MULTI: dict[Backend, frozenset[str]] = {
    Backend.VLLM: _COMMON_MULTI | {"--served-model-name"},
    Backend.SGLANG: _COMMON_MULTI,
    Backend.TRTLLM: _COMMON_MULTI,
    Backend.UNKNOWN: frozenset(),
}
# Backends whose served names split into a display name and aliases: Dynamo splits every
# `--served-model-name` value on whitespace and commas, the first is the served name, the rest
# are aliases (dynamo/common/configuration/utils.py `split_served_model_names`, called by
# dynamo/vllm/args.py and dynamo/sglang/args.py in ai-dynamo 1.6.1; TRT-LLM passes none).
_SPLIT_NAMES = frozenset({Backend.VLLM, Backend.SGLANG})
_BACKEND_ENV_PREFIX: dict[Backend, tuple[str, ...]] = {
    Backend.VLLM: ("VLLM_",),
    # ai-dynamo 1.6.1 spells SGLang's variables DYN_SGL_* (dynamo/sglang/backend_args.py), a few
    # DYN_SGLANG_*.
    Backend.SGLANG: ("SGLANG_", "SGL_"),
    Backend.TRTLLM: ("TRTLLM_",),
}
# Variables whose name is not DYN_ + the flag (ai-dynamo 1.6.1 parsers: kv_router_args.py,
# router_args.py).
_ENV_FLAGS: dict[str, str] = {
    "DYN_ROUTER_USE_KV_EVENTS": "--router-kv-events",
    "DYN_OVERLAP_SCORE_WEIGHT": "--router-kv-overlap-score-weight",
    "DYN_ROUTER_LOAD_AWARE": "--load-aware",
}


class Setting(NamedTuple):
    """One effective setting: its value (a string; ``"true"`` for a bare boolean flag, JSON for
    structured values) and where it was written. (A NamedTuple: thousands are built per run.)"""

    value: str
    path: FieldPath
    source: str  # "args", "env", "dgd-env", "engine-file", "engine-override"
    raw: str = ""  # the flag or variable as written, e.g. `--model-path`, `DYN_TRTLLM_MODEL`
    offset: int | None = None  # character offset inside a shell string, for the line


# A word of the command line: (text, field path, offset inside a shell-string element).
# Plain tuples: tens of thousands are built in a bulk check.
Token = tuple[str, FieldPath, "int | None"]


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


# --------------------------------------------------------------------------- argument parsing


def join_continuations(script: str) -> str:
    """Join backslash-newline continuations as a shell does before splitting (POSIX sh, 2.2.1)."""
    return re.sub(r"\\\r?\n", " ", script)


def split_shell(script: str) -> list[tuple[str, int]]:
    """Split one shell command string into words (with their offsets in ``script``), keeping
    operators (``&&``, ``;``, ``|``) as words of their own."""
    joined = join_continuations(script)
    lex = shlex.shlex(joined, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    words: list[tuple[str, int]] = []
    try:
        for word in lex:
            # shlex does not expose offsets; find the word (or its first char) after the last one
            # (an unquoted word is never longer than its source, so search after the last one)
            after = words[-1][1] + len(words[-1][0]) if words else 0
            start = joined.find(word[:1], after) if word else -1
            words.append((word, start if start >= 0 else after))
    except ValueError:  # unbalanced quotes: fall back to whitespace split
        words = [(m.group(0), m.start()) for m in re.finditer(r"\S+", joined)]
    return words


def _program_index(words: list[str]) -> tuple[int, str | None]:
    """Index of the first argument of the Dynamo program in ``words``, and the program."""
    best: tuple[int, str | None] | None = None
    for i, w in enumerate(words):
        if w == "-m" and i + 1 < len(words):
            module = words[i + 1]
            if module in _BACKEND_MODULES:
                return i + 2, module
            if best is None and module.startswith("dynamo."):
                best = (i + 2, module)
        elif w.endswith(".py") and best is None:
            best = (i + 1, w)
        elif w in _BACKEND_MODULES:  # `dynamo.vllm` console entry points
            return i + 1, w
    return best if best is not None else (-1, None)


def _tokens(command: tuple[str, ...], args: tuple[str, ...], container_path: FieldPath | None
            ) -> tuple[list[Token], list[Token], bool, tuple[int, str | None]]:
    """(tokens of the whole command line, env assignments written before the program, whether
    a shell runs it: `sh -c SCRIPT`, and :func:`_program_index` of the tokens)."""
    base: FieldPath = container_path or ()
    items: list[Token] = [(c, base + ("command", i), None) for i, c in enumerate(command)]
    items += [(a, base + ("args", i), None) for i, a in enumerate(args)]
    shell_at = next((i for i, t in enumerate(items[:2])
                     if t[0].rsplit("/", 1)[-1] in SHELLS), None)
    if shell_at is not None:
        # `sh -c SCRIPT [argv0 ...]`: SCRIPT is the whole command line.
        rest = items[shell_at + 1:]
        flags_at = next((i for i, t in enumerate(rest) if t[0].startswith("-")
                         and "c" in t[0][1:] and not t[0].startswith("--")), None)
        if flags_at is not None and flags_at + 1 < len(rest):
            script = rest[flags_at + 1]
            words = split_shell(script[0])
            items = [(w, script[1], off) for w, off in words]
    else:
        # A list element holding several words (`- --model Qwen/Qwen3-0.6B`) is split too.
        expanded: list[Token] = []
        for t in items:
            if t[0].startswith("-") and _has_space(t[0].strip()):
                expanded += [(w, t[1], off) for w, off in split_shell(t[0])]
            else:
                expanded.append(t)
        items = expanded
    # Keep the segment (between shell operators) that runs the Dynamo program.
    segments: list[list[Token]] = [[]]
    for t in items:
        if t[0] in _SHELL_OPERATORS:
            segments.append([])
        else:
            segments[-1].append(t)
    chosen = segments[0]
    program: tuple[int, str | None] | None = None  # _program_index of the chosen segment
    for seg in segments:
        found = _program_index([t[0] for t in seg])
        if program is None:
            program = found  # the first segment's
        if found[1] in _BACKEND_MODULES:
            chosen, program = seg, found
            break
        if found[1] is not None and chosen is segments[0]:
            chosen, program = seg, found
    assert program is not None
    env_assign = []
    for t in chosen:
        if _ENV_ASSIGN.match(t[0]):
            env_assign.append(t)
        elif t[0] not in ("exec", "env"):
            break
    return chosen, env_assign, shell_at is not None, program


# Kubernetes expands `$(VAR)` in a container's command and args from the container's
# environment (`$$(VAR)` is a literal `$(VAR)`; an undefined VAR is left as written); a shell
# script (`sh -c`) then expands `$VAR`, `${VAR}` and `${VAR:-default}` itself.
_K8S_REF = re.compile(r"\$\$\(([A-Za-z_][A-Za-z0-9_]*)\)|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SHELL_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _expand(s: Setting, flag: str, env: Mapping[str, Setting], shell: bool,
            unresolved: list[Unresolved]) -> Setting:
    """``s`` with the variables it references replaced by their values from the container's
    environment, as the kubelet and the shell would: a flag set to `$(BLOCK_SIZE)` whose
    ConfigMap value changes changes with it. A variable whose value comes from an object not among
    the checked files is recorded as unresolved for ``flag``."""
    if "$" not in s.value:
        return s

    def value_of(name: str, default: str | None = None) -> str | None:
        v = env.get(name)
        if v is None:
            return default
        ref = _unseen_ref(v.value)
        if ref is not None:
            unresolved.append(Unresolved(f"{flag} {s.value}", ref[0], ref[1], s.path, flag))
        return v.value

    def k8s(m: re.Match[str]) -> str:
        if m[1] is not None:
            return f"$({m[1]})"
        got = value_of(m[2])
        return m[0] if got is None else got

    text = _K8S_REF.sub(k8s, s.value)
    if shell:
        def sh(m: re.Match[str]) -> str:
            name = m[1] or m[3]
            got = value_of(name, m[2] if m[1] is not None else None)
            return "" if got is None else got

        text = _SHELL_REF.sub(sh, text)
    return s if text == s.value else s._replace(value=text)


def _unseen_ref(value: str) -> tuple[str, str] | None:
    """(kind, name) of the ConfigMap or Secret an env value still refers to (`_value_from` left
    the reference itself: the object is not among the checked files), else None."""
    if not value.startswith("valueFrom:"):
        return None
    try:
        ref = json.loads(value[len("valueFrom:"):])
    except ValueError:
        return None
    if not isinstance(ref, dict):
        return None
    for key, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
        sel = ref.get(key)
        if isinstance(sel, dict) and isinstance(sel.get("name"), str):
            return kind, sel["name"]
    return None


def canonical_flag(flag: str, backend: Backend) -> str:
    """``--block_size`` → ``--block-size``; backend aliases → their canonical spelling.
    ``--trtllm.a.b`` overrides keep their dotted path."""
    known = _CANONICAL.get((flag, backend))
    if known is None:
        known = _canonical_flag(flag, backend)
        if len(_CANONICAL) < 4096:  # the flags of a run repeat; any text can be a flag
            _CANONICAL[(flag, backend)] = known
    return known


_CANONICAL: dict[tuple[str, Backend], str] = {}


def _canonical_flag(flag: str, backend: Backend) -> str:
    if flag.startswith("--trtllm."):
        return flag
    if flag.startswith("--"):
        flag = "--" + flag[2:].replace("_", "-")
    flag = _COMMON_ALIASES.get(flag, flag)
    return _ALIASES.get(backend, {}).get(flag, flag)


def parse_flags(tokens: list[Token], backend: Backend, program_at: int | None = None
                ) -> list[tuple[str, Setting]]:
    """``--flag value``, ``--flag=value``, ``--flag v1 v2`` (multi-valued flags: the values
    joined by one space) and bare boolean flags, in order, after the program's name
    (``program_at``: its :func:`_program_index`, when the caller knows it)."""
    multi = _MULTI.get(backend, frozenset())
    if program_at is None:
        program_at = _program_index([t[0] for t in tokens])[0]
    start = max(program_at, 0)
    out: list[tuple[str, Setting]] = []
    i = start
    while i < len(tokens):
        tok = tokens[i]
        text = tok[0]
        is_flag = text.startswith("--") or (text.startswith("-") and len(text) > 1
                                             and not _is_number(text))
        if not is_flag:
            i += 1
            continue
        if "=" in text and text.startswith("--"):
            name, value = text.split("=", 1)
            out.append((name, Setting(value, tok[1], "args", name, tok[2])))
            i += 1
            continue
        if canonical_flag(text, backend) in multi:
            values: list[Token] = []
            j = i + 1
            while j < len(tokens) and (not tokens[j][0].startswith("-")
                                       or _is_number(tokens[j][0])):
                values.append(tokens[j])
                j += 1
            first = values[0] if values else tok
            out.append((text, Setting(" ".join(v[0] for v in values) if values else "",
                                      first[1], "args", text, first[2])))
            i = j
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and (not nxt[0].startswith("-") or _is_number(nxt[0])):
            out.append((text, Setting(nxt[0], nxt[1], "args", text, nxt[2])))
            i += 2
        else:
            out.append((text, Setting("true", tok[1], "args", text, tok[2])))
            i += 1
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def env_flag(name: str, backend: Backend) -> str | None:
    """The flag a ``DYN_*`` variable sets: ``DYN_<BACKEND>_<FLAG>`` or ``DYN_<FLAG>`` (e.g.
    ``DYN_TRTLLM_MAX_SEQ_LEN`` → ``--max-seq-len``, ``DYN_CUSTOM_JINJA_TEMPLATE`` →
    ``--custom-jinja-template``; ai-dynamo 1.6.1 trtllm/backend_args.py ``env_var``)."""
    if not name.startswith("DYN_"):
        return None
    if name in _ENV_FLAGS:
        return _ENV_FLAGS[name]
    rest = name[4:]
    own = next((p for p in _BACKEND_ENV_PREFIX.get(backend, ()) if rest.startswith(p)), None)
    if own is not None:
        rest = rest[len(own):]
    elif any(rest.startswith(p) for ps in _BACKEND_ENV_PREFIX.values() for p in ps):
        return None  # another backend's variable: not read by this one
    return canonical_flag("--" + rest.lower().replace("_", "-"), backend)


# --------------------------------------------------------------------------- environment


@dataclass(frozen=True)
class Objects:
    """The ConfigMaps (name → data) and Secrets (name → key names only: a Secret's values are
    never read) of the checked files, which env references and mounted files resolve against."""

    configmaps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    secrets: Mapping[str, frozenset[str]] = field(default_factory=dict)


class Unresolved(NamedTuple):
    """A value the worker reads from an object that is not among the checked files."""

    what: str  # `env DYN_X`, `envFrom`, `--custom-jinja-template /etc/t/chat.jinja`
    kind: str  # ConfigMap / Secret
    name: str
    path: FieldPath
    flag: str | None  # the flag it sets, when known


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _env_list(value: Any, path: FieldPath, source: str, objects: Objects | None = None,
              unresolved: list[Unresolved] | None = None) -> Iterator[tuple[str, Setting]]:
    if not isinstance(value, list):
        return
    for i, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if "value" in item:
            v = item["value"]
            text = "" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else str(v))
            if isinstance(v, bool):
                text = "true" if v else "false"
        else:
            text = _value_from(item["name"], item.get("valueFrom"), path + (i,), objects,
                               unresolved)
        yield item["name"], Setting(text, path + (i,), source, item["name"])


def _value_from(name: str, ref: Any, path: FieldPath, objects: Objects | None,
                unresolved: list[Unresolved] | None) -> str:
    """The value of a ``valueFrom`` variable: a ConfigMap key's value when the ConfigMap is among
    the checked files; a Secret key only by name and presence (its value is never read); else
    the reference itself, recorded as unresolved."""
    text = "valueFrom:" + json.dumps(ref, sort_keys=True)
    if not isinstance(ref, dict):
        return text
    objects = objects or Objects()
    cm, secret = ref.get("configMapKeyRef"), ref.get("secretKeyRef")
    if isinstance(cm, dict) and isinstance(cm.get("name"), str):
        data = objects.configmaps.get(cm["name"])
        if data is not None:
            key = str(cm.get("key"))
            return data[key] if key in data else f"configMapKeyRef:{cm['name']}/{key} (no such key)"
        if unresolved is not None and name.startswith("DYN_"):
            unresolved.append(Unresolved(f"env {name}", "ConfigMap", cm["name"], path, None))
    elif isinstance(secret, dict) and isinstance(secret.get("name"), str):
        keys = objects.secrets.get(secret["name"])
        key = str(secret.get("key"))
        if keys is not None:
            return f"secretKeyRef:{secret['name']}/{key} ({'present' if key in keys else 'absent'})"
        if unresolved is not None and name.startswith("DYN_"):
            # Only the variables Dynamo reads as flags (Dynamo's ``add_argument``); a token is not.
            unresolved.append(Unresolved(f"env {name}", "Secret", secret["name"], path, None))
    return text


def _env_from(main: Mapping[str, Any], path: FieldPath, objects: Objects,
              unresolved: list[Unresolved]) -> Iterator[tuple[str, Setting]]:
    """The variables ``envFrom`` brings in: each key of a ConfigMap of the checked files (with
    its prefix), a Secret's keys by presence only; an object not in the files is unresolved."""
    items = main.get("envFrom")
    if not isinstance(items, list):
        return
    for i, src in enumerate(items):
        if not isinstance(src, dict):
            continue
        prefix = str(src.get("prefix") or "")
        cm, secret = src.get("configMapRef"), src.get("secretRef")
        where = path + (i,)
        if isinstance(cm, dict) and isinstance(cm.get("name"), str):
            data = objects.configmaps.get(cm["name"])
            if data is None:
                unresolved.append(Unresolved("envFrom", "ConfigMap", cm["name"], where, None))
                continue
            for key, value in data.items():
                yield prefix + key, Setting(value, where, "env", prefix + key)
        elif isinstance(secret, dict) and isinstance(secret.get("name"), str):
            keys = objects.secrets.get(secret["name"])
            if keys is None:
                # A Secret brought in whole is credentials (the hf-token Secret of every
                # upstream example, like v1alpha1 `envFromSecret`): not reported; a `DYN_*`
                # variable taken from a Secret key is (`_value_from`).
                continue
            for key in sorted(keys):
                yield prefix + key, Setting(f"secret:{secret['name']} (present)", where, "env",
                                            prefix + key)


def _component_env(dgd: Dgd, comp: Component, objects: Objects,
                   unresolved: list[Unresolved]) -> dict[str, Setting]:
    spec = dgd.doc.get("spec", {})
    env: dict[str, Setting] = {}
    dgd_key = "envs" if dgd.version == "v1alpha1" else "env"
    env.update(_env_list(spec.get(dgd_key), ("spec", dgd_key), "dgd-env", objects, unresolved))
    node = dgd.component_doc(comp.name)
    if dgd.version == "v1alpha1":
        env.update(_env_list(node.get("envs"), comp.path + ("envs",), "env", objects,
                             unresolved))
    if comp.container_path is not None:
        main = dgd.main_container(comp.name) or {}
        # envFrom first: an explicit `env` entry wins over it, as in the kubelet.
        env.update(_env_from(main, comp.container_path + ("envFrom",), objects, unresolved))
        env.update(_env_list(main.get("env"), comp.container_path + ("env",), "env", objects,
                             unresolved))
    return env


# --------------------------------------------------------------------------- TRT-LLM engine args


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return "null" if value is None else str(value)


class _Mount(NamedTuple):
    """A ConfigMap-backed volume mounted into the main container."""

    path: str  # mountPath
    sub: str | None  # subPath
    # the ConfigMaps it projects, in order: (name, items' path → key; None: every key by its name)
    sources: tuple[tuple[str, dict[str, str] | None], ...]


def _items(items: Any) -> dict[str, str] | None:
    """A ConfigMap volume source's ``items`` (key → path in the volume), as path → key; None when
    it has none (every key is a file of its own name)."""
    if not isinstance(items, list):
        return None
    return {str(i["path"]): str(i["key"]) for i in items
            if isinstance(i, dict) and "key" in i and "path" in i}


def _mounted_configmaps(dgd: Dgd, comp: Component) -> list[_Mount]:
    """The main container's mounts of ConfigMap volumes: a ``configMap`` volume, or a
    ``projected`` one with ``configMap`` sources (Kubernetes: a projected volume merges its
    sources into one directory), each with its ``items`` mapping."""
    node = dgd.component_doc(comp.name)
    if dgd.version == "v1alpha1":
        pod = node.get("extraPodSpec") or {}
    else:
        pod = (node.get("podTemplate") or {}).get("spec") or {}
    volumes: dict[Any, tuple[tuple[str, dict[str, str] | None], ...]] = {}
    for v in pod.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        sources = [v["configMap"]] if isinstance(v.get("configMap"), dict) else []
        projected = v.get("projected")
        if isinstance(projected, dict) and isinstance(projected.get("sources"), list):
            sources += [src["configMap"] for src in projected["sources"]
                        if isinstance(src, dict) and isinstance(src.get("configMap"), dict)]
        if sources:
            volumes[v.get("name")] = tuple((str(src.get("name")), _items(src.get("items")))
                                           for src in sources)
    main = dgd.main_container(comp.name) or {}
    out = []
    for m in main.get("volumeMounts") or []:
        if isinstance(m, dict) and m.get("name") in volumes and m.get("mountPath"):
            sub = m.get("subPath")
            out.append(_Mount(str(m["mountPath"]), str(sub) if sub else None,
                              volumes[m["name"]]))
    return out


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


def mounted_file(dgd: Dgd, comp: Component, path: str,
                 configmaps: Mapping[str, Mapping[str, str]]) -> MountedFile | None:
    """The file at ``path`` when it lies in a ConfigMap volume of the main container, or None
    (a file of the image). Each source the volume projects is tried in order: the first that holds
    the file gives its text; a source whose ConfigMap is not among the checked files may be the
    one that holds it, so the file is then not seen."""
    for mount in _mounted_configmaps(dgd, comp):
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


def resolve_engine_file(dgd: Dgd, comp: Component, path: str,
                        configmaps: Mapping[str, Mapping[str, str]]) -> str | None:
    """The text of an ``--extra-engine-args`` file when it comes from a ConfigMap among the checked
    files (the TRT-LLM multinode example mounts `nvidia-config` at /workspace/)."""
    m = mounted_file(dgd, comp, path, configmaps)
    return m.text if m is not None else None


def engine_file_data(text: str, name: str) -> dict[str, Any] | None:
    """An engine-args YAML file (from a ConfigMap) as a mapping, or None when it is not one.
    Read by the one loader with limits: a bomb, a recursive alias or a custom tag in a ConfigMap
    leaves the file unresolved instead of stalling or crashing the checker."""
    from dgdgen.errors import InputError
    from dgdgen.yamlio import load_documents_fast

    try:
        docs = load_documents_fast(text, name)
    except InputError:
        return None
    data = docs[0].data if len(docs) == 1 else None
    return data if isinstance(data, dict) else None


def _engine_settings(flags: Mapping[str, Setting], raw: list[tuple[str, Setting]], dgd: Dgd,
                     comp: Component, configmaps: Mapping[str, Mapping[str, str]]
                     ) -> tuple[dict[str, Setting], bool]:
    engine: dict[str, Setting] = {}
    for flag, key in TRTLLM_CLI_ENGINE_KEYS.items():
        s = flags.get(flag)
        if s is not None:
            engine["engine:" + key] = s
    resolved = False
    file_setting = flags.get("--extra-engine-args")
    if file_setting is not None and file_setting.value:
        text = resolve_engine_file(dgd, comp, file_setting.value, configmaps)
        if text is not None:
            data = engine_file_data(text, file_setting.value)
            if data is not None:
                resolved = True
                for key, value in flatten(data):
                    engine["engine:" + key] = Setting(_scalar_text(value), file_setting.path,
                                                      "engine-file", key, file_setting.offset)
    override = flags.get("--override-engine-args")
    if override is not None:
        try:
            data = json.loads(override.value)
        except ValueError:
            data = None
        if isinstance(data, dict):
            for key, value in flatten(data):
                engine["engine:" + key] = Setting(_scalar_text(value), override.path,
                                                  "engine-override", key, override.offset)
        else:
            engine["engine:<override>"] = override
    for flag, s in raw:
        if flag.startswith("--trtllm."):
            engine["engine:" + flag[len("--trtllm."):]] = Setting(
                s.value, s.path, "engine-override", flag, s.offset)
    return engine, resolved


# --------------------------------------------------------------------------- assembly


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): _scalar_text(v) for k, v in value.items()}


def component_facts(dgd: Dgd, comp: Component,
                    configmaps: Mapping[str, Mapping[str, str]] | None = None,
                    objects: Objects | None = None) -> ComponentFacts:
    backend = comp.backend
    if backend is Backend.UNKNOWN and comp.is_worker:
        backend = dgd.backend  # `backendFramework`, or another component's module
    objects = objects or Objects(configmaps or {})
    configmaps = objects.configmaps
    unresolved: list[Unresolved] = []
    tokens, assigns, shell, (program_at, program) = _tokens(comp.command, comp.args,
                                                             comp.container_path)
    env = _component_env(dgd, comp, objects, unresolved)
    raw = [(flag, _expand(s, flag, env, shell, unresolved) if "$" in s.value else s)
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
    if names is not None and backend in _SPLIT_NAMES:
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
        m = mounted_file(dgd, comp, s.value, configmaps)
        if m is None:
            continue  # a file of the image: the image is compared
        if not m.seen:
            unresolved.append(Unresolved(f"{flag} {s.value}", "ConfigMap", m.configmap, s.path,
                                         flag))
        elif m.text is not None:
            flags[flag] = s._replace(
                value=f"{s.value} (ConfigMap {m.configmap}/{m.key} sha256:{_digest(m.text)})")
        else:
            flags[flag] = s._replace(value=f"{s.value} (not in ConfigMap {m.configmap})")
    for i, u in enumerate(unresolved):
        if u.flag is None and u.what.startswith("env "):
            unresolved[i] = u._replace(flag=env_flag(u.what[4:], backend))

    engine: dict[str, Setting] = {}
    resolved = False
    if backend is Backend.TRTLLM:
        engine, resolved = _engine_settings(flags, raw, dgd, comp, configmaps or {})

    node = dgd.component_doc(comp.name)
    if dgd.version == "v1alpha1":
        annotations = _str_map(node.get("annotations"))
        labels = _str_map((node.get("extraPodMetadata") or {}).get("labels"))
        annotations.update(_str_map((node.get("extraPodMetadata") or {}).get("annotations")))
    else:
        meta = (node.get("podTemplate") or {}).get("metadata") or {}
        annotations = _str_map(meta.get("annotations"))
        labels = _str_map(meta.get("labels"))
    rvo = node.get("runtimeVersionOverride")
    return ComponentFacts(
        name=comp.name,
        role=comp.role,
        backend=backend,
        image=comp.image,
        replicas=comp.replicas,
        node_count=comp.node_count,
        multinode=bool(node.get("multinode")),
        program=program,
        flags=flags,
        raw_flags=tuple(raw),
        env=env,
        engine=engine,
        engine_file_resolved=resolved,
        runtime_version_override=str(rvo) if rvo is not None else None,
        path=comp.path,
        container_path=comp.container_path,
        annotations=annotations,
        pod_labels=labels,
        global_namespace=comp.global_namespace,
        unresolved=tuple(unresolved),
    )


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


def _refuse_blank_names(dgd: Dgd, flags: Mapping[str, Setting], backend: Backend) -> None:
    """A model name that is only whitespace (and, where Dynamo splits served names, commas)
    names nothing: the worker would fail at start, and no client could call it. Refused at the
    value's field, where the flag's first word would otherwise be taken from nothing."""
    for key in ("--served-model-name", "--model", "--model-path"):
        s = flags.get(key)
        if s is None or not s.value:
            continue  # unset or empty: the next of the three names the model
        blank = not s.value.strip() or (key == "--served-model-name" and backend in _SPLIT_NAMES
                                        and not re.sub(r"[\s,]+", "", s.value))
        if blank:
            from dgdgen.errors import InputError  # here: 0.5 µs a component when it was above

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
        annotations=_str_map(meta.get("annotations")),
        labels=_str_map(meta.get("labels")),
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
