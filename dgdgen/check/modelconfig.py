"""The model's own files, read to settle what an engine derives from them when a flag is unset
(``dgdgen check / diff --model-config DIR``).

A context length or dtype flag set on one revision only changes the ModelDeploymentCard or the
KV layout only when its value differs from the one the engine derives from the model's
``config.json``. Without those files the checker assumes it does (DGD205, fail safe); given
them, it decides exactly where the derivation is known, and keeps the assumption, with the
reason, where it is not:

* vLLM ``--max-model-len``: the card takes vLLM's ``model_config.max_model_len`` (ai-dynamo
  1.6.1 dynamo/vllm/main.py ``runtime_config.context_length =
  vllm_config.model_config.max_model_len``). Unset, vLLM derives it from ``config.json``: the
  smallest of the length keys present (``max_position_embeddings``, ``n_positions``,
  ``max_seq_len``, ``seq_length``, ``max_target_positions``, ``max_sequence_length``,
  ``max_seq_length``, ``seq_len``), capped by the ``model_max_length`` of
  ``tokenizer_config.json`` (vLLM's ``_get_and_verify_max_len`` in vllm/config/model.py, read in
  upstream vLLM as indexed by the code search, not at the 0.31.0 tag ai-dynamo 1.6.1 pins). What
  that function does in more ways than one across vLLM releases is not settled: a RoPE-scaled
  model (llama3 scaling aside, which leaves the length as config.json says), a sliding window, a ``model_max_length`` in config.json itself (Command-R), a nested
  ``text_config``, or no length key at all (a fixed 2048).
* SGLang ``--context-length``: the card takes ``server_args.context_length`` (ai-dynamo 1.6.1
  dynamo/sglang/register.py), None when unset, and then its architectural maximum: the
  ``max_position_embeddings`` of ``config.json`` (ai-dynamo/dynamo 2a6da14c8
  lib/llm/src/model_card.rs ``effective_context_length()``; upstream main's
  ``architectural_max_context_length_from_repo``: "`config.json` is authoritative when it
  declares `max_position_embeddings`"). Only that top-level key settles it.
* vLLM ``--dtype``: ``auto`` takes the checkpoint's ``torch_dtype`` (``dtype`` in newer
  configs) when it is ``bfloat16`` or ``float16``; a ``float32`` checkpoint is cast to the
  platform's preferred dtype (vllm 0.31.0 vllm/config/model.py ``_resolve_auto_dtype``), which the
  files do not say: not settled; nor is a ``float16`` checkpoint of the model types vLLM
  refuses to run in float16 (``_FLOAT16_NOT_SUPPORTED_MODELS``: gemma2, gemma3, glm4, ...), which
  it runs in bfloat16. On a GPU without bfloat16 an explicit ``bfloat16`` does not start, so
  "equal" holds wherever both revisions run.
* Not settled by the files, whatever they hold: TRT-LLM's ``--max-seq-len`` / ``max_seq_len``
  (ai-dynamo 1.6.1 dynamo/trtllm/backend_args.py defaults it to TensorRT-LLM's
  ``BuildConfig.max_seq_len``, which is not installed here to read) and SGLang's ``--dtype``
  (sglang 0.5.21 resolves it per model and platform, dgdgen/check/flags.py PARSER_DEFAULTS).

``generation_config.json`` decides none of these (the card hashes it as a file, which
``--model`` already covers), so it is not read.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.model.dgd import Backend
from dgdgen.yamlio import read_text

__all__ = ["ModelConfig", "Settlement", "load", "settle", "settled_by"]

CONTEXT_LENGTH_KEYS = frozenset({"--max-model-len", "--context-length", "--max-seq-len",
                                 "engine:max_seq_len"})
DTYPE_KEYS = frozenset({"--dtype"})

# vLLM vllm/config/model.py `_get_and_verify_max_len` `possible_keys`: the smallest present
# wins (`model_max_length` is among them but overrides the others: not settled, below).
_VLLM_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                     "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
# vLLM vllm/config/model.py `_FLOAT16_NOT_SUPPORTED_MODELS`: `auto` runs these in bfloat16.
_NO_FLOAT16 = ("gemma", "glm4", "plamo2")

# vLLM's --dtype spellings (vllm/config/model.py `_STR_DTYPE_TO_TORCH_DTYPE`) and the checkpoint's.
_DTYPES = {"half": "float16", "float16": "float16", "bfloat16": "bfloat16", "float": "float32",
           "float32": "float32"}

_VLLM_LEN = "vLLM vllm/config/model.py _get_and_verify_max_len (upstream; 1.6.1 pins vllm 0.31.0)"
_CARD_LEN = ("ai-dynamo 1.6.1 dynamo/sglang/register.py; ai-dynamo/dynamo 2a6da14c8 "
             "lib/llm/src/model_card.rs effective_context_length()")
_VLLM_DTYPE = "vLLM vllm/config/model.py _resolve_auto_dtype (upstream; 1.6.1 pins vllm 0.31.0)"


@dataclass(frozen=True)
class ModelConfig:
    """What the checker reads of a model directory: the fields that decide a derived default,
    type-checked once here."""

    source: str  # the directory as the user gave it
    lengths: tuple[tuple[str, int], ...]  # vLLM's length keys present in config.json, in order
    rope_scaling: str | None  # why RoPE scaling changes vLLM's length, or None
    sliding_window: str | None  # the value, when vLLM may cap the length by it
    nested_text_config: bool  # a multimodal config with its own text_config
    model_max_length: int | None  # config.json's own (Command-R), which vLLM treats apart
    model_type: str
    dtype: str | None  # config.json torch_dtype (or dtype), normalised
    tokenizer_max_length: int | None  # tokenizer_config.json model_max_length

    @property
    def max_position_embeddings(self) -> int | None:
        return dict(self.lengths).get("max_position_embeddings")


@dataclass(frozen=True)
class Settlement:
    """What the model's files say about a value set on one revision only."""

    same: bool | None  # True: the derived value equals it; False: differs; None: not settled
    text: str  # where the derived value comes from, or why it is not settled
    cite: str = ""
    derived: str = ""  # the value the engine uses when the flag is unset (when settled)


