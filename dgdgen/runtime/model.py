"""A tiny local model directory for the mocker and the frontend: no weights, nothing fetched.

The frontend reads the tokenizer and the chat template (they enter the ModelDeploymentCard
checksum); the mocker reads ``config.json`` for its KV-cache shape. A byte-level BPE tokenizer
trained here on a fixed text is enough (docs/rehearse.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

DEFAULT_CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
)

_CORPUS = (
    "the rollout moves traffic from the stable generation to the candidate step by step "
    "while every gate watches time to first token inter token latency and errors "
) * 16


def make_model_dir(
    dest: Path, *, chat_template: str = DEFAULT_CHAT_TEMPLATE, context_length: int = 8192,
    extra_files: Mapping[str, str] | None = None,
) -> Path:
    """Write config.json, tokenizer.json, tokenizer_config.json and generation_config.json, and
    ``extra_files`` (name → text) beside them: the sibling files a model snapshot may carry
    (e.g. preprocessor_config.json), which the card lists as its `extra_files`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    dest.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([_CORPUS], trainer)
    tok.save(str(dest / "tokenizer.json"))
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "vocab_size": tok.get_vocab_size(),
        "max_position_embeddings": context_length,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": "float16",
    }
    tokenizer_config = {
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "model_max_length": context_length,
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": chat_template,
    }
    for name, data in (
        ("config.json", config),
        ("tokenizer_config.json", tokenizer_config),
        ("generation_config.json", {"bos_token_id": 1, "eos_token_id": 2}),
    ):
        (dest / name).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    for name, text in (extra_files or {}).items():
        (dest / name).write_text(text)
    return dest
