"""The checker's flag tables, as the admission policy needs them: per release, which flag
spellings (as the policy's CEL normalises them: ``--flag=value``) feed the ModelDeploymentCard
checksum (DGD201) or the KV-transfer contract of a disaggregated graph (DGD202), for which
backends.

One source of truth: everything here is read from :mod:`dgdgen.check.flags` (the tables and
their ``applies`` predicate) and :mod:`dgdgen.check.cmdline` (aliases, shells) at generation time,
never copied, so a table change reaches the policy with the next ``dgdgen policy`` run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dgdgen.check import cmdline
from dgdgen.check import flags as check_flags
from dgdgen.check.classify import SERVED_NAME_DEFAULT_CITE
from dgdgen.check.flags import Category, Input
from dgdgen.model.dgd import Backend

# The backends the policy tells apart ("" = a component whose program is not a Dynamo backend
# and whose DGD names none: the checker's Backend.UNKNOWN).
BACKEND_NAMES: dict[Backend, str] = {
    Backend.VLLM: "vllm", Backend.SGLANG: "sglang", Backend.TRTLLM: "trtllm", Backend.UNKNOWN: "",
}


@dataclass(frozen=True)
class Match:
    """How the policy recognises one table key in a component's normalised flags."""

    prefix: str  # a normalised flag entry starting with this (`--block-size=`, `--router-`)
    label: str  # the flag as the message names it
    mention: str | None = None  # `--override-engine-args` JSON mentioning this key


@dataclass(frozen=True)
class Key:
    """One table key, resolved for one release: its matches, category and backends."""

    category: Category
    label: str  # the table key, e.g. `--block-size`, `engine:max_seq_len`, `--router-*`
    what: str  # what it feeds, from the table
    backends: tuple[str, ...]  # policy backend names it applies to
    matches: tuple[Match, ...]
    # counts only when this flag is set (not to false) on either side, or, as `flag=value`,
    # set to that value (Input.requires: the worker router flags of 1.6 reach the card only
    # with a worker --router-mode, the KV router flags only with --router-mode kv)
    requires: str | None = None
    # counts only when set on both sides (Input.derived_from: between unset and a value the
    # checker assumes a change, DGD205, which the policy does not deny: it cannot read the
    # model's files that settle it)
    both_sides: bool = False
    # backends whose worker, without the flag, uses the value of the model flag (`--model` /
    # `--model-path`): setting it to exactly that value, the model unchanged, is no change
    # (classify.py SERVED_NAME_DEFAULT_CITE)
    model_default: tuple[str, ...] = ()
    # the value the engine uses when the flag is unset (Input.defaults): set on one side only
    # to exactly this value, nothing changes
    default: str | None = None


def release(value: str | None) -> str:
    """The release of the checker's tables (``normalize_release``: unknown → InputError)."""
    return check_flags.normalize_release(value)


def env_prefixes() -> dict[str, list[str]]:
    """Backend → the prefixes of its own ``DYN_<BACKEND>_*`` variables, in the order
    :func:`dgdgen.check.cmdline.env_flag` tries them (SGLang: ``SGLANG_``, ``SGL_``)."""
    return {BACKEND_NAMES[b]: list(p) for b, p in sorted(cmdline._BACKEND_ENV_PREFIX.items())}


def env_flags() -> dict[str, str]:
    """Variables whose name is not ``DYN_`` + the flag (cmdline ``_ENV_FLAGS``)."""
    return dict(sorted(cmdline._ENV_FLAGS.items()))


def aliases() -> dict[str, dict[str, str]]:
    """Backend → spelling → canonical flag, exactly as :func:`dgdgen.check.cmdline.canonical_flag`
    maps a ``--``-dashed spelling: the aliases every process accepts, then the backend's own."""
    out: dict[str, dict[str, str]] = {}
    common = cmdline._COMMON_ALIASES
    for backend, name in BACKEND_NAMES.items():
        own = cmdline._ALIASES.get(backend, {})
        mapping = {k: cmdline.canonical_flag(k, backend) for k in sorted({*common, *own})}
        mapping = {k: v for k, v in mapping.items() if k != v}
        if mapping:
            out[name] = mapping
    return out


