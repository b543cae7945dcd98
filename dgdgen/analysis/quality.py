"""The paired quality comparison: the same prompts to the stable and the candidate frontends.

Every request is an OpenAI chat completion with the same fixed ``temperature`` (0), ``seed`` and
``max_tokens`` on both sides, so the only thing that differs is the generation that answers.
What cannot be made deterministic: an engine's batching changes floating-point reduction order,
so even at temperature 0 two runs can differ in a token; a ``seed`` is honoured only where the
engine implements it; a mocker engine's text is random. The gate therefore compares *scores*
over many prompts with a paired test (dgdgen/analysis/paired.py), never single answers.

The judge (``judge_preference``) asks an OpenAI-compatible endpoint the user names which of two
answers is better under the spec's rubric, once in each order (A = stable, then A = candidate)
to cancel position bias. Its verdict for the pair is the candidate's mean preference over both
orders (1 win, 0.5 tie, 0 loss each). A judge request that fails, or an answer that is not
exactly one of ``A``, ``B`` or ``TIE``, is an *error*: the pair is dropped and counted, never a
win for either side.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dgdgen.analysis.scorers import Answer, Prompt

TEMPERATURE = 0.0
JUDGE_VERDICTS = ("A", "B", "TIE")


class RequestFailed(Exception):
    """A completion request that did not give an answer."""


def _post(url: str, body: Mapping[str, Any], api_key: str | None, timeout: float) -> Any:
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(
        url.rstrip("/") + "/v1/chat/completions",
        data=json.dumps(body).encode(), headers=headers, method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, TimeoutError, json.JSONDecodeError, OSError) as e:
        raise RequestFailed(str(e)) from None


def ask(
    url: str, model: str, prompt: str, *, max_tokens: int, seed: int,
    api_key: str | None = None, timeout: float = 60.0,
) -> Answer:
    """One chat completion at the gate's fixed temperature, seed and token limit."""
    body = {
        "model": model, "messages": [{"role": "user", "content": prompt}],
        "temperature": TEMPERATURE, "seed": seed, "max_tokens": max_tokens, "stream": False,
    }
    data = _post(url, body, api_key, timeout)
    try:
        choice = data["choices"][0]
        msg = choice["message"]
        usage = data.get("usage") or {}
        tokens = usage.get("completion_tokens")
        return Answer(msg.get("content") or "", choice.get("finish_reason"),
                      tuple(msg.get("tool_calls") or ()),
                      tokens if isinstance(tokens, int) else None)
    except (KeyError, IndexError, TypeError, AttributeError):
        raise RequestFailed(f"not a chat completion: {str(data)[:200]}") from None


def judge_messages(rubric: str, prompt: str, first: str, second: str) -> list[dict[str, str]]:
    """The judge's request: the rubric, the prompt, the two answers, one-word verdict."""
    return [
        {"role": "system", "content": (
            "You compare two answers to the same prompt.\nRubric:\n" + rubric
            + "\nReply with exactly one word: A, B or TIE."
        )},
        {"role": "user", "content": (
            f"Prompt:\n{prompt}\n\n[Answer A]\n{first}\n\n[Answer B]\n{second}"
        )},
    ]


def parse_verdict(text: str) -> str | None:
    word = text.strip().strip(".").upper()
    return word if word in JUDGE_VERDICTS else None


@dataclass(frozen=True)
class JudgeResult:
    preference: float | None  # candidate's mean preference in [0, 1]; None = judge error
    error: str | None = None


def judge_preference(
    url: str, model: str, rubric: str, prompt: str, stable: str, candidate: str, *,
    seed: int, api_key: str | None = None, timeout: float = 60.0,
) -> JudgeResult:
    """Ask both orders; any failure or unparseable verdict makes the pair an error."""
    points = []
    for first, second, cand_is in ((stable, candidate, "B"), (candidate, stable, "A")):
        body = {
            "model": model, "messages": judge_messages(rubric, prompt, first, second),
            "temperature": TEMPERATURE, "seed": seed, "max_tokens": 4, "stream": False,
        }
        try:
            data = _post(url, body, api_key, timeout)
            text = data["choices"][0]["message"]["content"]
        except (RequestFailed, KeyError, IndexError, TypeError) as e:
            return JudgeResult(None, f"judge request failed: {e}")
        verdict = parse_verdict(text if isinstance(text, str) else "")
        if verdict is None:
            return JudgeResult(None, f"unparseable judge verdict {str(text)[:40]!r}")
        points.append(0.5 if verdict == "TIE" else (1.0 if verdict == cand_is else 0.0))
    return JudgeResult(sum(points) / len(points))


@dataclass(frozen=True)
class PairOutcome:
    prompt: Prompt
    stable: Answer | None
    candidate: Answer | None
    error: str | None


def collect(
    prompts: Sequence[Prompt], *, stable_url: str, candidate_url: str, model: str,
    max_tokens: int, seed: int, timeout: float = 60.0,
) -> list[PairOutcome]:
    """Each prompt to both generations, in order (sequential: no batching difference)."""
    out = []
    for p in prompts:
        try:
            s = ask(stable_url, model, p.prompt, max_tokens=max_tokens, seed=seed, timeout=timeout)
            c = ask(candidate_url, model, p.prompt, max_tokens=max_tokens, seed=seed,
                    timeout=timeout)
        except RequestFailed as e:
            out.append(PairOutcome(p, None, None, str(e)))
            continue
        out.append(PairOutcome(p, s, c, None))
    return out
