"""``python -m dgdgen.runtime.answerer``: a Dynamo worker that answers, for the rehearsal's gates.

The mocker's answers are empty through the 1.6.1 frontend (docs/rehearse.md), so a quality gate
behind it can only tie. This worker answers each prompt *deterministically from the prompt*: the
prompt set's reference when the prompt is in its table (``--answers``, the quality gate's JSONL
of ``prompt`` + ``reference``), the result of simple arithmetic (``What is 17 + 25?``), else a
fixed sentence. On a seeded, deterministic fraction of prompts (``--wrong-fraction``) it answers
wrongly instead: a wrong value, a truncated answer, or tool-call JSON that does not parse. Its
answers test the gate, not a model: every rehearsal report says so.

It takes the mocker's own command line (``dynamo/mocker/args.py`` of ai-dynamo 1.6.1, parsed by
the mocker's parser) so that the rehearsal hands it the flags :mod:`dgdgen.runtime.mocker`
carries from a rendered worker, and it builds the model card's inputs with the mocker's own
functions: the block size and runtime config (context length, limits, data-parallel size) of
``dynamo/mocker/config.py`` ``build_runtime_config``, the router advertisement of
``dynamo/common/configuration/groups/router_args.py`` ``build_router_config``, the endpoint and
Dynamo namespace (``DYN_NAMESPACE``) of ``dynamo/mocker/args.py``. It registers them with
``dynamo.llm.register_model`` as the backends do (token input; chat + completions, or the
prefill marker and ``WorkerType.Prefill`` on a prefill worker; ``dynamo/vllm/worker_factory.py``,
``dynamo/sglang/register.py``) and serves ``generate`` with ``Endpoint.serve_endpoint``, which
gives the worker its ``/health`` and its ``dynamo_component_requests_total`` on
``DYN_SYSTEM_PORT``. A prefill worker returns one token and a ``disaggregated_params`` payload
the frontend's prefill router forwards to the decode worker, as the sample engine of
``dynamo/common/backend/sample_engine.py`` does; the decode (or aggregated) worker answers.

The answer streams one token a chunk, the first after ``--first-token-delay`` seconds, the next
``--token-delay`` seconds apart (divided by the mocker's ``--speedup-ratio`` and
``--decode-speedup-ratio``, so ``--candidate-slowdown`` slows them too), honours ``max_tokens``
(finish reason ``length``, else ``stop``) and stops when the request is cancelled.

The answering rules are plain functions of the standard library; the Dynamo wheels and
``tokenizers`` (the ``rehearse`` extra) are imported where the worker runs, so the rules can be
read and tested without them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The chat template of the local model directory (dgdgen.runtime.model): "role: content" lines,
# then "assistant:".
_USER = "user: "
_ASSISTANT = "\nassistant:"
# Short: the rehearsal's load asks questions outside the table, and a long answer would keep
# more of its requests in flight than its concurrency allows at 40 requests/s.
FALLBACK = "No."
# The delays sit inside one bucket of the 1.6.1 frontend's histograms, far from its edges
# (dynamo_frontend_time_to_first_token_seconds: 0.22 / 0.47 s; inter_token_latency: 0.011 /
# 0.02 s): the latency gates compare Prometheus quantiles interpolated in buckets, so a delay
# beside an edge turns scheduling noise on a busy machine into a regression of one generation
# against the other (docs/rehearse.md, "Answers": with the first token at 0.12 s, a request
# 90 ms late crossed 0.22 s and a healthy candidate's TTFT p99 read 1.6x the stable's).
FIRST_TOKEN_DELAY = 0.23
TOKEN_DELAY = 0.013
_ARITHMETIC = re.compile(r"what is\s+(-?\d+)\s*([-+*x×/])\s*(-?\d+)\s*\??", re.IGNORECASE)
# How a wrong answer is wrong, chosen per prompt by the same seeded hash.
WRONG_KINDS = ("wrong value", "truncated", "broken tool-call JSON")


@dataclass(frozen=True)
class Reply:
    text: str
    wrong: str | None = None  # which kind of wrong answer, None when right
    # stop early as if the token limit hit (the truncated kind): finish reason "length"
    truncated: bool = False


def load_answers(path: Path) -> dict[str, str]:
    """The prompt → reference table of a quality prompt set (JSON Lines, ``prompt`` and
    ``reference``); prompts without a reference are left out."""
    table: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if isinstance(obj, dict) and isinstance(obj.get("reference"), str):
            table[str(obj["prompt"]).strip()] = obj["reference"]
    return table


def last_user_message(prompt_text: str) -> str:
    """The last user message of a prompt rendered with the local chat template."""
    start = prompt_text.rfind(_USER)
    text = prompt_text[start + len(_USER):] if start >= 0 else prompt_text
    end = text.rfind(_ASSISTANT)
    return (text[:end] if end >= 0 else text).strip()


def fraction_of(seed: int, question: str) -> float:
    """A deterministic number in [0, 1) for the question: the seeded hash that picks it."""
    digest = hashlib.sha256(f"{seed}\0{question}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _arithmetic(question: str) -> str | None:
    m = _ARITHMETIC.fullmatch(question.strip())
    if m is None:
        return None
    a, op, b = int(m[1]), m[2], int(m[3])
    if op == "+":
        return str(a + b)
    if op == "-":
        return str(a - b)
    if op in ("*", "x", "×"):
        return str(a * b)
    return str(a // b) if b and a % b == 0 else (f"{a / b:g}" if b else None)


def right_answer(question: str, answers: Mapping[str, str]) -> str:
    """The reference, the arithmetic's result, or the fixed sentence."""
    if question in answers:
        return answers[question]
    return _arithmetic(question) or FALLBACK


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return text.lstrip()[:1] in ("{", "[")


