"""The main process's command line, as the checker reads it.

Splits the container's ``command`` + ``args`` into words (a YAML list, list elements holding
several words, or one ``sh -c`` / ``bash -c`` script), picks the shell segment that runs the
Dynamo program, expands ``$(VAR)`` (the kubelet) and ``$VAR`` / ``${VAR:-default}`` (a shell) from
the container's environment, and parses ``--flag=value`` / ``--flag value`` / multi-valued and
bare flags into :class:`Setting` values. Flag spellings are made canonical per backend
(:func:`canonical_flag`), and ``DYN_*`` variables are mapped to the flag they set
(:func:`env_flag`, Dynamo's ``add_argument``).

Every word keeps the field path (and the offset inside a shell string) it came from, so a
finding can point at the line.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import NamedTuple

from dgdgen.model.dgd import Backend
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
SPLIT_NAMES = frozenset({Backend.VLLM, Backend.SGLANG})
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


class Unresolved(NamedTuple):
    """A value the worker reads from an object that is not among the checked files."""

    what: str  # `env DYN_X`, `envFrom`, `--custom-jinja-template /etc/t/chat.jinja`
    kind: str  # ConfigMap / Secret
    name: str
    path: FieldPath
    flag: str | None  # the flag it sets, when known


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


def command_tokens(command: tuple[str, ...], args: tuple[str, ...],
                   container_path: FieldPath | None
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


def expand_vars(s: Setting, flag: str, env: Mapping[str, Setting], shell: bool,
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
    """(kind, name) of the ConfigMap or Secret an env value still refers to (the reference
    itself, ``valueFrom:<JSON>``, is the value :mod:`dgdgen.check.podenv` leaves when the object
    is not among the checked files), else None."""
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
