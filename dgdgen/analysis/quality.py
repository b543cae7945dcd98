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

:class:`Judge` is that endpoint with its budget: every request it sends is counted against
``max_calls`` (the spec's ``judge.maxCalls``), calibration included, and a pair is asked only
while two calls are left, so a run never exceeds the budget it reports.
"""

from __future__ import annotations

import json
import re
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


def _post(url: str, body: Mapping[str, Any], api_key: str | None, timeout: float,
          extra: Mapping[str, str] | None = None) -> Any:
    headers = {"Content-Type": "application/json", **(extra or {})}
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
    api_key: str | None = None, timeout: float = 60.0, headers: Mapping[str, str] | None = None,
) -> Answer:
    """One chat completion at the gate's fixed temperature, seed and token limit (``headers``:
    sent with it, a preview's that routes it to the candidate)."""
    body = {
        "model": model, "messages": [{"role": "user", "content": prompt}],
        "temperature": TEMPERATURE, "seed": seed, "max_tokens": max_tokens, "stream": False,
    }
    data = _post(url, body, api_key, timeout, headers)
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


_SYSTEM_HEAD = "You compare two answers to the same prompt.\nRubric:\n"
_SYSTEM_TAIL = "\nReply with exactly one word: A, B or TIE."
_USER = re.compile(r"\APrompt:\n(.*?)\n\n\[Answer A\]\n(.*)\n\n\[Answer B\]\n(.*)\Z", re.DOTALL)


def judge_messages(rubric: str, prompt: str, first: str, second: str) -> list[dict[str, str]]:
    """The judge's request: the rubric, the prompt, the two answers, one-word verdict."""
    return [
        {"role": "system", "content": _SYSTEM_HEAD + rubric + _SYSTEM_TAIL},
        {"role": "user", "content": (
            f"Prompt:\n{prompt}\n\n[Answer A]\n{first}\n\n[Answer B]\n{second}"
        )},
    ]


@dataclass(frozen=True)
class JudgeRequest:
    """What :func:`judge_messages` put in a request, read back (by the stand-in judge)."""

    rubric: str
    prompt: str
    first: str
    second: str


def read_judge_messages(messages: Any) -> JudgeRequest | None:
    """The inverse of :func:`judge_messages`; None for anything it did not write."""
    if not isinstance(messages, list) or len(messages) != 2 or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        return None
    system, user = messages[0]["content"], messages[1]["content"]
    m = _USER.match(user)
    if not (system.startswith(_SYSTEM_HEAD) and system.endswith(_SYSTEM_TAIL)) or m is None:
        return None
    rubric = system[len(_SYSTEM_HEAD):len(system) - len(_SYSTEM_TAIL)]
    return JudgeRequest(rubric, m.group(1), m.group(2), m.group(3))


def parse_verdict(text: str) -> str | None:
    word = text.strip().strip(".").upper()
    return word if word in JUDGE_VERDICTS else None


@dataclass(frozen=True)
class JudgeResult:
    preference: float | None  # candidate's mean preference in [0, 1]; None = judge error
    error: str | None = None
    orders: tuple[float, ...] = ()  # the candidate's points, stable first then candidate first
    calls: int = 0  # requests sent (one when the first one fails)

    @property
    def consistent(self) -> bool:
        """Both orders gave the candidate the same points (no position effect, no error)."""
        return len(self.orders) == 2 and self.orders[0] == self.orders[1]


def judge_preference(
    url: str, model: str, rubric: str, prompt: str, stable: str, candidate: str, *,
    seed: int, api_key: str | None = None, timeout: float = 60.0,
) -> JudgeResult:
    """Ask both orders; any failure or unparseable verdict makes the pair an error."""
    points: list[float] = []
    for first, second, cand_is in ((stable, candidate, "B"), (candidate, stable, "A")):
        body = {
            "model": model, "messages": judge_messages(rubric, prompt, first, second),
            "temperature": TEMPERATURE, "seed": seed, "max_tokens": 4, "stream": False,
        }
        calls = len(points) + 1
        try:
            data = _post(url, body, api_key, timeout)
            text = data["choices"][0]["message"]["content"]
        except (RequestFailed, KeyError, IndexError, TypeError) as e:
            return JudgeResult(None, f"judge request failed: {e}", calls=calls)
        verdict = parse_verdict(text if isinstance(text, str) else "")
        if verdict is None:
            return JudgeResult(None, f"unparseable judge verdict {str(text)[:40]!r}",
                               calls=calls)
        points.append(0.5 if verdict == "TIE" else (1.0 if verdict == cand_is else 0.0))
    return JudgeResult(sum(points) / len(points), orders=tuple(points), calls=len(points))


@dataclass
class Judge:
    """The judge endpoint of one run and the requests sent to it against ``max_calls``."""

    url: str
    model: str
    rubric: str
    seed: int
    api_key: str | None = None
    timeout: float = 60.0
    max_calls: int | None = None  # None: no budget
    calls: int = 0

    def can_ask(self) -> bool:
        """Whether the budget still covers a whole pair (both orders)."""
        return self.max_calls is None or self.max_calls - self.calls >= 2

    def prefer(self, prompt: str, stable: str, candidate: str) -> JudgeResult:
        """:func:`judge_preference`, counted; call only while :meth:`can_ask`."""
        r = judge_preference(self.url, self.model, self.rubric, prompt, stable, candidate,
                             seed=self.seed, api_key=self.api_key, timeout=self.timeout)
        self.calls += r.calls
        return r

    def budget(self) -> str:
        """``"12 judge calls of 40"`` (or ``"12 judge calls, no budget"``)."""
        of = f" of {self.max_calls}" if self.max_calls is not None else ", no budget"
        return f"{self.calls} judge calls{of}"


@dataclass(frozen=True)
class PairOutcome:
    prompt: Prompt
    stable: Answer | None
    candidate: Answer | None
    error: str | None


def collect(
    prompts: Sequence[Prompt], *, stable_url: str, candidate_url: str, model: str,
    max_tokens: int, seed: int, timeout: float = 60.0,
    candidate_headers: Mapping[str, str] | None = None,
) -> list[PairOutcome]:
    """Each prompt to both generations, in order (sequential: no batching difference)."""
    out = []
    for p in prompts:
        try:
            s = ask(stable_url, model, p.prompt, max_tokens=max_tokens, seed=seed, timeout=timeout)
            c = ask(candidate_url, model, p.prompt, max_tokens=max_tokens, seed=seed,
                    headers=candidate_headers,
                    timeout=timeout)
        except RequestFailed as e:
            out.append(PairOutcome(p, None, None, str(e)))
            continue
        out.append(PairOutcome(p, s, c, None))
    return out