def multi_valued() -> dict[str, list[str]]:
    """Backend → the spellings (after ``_`` → ``-``) of its multi-valued flags (cmdline ``_MULTI``:
    the words after them up to the next flag are their values, joined by one space)."""
    al = aliases()
    out: dict[str, list[str]] = {}
    for backend, name in BACKEND_NAMES.items():
        flags = cmdline._MULTI.get(backend, frozenset())
        spellings = set(flags) | {k for k, v in al.get(name, {}).items() if v in flags}
        if spellings:
            out[name] = sorted(spellings)
    return out


def split_names() -> list[str]:
    """Backends whose ``--served-model-name`` splits into the served name and aliases (cmdline
    ``SPLIT_NAMES``); the aliases are the table key :data:`dgdgen.check.flags.ALIASES_KEY`."""
    return sorted(BACKEND_NAMES[b] for b in cmdline.SPLIT_NAMES)


ALIASES_KEY = check_flags.ALIASES_KEY
SERVED_NAME = "--served-model-name"


def shells() -> tuple[str, ...]:
    """Shell program names the checker reads ``-c`` scripts of, with their usual paths."""
    names = sorted(cmdline.SHELLS)
    return tuple(f"{d}{n}" for d in ("", "/bin/", "/usr/bin/", "/usr/local/bin/") for n in names)


def _matches(key: str) -> tuple[Match, ...]:
    """The policy's matches for one table key (see :class:`Match`)."""
    if not key.startswith("engine:"):
        if key.endswith("*"):
            return (Match(key[:-1], key),)
        return (Match(key + "=", key),)
    # TRT-LLM engine keys: the CLI flags that set them (llm_worker.py), `--trtllm.<path>` overrides
    # and `--override-engine-args` JSON that mentions the key. Keys of an engine file are out of
    # the policy's reach (docs/policy.md, known divergences).
    engine_key = key[len("engine:"):]
    wildcard = engine_key.endswith(".*")
    base = engine_key[:-2] if wildcard else engine_key
    out: list[Match] = []
    for flag, ekey in sorted(check_flags.TRTLLM_CLI_ENGINE_KEYS.items()):
        hit = ekey.startswith(base + ".") if wildcard else ekey == base
        if hit and "engine:" + ekey not in check_flags.SAFE_KEYS:
            out.append(Match(flag + "=", flag))
    out.append(Match("--trtllm." + base + ("." if wildcard else "="), "--trtllm." + engine_key))
    out.append(Match("--override-engine-args=", "--override-engine-args",
                     mention='"' + base.rsplit(".", 1)[-1] + '"'))
    return tuple(out)


def _resolve(entries: Iterable[Input], rel: str) -> list[Key]:
    out: list[Key] = []
    for entry in entries:
        backends = tuple(BACKEND_NAMES[b] for b in Backend if entry.applies(b, rel))
        if not backends:
            continue
        for key in entry.keys:
            defaults = tuple(BACKEND_NAMES[b] for b in Backend if b in SERVED_NAME_DEFAULT_CITE
                             and entry.applies(b, rel)) if key == SERVED_NAME else ()
            out.append(Key(entry.category, key, entry.what, backends, _matches(key),
                           entry.requires, entry.derived_from is not None, defaults,
                           entry.default_of(key)))
    return out


def keys(rel: str) -> list[Key]:
    """Every MDC and KV key of release ``rel``, in table order. The unknown engine-file entry
    stands for a changed ``--extra-engine-args`` path (its contents are not visible in CEL)."""
    mdc = _resolve(check_flags.MDC_INPUTS + (check_flags.UNKNOWN_ENGINE_FILE_MDC,), rel)
    kv = _resolve(check_flags.KV_INPUTS, rel)
    return mdc + kv
