"""CEL for ``x-kubernetes-validations``: cel-python plus the Kubernetes CEL libraries our CRDs use.

The API server evaluates CRD validation rules with cel-go and the Kubernetes extension
libraries (k8s.io/apiserver/pkg/cel/library: quantity, url, regex, lists; cel-go ext strings;
optionals for ``optionalOldSelf``). cel-python implements standard CEL; this module adds the
extension functions as cel-python functions, converts objects to CEL values the way the API
server does (property names escaped, see :func:`escape`), compiles each rule once, and says which
rules it cannot evaluate instead of letting them pass.
"""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError

from dgdgen.crd import celpy_speed

# Property names are escaped as the API server does (one definition, shared with the fast path).
from dgdgen.crd.celcpp import escape

# --------------------------------------------------------------------------- values


def to_cel(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Convert plain data to CEL values, typed by its (structural) schema.

    Object properties declared in the schema are escaped (:func:`escape`); keys of maps
    (``additionalProperties``) and of schemaless ``x-kubernetes-preserve-unknown-fields`` data
    are kept as written, as the API server does.
    """
    schema = schema or {}
    if value is None:
        return None
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        if schema.get("type") == "number":
            return ct.DoubleType(float(value))
        return ct.IntType(value)
    if isinstance(value, float):
        return ct.DoubleType(value)
    if isinstance(value, str):
        return ct.StringType(value)
    if isinstance(value, list):
        items = schema.get("items")
        return ct.ListType([to_cel(v, items if isinstance(items, dict) else None) for v in value])
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = ct.MapType()
        for k, v in value.items():
            if props is not None and k in props:
                name = escape(k)
                if name is not None:
                    out[ct.StringType(name)] = to_cel(v, props[k])
            else:
                out[ct.StringType(k)] = to_cel(v, extra if isinstance(extra, dict) else None)
        return out
    raise TypeError(f"cannot convert {type(value).__name__} to CEL")


def from_cel(value: Any) -> Any:
    """A CEL result as plain Python (for messageExpression results and diagnostics)."""
    if isinstance(value, ct.BoolType):
        return bool(value)
    if isinstance(value, (ct.IntType, ct.UintType)):
        return int(value)
    if isinstance(value, ct.DoubleType):
        return float(value)
    if isinstance(value, ct.StringType):
        return str(value)
    if isinstance(value, ct.ListType):
        return [from_cel(v) for v in value]
    if isinstance(value, ct.MapType):
        return {from_cel(k): from_cel(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- optionals


class Optional:
    """cel-go's ``optional_type``, just enough for ``optionalOldSelf`` rules."""

    def __init__(self, value: Any = None, present: bool = False) -> None:
        self.present = present
        self.val = value

    def __repr__(self) -> str:
        return f"optional.of({self.val!r})" if self.present else "optional.none()"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional):
            return NotImplemented
        return self.present == other.present and (not self.present or self.val == other.val)

    def __hash__(self) -> int:
        return hash((self.present, repr(self.val)))


def _has_value(o: Any) -> Any:
    if not isinstance(o, Optional):
        raise TypeError("hasValue() applies to optionals")
    return ct.BoolType(o.present)


def _value(o: Any) -> Any:
    if not isinstance(o, Optional):
        raise TypeError("value() applies to optionals")
    if not o.present:
        return CELEvalError("optional.none() dereference", ValueError, ())
    return o.val


def _or_value(o: Any, default: Any) -> Any:
    if not isinstance(o, Optional):
        raise TypeError("orValue() applies to optionals")
    return o.val if o.present else default


# --------------------------------------------------------------------------- quantity

# k8s.io/apimachinery/pkg/api/resource/quantity.go: <signedNumber><suffix>, suffix one of the
# binary SI (Ki..Ei), decimal SI (n, u, m, "", k, M..E) or a decimal exponent (e3, E-2).
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[eE][+-]?[0-9]+)|[a-zA-Z]*)$")
_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


@dataclass(frozen=True)
class Quantity:
    """An exact Kubernetes resource quantity (the value of ``quantity('1Gi')``)."""

    text: str
    amount: Fraction

    def __lt__(self, other: Quantity) -> bool:
        return self.amount < other.amount


