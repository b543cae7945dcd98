"""The LLM-as-judge contract, against a small local OpenAI-compatible HTTP server.

No LLM can run on these machines, so the judge here is a STAND-IN: a real HTTP server speaking
the chat-completions shape, whose deterministic rubric prefers the longer answer. It records
every request so that the test asserts what dgdgen sends (both orders, the rubric, the fixed
temperature and seed) and how it treats what comes back (verdicts, parse failures, errors).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from judge_support import StandInJudge as _Judge
from judge_support import stand_in_judge

from dgdgen.analysis.quality import judge_preference

RUBRIC = "Prefer the answer that is more complete."


@pytest.fixture
def judge() -> Iterator[str]:
    with stand_in_judge() as url:
        yield url


def _ask(url: str, stable: str, candidate: str) -> Any:
    return judge_preference(url, "judge", RUBRIC, "Explain X.", stable, candidate,
                            seed=7, api_key="k3y")


def test_both_orders_rubric_and_fixed_sampling(judge: str) -> None:
    r = _ask(judge, "short", "a much longer answer")
    assert r.preference == 1.0 and r.error is None
    first, second = _Judge.requests
    assert "[Answer A]\nshort\n" in first["messages"][1]["content"]
    assert "[Answer A]\na much longer answer\n" in second["messages"][1]["content"]
    for req in (first, second):
        assert RUBRIC in req["messages"][0]["content"]
        assert req["temperature"] == 0.0 and req["seed"] == 7
        assert req["_auth"] == "Bearer k3y"
    assert _ask(judge, "a much longer answer", "short").preference == 0.0
    assert _ask(judge, "same", "same").preference == 0.5


def test_position_bias_cancels_to_a_tie(judge: str) -> None:
    _Judge.mode = "always-a"
    assert _ask(judge, "short", "a much longer answer").preference == 0.5


@pytest.mark.parametrize("mode", ["garbage", "http500"])
def test_judge_failures_are_errors_never_wins(judge: str, mode: str) -> None:
    _Judge.mode = mode
    r = _ask(judge, "short", "a much longer answer")
    assert r.preference is None and r.error
    assert len(_Judge.requests) == 1  # stops at the first failure


def test_unreachable_judge_is_an_error() -> None:
    r = judge_preference("http://127.0.0.1:9", "j", RUBRIC, "p", "a", "b", seed=1, timeout=2)
    assert r.preference is None and "failed" in (r.error or "")
