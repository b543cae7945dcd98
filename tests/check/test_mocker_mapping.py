"""The one rendered-flag → mocker-flag mapping (dgdgen/runtime/mocker.py), for what the checker's
runtime tests rely on: TRT-LLM's card block size is the engine's tokens_per_block (not the
--kv-block-size fallback), worker router flags are carried with their boolean spelling."""

from __future__ import annotations

from pathlib import Path

from worker_support import shell_worker

from dgdgen.runtime.mocker import mocker_invocation


def invocation(backend: str, args: str) -> tuple[list[str], dict[str, str]]:
    comp = shell_worker(f"python3 -m dynamo.{backend} --model Q {args}")
    inv = mocker_invocation(comp, model_dir=Path("/models/tiny"))
    return list(inv.args), dict(inv.dropped)


def value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_trtllm_block_size_comes_from_the_engine() -> None:
    args, dropped = invocation("trtllm", "--kv-block-size 64")
    assert value(args, "--block-size") == "32"  # TRT-LLM's own default, not the fallback flag
    assert "#12023" in dropped["--kv-block-size"]
    args, _ = invocation(
        "trtllm", """--override-engine-args '{\\"kv_cache_config\\": {\\"tokens_per_block\\": 64}}'""")
    assert value(args, "--block-size") == "64"


def test_trtllm_sequence_length_is_the_effective_engine_value() -> None:
    args, _ = invocation("trtllm", "--max-seq-len 2048")
    assert value(args, "--max-model-len") == "2048"


def test_router_flags_are_carried_with_their_boolean_spelling() -> None:
    args, _ = invocation("vllm", "--router-mode kv --no-kv-events --router-temperature 0.5")
    assert value(args, "--router-mode") == "kv"
    assert "--no-router-kv-events" in args
    assert value(args, "--router-temperature") == "0.5"