def load(directory: str) -> ModelConfig:
    """Read ``config.json`` (required) and ``tokenizer_config.json`` (optional) of
    ``directory``; a missing directory, a missing or malformed file, or a present field of the
    wrong type is an :class:`InputError` naming the file and field."""
    if not os.path.isdir(directory):
        what = "not found" if not os.path.exists(directory) else "not a directory"
        raise InputError(f"{what}: --model-config names the model's directory (its config.json)",
                         location=Location(directory))
    path = os.path.join(directory, "config.json")
    if not os.path.exists(path):
        raise InputError("no config.json in the --model-config directory",
                         location=Location(directory),
                         hint="point it at the model's files, e.g. a Hugging Face snapshot")
    config = _object(path)
    lengths = tuple((k, _count(config, k, path)) for k in _VLLM_LENGTH_KEYS
                    if config.get(k) is not None)
    rope = None
    for key in ("rope_scaling", "rope_parameters"):
        value = config.get(key)
        if value is not None and not isinstance(value, dict):
            raise InputError(f"expected an object, got {type(value).__name__}",
                             location=Location(path), field=(key,))
        # vLLM leaves the length of llama3, su and longrope scaling as the config says it
        # (_get_and_verify_max_len); any other factor multiplies it
        kind = str((value or {}).get("rope_type", (value or {}).get("type", "")))
        if value and value.get("factor") not in (None, 1, 1.0) and kind != "llama3":
            rope = f"{key} {kind or 'scaling'} factor {value.get('factor')}".replace("  ", " ")
    window = config.get("sliding_window")
    sliding = None if window in (None, False) or config.get("use_sliding_window") is False \
        else str(window)
    dtype_raw = config.get("torch_dtype", config.get("dtype"))
    if dtype_raw is not None and not isinstance(dtype_raw, str):
        raise InputError(f"expected a dtype name, got {type(dtype_raw).__name__}",
                         location=Location(path), field=("torch_dtype",))
    tok_path = os.path.join(directory, "tokenizer_config.json")
    tok_max = None
    if os.path.exists(tok_path):
        tok = _object(tok_path)
        if tok.get("model_max_length") is not None:
            value = tok["model_max_length"]
            # transformers writes a huge number (int(1e30)) for "no limit"
            if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    (math.isinf(value) or value >= 1e18):
                tok_max = None
            else:
                tok_max = _count(tok, "model_max_length", tok_path)
    return ModelConfig(
        source=directory, lengths=lengths, rope_scaling=rope, sliding_window=sliding,
        nested_text_config=isinstance(config.get("text_config"), dict),
        model_max_length=(_count(config, "model_max_length", path)
                          if config.get("model_max_length") is not None else None),
        model_type=str(config.get("model_type") or ""),
        dtype=_DTYPES.get(dtype_raw.lower(), dtype_raw.lower()) if dtype_raw else None,
        tokenizer_max_length=tok_max)


def _object(path: str) -> dict[str, Any]:
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}",
                         location=Location(path, exc.lineno, exc.colno)) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got {type(data).__name__}",
                         location=Location(path))
    return data


