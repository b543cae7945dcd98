"""Every ModelDeploymentCard checksum input of the Dynamo 1.6 release, per backend: the flags
(with their alias spellings) and the ``DYN_*`` variables that feed it, and how each row is
verified.

This is data, like :mod:`dgdgen.check.flags`, and the table in docs/checker.md ("The card table")
is generated from it (``python -m dgdgen.check.docs --write docs/rules --checker-doc
docs/checker.md``; a test fails when the committed copy is stale). Tests keep it honest:

* every flag a row names for a backend is an MDC input of that backend in
  :data:`dgdgen.check.flags.MDC_INPUTS` for 1.6 (so ``dgdgen diff`` reports its change as
  ``mdc-checksum``), and every variable sets that flag (:func:`dgdgen.check.facts.env_flag`);
* every probe a row names is a probe of tests/check/test_runtime_truth.py, where the real 1.6.1
  frontend decides whether the edit changes the card;
* the router rows equal the fields the installed 1.6.1 parsers put in the RouterConfig a worker
  registers, and the variables equal the parsers' (tests/check/test_card_table.py).

The inputs, in the order ``mdcsum()`` hashes them (ai-dynamo/dynamo@01159fcc8
lib/llm/src/model_card.rs ``mdcsum()``; the 1.6.1 ``_core`` library carries the same fields and the
``dynamo/model-card/indexer-identity/v1`` tag): display_name, source_path, the checksums of
config.json, the tokenizer, tokenizer_config, the chat template file and generation_config,
extra_files, prompt_context, the effective context length, kv_cache_block_size, worker_type and
needs, a blake3 of the router_config JSON when one is advertised, indexer_identity when present,
and the aliases when there are any.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dgdgen.check.flags import KV_ROUTER_MODE, ROUTER_CONFIG_KEYS
from dgdgen.model.dgd import Backend

BACKENDS: tuple[Backend, ...] = (Backend.VLLM, Backend.SGLANG, Backend.TRTLLM)

_WHEEL = "ai-dynamo 1.6.1"
_MDCSUM = "ai-dynamo/dynamo@01159fcc8 lib/llm/src/model_card.rs mdcsum()"


@dataclass(frozen=True)
class Feed:
    """What feeds one card input on one backend."""

    # Canonical flags (as dgdgen.check.facts spells them; ``engine:<path>`` for TRT-LLM engine
    # arguments), each a card input of this backend in flags.MDC_INPUTS for 1.6.
    flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()  # the DYN_* variables that set those flags
    aliases: tuple[str, ...] = ()  # other spellings the parser accepts
    note: str = ""  # how the value reaches the card, when the flags alone do not say


@dataclass(frozen=True)
class CardInput:
    """One input of ``mdcsum()`` and what feeds it in 1.6."""

    field: str
    feeds: Mapping[Backend, Feed]
    source: str  # where 1.6.1 builds the value (file and function of the wheel)
    probes: tuple[str, ...] = ()  # tests/check/test_runtime_truth.py probes that exercise it
    # Why the mocker cannot express it (empty: it can, see probes).
    not_expressible: str = ""
    # What the probes do and do not show, when less than the row claims.
    runtime_note: str = ""
    # Flags whose change counts only with another flag's value (flags.Input.requires).
    requires: str | None = None

    def verification(self) -> str:
        parts = []
        if self.probes:
            parts.append("runtime: " + ", ".join(f"`{p}`" for p in self.probes)
                         + (f" ({self.runtime_note})" if self.runtime_note else ""))
        if self.not_expressible:
            parts.append(f"not expressible by the mocker: {self.not_expressible}")
        parts.append(f"source: {self.source}")
        return "; ".join(parts)


def _same(feed: Feed) -> dict[Backend, Feed]:
    return {b: feed for b in BACKENDS}


# The worker router flags of ai-dynamo 1.6.1 (dynamo/common/configuration/groups/router_args.py
# RouterArgGroup with include_frontend_only=False, kv_router_args.py KvRouterArgGroup), canonical
# flag → variable. The variable is the parser's `env_var` (kv_router_args.py reads
# DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT when set, else DYN_OVERLAP_SCORE_WEIGHT).
ROUTER_MODE_ENV = "DYN_ROUTER_MODE"
ROUTER_CONFIG_ENV: dict[str, str] = {
    "--router-session-affinity-ttl-secs": "DYN_ROUTER_SESSION_AFFINITY_TTL_SECS",
    "--router-session-affinity-mode": "DYN_ROUTER_SESSION_AFFINITY_MODE",
    "--active-decode-blocks-threshold": "DYN_ACTIVE_DECODE_BLOCKS_THRESHOLD",
    "--active-prefill-tokens-threshold": "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD",
    "--active-prefill-tokens-threshold-frac": "DYN_ACTIVE_PREFILL_TOKENS_THRESHOLD_FRAC",
}
KV_ROUTER_ENV: dict[str, str] = {
    "--load-aware": "DYN_ROUTER_LOAD_AWARE",
    "--router-kv-overlap-score-credit": "DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT",
    "--router-kv-overlap-score-credit-decay": "DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT_DECAY",
    "--router-kv-overlap-score-weight": "DYN_ROUTER_KV_OVERLAP_SCORE_WEIGHT",
    "--router-prefill-load-scale": "DYN_ROUTER_PREFILL_LOAD_SCALE",
    "--router-decode-active-request-weight": "DYN_ROUTER_DECODE_ACTIVE_REQUEST_WEIGHT",
    "--router-host-cache-hit-weight": "DYN_ROUTER_HOST_CACHE_HIT_WEIGHT",
    "--router-disk-cache-hit-weight": "DYN_ROUTER_DISK_CACHE_HIT_WEIGHT",
    "--router-temperature": "DYN_ROUTER_TEMPERATURE",
    "--router-kv-events": "DYN_ROUTER_USE_KV_EVENTS",
    "--router-replica-sync": "DYN_ROUTER_REPLICA_SYNC",
    "--router-track-active-blocks": "DYN_ROUTER_TRACK_ACTIVE_BLOCKS",
    "--router-track-output-blocks": "DYN_ROUTER_TRACK_OUTPUT_BLOCKS",
    "--router-assume-kv-reuse": "DYN_ROUTER_ASSUME_KV_REUSE",
    "--router-track-prefill-tokens": "DYN_ROUTER_TRACK_PREFILL_TOKENS",
    "--router-tracking-hash": "DYN_ROUTER_TRACKING_HASH",
    "--router-tracking-key-file": "DYN_ROUTER_TRACKING_KEY_FILE",
    "--router-tracking-key-id": "DYN_ROUTER_TRACKING_KEY_ID",
    "--router-prefill-load-model": "DYN_ROUTER_PREFILL_LOAD_MODEL",
    "--router-ttl-secs": "DYN_ROUTER_TTL_SECS",
    "--router-approximate-cache-policy": "DYN_ROUTER_APPROXIMATE_CACHE_POLICY",
    "--router-queue-threshold": "DYN_ROUTER_QUEUE_THRESHOLD",
    "--router-policy-config": "DYN_ROUTER_POLICY_CONFIG",
    "--router-conditional-disagg": "DYN_ROUTER_CONDITIONAL_DISAGG",
    "--router-conditional-disagg-config": "DYN_ROUTER_CONDITIONAL_DISAGG_CONFIG",
    "--router-prefill-policy": "DYN_ROUTER_PREFILL_POLICY",
    "--router-decode-policy": "DYN_ROUTER_DECODE_POLICY",
    "--router-event-threads": "DYN_ROUTER_EVENT_THREADS",
    "--router-queue-policy": "DYN_ROUTER_QUEUE_POLICY",
    "--use-remote-indexer": "DYN_USE_REMOTE_INDEXER",
    "--enable-session-prefix-index": "DYN_ENABLE_SESSION_PREFIX_INDEX",
    "--shared-cache-multiplier": "DYN_SHARED_CACHE_MULTIPLIER",
    "--shared-cache-type": "DYN_SHARED_CACHE_TYPE",
    "--router-predicted-ttl-secs": "DYN_ROUTER_PREDICTED_TTL_SECS",
}
# Old spellings the 1.6.1 router parser still accepts (`obsolete_flag`), canonicalised by
# dgdgen.check.facts._COMMON_ALIASES; a boolean flag's `--no-` form counts as the flag set false.
ROUTER_ALIASES: tuple[str, ...] = (
    "--kv-events", "--track-active-blocks", "--track-output-blocks", "--assume-kv-reuse",
    "--kv-overlap-score-weight",
)
ROUTER_ENV_ALIASES: tuple[str, ...] = ("DYN_OVERLAP_SCORE_WEIGHT",)

# The probes that give the candidate another local model directory: the mocker registers that
# directory as source_path, and the control `model-dir-copy` (the same files at another path) is
# rejected too (tests/check/test_runtime_truth.py): they show a new directory is a new card.
_DIR_NOTE = ("the candidate reads another directory, whose path the mocker registers as "
             "source_path; the same files at another path are rejected too (`model-dir-copy`), "
             "so the file contents rest on the source")

_MODEL = {
    Backend.VLLM: Feed(("--model",), note="vLLM engine argument; an object-storage URI "
                       "registers vLLM's local copy (dynamo/vllm/main.py "
                       "_register_model_source_path)"),
    Backend.SGLANG: Feed(("--model-path",), aliases=("--model",),
                         note="SGLang engine argument (dynamo/sglang/register.py)"),
    Backend.TRTLLM: Feed(("--model",), ("DYN_TRTLLM_MODEL",), aliases=("--model-path",)),
}
_FILES = {
    Backend.VLLM: Feed(("--model", "--revision", "--tokenizer"),
                       note="the files of the model directory the flags name"),
    Backend.SGLANG: Feed(("--model-path", "--revision", "--tokenizer-path"),
                         aliases=("--model", "--tokenizer"),
                         note="the files of the model directory the flags name"),
    Backend.TRTLLM: Feed(("--model", "--revision"), ("DYN_TRTLLM_MODEL", "DYN_TRTLLM_REVISION"),
                         aliases=("--model-path",),
                         note="the files of the model directory the flags name"),
}

CARD_INPUTS: tuple[CardInput, ...] = (
    CardInput(
        "display_name (the served model name)",
        {Backend.VLLM: Feed(("--served-model-name",), note="the first name (nargs=\"+\", "
                            "names also split on commas and spaces); unset: the model path"),
         Backend.SGLANG: Feed(("--served-model-name",), note="the first name of the string; "
                              "unset: the model path"),
         Backend.TRTLLM: Feed(("--served-model-name",), ("DYN_TRTLLM_SERVED_MODEL_NAME",),
                              note="unset: the model path")},
        f"{_WHEEL} dynamo/vllm/args.py, dynamo/sglang/args.py (split_served_model_names), "
        "dynamo/trtllm/backend_args.py; register_model(model_name)",
        probes=("served-model-name",)),
    CardInput("source_path", _MODEL,
              f"{_WHEEL} register_model(model_path) in dynamo/vllm/main.py "
              "register_vllm_model, dynamo/sglang/register.py, dynamo/trtllm/workers/"
              "llm_worker.py", probes=("model-dir",), runtime_note=_DIR_NOTE),
    CardInput("checksums of config.json, tokenizer, tokenizer_config, generation_config",
              _FILES, f"{_MDCSUM} (the files' checksums, wherever they are)",
              probes=("model-dir",), runtime_note=_DIR_NOTE),
    CardInput("chat template file checksum",
              _same(Feed(("--custom-jinja-template",), ("DYN_CUSTOM_JINJA_TEMPLATE",),
                         note="unset: the model's own template")),
              f"{_WHEEL} dynamo/common/configuration/groups/runtime_args.py "
              "DynamoRuntimeArgGroup; register_model(custom_template_path)",
              probes=("chat-template",), runtime_note=_DIR_NOTE),
    CardInput("extra_files (sorted name and checksum of every other non-weight file)", _FILES,
              "ai-dynamo/dynamo@01159fcc8 lib/llm/src/local_model.rs harvest_extra_files "
              "(every regular file of the model directory but weights, dotfiles, README and "
              "the typed files); the 1.6.1 _core library harvests them",
              probes=("revision-extra-file",), runtime_note=_DIR_NOTE),
    CardInput("prompt_context", _same(Feed(note="no worker flag or variable: not a parameter "
                                           "of register_model")),
              f"{_WHEEL} _core.pyi register_model"),
    CardInput(
        "effective context length",
        {Backend.VLLM: Feed(("--max-model-len",), note="unset: vLLM derives it from "
                            "config.json (handlers: context_length = model_max_len)"),
         Backend.SGLANG: Feed(("--context-length",), note="unset: the card's architectural "
                              "maximum from config.json"),
         Backend.TRTLLM: Feed(("--max-seq-len", "engine:max_seq_len"),
                              ("DYN_TRTLLM_MAX_SEQ_LEN",),
                              note="the effective engine max_seq_len (CLI, engine YAML, "
                              "overrides); unset: deduced from the model config")},
        f"{_WHEEL} dynamo/vllm/main.py register_vllm_model, dynamo/sglang/register.py, "
        "dynamo/trtllm/workers/llm_worker.py",
        probes=("max-model-len", "sglang-context-length", "trtllm-max-seq-len")),
    CardInput(
        "kv_cache_block_size",
        {Backend.VLLM: Feed(("--block-size",), note="the engine's KV-event block size"),
         Backend.SGLANG: Feed(("--page-size", "--dcp-size"),
                              aliases=("--decode-context-parallel-size",),
                              note="page size x decode context parallel size"),
         Backend.TRTLLM: Feed(("engine:kv_cache_config.tokens_per_block",),
                              note="the block size the engine reports; --kv-block-size is an "
                              "unused fallback since #12023")},
        f"{_WHEEL} dynamo/vllm/main.py (kv_event_block_size), dynamo/sglang/register.py "
        "kv_event_block_size, dynamo/trtllm/workers/llm_worker.py "
        "_populate_kv_cache_capacity",
        probes=("block-size", "sglang-page-size", "trtllm-tokens-per-block")),
    CardInput(
        "worker_type and needs",
        {Backend.VLLM: Feed(("--disaggregation-mode", "--route-to-encoder"),
                            ("DYN_VLLM_DISAGGREGATION_MODE", "DYN_VLLM_ROUTE_TO_ENCODER"),
                            note="agg / pd (unset: agg) → Aggregated, prefill → Prefill "
                            "needing Decode, decode → Decode needing Prefill, encode → Encode; "
                            "--route-to-encoder adds Encode to the needs"),
         Backend.SGLANG: Feed(("--disaggregation-mode", "--dedicated-mm-encoder"),
                              ("DYN_SGL_DEDICATED_MM_ENCODER",),
                              note="SGLang's --disaggregation-mode (null / agg / pd → "
                              "Aggregated, prefill, decode; encode → Encode); "
                              "--dedicated-mm-encoder with pd needs an Encode peer"),
         Backend.TRTLLM: Feed(("--disaggregation-mode", "--encode-endpoint"),
                              ("DYN_TRTLLM_DISAGGREGATION_MODE", "DYN_TRTLLM_ENCODE_ENDPOINT"),
                              note="as vLLM; --encode-endpoint adds Encode to the needs")},
        f"{_WHEEL} dynamo/vllm/worker_factory.py (_create_decode_worker, "
        "_create_prefill_worker, _create_multimodal_encode_worker), dynamo/sglang/init_llm.py, "
        "init_multimodal.py, dynamo/trtllm/workers/llm_worker.py; the DGD role "
        "(subComponentType) too",
        not_expressible="a prefill or decode worker alone is not servable (its needs name a "
        "peer), so the request-based verdict cannot be read, and the mocker has no encode mode"),
    CardInput(
        "router_config: mode, busy thresholds, session affinity",
        _same(Feed(("--router-mode", *ROUTER_CONFIG_KEYS),
                   (ROUTER_MODE_ENV, *ROUTER_CONFIG_ENV.values()),
                   note="any worker --router-mode; unset: no router_config on the card")),
        f"{_WHEEL} dynamo/common/configuration/groups/router_args.py build_router_config "
        "(RouterConfig(mode, …, **router_kwargs()))",
        probes=("router-mode-kv", "router-mode-round-robin", "router-threshold-with-round-robin",
                "router-affinity-with-round-robin"),
        requires="--router-mode"),
    CardInput(
        "router_config.kv_router_config",
        _same(Feed(tuple(KV_ROUTER_ENV), (*KV_ROUTER_ENV.values(), *ROUTER_ENV_ALIASES),
                   ROUTER_ALIASES,
                   note="only with a worker --router-mode kv")),
        f"{_WHEEL} router_args.py build_router_config (KvRouterConfig only for mode kv), "
        "kv_router_args.py kv_router_kwargs",
        probes=("router-kv-flag-with-kv", "kv-events-alias-with-mode",
                "router-kv-flag-with-round-robin", "router-flag-without-mode",
                "kv-events-alias-without-mode"),
        requires=KV_ROUTER_MODE),
    CardInput("indexer_identity", _same(Feed(note="no worker flag or variable sets it: absent "
                                             "from every 1.6.1 worker's card")),
              f"{_WHEEL} _core.pyi register_model (no such parameter); no module of the wheel "
              "names it"),
    CardInput(
        "aliases (the extra served names)",
        {Backend.VLLM: Feed(("--served-model-name",), note="every name after the first"),
         Backend.SGLANG: Feed(("--served-model-name",), note="every name after the first of "
                              "the string (commas or spaces)"),
         Backend.TRTLLM: Feed(note="not passed: TRT-LLM registers no aliases")},
        f"{_WHEEL} dynamo/common/configuration/utils.py split_served_model_names; "
        "register_model(model_aliases) in dynamo/vllm/main.py, dynamo/sglang/register.py",
        not_expressible="the mocker registers one served name (its EntrypointArgs take no "
        "aliases)"),
)


def _cell(feed: Feed | None) -> str:
    if feed is None:
        return "—"
    parts = []
    if feed.flags:
        parts.append(", ".join(f"`{f.removeprefix('engine:')}`" if not f.startswith("engine:")
                               else f"engine `{f.removeprefix('engine:')}`"
                               for f in feed.flags))
    if feed.aliases:
        parts.append("also " + ", ".join(f"`{a}`" for a in feed.aliases))
    if feed.env:
        parts.append("env " + ", ".join(f"`{e}`" for e in feed.env))
    if feed.note:
        parts.append(feed.note)
    return "; ".join(parts) if parts else "—"


BEGIN = ("<!-- card-table: generated by `python -m dgdgen.check.docs --checker-doc "
         "docs/checker.md` from dgdgen/check/cardtable.py; do not edit. -->")
END = "<!-- /card-table -->"


def markdown() -> str:
    """The card table of docs/checker.md, between its markers."""
    lines = [BEGIN, "",
             "| card input | vLLM | SGLang | TRT-LLM | verified |",
             "| --- | --- | --- | --- | --- |"]
    for row in CARD_INPUTS:
        first = row.feeds.get(BACKENDS[0])
        cells = [_cell(first)] + [
            "same" if row.feeds.get(b) == first else _cell(row.feeds.get(b))
            for b in BACKENDS[1:]]
        lines.append(f"| {row.field} | {' | '.join(cells)} | {row.verification()} |")
    lines += ["", END]
    return "\n".join(lines)


def with_table(doc: str) -> str:
    """``doc`` with its card table replaced by the generated one (ValueError: no markers)."""
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise ValueError("docs/checker.md has no card-table markers")
    return doc[:start] + markdown() + doc[end + len(END):]
