"""Which backend flags feed the ModelDeploymentCard checksum and which change the KV-transfer
contract, per backend and per Dynamo release.

This is data, kept next to its sources: every entry cites its upstream source (ai-dynamo/dynamo
files, the 1.6.1 parsers, a runtime test) and the upstream PR that made it true. Keys are
canonical flag names (see :func:`dgdgen.check.cmdline.canonical_flag`), ``--prefix-*`` wildcards,
or ``engine:<dotted.path>`` for TRT-LLM engine arguments (the effective value after
``--extra-engine-args`` / ``--override-engine-args`` / ``--trtllm.<path>``).

Releases. The facts pin behaviour to upstream PRs and dates; the table maps them onto releases:

* ``1.6`` — 1.6.0 and 1.6.1: observed on the real runtime (docs/checker.md, "Checksum inputs"; the
  PyPI wheels ``ai-dynamo==1.6.1`` / ``ai-dynamo-runtime==1.6.1``) and pinned by the
  runtime-backed tests (``tests/check/test_runtime_truth.py``). The newest known release and the
  default target.
* ``1.5`` — upstream main as of 2026-08-21 (version 1.5.0-dev): the newest the source facts cover.
* ``1.4`` — branched before 2026-08-08: #12890 (2026-08-08) and #12769 (2026-08-19) are "1.5.0,
  not 1.4.0" (upstream #13137, #14215); PRs of July 2026 (#12023, #12089, worker router flags and
  worker type entering the checksum) are in it.
* ``1.3`` — older releases, after the February 2026 flag changes (#6450, #6483) and before the
  July 2026 checksum changes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import lru_cache

from dgdgen.errors import InputError
from dgdgen.model.dgd import Backend

# The key under which dgdgen.check.facts keeps the extra served model names (card `aliases`).
ALIASES_KEY = "--served-model-name:aliases"

RELEASES: tuple[str, ...] = ("1.3", "1.4", "1.5", "1.6")
NEWEST = RELEASES[-1]

class Category(str, enum.Enum):
    """What a base → head change of a component breaks when applied in place."""

    MDC = "mdc-checksum"  # an input of the ModelDeploymentCard checksum changes
    KV = "kv-transfer"  # KV transfer or KV layout changes in a disaggregated DGD
    RUNTIME = "runtime-version"  # a worker or frontend image (runtime) changes
    SAFE = "safe"

    @property
    def demands_isolation(self) -> bool:
        return self is not Category.SAFE


ALL = frozenset({Backend.VLLM, Backend.SGLANG, Backend.TRTLLM, Backend.UNKNOWN})
VLLM = frozenset({Backend.VLLM})
SGLANG = frozenset({Backend.SGLANG})
TRTLLM = frozenset({Backend.TRTLLM})


@dataclass(frozen=True)
class Input:
    """One flag (or family of flags) and what it feeds."""

    keys: tuple[str, ...]
    category: Category
    what: str  # the MDC field or KV aspect it sets, for messages
    backends: frozenset[Backend]
    cite: str
    since: str | None = None  # first release it applies to (None: every release covered)
    until: str | None = None  # first release it no longer applies to
    # Counts only when this flag is set (base or head) on the worker, e.g. the worker router
    # flags reach the card only with a worker-side --router-mode; `flag=value` when only that
    # value counts (the KV router flags: --router-mode=kv).
    requires: str | None = None
    # Where the engine takes the value from when the flag is unset, when that is the model's own
    # files (config.json): a change between unset and a value may or may not change the input,
    # so it is assumed to (fail safe, DGD205) unless the model's files, given with
    # --model-config, settle it (dgdgen.check.modelconfig). A change between two values is a
    # change.
    derived_from: str | None = None
    # (flag, value) pairs: the value the engine uses when the flag is unset, fixed by its parser
    # whatever the model or the platform (read in the pinned engine releases, PARSER_DEFAULTS).
    # Between unset and exactly that value nothing changes: a safe change, not an input change.
    defaults: tuple[tuple[str, str], ...] = ()

    def default_of(self, key: str) -> str | None:
        return next((v for k, v in self.defaults if k == key), None)

    def applies(self, backend: Backend, release: str) -> bool:
        if backend not in self.backends:
            return False
        r = release_key(release)
        if self.since is not None and r < release_key(self.since):
            return False
        return self.until is None or r < release_key(self.until)


@lru_cache(maxsize=64)
def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def normalize_release(value: str | None) -> str:
    """``1.6``, ``1.6.1``, ``v1.4.1`` → a release of :data:`RELEASES`; unknown → InputError."""
    if value is None:
        return NEWEST
    text = value.strip().lstrip("vV")
    parts = text.split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].split("-")[0].isdigit():
        major_minor = f"{int(parts[0])}.{int(parts[1].split('-')[0])}"
        if major_minor in RELEASES:
            return major_minor
    raise InputError(
        f"unknown Dynamo version {value!r}",
        hint=f"the flag tables cover {', '.join(RELEASES)}; the default is {NEWEST}",
    )


# --------------------------------------------------------------------------- MDC inputs
# ai-dynamo/dynamo main 2a6da14c8: `lib/llm/src/model_card.rs` `mdcsum()` and the flag → field map
# in components/src/dynamo/{vllm/main.py,sglang/register.py,trtllm/workers/llm_worker.py}.

_CARD = ("ai-dynamo/dynamo@2a6da14c8 lib/llm/src/model_card.rs mdcsum(), "
         "components/src/dynamo/{vllm,sglang,trtllm}")

_MODEL_CONFIG = "the model's config.json (its maximum context length)"
_MODEL_DTYPE = "the model's config.json (its torch_dtype)"

# The worker-side router flags (ai-dynamo 1.6.1 `add_worker_router_arguments`: RouterArgGroup +
# KvRouterArgGroup; alias spellings are canonicalised by dgdgen.check.cmdline).
_ROUTER_KEYS: tuple[str, ...] = (
    "--router-*", "--router-mode", "--router-kv-events", "--active-decode-blocks-threshold",
    "--active-prefill-tokens-threshold", "--active-prefill-tokens-threshold-frac",
    "--load-aware", "--use-remote-indexer", "--enable-session-prefix-index",
    "--shared-cache-multiplier", "--shared-cache-type",
)
# 1.6: what a worker's --router-mode puts on its card. ai-dynamo 1.6.1
# dynamo/common/configuration/groups/router_args.py `build_router_config` registers
# `RouterConfig(mode, kv_router_config, **router_kwargs())`: `router_kwargs()` (`_ROUTER_FIELDS`)
# carries these five fields in every mode...
ROUTER_CONFIG_KEYS: tuple[str, ...] = (
    "--router-session-affinity-ttl-secs", "--router-session-affinity-mode",
    "--active-decode-blocks-threshold", "--active-prefill-tokens-threshold",
    "--active-prefill-tokens-threshold-frac",
)
# ... and `kv_router_config` is built from the KV router flags (kv_router_args.py
# `kv_router_kwargs()`, `_KV_ROUTER_FIELDS`, after the `--load-aware` preset, the conditional
# disaggregation config and the `--router-policy-config` YAML are applied) only when the mode is
# `kv`: "Only KV routing consults KvRouterConfig; passing it for other modes would imply tuning
# that is never read." Every other worker router flag is one of these.
KV_ROUTER_MODE = "--router-mode=kv"
_ROUTER_CITE_16 = ("ai-dynamo 1.6.1 dynamo/common/configuration/groups/router_args.py "
                   "build_router_config; tests/check/test_runtime_truth.py")

MDC_INPUTS: tuple[Input, ...] = (
    Input(("--served-model-name",), Category.MDC, "display_name", ALL, _CARD),
    # The extra served names (vLLM nargs="+", or packed with commas / spaces; split by
    # dynamo/common/configuration/utils.py split_served_model_names in ai-dynamo 1.6.1) are the
    # card's `aliases`, hashed since Aug 2026 (lib/llm/src/model_card.rs `mdcsum()`).
    Input((ALIASES_KEY,), Category.MDC, "aliases (extra served model names)", VLLM | SGLANG,
          "ai-dynamo/dynamo@2a6da14c8 lib/llm/src/model_card.rs (aliases)", since="1.5"),
    # The model id names the files whose contents are hashed (config, tokenizer,
    # tokenizer_config, generation_config) and `source_path` (model_card.rs `mdcsum()`).
    Input(("--model",), Category.MDC, "source_path and model file checksums",
          VLLM | TRTLLM, _CARD),
    Input(("--model-path",), Category.MDC, "source_path and model file checksums",
          SGLANG, _CARD),
    # Dynamo's hub download has no revision support (lib/llm/src/hub.rs), so a revision or
    # tokenizer reaches the card only through the file contents it hashes (model_card.rs):
    # treated as a checksum input because the files can differ.
    Input(("--revision", "--tokenizer", "--tokenizer-path"), Category.MDC,
          "model file checksums (through downloaded file contents)", ALL, _CARD),
    Input(("--custom-jinja-template",), Category.MDC, "chat_template_file checksum", ALL, _CARD),
    # Context length: unset, each engine derives it from the model's config.json, and the card
    # takes the engine's value (ai-dynamo 1.6.1 dynamo/vllm/handlers.py: `context_length =
    # self.model_max_len`, vLLM's ModelConfig.max_model_len; dynamo/sglang/register.py:
    # `context_length = server_args.context_length`, None → the card's architectural maximum
    # from config.json, lib/llm/src/model_card.rs effective_context_length(); dynamo/trtllm/
    # backend_args.py --max-seq-len: "If unspecified, the value is deduced from the model
    # config").
    Input(("--max-model-len",), Category.MDC, "context_length", VLLM, _CARD,
          derived_from=_MODEL_CONFIG),
    Input(("--context-length",), Category.MDC, "context_length", SGLANG, _CARD,
          derived_from=_MODEL_CONFIG),
    Input(("--max-seq-len", "engine:max_seq_len"), Category.MDC, "context_length", TRTLLM,
          _CARD, derived_from=_MODEL_CONFIG),
    Input(("--block-size",), Category.MDC, "kv_cache_block_size", VLLM, _CARD),
    Input(("--page-size", "--dcp-size"), Category.MDC, "kv_cache_block_size (page size x dcp)",
          SGLANG, _CARD, defaults=(("--dcp-size", "1"),)),
    # TRT-LLM: since #12023 (2026-07-22) the card takes the block size the engine reports and
    # --kv-block-size is only a fallback that is not passed to the engine (ai-dynamo 1.6.1
    # dynamo/trtllm/workers/llm_worker.py `_populate_kv_cache_capacity`).
    Input(("--kv-block-size",), Category.MDC, "kv_cache_block_size", TRTLLM, _CARD,
          until="1.4"),
    Input(("engine:kv_cache_config.tokens_per_block",), Category.MDC,
          "kv_cache_block_size (reported by the engine, #12023)", TRTLLM,
          "upstream #12023", since="1.4"),
    # worker_type / needs and the worker router config entered the checksum by July 2026
    # (ai-dynamo/dynamo@2a6da14c8 lib/llm/src/model_card.rs history).
    Input(("--disaggregation-mode", "--is-prefill-worker"), Category.MDC, "worker_type / needs",
          ALL, _CARD, since="1.4", until="1.6"),
    # 1.6: unset, every backend registers an aggregated worker, as with `agg` (ai-dynamo 1.6.1
    # dynamo/vllm/backend_args.py `_resolve_disaggregation_mode`, dynamo/trtllm/backend_args.py
    # default "agg", dynamo/sglang/args.py `_set_serving_strategy`: SGLang's "null").
    Input(("--disaggregation-mode", "--is-prefill-worker"), Category.MDC, "worker_type / needs",
          ALL, "ai-dynamo 1.6.1 dynamo/{vllm,sglang,trtllm} register_model(worker_type, needs)",
          since="1.6", defaults=(("--disaggregation-mode", "agg"),)),
    Input(("--route-to-encoder",), Category.MDC, "needs", VLLM, _CARD, since="1.4"),
    Input(("--encode-endpoint",), Category.MDC, "needs", TRTLLM, _CARD, since="1.4"),
    # SGLang: a worker fed by a dedicated encode worker registers needs [[Encode]] when
    # aggregated (`pd`) (ai-dynamo 1.6.1 dynamo/sglang/args.py
    # `_normalize_multimodal_disaggregation_args` → multimodal_worker,
    # dynamo/sglang/init_multimodal.py `init_multimodal_worker`).
    Input(("--dedicated-mm-encoder",), Category.MDC, "needs (an encode peer)", SGLANG,
          "ai-dynamo 1.6.1 dynamo/sglang/init_multimodal.py init_multimodal_worker",
          since="1.6"),
    Input(_ROUTER_KEYS, Category.MDC, "router_config", ALL, _CARD, since="1.4", until="1.6"),
    # 1.6: the card carries router_config only when the worker sets --router-mode
    # (dynamo/common/configuration/groups/router_args.py build_router_config: "None means no
    # mode was requested, leaving router_config off the card"); runtime-verified for
    # --router-mode kv (tests/check/test_runtime_truth.py).
    Input(("--router-mode",), Category.MDC, "router_config", ALL,
          "ai-dynamo 1.6.1 router_args.py; tests/check/test_runtime_truth.py", since="1.6"),
    # Before the wildcard below: the first entry a key matches is the one that counts.
    Input(ROUTER_CONFIG_KEYS, Category.MDC, "router_config (with a worker --router-mode)", ALL,
          _ROUTER_CITE_16, since="1.6", requires="--router-mode"),
    Input(_ROUTER_KEYS, Category.MDC, "router_config.kv_router_config (with a worker "
          "--router-mode kv)", ALL, _ROUTER_CITE_16, since="1.6", requires=KV_ROUTER_MODE),
)

# --------------------------------------------------------------------------- KV transfer
# ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/{vllm,sglang}/args.py,
# trtllm/backend_args.py. Only meaningful for workers of a disaggregated DGD: old decode workers
# must be able to take KV blocks from new prefill workers (docs/checker.md, "What is compared").

_KV = "ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/{vllm,sglang,trtllm} (KV-transfer flags)"
# vLLM's NIXL handshake, read in the vllm 0.31.0 wheel from PyPI (the version ai-dynamo 1.6.1
# pins in its [vllm] extra).
_NIXL = ("vllm-project/vllm 0.31.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
         "compute_nixl_compatibility_hash; ai-dynamo 1.6.1 pins vllm==0.31.0")
_NIXL_HANDSHAKE = ("vllm-project/vllm 0.31.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/"
                   "base_worker.py _validate_remote_agent_handshake; ai-dynamo 1.6.1 pins "
                   "vllm==0.31.0")

# SGLang's decode worker fetches the prefill worker's registration from its bootstrap server and
# refuses a peer whose page size or KV cache dtype is not its own (the dtype string the runner
# resolved: the `--kv-cache-dtype` value as given, so `auto`, `bf16` and `bfloat16` all differ,
# except where a quantized checkpoint resolves `auto` to an FP8 name); the decode
# pipeline-parallel size must equal the prefill's or be 1; TP sizes may differ; a decode worker
# with decode context parallelism (`--dcp-size` > 1) needs a prefill worker without attention
# context parallelism (`--attn-cp-size` 1), and a prefill worker refuses a decode peer whose DCP
# size is not its own unless its own is 1 (sgl-project/sglang 0.5.21
# python/sglang/srt/disaggregation/common/conn.py: CommonKVManager.try_ensure_parallel_info,
# _resolve_rank_mapping, requires_dcp_relayout, register_to_bootstrap;
# sglang/srt/mem_cache/kv_cache_dtype.py configure_kv_cache_dtype). Read in the sglang 0.5.21
# wheel from PyPI, the version ai-dynamo 1.6.1 pins in its [sglang] extra.
_SGLANG_HANDSHAKE = ("sgl-project/sglang 0.5.21 python/sglang/srt/disaggregation/common/conn.py "
                     "try_ensure_parallel_info (ai-dynamo 1.6.1 pins sglang==0.5.21)")
# TRT-LLM's cache transceiver asks the formatter whether it can exchange KV with a peer's
# CacheState and refuses a peer that differs in KV cache data type, tokens per block, attention
# type, KV factor, heads per layer, size per head or number of layers, or that uses context
# parallelism (NVIDIA/TensorRT-LLM cpp/tensorrt_llm/batch_manager/cacheFormatter.cpp,
# CacheFormatter::inquireSupport). ai-dynamo 1.6.1 pins tensorrt-llm==1.3.0rc29 in its [trtllm]
# extra; the file was read at an untagged upstream snapshot (docs/checker.md). The head and
# layer shapes come with the model (a card input).
_TRTLLM_INQUIRE = ("NVIDIA/TensorRT-LLM cpp/tensorrt_llm/batch_manager/cacheFormatter.cpp "
                   "CacheFormatter::inquireSupport (tensorrt-llm 1.3.0rc29 pinned by ai-dynamo "
                   "1.6.1; read at an untagged snapshot)")

# Parser defaults, read in the engine releases ai-dynamo 1.6.1 pins (Dynamo's wrappers keep them:
# dynamo/vllm/args.py, dynamo/sglang/args.py): vllm 0.31.0 vllm/config/parallel.py
# (tensor/pipeline/data/decode-context parallel sizes 1), vllm/config/cache.py (cache_dtype
# "auto"), vllm/config/model.py (dtype "auto"); sglang 0.5.21
# sglang/srt/arg_groups/fields/parallel.py (tp/dp/pp/dcp sizes 1) and fields/disagg.py
# (disaggregation_transfer_backend "mooncake"). SGLang fields its parser marks resolvable
# (kv_cache_dtype, dtype, attn_cp_size, page_size) are resolved per model and platform when
# unset: no fixed default is assumed for them.
PARSER_DEFAULTS = ("vllm-project/vllm 0.31.0 vllm/config/{parallel,cache,model}.py; "
                    "sgl-project/sglang 0.5.21 sglang/srt/arg_groups/fields/{parallel,disagg}.py")

KV_INPUTS: tuple[Input, ...] = (
    Input(("--disaggregation-mode", "--is-prefill-worker"), Category.KV, "disaggregation role",
          ALL, _KV),
    # vLLM
    Input(("--kv-transfer-config",), Category.KV, "KV connector", VLLM, _KV),
    Input(("--connector",), Category.KV, "KV connector (rejected since #6450)", VLLM, _KV),
    Input(("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"),
          Category.KV, "KV sharding (parallel sizes)", VLLM, _KV,
          defaults=(("--tensor-parallel-size", "1"), ("--pipeline-parallel-size", "1"),
                    ("--data-parallel-size", "1"))),
    # Decode context parallelism: the handshake requires the two DCP sizes to divide one another
    # (and equal with Mamba layers) (_NIXL_HANDSHAKE).
    Input(("--decode-context-parallel-size",), Category.KV, "KV sharding (decode context parallel)",
          VLLM, _NIXL_HANDSHAKE, defaults=(("--decode-context-parallel-size", "1"),)),
    Input(("--block-size",), Category.KV, "KV block size", VLLM, _KV),
    Input(("--kv-cache-dtype",), Category.KV, "KV cache dtype", VLLM, _KV,
          defaults=(("--kv-cache-dtype", "auto"),)),
    Input(("--kv-cache-dtype",), Category.KV, "KV cache dtype", SGLANG, _KV),
    # With the default `--kv-cache-dtype auto` the KV cache takes the model dtype, so a dtype
    # change is a KV-cache dtype change (vLLM CacheConfig / SGLang ServerArgs behaviour).
    # Unset (or `auto`), the engine takes the dtype from the model's config.json: set on one
    # side only, whether the effective dtype changes cannot be told from the manifests.
    Input(("--dtype",), Category.KV, "KV cache dtype (follows the model dtype)",
          VLLM, _KV, derived_from=_MODEL_DTYPE, defaults=(("--dtype", "auto"),)),
    Input(("--dtype",), Category.KV, "KV cache dtype (follows the model dtype)",
          SGLANG, _KV, derived_from=_MODEL_DTYPE),
    # vLLM's NIXL connector refuses a peer whose compatibility hash differs from its own. Beside
    # the vLLM version (the image: runtime-version), the model (a card input) and the two dtypes
    # above, the hash covers the attention backend and whether the hybrid KV cache manager is on
    # (_NIXL: compute_nixl_compatibility_hash in vllm 0.31.0). Which connector (pull or push) is
    # hashed too: it is named in --kv-transfer-config. Tensor-parallel, decode-context-parallel
    # and block sizes are checked after the hash (_NIXL_HANDSHAKE) and are listed above.
    Input(("--attention-backend",), Category.KV,
          "attention backend (NIXL compatibility hash)", VLLM, _NIXL),
    Input(("--disable-hybrid-kv-cache-manager",), Category.KV,
          "hybrid KV cache manager on/off (NIXL compatibility hash)", VLLM, _NIXL),
    # The model itself: the hash covers `model_config.model`, the --model string as given, so
    # another model path (or the same model named by another path) is refused by old peers
    # whatever the card says (_NIXL). A card input too (MDC_INPUTS).
    Input(("--model",), Category.KV, "model path (NIXL compatibility hash: model_config.model)",
          VLLM, _NIXL),
    # The hash also covers an EAGLE / MTP speculator's method, draft model and draft KV dtype
    # (metadata.py _get_speculative_compatibility_factors, vllm 0.31.0).
    Input(("--speculative-config",), Category.KV,
          "speculative decoding config (NIXL compatibility hash)", VLLM, _NIXL),
    # Context / sequence length (vLLM --max-model-len, SGLang --context-length, TRT-LLM
    # max_seq_len) is a card input (context_length, above), not a KV-transfer change: the KV block
    # layout a prefill worker hands over (block size, dtype, heads, sharding) does not depend on
    # it, so it is not listed here although --max-model-len is often listed among layout flags
    # (a category only where it changes the KV layout or transfer).
    # SGLang
    Input(("--disaggregation-transfer-backend",), Category.KV, "KV transfer backend", SGLANG,
          _KV, defaults=(("--disaggregation-transfer-backend", "mooncake"),)),
    Input(("--disaggregation-bootstrap-port",), Category.KV, "KV bootstrap port", SGLANG, _KV),
    Input(("--page-size",), Category.KV, "KV page size (bootstrap handshake)", SGLANG,
          _SGLANG_HANDSHAKE),
    Input(("--tp-size", "--dp-size", "--pp-size", "--enable-dp-attention"), Category.KV,
          "KV sharding (parallel sizes)", SGLANG, _SGLANG_HANDSHAKE,
          defaults=(("--tp-size", "1"), ("--dp-size", "1"), ("--pp-size", "1"))),
    Input(("--dcp-size", "--attn-cp-size"), Category.KV,
          "KV sharding (context parallel sizes)", SGLANG, _SGLANG_HANDSHAKE,
          defaults=(("--dcp-size", "1"),)),
    Input(("--skip-tokenizer-init",), Category.KV, "prefill/decode hand-off (token ids)", SGLANG,
          _KV),
    # TRT-LLM: CLI flags map onto engine keys (llm_worker.py precedence), so the effective engine
    # value is compared; the engine YAML's cache_transceiver_config does the P/D transfer.
    Input(("engine:cache_transceiver_config", "engine:cache_transceiver_config.*"), Category.KV,
          "KV transfer backend (cache_transceiver_config)", TRTLLM, _KV),
    Input(("engine:tensor_parallel_size", "engine:pipeline_parallel_size",
           "engine:moe_expert_parallel_size", "engine:enable_attention_dp"), Category.KV,
          "KV sharding (parallel sizes)", TRTLLM, _KV),
    # inquireSupport refuses a peer with context parallelism (on either side).
    Input(("engine:context_parallel_size",), Category.KV,
          "context parallelism (cache transceiver compatibility)", TRTLLM, _TRTLLM_INQUIRE),
    # kv_cache_config.dtype and .tokens_per_block are the CacheState data type and tokens per
    # block inquireSupport compares (_TRTLLM_INQUIRE); the sizing-only sub-keys are SAFE_KEYS.
    Input(("engine:kv_cache_config", "engine:kv_cache_config.*"), Category.KV,
          "KV cache configuration", TRTLLM, _TRTLLM_INQUIRE),
    Input(("engine:max_num_tokens",), Category.KV, "KV layout limits", TRTLLM, _KV),
    Input(("--kv-block-size",), Category.KV, "KV block size", TRTLLM, _KV, until="1.4"),
    # The engine-arguments file itself: when its contents cannot be read (it ships in the image
    # or a ConfigMap outside the checked files), a new file may change any key above.
    Input(("--extra-engine-args",), Category.KV, "engine arguments file (contents unknown)",
          TRTLLM, _KV),
)

# Keys that look like inputs (by wildcard) but only size capacity: safe to change in place.
# TRT-LLM kv_cache_config memory sizing is not part of the KV layout or the card
# (lib/llm/src/model_card.rs `mdcsum()` does not hash total_kv_blocks).
SAFE_KEYS: frozenset[str] = frozenset({
    "engine:kv_cache_config.free_gpu_memory_fraction",
    "engine:kv_cache_config.max_tokens",
    "engine:kv_cache_config.enable_block_reuse",
    "engine:kv_cache_config.host_cache_size",
})

# An engine-arguments file whose contents are unknown may also set max_seq_len or (since #12023)
# the block size: both card inputs.
UNKNOWN_ENGINE_FILE_MDC = Input(
    ("--extra-engine-args",), Category.MDC,
    "engine arguments file (contents unknown: may set max_seq_len / tokens_per_block)",
    TRTLLM, "ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/trtllm/backend_args.py",
)

# CLI flag → TRT-LLM engine key (YAML applied after the CLI, overrides last: ai-dynamo 1.6.1
# dynamo/trtllm/workers/llm_worker.py `init_llm_worker`).
TRTLLM_CLI_ENGINE_KEYS: dict[str, str] = {
    "--tensor-parallel-size": "tensor_parallel_size",
    "--pipeline-parallel-size": "pipeline_parallel_size",
    "--expert-parallel-size": "moe_expert_parallel_size",
    "--enable-attention-dp": "enable_attention_dp",
    "--max-seq-len": "max_seq_len",
    "--max-num-tokens": "max_num_tokens",
    "--max-batch-size": "max_batch_size",
    "--free-gpu-memory-fraction": "kv_cache_config.free_gpu_memory_fraction",
}


def _matches(pattern: str, key: str) -> bool:
    if pattern.endswith("*"):
        return key.startswith(pattern[:-1])
    return key == pattern


@lru_cache(maxsize=4096)
def inputs_for(key: str, backend: Backend, release: str, disaggregated: bool) -> tuple[Input, ...]:
    """The table entries a changed key hits (empty: a safe change). Exact keys win over wildcards;
    KV entries count only in a disaggregated DGD."""
    if key in SAFE_KEYS:
        return ()
    tables = MDC_INPUTS + (KV_INPUTS if disaggregated else ())
    out: list[Input] = []
    seen: set[Category] = set()
    for entry in tables:
        if entry.category in seen or not entry.applies(backend, release):
            continue
        if any(_matches(p, key) for p in entry.keys):
            out.append(entry)
            seen.add(entry.category)
    return tuple(out)


# --------------------------------------------------------------------------- flag lifecycle


@dataclass(frozen=True)
class FlagStatus:
    """A flag that is deprecated or removed in some release."""

    flag: str
    backends: frozenset[Backend]
    replacement: str
    cite: str
    deprecated_since: str | None = None
    removed_since: str | None = None
    env: str | None = None  # the environment variable that sets the same flag
    workers_only: bool = True

    def state(self, release: str) -> str | None:
        r = release_key(release)
        if self.removed_since is not None and r >= release_key(self.removed_since):
            return "removed"
        if self.deprecated_since is not None and r >= release_key(self.deprecated_since):
            return "deprecated"
        return None


FLAG_LIFECYCLE: tuple[FlagStatus, ...] = (
    # ai-dynamo/dynamo: deprecated 2026-02-23 (#6483), removed 2026-07-24 (#12089).
    FlagStatus("--is-prefill-worker", VLLM, "--disaggregation-mode prefill",
               "upstream #6483 (deprecated), #12089 (removed)",
               deprecated_since="1.3", removed_since="1.4"),
    # ai-dynamo/dynamo: `--connector` / DYN_CONNECTOR is rejected for vLLM since #6450.
    FlagStatus("--connector", VLLM,
               "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'",
               "upstream #6450", removed_since="1.3", env="DYN_CONNECTOR"),
    # TRT-LLM `--model-path` is an obsolete alias of `--model`
    # (components/src/dynamo/trtllm/backend_args.py `obsolete_flag`).
    FlagStatus("--model-path", TRTLLM, "--model",
               "ai-dynamo/dynamo@2a6da14c8 components/src/dynamo/trtllm/backend_args.py",
               deprecated_since="1.3"),
    # components/src/dynamo/trtllm/backend_args.py: "The deprecated `--publish-events-and-metrics`
    # alias retains its original combined behavior for one release."
    FlagStatus("--publish-events-and-metrics", TRTLLM, "--publish-kv-events",
               "components/src/dynamo/trtllm/backend_args.py", deprecated_since="1.5"),
    # `--migration-limit` is now a frontend flag (ai-dynamo 1.6.1 dynamo/frontend/frontend_args.py).
    FlagStatus("--migration-limit", VLLM | SGLANG | TRTLLM,
               "--migration-limit on the frontend", "ai-dynamo 1.6.1 frontend_args.py",
               deprecated_since="1.3"),
)


# --------------------------------------------------------------------------- prefill / decode
# Settings the prefill and the decode workers of one disaggregated graph must agree on: the
# decode worker reads the KV blocks the prefill worker wrote, through the same connector
# (the _KV sources). Used by rule DGD108 on a single file; the same keys are KV-transfer
# inputs above, so changing one side in place is DGD202.


@dataclass(frozen=True)
class PdKey:
    """One setting that must be equal on prefill and decode workers."""

    keys: tuple[str, ...]  # the flag / engine key, in order of precedence
    what: str
    backends: frozenset[Backend]
    cite: str
    # The value a worker that does not set it uses; None when the engine derives it (from the
    # GPU, the model or the platform): then a side that leaves it unset cannot be compared.
    default: str | None = None
    json_field: str | None = None  # compare this field of a JSON value (the connector name)
    # Values that leave the choice to the engine at run time: not compared.
    engine_picks: tuple[str, ...] = ()
    # A prefill value that accepts any decode value (SGLang: a prefill worker without decode
    # context parallelism relays its KV to any DCP layout of an MLA decode peer).
    prefill_accepts_any: tuple[str, ...] = ()


PD_MUST_AGREE: tuple[PdKey, ...] = (
    PdKey(("--block-size",), "KV block size", VLLM,
          "vLLM CacheConfig.block_size (None: the platform picks it)"),
    PdKey(("--kv-cache-dtype",), "KV cache dtype", VLLM,
          "vLLM CacheConfig.cache_dtype, default \"auto\"", default="auto"),
    PdKey(("--kv-transfer-config",), "KV connector", VLLM,
          "vLLM KVTransferConfig.kv_connector", json_field="kv_connector"),
    # vLLM's NIXL connector refuses a peer whose compatibility hash differs (the inputs of the
    # KV-transfer table above, _NIXL): the model, the model dtype, the attention backend and the
    # hybrid KV cache manager must agree too. Their defaults are derived (from the model's
    # config.json, the platform, the connector), so only values set on both sides are compared.
    PdKey(("--model",), "model (NIXL compatibility hash)", VLLM, _NIXL),
    PdKey(("--dtype",), "model dtype (NIXL compatibility hash)", VLLM, _NIXL),
    PdKey(("--attention-backend",), "attention backend (NIXL compatibility hash)", VLLM, _NIXL),
    PdKey(("--disable-hybrid-kv-cache-manager",),
          "hybrid KV cache manager on/off (NIXL compatibility hash)", VLLM, _NIXL),
    # Unset, SGLang 0.5.21 derives the page size: 1 on CUDA, 64 on MUSA, and attention backends
    # override it (FA4 on SM100: 128; FlashMLA, TRT-LLM MLA/MHA: 64) (sglang/srt/arg_groups/
    # overrides.py _page_size_default, _mla_backend_page_constraints): not a fixed default.
    PdKey(("--page-size",), "KV page size", SGLANG,
          "SGLang ServerArgs.page_size (derived when unset)"),
    PdKey(("--kv-cache-dtype",), "KV cache dtype", SGLANG,
          "SGLang ServerArgs.kv_cache_dtype, default \"auto\"",
          default="auto"),
    # A prefill worker refuses a decode peer of another DCP size unless its own is 1 ("Unsupported
    # PD DCP topology"; 1 → N needs an MLA model, which the manifests do not show).
    PdKey(("--dcp-size",), "decode context parallel size", SGLANG,
          "SGLang CommonKVManager.requires_dcp_relayout (0.5.21), ServerArgs.dcp_size default 1",
          default="1", prefill_accepts_any=("1",)),
    PdKey(("--disaggregation-transfer-backend",), "KV transfer backend", SGLANG,
          "SGLang ServerArgs.disaggregation_transfer_backend, default \"mooncake\"", default="mooncake"),
    PdKey(("engine:kv_cache_config.tokens_per_block",), "KV block size (tokens per block)",
          TRTLLM, "TRT-LLM KvCacheConfig.tokens_per_block, default 32",
          default="32"),
    PdKey(("engine:kv_cache_config.dtype",), "KV cache dtype", TRTLLM,
          "TRT-LLM KvCacheConfig.dtype, default \"auto\"", default="auto"),
    PdKey(("engine:cache_transceiver_config.backend",), "KV transfer backend", TRTLLM,
          "TRT-LLM CacheTransceiverConfig.backend (DEFAULT: the engine picks one at run time)", engine_picks=("DEFAULT",)),
)
