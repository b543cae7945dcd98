"""Each quality scorer, on answers that must and must not score, and the prompt-set errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dgdgen.analysis.scorers import Answer, Prompt, load_prompts, score
from dgdgen.errors import InputError

P = Prompt("What is 2+2?", "4", 1)


@pytest.mark.parametrize(
    ("scorer", "text", "expected"),
    [
        ("exact", " 4\n", 1.0), ("exact", "4.", 0.0),
        ("prefix", "4, because", 1.0), ("prefix", "It is 4", 0.0),
        ("contains", "It is 4", 1.0), ("contains", "four", 0.0),
    ],
)
def test_reference_scorers(scorer: str, text: str, expected: float) -> None:
    assert score(scorer, P, Answer(text, "stop")) == expected


def test_reference_scorers_skip_prompts_without_reference() -> None:
    assert score("exact", Prompt("hi", None, 1), Answer("hi", "stop")) is None


def test_regex_json_schema_toolcall_truncation() -> None:
    assert score("regex", P, Answer("answer: 4", "stop"), pattern=r"^answer: \d+$") == 1.0
    assert score("regex", P, Answer("4", "stop"), pattern=r"^answer: \d+$") == 0.0
    schema = {"type": "object", "required": ["a"]}
    assert score("json", P, Answer('{"a": 1}', "stop"), schema=schema) == 1.0
    assert score("json", P, Answer('{"b": 1}', "stop"), schema=schema) == 0.0
    assert score("json", P, Answer('{"a": 1', "length")) == 0.0
    good = {"function": {"name": "f", "arguments": '{"x": 1}'}}
    bad = {"function": {"name": "f", "arguments": '{"x": '}}
    assert score("toolcall", P, Answer("", "tool_calls", (good,))) == 1.0
    assert score("toolcall", P, Answer("", "tool_calls", (good, bad))) == 0.0
    assert score("toolcall", P, Answer("plain text", "stop")) == 0.0
    assert score("untruncated", P, Answer("x", "stop")) == 1.0
    assert score("untruncated", P, Answer("x", "length")) == 0.0
    assert score("length", P, Answer("", "length", (), 27)) == 27.0
    assert score("length", P, Answer("x", "stop")) is None


def test_prompt_set(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a", "reference": "b"}\n\n{"prompt": "c"}\n')
    assert load_prompts(f) == [Prompt("a", "b", 1), Prompt("c", None, 3)]
    f.write_text('{"prompt": "a"}\n{"prompt": 3}\n')
    with pytest.raises(InputError, match=r"p\.jsonl:2: prompt: expected a non-empty string"):
        load_prompts(f)
    f.write_text('{"prompt": "a", "refrence": "x"}\n')
    with pytest.raises(InputError, match=r":1: refrence: unknown key"):
        load_prompts(f)
    f.write_text('{"prompt": "a"\n')
    with pytest.raises(InputError, match=r"p\.jsonl:1:\d+: not JSON"):
        load_prompts(f)
