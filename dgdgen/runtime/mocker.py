"""The one mapping from a rendered worker's engine flags to the mocker's flags.

The rehearsal runs each rendered worker as ``python -m dynamo.mocker`` and the checker's runtime
tests reproduce checksum inputs with it, so both read this table. A rendered flag is *carried*
when the mocker has a flag with the same meaning, so the local worker publishes the same
ModelDeploymentCard inputs and KV layout as the real one would (block / page size, context length,
served model name, disaggregation mode, KV cache dtype, router mode) or schedules alike (max
sequences, GPU block count, data parallel size). Everything else is *dropped*, with the reason:
the mocker loads no weights and runs no GPU kernels, so parallelism, memory, quantisation and
transfer-backend settings have nothing to act on. The model path is replaced by the local tiny
model directory (config, tokenizer, chat template; :mod:`dgdgen.runtime.model`).

Flag names follow ``python -m dynamo.mocker --help`` of ai-dynamo 1.6.1 (``dynamo/mocker/args.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dgdgen.check.facts import ComponentFacts
from dgdgen.model.dgd import Backend

# canonical rendered flag (per backend, as dgdgen.check.cmdline spells it) → mocker flag
_CARRIED: dict[Backend, dict[str, str]] = {
    Backend.VLLM: {
        "--block-size": "--block-size",
        "--max-model-len": "--max-model-len",
        "--kv-cache-dtype": "--kv-cache-dtype",
        "--max-num-seqs": "--max-num-seqs",
        "--max-num-batched-tokens": "--max-num-batched-tokens",
        "--num-gpu-blocks-override": "--num-gpu-blocks-override",
        "--data-parallel-size": "--data-parallel-size",
        "--enable-prefix-caching": "--enable-prefix-caching",
        "--router-mode": "--router-mode",
        # A worker that names its endpoint registers in that namespace (no worker-hash suffix;
        # ai-dynamo 1.6.1 dynamo/vllm/args.py, dynamo/mocker/args.py): carried, so a rehearsal
        # or a probe places the worker where the cluster would.
        "--endpoint": "--endpoint",
    },
    Backend.SGLANG: {
        # SGLang's page size is its KV block size; the mocker takes it as --block-size too.
        "--page-size": "--block-size",
        "--context-length": "--max-model-len",
        "--kv-cache-dtype": "--kv-cache-dtype",
        "--max-running-requests": "--max-num-seqs",
        "--dp-size": "--data-parallel-size",
        "--router-mode": "--router-mode",
        # A worker that names its endpoint registers in that namespace (no worker-hash suffix;
        # ai-dynamo 1.6.1 dynamo/vllm/args.py, dynamo/mocker/args.py): carried, so a rehearsal
        # or a probe places the worker where the cluster would.
        "--endpoint": "--endpoint",
    },
    # TRT-LLM: the engine's effective arguments (CLI, then the --extra-engine-args YAML, then
    # overrides; dgdgen.check.trtllm) are carried instead of the CLI flags, see _TRTLLM_ENGINE.
    Backend.TRTLLM: {
        "--router-mode": "--router-mode",
        # A worker that names its endpoint registers in that namespace (no worker-hash suffix;
        # ai-dynamo 1.6.1 dynamo/vllm/args.py, dynamo/mocker/args.py): carried, so a rehearsal
        # or a probe places the worker where the cluster would.
        "--endpoint": "--endpoint",
    },
}
# TRT-LLM effective engine key → mocker flag. Since upstream #12023 the card takes the block size
# the engine reports (kv_cache_config.tokens_per_block; TRT-LLM's default is 32) and
# --kv-block-size is only an unused fallback (ai-dynamo 1.6.1 dynamo/trtllm/workers/llm_worker.py).
_TRTLLM_ENGINE = {
    "engine:kv_cache_config.tokens_per_block": "--block-size",
    "engine:max_seq_len": "--max-model-len",
    "engine:max_batch_size": "--max-num-seqs",
}
_TRTLLM_DEFAULT_BLOCK_SIZE = "32"
_TRTLLM_VIA_ENGINE = {
    "--max-seq-len": "carried as the effective engine max_seq_len",
    "--max-batch-size": "carried as the effective engine max_batch_size",
    "--extra-engine-args": "carried key by key (the effective engine arguments)",
    "--override-engine-args": "carried key by key (the effective engine arguments)",
    "--kv-block-size": "since #12023 only an unused fallback: the engine's tokens_per_block is "
                       "the card's block size",
}
# The worker-side router flags: the mocker registers them with the same parser as the backends
# (ai-dynamo 1.6.1 `add_worker_router_arguments`, dynamo/mocker/args.py), and they reach the
# card's router_config only with a worker --router-mode (the KV router flags only with
# --router-mode kv; dgdgen.check.cardtable). Boolean ones take --flag / --no-flag.
_ROUTER_BOOL = frozenset({
    "--load-aware", "--router-kv-events", "--router-replica-sync",
    "--router-track-active-blocks", "--router-track-output-blocks", "--router-assume-kv-reuse",
    "--router-track-prefill-tokens", "--router-conditional-disagg", "--use-remote-indexer",
    "--enable-session-prefix-index",
})
_ROUTER_VALUE = frozenset({
    "--router-session-affinity-ttl-secs", "--router-session-affinity-mode",
    "--active-decode-blocks-threshold", "--active-prefill-tokens-threshold",
    "--active-prefill-tokens-threshold-frac", "--router-kv-overlap-score-credit",
    "--router-kv-overlap-score-credit-decay", "--router-kv-overlap-score-weight",
    "--router-prefill-load-scale", "--router-decode-active-request-weight",
    "--router-host-cache-hit-weight", "--router-disk-cache-hit-weight", "--router-temperature",
    "--router-tracking-hash", "--router-prefill-load-model", "--router-ttl-secs",
    "--router-approximate-cache-policy", "--router-queue-threshold", "--router-policy-config",
    "--router-conditional-disagg-config", "--router-prefill-policy", "--router-decode-policy",
    "--router-event-threads", "--router-queue-policy", "--shared-cache-multiplier",
    "--shared-cache-type", "--router-predicted-ttl-secs",
})
_ROUTER = _ROUTER_BOOL | _ROUTER_VALUE
_BOOL = _ROUTER_BOOL | {"--enable-prefix-caching"}
_ENGINE_TYPE = {Backend.VLLM: "vllm", Backend.SGLANG: "sglang", Backend.TRTLLM: "trtllm"}
# Flags the mocker does not take, and why (anything not listed here or carried is dropped as
# "no mocker equivalent").
_WHY_DROPPED = {
    "--model": "the local tiny model directory replaces the model path (no weights are loaded)",
    "--model-path": "the local tiny model directory replaces the model path (no weights are loaded)",
    "--tensor-parallel-size": "no GPUs: parallelism has nothing to split",
    "--pipeline-parallel-size": "no GPUs: parallelism has nothing to split",
    "--tp-size": "no GPUs: parallelism has nothing to split",
    "--pp-size": "no GPUs: parallelism has nothing to split",
    "--gpu-memory-utilization": "no GPU memory; the KV cache size comes from the mocker's defaults",
    "--mem-fraction-static": "no GPU memory; the KV cache size comes from the mocker's defaults",
    "--disaggregation-transfer-backend": "the mocker models KV transfer by bandwidth only",
    "--kv-transfer-config": "the mocker models KV transfer by bandwidth only",
    "--connector": "the mocker models KV transfer by bandwidth only",
    "--trust-remote-code": "no model code is loaded",
    "--skip-tokenizer-init": "the frontend tokenizes, as in the real deployment",
    "--host": "every local process listens on loopback",
    "--port": "ports are assigned by the rehearsal",
    "--disaggregation-bootstrap-port": "ports are assigned by the rehearsal",
    "--quantization": "no weights are loaded",
    "--dtype": "no weights are loaded",
    "--enforce-eager": "no GPU kernels run",
    "--custom-jinja-template": "the chat template comes from the local model directory "
                               "(make_model_dir(chat_template=...))",
    # dgdgen.check.facts keeps the extra served names under this key (the card's aliases).
    "--served-model-name:aliases": "the mocker registers one served model name (no aliases)",
}


@dataclass(frozen=True)
class MockerInvocation:
    args: tuple[str, ...]
    served_model_name: str
    carried: tuple[tuple[str, str, str], ...]  # (rendered flag, mocker flag, value)
    dropped: tuple[tuple[str, str], ...]  # (rendered flag, reason)


def served_model_name(comp: ComponentFacts) -> str:
    """The name the worker registers (see :attr:`ComponentFacts.served_model_name`)."""
    return comp.served_model_name or "model"


# The rehearsal's simulated KV transfer between a prefill and a decode worker: the load's prompt
# (about 27 tokens with the local model's chat template) at 1 MB a token over 0.054 GB/s, about
# 0.5 s, spent beside the engines (no worker queues for it). It is there for the latency gates,
# not to model a network: the 1.6.1 frontend's TTFT buckets end at 0.1, 0.22, 0.47 and 1.0 s
# (ai-dynamo 1.6.1 defaults: 18 log-spaced buckets from 0.001 to 480 s, 2.1x apart), and the gates
# compare quantiles Prometheus interpolates within them, so a first token must sit in one bucket
# for both generations with room for what a busy machine adds.
# The mocker alone answers a disaggregated stream's first token in about 30 ms, with a tail of
# scheduling delays past the 0.047 s edge on a busy machine: a healthy candidate rolled back at
# 1.3-1.9x the stable's TTFT p99 (docs/performance.md). A 0.09 s transfer put every first token
# at 0.11-0.16 s, in the 0.1-0.22 s bucket with 0.06 s of room; on the slowest run of the whole
# suite both generations' first tokens came 0.2-0.3 s later and one p99 crossed into the bucket
# after the next (1.97x, rolled back: docs/performance.md). At 0.5 s the first token comes at
# about 0.52 s, inside the 0.47-1.0 s bucket with about 0.48 s of room above and 0.05 s below —
# a busy machine delays a token, it never hurries one (tests/rehearse/test_mocker_timing.py
# reads the real frontend's histogram).
# A candidate ``slowdown`` times slower transfers that much slower too (the transfer is the
# rehearsal's stand-in for the time to first token), so a slowed candidate's first tokens fall
# buckets later and fail the TTFT comparisons as its ITL fails the ITL ones. Slowing the engines
# instead cannot place the first token: a prefill of 0.1 s makes the workers of a busy step queue
# (docs/performance.md, the table of speed ratios). Aggregated workers transfer nothing.
KV_TRANSFER_SECONDS = 0.5
_PROMPT_TOKENS = 27  # the load's prompt (dgdgen.runtime.client.request) with the chat template
_KV_BYTES_PER_TOKEN = 1_000_000
KV_TRANSFER_GBPS = round(_PROMPT_TOKENS * _KV_BYTES_PER_TOKEN / KV_TRANSFER_SECONDS / 1e9, 4)
REHEARSAL_KV_TRANSFER: Mapping[str, str] = {
    "--kv-transfer-bandwidth": f"{KV_TRANSFER_GBPS:g}",
    "--kv-bytes-per-token": str(_KV_BYTES_PER_TOKEN),
}


def rehearsal_flags(slowdown: float = 1.0) -> dict[str, str]:
    """The mocker flags the rehearsal adds to each worker it runs: the simulated KV transfer
    (:data:`REHEARSAL_KV_TRANSFER`) and, for a worker ``slowdown`` times slower, the speedup
    ratios ``1/slowdown`` (prefill and decode) and a transfer ``slowdown`` times slower."""
    out = dict(REHEARSAL_KV_TRANSFER)
    if slowdown != 1.0:
        ratio = f"{1.0 / slowdown:g}"
        out.update({"--speedup-ratio": ratio, "--decode-speedup-ratio": ratio,
                    "--kv-transfer-bandwidth": f"{KV_TRANSFER_GBPS / slowdown:g}"})
    return out


def disaggregation_mode(comp: ComponentFacts) -> str:
    s = comp.flags.get("--disaggregation-mode")
    if s is not None and s.value in ("prefill", "decode"):
        return s.value
    sub = comp.role.value
    return sub if sub in ("prefill", "decode") else "agg"


def mocker_invocation(
    comp: ComponentFacts,
    *,
    model_dir: Path,
    extra: Mapping[str, str] | None = None,
) -> MockerInvocation:
    """The mocker command line for one rendered worker replica.

    ``extra`` adds mocker-only flags (e.g. ``--speedup-ratio`` for a slowed-down candidate);
    they win over carried values.
    """
    backend = comp.backend if comp.backend in _ENGINE_TYPE else Backend.VLLM
    table = _CARRIED[backend]
    name = served_model_name(comp)
    out: dict[str, str] = {
        "--model-path": str(model_dir),
        "--model-name": name,
        "--engine-type": _ENGINE_TYPE[backend],
    }
    carried: list[tuple[str, str, str]] = [("--served-model-name", "--model-name", name)]
    dropped: list[tuple[str, str]] = []
    mode = disaggregation_mode(comp)
    out["--disaggregation-mode"] = mode
    if mode != "agg":
        carried.append(("--disaggregation-mode", "--disaggregation-mode", mode))
    if backend is Backend.TRTLLM:
        out["--block-size"] = _TRTLLM_DEFAULT_BLOCK_SIZE
        for key, mocker_flag in _TRTLLM_ENGINE.items():
            engine_setting = comp.engine.get(key)
            if engine_setting is not None:
                out[mocker_flag] = engine_setting.value
                carried.append((key, mocker_flag, engine_setting.value))
    for flag in sorted(comp.flags):
        setting = comp.flags[flag]
        if flag in ("--served-model-name", "--disaggregation-mode", "--is-decode-worker"):
            continue
        target = table.get(flag) or (flag if flag in _ROUTER else None)
        if target is None:
            why = _TRTLLM_VIA_ENGINE.get(flag) if backend is Backend.TRTLLM else None
            dropped.append((flag, why or _WHY_DROPPED.get(flag, "no mocker equivalent")))
            continue
        out[target] = setting.value
        carried.append((flag, target, setting.value))
    for flag, value in (extra or {}).items():
        out[flag] = value
    args: list[str] = []
    for flag, value in out.items():
        if value == "true" and flag in _BOOL:
            args.append(flag)
        elif value == "false" and flag in _BOOL:
            args.append("--no-" + flag[2:])
        else:
            args += [flag, value]
    return MockerInvocation(tuple(args), name, tuple(carried), tuple(dropped))


def flag_table_markdown() -> str:
    """The carried / dropped flags as the Markdown table in docs/rehearse.md (a test keeps the
    doc equal to this)."""
    lines = ["| backend | rendered flag | mocker flag |", "| --- | --- | --- |"]
    for backend, table in _CARRIED.items():
        for flag, target in table.items():
            lines.append(f"| {backend.value} | `{flag}` | `{target}` |")
    for key, target in _TRTLLM_ENGINE.items():
        lines.append(f"| trtllm | engine `{key.removeprefix('engine:')}` | `{target}` |")
    lines.append(f"| trtllm | (no engine `kv_cache_config.tokens_per_block`) | `--block-size "
                 f"{_TRTLLM_DEFAULT_BLOCK_SIZE}` |")
    lines.append("| all | the other worker router flags: "
                 + ", ".join(f"`{f}`" for f in sorted(_ROUTER - {"--router-mode"}))
                 + " | the same flag |")
    lines += ["", "| dropped flag | why |", "| --- | --- |"]
    for flag, why in _WHY_DROPPED.items():
        lines.append(f"| `{flag}` | {why} |")
    for flag, why in _TRTLLM_VIA_ENGINE.items():
        lines.append(f"| `{flag}` (trtllm) | {why} |")
    return "\n".join(lines) + "\n"