def _count(data: dict[str, Any], key: str, path: str) -> int:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"expected a positive integer, got {value!r}", location=Location(path),
                         field=(key,))
    return value


# --------------------------------------------------------------------------- settling


def settled_by(key: str, backend: Backend) -> str | None:
    """The config.json field that settles ``key`` for ``backend`` (None: the files cannot)."""
    if key == "--max-model-len" and backend is Backend.VLLM:
        return "max_position_embeddings"
    if key == "--context-length" and backend is Backend.SGLANG:
        return "max_position_embeddings"
    if key in DTYPE_KEYS and backend is Backend.VLLM:
        return "torch_dtype"
    return None


def unsettled_reason(key: str, backend: Backend) -> str:
    """Why the model's files cannot settle ``key`` for ``backend``."""
    if key in DTYPE_KEYS:
        return (f"{backend.value} resolves the dtype per model and platform (sglang 0.5.21), "
                "which the model's files do not decide")
    return (f"{backend.value} defaults it to TensorRT-LLM's BuildConfig.max_seq_len (ai-dynamo "
            "1.6.1 dynamo/trtllm/backend_args.py), which the model's files do not decide")


def settle(key: str, backend: Backend, value: str, cfg: ModelConfig) -> Settlement:
    """Whether ``value``, set on one revision only, equals what ``backend`` derives from the
    model's files when ``key`` is unset."""
    if settled_by(key, backend) is None:
        return Settlement(None, unsettled_reason(key, backend))
    if key in DTYPE_KEYS:
        return _settle_dtype(value, cfg)
    return _settle_length(value, backend, cfg)


def _settle_length(value: str, backend: Backend, cfg: ModelConfig) -> Settlement:
    where = f"{cfg.source}/config.json"
    text = value.strip()
    if not text.isdigit():
        return Settlement(None, f"{value!r} is not a plain number of tokens")
    wanted = int(text)
    if backend is Backend.SGLANG:
        mpe = cfg.max_position_embeddings
        if mpe is None:
            return Settlement(None, f"{where} has no top-level max_position_embeddings")
        return _compare(wanted, mpe, f"max_position_embeddings of {where}, the card's "
                        "architectural maximum", _CARD_LEN)
    # vLLM
    if cfg.nested_text_config:
        return Settlement(None, f"{where} nests a text_config: vLLM reads the text model's")
    if cfg.rope_scaling is not None:
        return Settlement(None, f"{where} sets {cfg.rope_scaling}: vLLM scales the length by it")
    if cfg.model_max_length is not None:
        return Settlement(None, f"{where} sets model_max_length {cfg.model_max_length}, which "
                          "vLLM releases treat differently")
    if cfg.sliding_window is not None:
        return Settlement(None, f"{where} sets sliding_window {cfg.sliding_window}: vLLM may "
                          "cap the length by it")
    if not cfg.lengths:
        return Settlement(None, f"{where} has none of vLLM's length keys")
    key, derived = min(cfg.lengths, key=lambda kv: kv[1])
    why = f"{key} of {where}"
    if cfg.tokenizer_max_length is not None and cfg.tokenizer_max_length < derived:
        derived = cfg.tokenizer_max_length
        why = f"model_max_length of {cfg.source}/tokenizer_config.json"
    return _compare(wanted, derived, why, _VLLM_LEN)


def _compare(wanted: int, derived: int, why: str, cite: str) -> Settlement:
    return Settlement(wanted == derived, why, cite, str(derived))


def _settle_dtype(value: str, cfg: ModelConfig) -> Settlement:
    where = f"{cfg.source}/config.json"
    wanted = _DTYPES.get(value.strip().lower())
    if wanted is None:
        return Settlement(None, f"{value!r} is not a dtype the checker knows")
    if cfg.nested_text_config:
        return Settlement(None, f"{where} nests a text_config: vLLM reads the text model's dtype")
    if cfg.dtype is None:
        return Settlement(None, f"{where} has no torch_dtype")
    if cfg.dtype == "float16" and cfg.model_type.startswith(_NO_FLOAT16):
        return Settlement(None, f"{where} has torch_dtype float16 for a {cfg.model_type} model, "
                          "which vLLM does not run in float16")
    if cfg.dtype not in ("bfloat16", "float16"):
        return Settlement(None, f"{where} has torch_dtype {cfg.dtype}: vLLM casts it to the "
                          "platform's preferred dtype")
    return Settlement(wanted == cfg.dtype, f"torch_dtype of {where}", _VLLM_DTYPE, cfg.dtype)
