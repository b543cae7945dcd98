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
    path does not take it. A program compiled in an earlier run is read back from the
    :class:`ProgramCache` instead of being compiled again."""
    if not takes(source, optional):
        return None
    env = _environment()
    if env is None:
        return None
    text = _OPTIONAL_WRAPPER.format(source) if optional else source
    expression = _programs().load(env, text)
    if expression is None:
        try:
            expression = env.compile(text)
        except Exception:  # noqa: BLE001 - cel-cpp raises RuntimeError/ValueError; cel-python decides
            return None
        _programs().store(text, expression)
    code = code_of(source)
    assert code is not None
    return Program(source, expression, uses_old_self(code), optional)


# --------------------------------------------------------------------------- the program cache

PROGRAM_CACHE_FILE = "cel-cpp-programs.json"
# Bump when _environment's declarations or extensions, or _OPTIONAL_WRAPPER, change.
PROGRAM_CACHE_FORMAT = 1
# Entries kept at most (the vendored CRDs have about 90 distinct rules).
PROGRAM_CACHE_MAX = 2048


class ProgramCache:
    """Compiled cel-cpp expressions kept between runs, in one JSON file of the cache directory
    (:func:`dgdgen.cache.cache_dir`): compiling a rule costs about 0.3 ms, reading its checked
    expression back (``Env.deserialize``) a tenth of that, which is most of what the vendored
    rules cost a `dgdgen validate` run (docs/performance.md).

    Keyed by the exact text compiled. The file carries a stamp (this cache's format and the
    size and mtime of the installed cel-cpp extension): a file with another stamp, unreadable
    or corrupt, is ignored, and an entry that does not deserialize is compiled again; either
    is replaced at the end of the run. It is written once, when the process exits, through a
    temporary file and a rename (:func:`dgdgen.cache.replace_file`)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._entries: dict[str, str] = {}
        self._dirty = False
        self._registered = False
        self._stamp = _program_stamp()
        if path is not None:
            self._entries = self._read(path)

    def _read(self, path: str) -> dict[str, str]:
        import json

        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read())
            if not isinstance(data, dict) or data.get("stamp") != self._stamp:
                raise ValueError("another stamp")
            entries = data["entries"]
            if not isinstance(entries, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in entries.items()):
                raise TypeError("entries")
            return entries
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self._changed()  # unusable: replaced at exit
            return {}

    def _changed(self) -> None:
        self._dirty = True
        if not self._registered and self.path is not None:
            import atexit

            atexit.register(self.save)
            self._registered = True

    def load(self, env: Any, text: str) -> Any:
        """The expression compiled from ``text`` in an earlier run, or None."""
        blob = self._entries.get(text)
        if blob is None:
            return None
        import base64

        try:
            return env.deserialize(base64.b64decode(blob, validate=True))
        except Exception:  # noqa: BLE001 - a damaged entry is compiled again and replaced
            del self._entries[text]
            self._changed()
            return None

    def store(self, text: str, expression: Any) -> None:
        import base64

        if self.path is None or len(self._entries) >= PROGRAM_CACHE_MAX:
            return
        try:
            blob = expression.serialize()
        except Exception:  # noqa: BLE001 - kept in memory only
            return
        self._entries[text] = base64.b64encode(blob).decode("ascii")
        self._changed()

    def save(self) -> None:
        """Write the file when this run added to it (or found it unusable)."""
        if self.path is None or not self._dirty:
            return
        import json

        from dgdgen.cache import replace_file

        text = json.dumps({"stamp": self._stamp, "entries": self._entries}, sort_keys=True,
                          separators=(",", ":"))
        if replace_file(self.path, text.encode("utf-8")):
            self._dirty = False


def _program_stamp() -> list[Any]:
    """What a compiled expression depends on besides its text: this cache's format and the
    installed cel-cpp (its extension module's size and modification time)."""
    import os

    try:
        from cel_expr_python import cel

        st = os.stat(cel.__file__)
    except (ImportError, OSError, TypeError):
        return [PROGRAM_CACHE_FORMAT, None]
    return [PROGRAM_CACHE_FORMAT, st.st_size, st.st_mtime_ns]


@functools.lru_cache(maxsize=1)
def _programs() -> ProgramCache:
    import os

    from dgdgen.cache import cache_dir

    root = cache_dir()
    return ProgramCache(os.path.join(root, PROGRAM_CACHE_FILE) if root is not None else None)


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