def wrong_answer(question: str, right: str, answers: Mapping[str, str], seed: int) -> Reply:
    """A wrong answer of one of the WRONG_KINDS: JSON (a tool call) loses its closing brace; a
    number becomes another number; any other text is truncated (from 4 characters) or replaced
    by another question's reference (or reversed, when the table has no other)."""
    if _is_json(right):
        return Reply(right.rstrip()[:-1], wrong="broken tool-call JSON")
    if re.fullmatch(r"-?\d+(\.\d+)?", right):
        return Reply(str(int(float(right)) + 1), wrong="wrong value")
    # not a short answer: cut to a token or two, it would leave the latency gates no
    # inter-token latency to compare (the load's questions get the 3-character FALLBACK)
    if fraction_of(seed + 1, question) < 0.5 and len(right) >= 4:
        return Reply(right[: len(right) // 2], wrong="truncated", truncated=True)
    others = sorted({v for v in answers.values() if v.strip() != right.strip()})
    if others:
        other = others[int(fraction_of(seed + 2, question) * len(others))]
        return Reply(other, wrong="wrong value")
    return Reply(right[::-1] if right[::-1] != right else right + "?", wrong="wrong value")


def reply(question: str, answers: Mapping[str, str], *, wrong_fraction: float,
          seed: int) -> Reply:
    """What the engine answers to ``question``: right, or wrong for a seeded fraction."""
    right = right_answer(question, answers)
    if wrong_fraction > 0 and fraction_of(seed, question) < wrong_fraction:
        return wrong_answer(question, right, answers, seed)
    return Reply(right)


class Engine:
    """The ``generate`` handler: token ids in, the answer's tokens out, one a chunk."""

    def __init__(self, tokenizer: Any, answers: Mapping[str, str], *, wrong_fraction: float,
                 seed: int, token_delay: float, first_token_delay: float, prefill: bool,
                 decode: bool, eos: Sequence[int]) -> None:
        self.tokenizer = tokenizer
        self.answers = answers
        self.wrong_fraction = wrong_fraction
        self.seed = seed
        self.token_delay = token_delay
        self.first_token_delay = first_token_delay
        self.prefill = prefill
        self.decode = decode
        self.eos = list(eos)

    def answer_tokens(self, token_ids: Sequence[int]) -> tuple[list[int], bool]:
        text = self.tokenizer.decode(list(token_ids), skip_special_tokens=True)
        r = reply(last_user_message(str(text)), self.answers,
                  wrong_fraction=self.wrong_fraction, seed=self.seed)
        return list(self.tokenizer.encode(r.text).ids), r.truncated

    async def generate(self, request: dict[str, Any], context: Any) -> AsyncIterator[
            dict[str, Any]]:
        token_ids = _token_list(request.get("token_ids"))
        prompt_len = len(token_ids)
        stop = request.get("stop_conditions") or {}
        limit = stop.get("max_tokens")
        if self.prefill:
            # the prefill half of a disaggregated pair: one token and the handoff payload the
            # frontend's prefill router forwards to the decode worker as `prefill_result`
            await asyncio.sleep(self.first_token_delay)
            first = (self.eos or [0])[0]
            yield {"token_ids": [first], "index": 0, "finish_reason": "length",
                   "disaggregated_params": {"dgdgen_answerer": True},
                   "completion_usage": _usage(prompt_len, 1)}
            return
        answer, truncated = self.answer_tokens(token_ids)
        if isinstance(limit, int) and limit >= 0 and len(answer) > limit:
            answer, truncated = answer[:limit], True
        sent = 0
        for tid in answer:
            if context.is_stopped() or context.is_killed():
                return
            # the prompt's "prefill" before the first token, unless a prefill worker did it
            first = sent == 0 and not self.decode
            await asyncio.sleep(self.first_token_delay if first else self.token_delay)
            sent += 1
            yield {"token_ids": [tid], "index": 0}
        yield {"token_ids": [], "index": 0, "finish_reason": "length" if truncated else "stop",
               "completion_usage": _usage(prompt_len, sent)}


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def _token_list(value: Any) -> list[int]:
    # the frontend may pack token ids into one little-endian int32 buffer
    # (ai-dynamo 1.6.1 dynamo/common/utils/token_ids.py, DYN_TOKEN_IDS_AS_BYTES)
    from dynamo.common.utils.token_ids import token_ids_to_list

    return list(token_ids_to_list(value) or [])


def parse(argv: Sequence[str]) -> tuple[argparse.Namespace, argparse.Namespace]:
    """(the answerer's own flags, the mocker's flags parsed by the mocker's parser)."""
    ap = argparse.ArgumentParser(
        prog="python -m dgdgen.runtime.answerer",
        description="A Dynamo worker answering deterministically from the prompt (dgdgen's "
                    "answering engine: it tests the gate, not a model). Every other flag is "
                    "the mocker's (python -m dynamo.mocker --help).")
    ap.add_argument("--answers", type=Path, help="prompt → reference table (the quality gate's "
                    "prompt set: JSON Lines with `prompt` and `reference`)")
    ap.add_argument("--wrong-fraction", type=float, default=0.0,
                    help="answer this fraction of prompts wrongly (0..1; default 0)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the hash that picks them")
    ap.add_argument("--token-delay", type=float, default=TOKEN_DELAY,
                    help=f"seconds between answer tokens (default {TOKEN_DELAY})")
    ap.add_argument("--first-token-delay", type=float, default=FIRST_TOKEN_DELAY,
                    help="seconds before the first token, the prefill (default "
                    f"{FIRST_TOKEN_DELAY})")
    own, rest = ap.parse_known_args(list(argv))
    if not 0 <= own.wrong_fraction <= 1:
        ap.error("--wrong-fraction must be between 0 and 1")
    from dynamo.mocker.args import parse_args as mocker_args

    return own, mocker_args(rest)


async def serve(own: argparse.Namespace, args: argparse.Namespace) -> None:
    from dynamo.common.configuration.groups.router_args import build_router_config
    from dynamo.common.utils.runtime import create_runtime
    from dynamo.llm import ModelInput, ModelType, WorkerType, register_model
    from dynamo.mocker.config import (
        apply_worker_engine_args_overrides,
        build_runtime_config,
        load_mocker_engine_args,
    )
    from dynamo.mocker.utils.kv_cache import compute_kv_bytes_per_token
    from tokenizers import Tokenizer

    if args.kv_bytes_per_token is None:
        args.kv_bytes_per_token = compute_kv_bytes_per_token(args.model_path,
                                                             args.kv_cache_dtype)
    engine_args = apply_worker_engine_args_overrides(
        load_mocker_engine_args(args), kv_bytes_per_token=args.kv_bytes_per_token)
    block_size, runtime_config = build_runtime_config(engine_args)
    runtime, loop = create_runtime(args.discovery_backend, args.request_plane,
                                   args.event_plane, response_plane=args.response_plane)
    endpoint = runtime.endpoint(str(args.endpoint).removeprefix("dyn://"))
    mode = args.disaggregation_mode
    if mode == "prefill":
        # no OpenAI surface: the legacy prefill marker and the worker type, needing a decode
        # peer (ai-dynamo 1.6.1 dynamo/vllm/worker_factory.py, prefill registration)
        model_type, worker_type = ModelType.Prefill, WorkerType.Prefill
        needs: list[list[Any]] | None = [[WorkerType.Decode]]
    elif mode == "decode":
        model_type, worker_type = ModelType.Chat | ModelType.Completions, WorkerType.Decode
        needs = [[WorkerType.Prefill]]
    else:
        model_type, worker_type = ModelType.Chat | ModelType.Completions, WorkerType.Aggregated
        needs = None
    model_dir = Path(args.model_path)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    eos = json.loads((model_dir / "generation_config.json").read_text()).get("eos_token_id", 2)
    # --candidate-slowdown gives the mocker's speedup ratios (1/X): they slow these delays too
    ratio = float(getattr(args, "decode_speedup_ratio", 1.0) or 1.0)
    prefill_ratio = float(getattr(args, "speedup_ratio", 1.0) or 1.0)
    engine = Engine(tokenizer, load_answers(own.answers) if own.answers else {},
                    wrong_fraction=own.wrong_fraction, seed=own.seed,
                    token_delay=own.token_delay / ratio,
                    first_token_delay=own.first_token_delay / prefill_ratio,
                    prefill=mode == "prefill", decode=mode == "decode",
                    eos=eos if isinstance(eos, list) else [eos])
    await register_model(
        ModelInput.Tokens, model_type, endpoint, str(model_dir), args.model_name,
        worker_type=worker_type, needs=needs, kv_cache_block_size=block_size,
        runtime_config=runtime_config,
        router_config=build_router_config(args.router_advertisement))

    # SIGTERM: stop taking requests and let the in-flight ones finish (graceful_shutdown), as
    # the mocker does (ai-dynamo 1.6.1 dynamo/mocker/main.py)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, runtime.shutdown)
    await endpoint.serve_endpoint(engine.generate, graceful_shutdown=True)


def main(argv: Sequence[str] | None = None) -> int:
    own, args = parse(sys.argv[1:] if argv is None else argv)
    import uvloop
    from dynamo.runtime.logging import configure_dynamo_logging

    configure_dynamo_logging()
    uvloop.run(serve(own, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
