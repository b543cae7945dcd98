"""The checker's flag tables, as the admission policy needs them: per release, which flag
spellings (as the policy's CEL normalises them: ``--flag=value``) feed the ModelDeploymentCard
checksum (DGD201) or the KV-transfer contract of a disaggregated graph (DGD202), for which
backends.

One source of truth: everything here is read from :mod:`dgdgen.check.flags` (the tables and
their ``applies`` predicate) and :mod:`dgdgen.check.facts` (aliases, shells) at generation time,
never copied, so a table change reaches the policy with the next ``dgdgen policy`` run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dgdgen.check import facts as check_facts
from dgdgen.check import flags as check_flags
from dgdgen.check.flags import Category, Input
from dgdgen.dgd import Backend

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


def release(value: str | None) -> str:
    """The release of the checker's tables (``normalize_release``: unknown → InputError)."""
    return check_flags.normalize_release(value)


def env_prefixes() -> dict[str, str]:
    """Backend → the prefix of its own ``DYN_<BACKEND>_*`` variables (facts.env_flag)."""
    return {BACKEND_NAMES[b]: p for b, p in sorted(check_facts._BACKEND_ENV_PREFIX.items())}


def aliases() -> dict[str, dict[str, str]]:
    """Backend → alias → canonical flag, as :func:`dgdgen.check.facts.canonical_flag` uses."""
    return {BACKEND_NAMES[b]: dict(sorted(m.items()))
            for b, m in check_facts._ALIASES.items() if m}


def shells() -> tuple[str, ...]:
    """Shell program names the checker reads ``-c`` scripts of, with their usual paths."""
    names = sorted(check_facts.SHELLS)
    return tuple(f"{d}{n}" for d in ("", "/bin/", "/usr/bin/", "/usr/local/bin/") for n in names)


def _matches(key: str) -> tuple[Match, ...]:
    """The policy's matches for one table key (see :class:`Match`)."""
    if not key.startswith("engine:"):
        if key.endswith("*"):
            return (Match(key[:-1], key),)
        return (Match(key + "=", key),)
    # TRT-LLM engine keys: the CLI flags that set them (facts §3.3), `--trtllm.<path>` overrides
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
            out.append(Key(entry.category, key, entry.what, backends, _matches(key)))
    return out


def keys(rel: str) -> list[Key]:
    """Every MDC and KV key of release ``rel``, in table order. The unknown engine-file entry
    stands for a changed ``--extra-engine-args`` path (its contents are not visible in CEL)."""
    mdc = _resolve(check_flags.MDC_INPUTS + (check_flags.UNKNOWN_ENGINE_FILE_MDC,), rel)
    kv = _resolve(check_flags.KV_INPUTS, rel)
    return mdc + kv