def parse_quantity(text: str) -> Quantity | None:
    m = _QUANTITY.match(text.strip()) if text == text.strip() else None
    if not m:
        return None
    number, suffix = m.groups()
    if suffix and suffix[0] in "eE" and suffix[1:].lstrip("+-").isdigit():
        factor = Fraction(10) ** int(suffix[1:])
    elif suffix in _SUFFIX:
        factor = _SUFFIX[suffix]
    else:
        return None
    return Quantity(text, Fraction(number) * factor)


def _quantity(text: Any) -> Any:
    q = parse_quantity(str(text))
    if q is None:
        return CELEvalError(f"invalid quantity {str(text)!r}", ValueError, (str(text),))
    return q


def _is_quantity(text: Any) -> Any:
    return ct.BoolType(parse_quantity(str(text)) is not None)


def _q(x: Any) -> Fraction:
    if isinstance(x, Quantity):
        return x.amount
    if isinstance(x, ct.IntType) and not isinstance(x, ct.BoolType):
        return Fraction(int(x))
    raise TypeError(f"expected a quantity, got {type(x).__name__}")


def _q_from(amount: Fraction) -> Quantity:
    return Quantity(str(amount), amount)


_QUANTITY_FUNCS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "isGreaterThan": lambda a, b: ct.BoolType(_q(a) > _q(b)),
    "isLessThan": lambda a, b: ct.BoolType(_q(a) < _q(b)),
    "compareTo": lambda a, b: ct.IntType((_q(a) > _q(b)) - (_q(a) < _q(b))),
    "add": lambda a, b: _q_from(_q(a) + _q(b)),
    "sub": lambda a, b: _q_from(_q(a) - _q(b)),
    "sign": lambda a: ct.IntType((_q(a) > 0) - (_q(a) < 0)),
    "isInteger": lambda a: ct.BoolType(
        _q(a).denominator == 1 and -(2**63) <= _q(a).numerator < 2**63
    ),
    "asInteger": lambda a: (
        ct.IntType(int(_q(a)))
        if _q(a).denominator == 1
        else CELEvalError("quantity is not an integer", ValueError, ())
    ),
    "asApproximateFloat": lambda a: ct.DoubleType(float(_q(a))),
}


# --------------------------------------------------------------------------- strings (cel-go ext)


def _split(s: Any, sep: Any, limit: Any = None) -> Any:
    if limit is None:
        return ct.ListType([ct.StringType(p) for p in str(s).split(str(sep))])
    n = int(limit)
    if n == 0:
        return ct.ListType()
    parts = str(s).split(str(sep), n - 1) if n > 0 else str(s).split(str(sep))
    return ct.ListType([ct.StringType(p) for p in parts])


def _index_of(s: Any, sub: Any, start: Any = None) -> Any:
    if isinstance(s, list):  # ListType, or the plain list cel-python builds for `a + b`
        for i, item in enumerate(s):
            if item == sub:
                return ct.IntType(i)
        return ct.IntType(-1)
    return ct.IntType(str(s).find(str(sub), int(start or 0)))


def _last_index_of(s: Any, sub: Any, end: Any = None) -> Any:
    if isinstance(s, list):  # ListType, or the plain list cel-python builds for `a + b`
        for i in range(len(s) - 1, -1, -1):
            if s[i] == sub:
                return ct.IntType(i)
        return ct.IntType(-1)
    text = str(s)
    stop = len(text) if end is None else int(end) + len(str(sub))
    return ct.IntType(text.rfind(str(sub), 0, stop))


def _substring(s: Any, start: Any, end: Any = None) -> Any:
    text = str(s)
    a, b = int(start), len(text) if end is None else int(end)
    if not 0 <= a <= b <= len(text):
        return CELEvalError(f"substring({a}, {b}) out of range", IndexError, ())
    return ct.StringType(text[a:b])


def _join(items: Any, sep: Any = "") -> Any:
    return ct.StringType(str(sep).join(str(i) for i in items))


