"""Scorers of the quality gate and the prompt set they read.

A prompt set is JSONL in the repository: one object a line with ``prompt`` (a string) and an
optional ``reference`` (a string). Each scorer turns one answer into a score in [0, 1]; the gate
pairs the stable's and the candidate's score for the same prompt (dgdgen/analysis/paired.py).

Scorers:

* ``exact`` / ``prefix`` / ``contains`` — the answer (stripped) equals / starts with / contains
  the prompt's reference; a prompt without a reference is not scored by them.
* ``regex`` — the answer matches the spec's pattern (``re.search``).
* ``json`` — the answer parses as JSON and, when the spec gives a JSON Schema, is valid for it.
* ``toolcall`` — every tool call the answer carries names a function and has arguments that
  parse as a JSON object (the OpenAI chat-completions ``tool_calls`` shape); an answer with no
  tool call scores 0 (the prompt asked for one).
* ``untruncated`` — 1 unless the answer stopped because it hit the token limit
  (``finish_reason == "length"``): truncation drift between generations.
* ``length`` — the answer's completion tokens (``usage.completion_tokens``): a candidate that
  answers the same prompt with fewer tokens loses the pair (length drift, e.g. a shorter
  context window cutting answers). Not bounded to [0, 1]; the paired test only compares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from dgdgen.errors import InputError, Location
from dgdgen.yamlio import read_text

SCORERS = (
    "exact", "prefix", "contains", "regex", "json", "toolcall", "untruncated", "length",
)
REFERENCE_SCORERS = frozenset({"exact", "prefix", "contains"})


@dataclass(frozen=True)
class Prompt:
    prompt: str
    reference: str | None
    line: int


@dataclass(frozen=True)
class Answer:
    text: str
    finish_reason: str | None
    tool_calls: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    completion_tokens: int | None = None


def jsonl_objects(path: Path, text: str | None, expected: str,
                  ) -> Iterator[tuple[int, Location, dict[str, Any]]]:
    """The objects of a JSON Lines file (the prompt set, the judge's calibration set, an
    experiment's samples), one a line, blank lines skipped, with their line number and location;
    an :class:`InputError` at the first line that is not JSON (nested too deeply, a number wider
    than Python reads) or not an object (``expected`` names its keys). Without ``text`` the file
    is read as every input is: a regular file, up to the input size limit, UTF-8."""
    if text is None:
        if path.is_dir():
            raise InputError("is a directory, expected a JSON Lines file",
                             location=Location(str(path)))
        body = read_text(str(path))
    else:
        body = text
    for n, raw in enumerate(body.splitlines(), start=1):
        if not raw.strip():
            continue
        where = Location(str(path), n)
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise InputError(f"not JSON: {e.msg}", location=Location(str(path), n, e.colno)) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", location=where) from None
        except ValueError as e:  # an integer of more digits than Python converts
            raise InputError(f"not JSON dgdgen reads: {e}"[:200], location=where) from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object with {expected}", location=where)
        yield n, where, obj


def load_prompts(path: Path, text: str | None = None) -> list[Prompt]:
    """Parse a JSONL prompt set; one :class:`InputError` at the first bad line."""
    prompts: list[Prompt] = []
    for n, where, obj in jsonl_objects(path, text, "`prompt`"):
        unknown = sorted(set(obj) - {"prompt", "reference"})
        if unknown:
            raise InputError(f"unknown key {unknown[0]!r}; expected `prompt` and optional "
                             "`reference`", location=where, field=(unknown[0],))
        p, ref = obj.get("prompt"), obj.get("reference")
        if not isinstance(p, str) or not p:
            raise InputError("expected a non-empty string", location=where, field=("prompt",))
        if ref is not None and not isinstance(ref, str):
            raise InputError("expected a string", location=where, field=("reference",))
        prompts.append(Prompt(p, ref, n))
    if not prompts:
        raise InputError("the prompt set has no prompts", location=Location(str(path)))
    return prompts


def _tool_call_ok(call: Mapping[str, Any]) -> bool:
    fn = call.get("function")
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
        return False
    args = fn.get("arguments")
    if not isinstance(args, str):
        return False
    try:
        return isinstance(json.loads(args), dict)
    except json.JSONDecodeError:
        return False


def score(
    scorer: str, prompt: Prompt, answer: Answer, *,
    pattern: str | None = None, schema: Mapping[str, Any] | None = None,
) -> float | None:
    """The answer's score in [0, 1], or None when this scorer does not apply to the prompt."""
    text = answer.text.strip()
    if scorer in REFERENCE_SCORERS:
        if prompt.reference is None:
            return None
        ref = prompt.reference.strip()
        hit = {"exact": text == ref, "prefix": text.startswith(ref), "contains": ref in text}
        return 1.0 if hit[scorer] else 0.0
    if scorer == "regex":
        if pattern is None:
            raise ValueError("the regex scorer needs a pattern")
        return 1.0 if re.search(pattern, answer.text) else 0.0
    if scorer == "json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return 0.0
        if schema is not None and not jsonschema.Draft202012Validator(schema).is_valid(value):
            return 0.0
        return 1.0
    if scorer == "toolcall":
        calls = list(answer.tool_calls)
        return 1.0 if calls and all(_tool_call_ok(c) for c in calls) else 0.0
    if scorer == "untruncated":
        return 0.0 if answer.finish_reason == "length" else 1.0
    if scorer == "length":
        n = answer.completion_tokens
        return None if n is None else float(n)
    raise ValueError(f"unknown scorer {scorer!r}")
