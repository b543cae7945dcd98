"""The fast path for ``x-kubernetes-validations``: cel-cpp (the CEL C++ runtime, PyPI package
``cel-expr-python``) decides only that a rule *holds*.

cel-python (:mod:`dgdgen.crd.cel`) walks its parse tree in Python: about 2 ms to evaluate a rule
and 5 ms to parse one, plus 0.1 s to import it with its grammar, which was half of what
``dgdgen validate`` cost (docs/performance.md). cel-cpp compiles and evaluates the same rules in
microseconds. It is the reference for nothing here: a rule's outcome is taken from cel-cpp only
when cel-cpp evaluates it to ``true``. Everything else — ``false``, an evaluation error, a rule
cel-cpp cannot compile, a rule this fast path does not take — is decided again by cel-python,
exactly as before, so every violation, message, ``messageExpression`` and "not evaluated"
report is cel-python's. cel-cpp could only change a result by finding ``true`` where cel-python
finds ``false`` or an error; ``tests/crd/test_celcpp.py`` evaluates every vendored rule on every
object the examples render and on the test corpora with both engines to show they agree, and that
every rule the fast path takes is one cel-python compiles (so no "not evaluated" report is lost).

The fast path takes a rule only when its text is plain standard CEL that both engines implement
alike: the functions and macros it calls are in :data:`FAST_NAMES` (cel-go's standard library and
the ext-strings functions :mod:`dgdgen.crd.cel` implements), and it uses no optional syntax
(``self.?x``, ``optionalOldSelf``). The Kubernetes libraries (quantity, URLs, lists, regex
``find``) stay with cel-python. Without cel-cpp installed, every rule goes to cel-python.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# --------------------------------------------------------------------------- property names

# k8s.io/apiserver/pkg/cel/escaping.go: reserved words become __word__, and __ . - / are spelt
# out, so `namespace` is read as `self.__namespace__` in rules (as Gateway API's parentRefs do).
_RESERVED = frozenset(
    ["true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function",
     "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"]
)
_ESCAPABLE = re.compile(r"^[a-zA-Z_.\-/][a-zA-Z0-9_.\-/]*$")


@functools.lru_cache(maxsize=4096)
def escape(name: str) -> str | None:
    """The CEL spelling of a schema property name, or None when CEL cannot address it."""
    if name in _RESERVED:
        return f"__{name}__"
    if not _ESCAPABLE.match(name):
        return None
    return (
        name.replace("__", "__underscores__")
        .replace(".", "__dot__")
        .replace("-", "__dash__")
        .replace("/", "__slash__")
    )


# --------------------------------------------------------------------------- which rules

# Called names the fast path accepts: macros and standard functions of cel-go / cel-cpp, and
# the ext-strings functions; each is also in cel.SUPPORTED with the same meaning (a test checks
# the subset). Optional values (hasValue, value, orValue) and the Kubernetes libraries are not.
FAST_NAMES = frozenset({
    "has", "all", "exists", "exists_one", "map", "filter",
    "size", "contains", "startsWith", "endsWith", "matches",
    "int", "uint", "double", "string", "bytes", "bool", "dyn", "type", "duration", "timestamp",
    "charAt", "indexOf", "lastIndexOf", "join", "lowerAscii", "upperAscii", "replace", "split",
    "substring", "trim",
})

_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
# `.?field`, `[?index]`, `{?key: v}`, `[a, ?b]`: cel-go's optional syntax. A ternary's `?`
# always follows an operand, never one of these.
_OPTIONAL_SYNTAX = re.compile(r"[.\[{,(]\s*\?")
# The identifier `oldSelf`, not a field `x.oldSelf`.
_OLD_SELF = re.compile(r"(\.\s*)?(?<![A-Za-z0-9_])oldSelf(?![A-Za-z0-9_])")
# A comment, or a string / bytes literal with its optional prefix (r, b, rb, br in any case).
_LITERAL_START = re.compile(r"(//)|(?:(?<![A-Za-z0-9_])([rRbB]{1,2}))?(['\"])")


def code_of(source: str) -> str | None:
    """The rule's text with string and bytes literals emptied and comments removed, so that what
    remains are names and operators; None when a literal is not terminated (cel-python decides)."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        m = _LITERAL_START.search(source, i)
        if m is None:
            out.append(source[i:])
            break
        out.append(source[i:m.start()])
        if m.group(1):
            end = source.find("\n", m.end())
            i = n if end < 0 else end
            continue
        raw = "r" in (m.group(2) or "").lower()
        j = m.start(3)
        quote = source[j:j + 3] if source[j:j + 3] in ("'''", '"""') else source[j]
        j += len(quote)
        while True:
            if j >= n:
                return None
            if source.startswith(quote, j):
                j += len(quote)
                break
            if source[j] == "\\" and not raw:
                j += 2
                continue
            if source[j] == "\n" and len(quote) == 1:
                return None
            j += 1
        out.append('""')
        i = j
    return "".join(out)