def _ascii_case(s: Any, upper: bool) -> Any:
    # cel-go lowerAscii/upperAscii change only ASCII letters.
    table = str.maketrans(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if not upper else "abcdefghijklmnopqrstuvwxyz",
        "abcdefghijklmnopqrstuvwxyz" if not upper else "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    )
    return ct.StringType(str(s).translate(table))


_STRING_FUNCS: dict[str, Callable[..., Any]] = {
    "lowerAscii": lambda s: _ascii_case(s, upper=False),
    "upperAscii": lambda s: _ascii_case(s, upper=True),
    "split": _split,
    "join": _join,
    "replace": lambda s, old, new, n=None: ct.StringType(
        str(s).replace(str(old), str(new), -1 if n is None else int(n))
    ),
    "trim": lambda s: ct.StringType(str(s).strip()),
    "charAt": lambda s, i: ct.StringType(str(s)[int(i) : int(i) + 1]),
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "substring": _substring,
}


# --------------------------------------------------------------------------- lists, regex, urls


def _is_sorted(items: Any) -> Any:
    return ct.BoolType(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))


def _sum(items: Any) -> Any:
    total: Any = ct.IntType(0)
    for i, item in enumerate(items):
        total = item if i == 0 else total + item
    return total


def _find(s: Any, pattern: Any) -> Any:
    m = re.search(str(pattern), str(s))
    return ct.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, limit: Any = None) -> Any:
    found = [m.group(0) for m in re.finditer(str(pattern), str(s))]
    if limit is not None and int(limit) >= 0:
        found = found[: int(limit)]
    return ct.ListType([ct.StringType(f) for f in found])


@dataclass(frozen=True)
class URL:
    """The value of ``url('https://...')`` (k8s.io/apiserver/pkg/cel/library/urls.go)."""

    parts: urllib.parse.SplitResult


def _parse_url(text: str) -> urllib.parse.SplitResult | None:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment.
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return None
    if "#" in text or not (parts.scheme or text.startswith("/")):
        return None
    return parts


def _url(text: Any) -> Any:
    parts = _parse_url(str(text))
    if parts is None:
        return CELEvalError(f"URL parse error: {str(text)!r}", ValueError, ())
    return URL(parts)


def _url_part(name: str) -> Callable[[Any], Any]:
    def get(u: Any) -> Any:
        if not isinstance(u, URL):
            raise TypeError(f"{name}() applies to URLs")
        p = u.parts
        if name == "getScheme":
            return ct.StringType(p.scheme)
        if name == "getHost":
            return ct.StringType(p.netloc.rpartition("@")[2])
        if name == "getHostname":
            return ct.StringType(p.hostname or "")
        if name == "getPort":
            return ct.StringType(str(p.port) if p.port is not None else "")
        if name == "getEscapedPath":
            return ct.StringType(p.path)
        query: dict[str, list[str]] = urllib.parse.parse_qs(p.query, keep_blank_values=True)
        return ct.MapType(
            {ct.StringType(k): ct.ListType([ct.StringType(x) for x in v]) for k, v in query.items()}
        )

    return get


_OTHER_FUNCS: dict[str, Callable[..., Any]] = {
    "hasValue": _has_value,
    "value": _value,
    "orValue": _or_value,
    "isSorted": _is_sorted,
    "sum": _sum,
    "find": _find,
    "findAll": _find_all,
    "url": _url,
    "isURL": lambda s: ct.BoolType(_parse_url(str(s)) is not None),
    **{
        n: _url_part(n)
        for n in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery")
    },
}

FUNCTIONS: dict[str, Callable[..., Any]] = {**_QUANTITY_FUNCS, **_STRING_FUNCS, **_OTHER_FUNCS}

# Names cel-python evaluates itself: standard functions, conversions, macros.
_BUILTIN = frozenset(celpy.evaluation.base_functions) | {
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "dyn",
}
SUPPORTED = frozenset(FUNCTIONS) | _BUILTIN


# --------------------------------------------------------------------------- programs


class Unsupported(Exception):
    """A rule dgdgen cannot evaluate faithfully (parse error or an unimplemented function)."""


@dataclass(frozen=True)
class Program:
    source: str
    runner: celpy.Runner
    uses_old_self: bool


