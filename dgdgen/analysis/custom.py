"""Custom metric gates: PromQL the user writes, evaluated per generation (docs/analysis.md).

A custom query names its generation only through two placeholders:

* ``${generation}`` inside a selector's braces becomes the matchers of one generation —
  ``namespace``, ``dgdgen_rollout`` and ``dgdgen_generation``, the labels the rendered PodMonitors
  add at scrape time (:mod:`dgdgen.analysis.queries`), with ``{{args.*}}`` placeholders Argo
  Rollouts fills from the run's args;
* ``${window}`` inside a range becomes the run's window.

:func:`check_query` refuses a query with a vector selector that lacks ``${generation}`` or
that names the generation labels itself: such a selector would read the other generation's
series (or both), so the candidate could pass on the stable's data. Every custom metric is
guarded by its own ``samples`` query like the latency gates by the request count: fewer events
than ``minSamples`` in the window give an empty result, hence Inconclusive, never a pass.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from dgdgen.analysis import queries

GENERATION = "${generation}"
WINDOW = "${window}"
PREFIX = "custom-"
RELATIVE_SUFFIX = "-vs-stable"

# PromQL words that are not metric names where they stand (the grouping keywords take a
# parenthesised label list, which is skipped).
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_WORDS = {"and", "or", "unless", "bool", "offset", "nan", "inf"}
_FORBIDDEN = (queries.LABEL_GENERATION, queries.LABEL_ROLLOUT)
_TOKEN = re.compile(
    r"""(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)"""
    r"|(?P<ph>\$\{[a-z]+\})"
    r"|(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)"
    r"|(?P<num>[0-9][0-9A-Za-z.]*|\.[0-9][0-9A-Za-z.]*)"
    r"|(?P<ws>\s+)"
    r"|(?P<op>.)",
    re.DOTALL,
)


class QueryError(ValueError):
    pass


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "op"
        if kind != "ws":
            out.append((kind, m.group()))
    return out


def check_query(text: str) -> None:
    """Raise :class:`QueryError` unless every vector selector of ``text`` is scoped to one
    generation by ``${generation}`` (and nothing else names the generation labels)."""
    toks = _tokens(text)
    for kind, value in toks:
        if kind == "ph" and value not in (GENERATION, WINDOW):
            raise QueryError(f"unknown placeholder {value}; use {GENERATION} or {WINDOW}")
        if kind in ("ident", "str") and any(f in value for f in _FORBIDDEN):
            raise QueryError(f"names {value!r}: the generation labels come from {GENERATION} "
                             "only, so a query cannot read the other generation's series")
    if GENERATION not in text:
        raise QueryError(f"has no {GENERATION}: it would read both generations' series")
    i = 0
    selectors = 0
    while i < len(toks):
        kind, value = toks[i]
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        if kind == "op" and value == "[":  # a range or subquery: durations, ${window}
            depth = 0
            while i < len(toks):
                depth += toks[i][1] == "["
                depth -= toks[i][1] == "]"
                i += 1
                if depth == 0:
                    break
            continue
        if kind == "ident" and value.lower() in _GROUPING and nxt == "(":
            while i < len(toks) and toks[i][1] != ")":
                i += 1
            i += 1
            continue
        if kind == "ident" and (value.lower() in _WORDS | _GROUPING or nxt == "("
                                or nxt.lower() in ("by", "without")):
            i += 1  # a keyword, a function call or an aggregation (`sum by (le) (…)`)
            continue
        if kind == "ident" and nxt != "{":
            raise QueryError(f"selector {value!r} has no {{{GENERATION}}}: it would read both "
                             "generations' series")
        if kind == "op" and value == "{":
            j = i + 1
            inside: list[str] = []
            while j < len(toks) and toks[j][1] != "}":
                inside.append(toks[j][1])
                j += 1
            if GENERATION not in inside:
                before = toks[i - 1][1] if i and toks[i - 1][0] == "ident" else "{…}"
                raise QueryError(f"selector {before!r} has no {GENERATION} among its matchers: it "
                                 "would read both generations' series")
            selectors += 1
            i = j + 1
            continue
        i += 1
    if selectors == 0:
        raise QueryError(f"{GENERATION} must stand inside a selector's braces, e.g. "
                         f"metric{{{GENERATION}}}")


def expand(text: str, generation_arg: str) -> str:
    """The query for one generation, with Argo ``{{args.*}}`` placeholders."""
    matchers = queries.selector(generation_arg)[1:-1]
    return "(" + text.replace(GENERATION, matchers).replace(WINDOW, queries.arg("window")) + ")"


def arg_names(name: str) -> dict[str, str]:
    base = PREFIX + name
    return {"threshold": f"{base}-threshold", "max_difference": f"{base}-max-difference",
            "max_ratio": f"{base}-max-ratio", "min_samples": f"{base}-min-samples"}


def _guard(cm: Any, gen: str) -> str:
    return f"({expand(cm.samples, gen)} >= {queries.arg(arg_names(cm.name)['min_samples'])})"


def absolute_query(cm: Any) -> str:
    return f"{expand(cm.query, queries.CANDIDATE)} and on() {_guard(cm, queries.CANDIDATE)}"


def relative_query(cm: Any) -> str:
    """How much worse the candidate is than the stable: a difference or a ratio, oriented so
    that larger is worse whichever direction is better."""
    cand, stable = expand(cm.query, queries.CANDIDATE), expand(cm.query, queries.STABLE)
    worse, better = (cand, stable) if cm.better == "lower" else (stable, cand)
    op = "/" if cm.max_ratio is not None else "-"
    return (f"({worse} {op} on() {better}) and on() {_guard(cm, queries.CANDIDATE)}"
            f" and on() {_guard(cm, queries.STABLE)}")