def uses_old_self(code: str) -> bool:
    """Whether the rule (as :func:`code_of` returns it) names the variable ``oldSelf``."""
    return any(not m.group(1) for m in _OLD_SELF.finditer(code))


# With ``optionalOldSelf: true`` oldSelf is an optional value (optional.none() on create).
OPTIONAL_NAMES = frozenset({"hasValue", "value", "orValue"})


def takes(source: str, optional: bool = False) -> bool:
    """Whether the fast path may decide this rule (see the module's docstring)."""
    code = code_of(source)
    if code is None or _OPTIONAL_SYNTAX.search(code):
        return False
    return not set(_CALLED.findall(code)) - (FAST_NAMES | OPTIONAL_NAMES if optional
                                             else FAST_NAMES)


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Program:
    source: str
    expression: Any
    uses_old_self: bool
    optional: bool


# An optionalOldSelf rule is compiled inside a binding that makes oldSelf optional.of(the old
# value) on update and optional.none() on create (cel-go's semantics for such rules; the
# bindings and optional libraries are cel-go's too). A rule can only name self and oldSelf, so
# the two helper variables cannot clash with it.
_OPTIONAL_WRAPPER = ("cel.bind(oldSelf, dgdgenHasOldSelf ? optional.of(dgdgenOldSelf) : "
                     "optional.none(), (\n{}\n))")


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    try:
        from cel_expr_python import cel  # type: ignore[import-untyped]
        from cel_expr_python.ext import (  # type: ignore[import-untyped]
            ext_bindings,
            ext_optional,
            ext_strings,
        )
    except ImportError:
        return None
    dyn = cel.Type.DYN
    return cel.NewEnv(
        variables={"self": dyn, "oldSelf": dyn, "dgdgenHasOldSelf": cel.Type.BOOL,
                   "dgdgenOldSelf": dyn},
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(),
                    ext_bindings.ExtBindings()],
    )


@functools.cache
def program(source: str, optional: bool = False) -> Program | None:
    """The cel-cpp program of a rule (``optional``: its optionalOldSelf); None when the fast
    path does not take it."""
    if not takes(source, optional):
        return None
    env = _environment()
    if env is None:
        return None
    try:
        expression = env.compile(_OPTIONAL_WRAPPER.format(source) if optional else source)
    except Exception:  # noqa: BLE001 - cel-cpp raises RuntimeError/ValueError; cel-python decides
        return None
    code = code_of(source)
    assert code is not None
    return Program(source, expression, uses_old_self(code), optional)


def holds(prog: Program, value: Any, schema: Mapping[str, Any] | None, old: Any = None,
          has_old: bool = False, converted: dict[str, Any] | None = None) -> bool:
    """True when cel-cpp evaluates the rule to ``true`` for ``self`` = value (and ``oldSelf`` =
    old, present when ``has_old``); False for anything else, which cel-python then decides.
    ``converted`` keeps the conversions (:func:`plain`) for the next rule of the same node."""
    if converted is None:
        converted = {}
    try:
        if "self" not in converted:
            converted["self"] = plain(value, schema)
        data = {"self": converted["self"]}
        if prog.optional or prog.uses_old_self:
            if has_old and "old" not in converted:
                converted["old"] = plain(old, schema)
            old_plain = converted.get("old")
        if prog.optional:
            data["dgdgenHasOldSelf"] = has_old
            data["dgdgenOldSelf"] = old_plain if has_old else None
        elif prog.uses_old_self:
            data["oldSelf"] = old_plain if has_old else plain(old, schema)
        result = prog.expression.eval(data=data)
        return result.value() is True and result.type().name() == "BOOL"
    except Exception:  # noqa: BLE001 - a conversion or evaluation error: cel-python decides
        return False


def plain(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Plain data as the API server presents it to CEL: declared property names escaped
    (:func:`escape`), map keys and schemaless data kept as written, integers of ``type: number``
    as doubles (the same conversion as :func:`dgdgen.crd.cel.to_cel`, into Python values that
    cel-cpp converts itself)."""
    schema = schema or {}
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return float(value) if schema.get("type") == "number" else value
    if isinstance(value, list):
        items = schema.get("items")
        return [plain(v, items if isinstance(items, dict) else None) for v in value]
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for k, v in value.items():
            if props is not None and k in props:
                name = escape(k)
                if name is not None:
                    out[name] = plain(v, props[k])
            else:
                out[str(k)] = plain(v, extra if isinstance(extra, dict) else None)
        return out
    raise TypeError(f"cannot convert {type(value).__name__} to CEL")