def _called_names(tree: lark.Tree[Any]) -> set[str]:
    names: set[str] = set()
    for sub in tree.iter_subtrees():
        if sub.data == "ident_arg" and sub.children:
            names.add(str(sub.children[0]))
        elif sub.data == "member_dot_arg" and len(sub.children) >= 2:
            names.add(str(sub.children[1]))
    return names


def _idents(tree: lark.Tree[Any]) -> set[str]:
    return {
        str(tok)
        for sub in tree.iter_subtrees()
        if sub.data == "ident"
        for tok in sub.children
        if isinstance(tok, lark.Token)
    }


def parser_cache_path() -> str | None:
    """Where the analysed CEL grammar is kept between runs, in dgdgen's cache directory
    (:func:`dgdgen.cache.cache_dir`); None when caching is disabled."""
    from dgdgen.cache import cache_dir

    root = cache_dir()
    return None if root is None else os.path.join(root, "cel-grammar.lark-cache")


def _build_parser() -> None:
    """Build cel-python's CEL parser once per process, with lark's grammar cache.

    Building the LALR tables of the CEL grammar costs about 1 s of CPU, more than everything
    else `dgdgen validate` does (docs/performance.md). lark can keep the analysed grammar in a
    file: it stores the SHA-256 of the grammar, the options and its own version with it, loads
    the file only when they match, and otherwise rebuilds and rewrites it (a cache that cannot
    be read or written only costs the rebuild). cel-python's own construction is kept, options
    and all: only the ``cache`` argument is added."""
    from celpy import celparser

    if celparser.CELParser.CEL_PARSER is not None:
        return
    path = parser_cache_path()
    real = celparser.__dict__["Lark"]
    if path is not None:
        setattr(celparser, "Lark", functools.partial(real, cache=path))  # noqa: B010
    try:
        celparser.CELParser()
    finally:
        setattr(celparser, "Lark", real)  # noqa: B010


@functools.lru_cache(maxsize=1)
def _environment() -> celpy.Environment:
    _build_parser()
    celpy_speed.install()
    env = celpy.Environment()
    # cel-python seeds every activation with protobuf wrapper-type annotations; Kubernetes rules
    # never name protobuf types, and loading them on each evaluation halves the speed.
    env.annotations = {}
    return env


@functools.cache
def compile_rule(source: str) -> Program:
    """Compile a rule (or messageExpression) once; raise :class:`Unsupported` if we cannot."""
    env = _environment()
    try:
        tree = env.compile(source)
    except Exception as exc:  # noqa: BLE001 - cel-python raises several parser exception types
        raise Unsupported(f"cel-python cannot parse it: {str(exc).splitlines()[0]}") from None
    missing = sorted(_called_names(tree) - SUPPORTED)
    if missing:
        raise Unsupported(f"uses CEL function(s) dgdgen does not implement: {', '.join(missing)}")
    celpy_speed.remember_constants(tree)
    runner = env.program(tree, functions=FUNCTIONS)
    return Program(source, runner, "oldSelf" in _idents(tree))


def is_true(result: Any) -> bool:
    """Whether a rule's result is CEL ``true`` (anything else, including non-bools, fails)."""
    return isinstance(result, ct.BoolType) and bool(result)


def is_bool(result: Any) -> bool:
    return isinstance(result, ct.BoolType)


class EvalError(Exception):
    """The rule raised a CEL runtime error (the API server reports these as invalid too)."""


def evaluate(program: Program, activation: dict[str, Any]) -> Any:
    try:
        result = program.runner.evaluate(activation)
    except CELEvalError as exc:
        raise EvalError(_describe(exc)) from None
    except (RecursionError, ArithmeticError, LookupError, TypeError, ValueError) as exc:
        raise EvalError(f"{type(exc).__name__}: {exc}") from None
    if isinstance(result, CELEvalError):
        raise EvalError(_describe(result))
    return result


def _describe(err: CELEvalError) -> str:
    msg = str(err.args[0]) if err.args else "evaluation error"
    if msg.startswith("undeclared reference"):
        return msg.split(" (in activation", 1)[0]
    return msg
