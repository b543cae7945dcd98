"""The subset of expr-lang/expr that dgdgen writes into ``successCondition`` /
``failureCondition``, and an evaluator with Argo Rollouts' semantics (argo-rollouts v1.9.1
utils/evaluate/evaluate.go).

Grammar (precedence low → high)::

    expr     := or
    or       := and ("||" and)*
    and      := cmp ("&&" cmp)*
    cmp      := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum)?
    sum      := product (("+" | "-") product)*
    product  := unary (("*" | "/") unary)*
    unary    := ("!" | "-") unary | postfix
    postfix  := primary ("[" expr "]")*
    primary  := NUMBER | "true" | "false" | "result" | FUNC "(" expr ")" | "(" expr ")"
    FUNC     := len | isNaN | isInf

Semantics that matter for gates (docs/analysis.md): ``result`` is a list of floats for an
instant vector (labels dropped) and a float for a scalar; an empty vector is an empty list, and
indexing it is a runtime error (the measurement is an **Error**); every comparison with NaN is
false; ``&&`` and ``||`` short-circuit, so ``len(result) > 0 && result[0] < 1`` never indexes an
empty list; a condition must evaluate to a bool, otherwise the measurement errors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

Value = bool | float | list[float]

SUCCESSFUL = "Successful"
FAILED = "Failed"
INCONCLUSIVE = "Inconclusive"
ERROR = "Error"


class ExprError(Exception):
    """A condition outside the subset (compile time) or a runtime error (measurement Error)."""


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|[<>!+\-*/()\[\]])|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)
_FUNCS = ("len", "isNaN", "isInf")


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"unexpected character at {pos}: {text[pos:pos + 10]!r}")
        out.append(m.group("num") or m.group("op") or m.group("name"))
        pos = m.end()
    return out


Node = Callable[[Value], Value]


@dataclass
class _Parser:
    toks: list[str]
    i: int = 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise ExprError(f"expected {want or 'more input'}, got {tok or 'end of input'}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        node = self.or_()
        if self.peek() is not None:
            raise ExprError(f"unexpected {self.peek()!r}")
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek() == "||":
            self.take()
            node = _logic(node, self.and_(), is_or=True)
        return node

    def and_(self) -> Node:
        node = self.cmp()
        while self.peek() == "&&":
            self.take()
            node = _logic(node, self.cmp(), is_or=False)
        return node

    def cmp(self) -> Node:
        node = self.sum()
        if self.peek() in _CMP:
            op = self.take()
            node = _binary(op, node, self.sum())
        return node

    def sum(self) -> Node:
        node = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            node = _binary(op, node, self.product())
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()
            node = _binary(op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek() == "!":
            self.take()
            inner = self.unary()
            return lambda r: not _bool(inner(r), "!")
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            return lambda r: -_num(inner(r), "-")
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while self.peek() == "[":
            self.take()
            index = self.or_()
            self.take("]")
            node = _index(node, index)
        return node

    def primary(self) -> Node:
        tok = self.take()
        if tok == "(":
            node = self.or_()
            self.take(")")
            return node
        if tok in ("true", "false"):
            const = tok == "true"
            return lambda r: const
        if tok == "result":
            return lambda r: r
        if tok in _FUNCS:
            self.take("(")
            arg = self.or_()
            self.take(")")
            return _call(tok, arg)
        if tok[0].isdigit() or tok[0] == ".":
            num = float(tok)
            return lambda r: num
        raise ExprError(f"{tok!r} is outside the supported expr subset")


def _bool(v: Value, where: str) -> bool:
    if not isinstance(v, bool):
        raise ExprError(f"{where} needs a bool, got {_show(v)}")
    return v


def _num(v: Value, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ExprError(f"{where} needs a number, got {_show(v)}")
    return float(v)


def _show(v: Value) -> str:
    return repr(v)


def _logic(a: Node, b: Node, *, is_or: bool) -> Node:
    op = "||" if is_or else "&&"

    def run(r: Value) -> Value:
        left = _bool(a(r), op)
        if left == is_or:  # short-circuit, as expr does
            return left
        return _bool(b(r), op)

    return run


_CMP: dict[str, Callable[[float, float], bool]] = {
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
}
_ARITH: dict[str, Callable[[float, float], float]] = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: _divide(x, y),
}


def _divide(x: float, y: float) -> float:
    # Go float64 division: x/0 is ±Inf, 0/0 is NaN (expr does not raise).
    if y == 0:
        if x == 0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _binary(op: str, a: Node, b: Node) -> Node:
    if op in _CMP:
        fn = _CMP[op]

        def compare(r: Value) -> Value:
            left, right = a(r), b(r)
            if op in ("==", "!=") and isinstance(left, bool) and isinstance(right, bool):
                return (left == right) == (op == "==")
            # NaN compares false with everything (IEEE 754; != is true), as in Go.
            return fn(_num(left, op), _num(right, op))

        return compare
    arith = _ARITH[op]
    return lambda r: arith(_num(a(r), op), _num(b(r), op))


def _index(seq: Node, index: Node) -> Node:
    def run(r: Value) -> Value:
        s, i = seq(r), index(r)
        if not isinstance(s, list):
            raise ExprError(f"cannot index {_show(s)}")
        n = _num(i, "[]")
        if n != int(n):
            raise ExprError(f"index {n} is not an integer")
        k = int(n)
        if k < 0:
            k += len(s)  # expr allows negative indexes from the end
        if not 0 <= k < len(s):
            raise ExprError(f"index out of range: {int(n)} (array length {len(s)})")
        return s[k]

    return run


def _call(name: str, arg: Node) -> Node:
    def run(r: Value) -> Value:
        v = arg(r)
        if name == "len":
            if not isinstance(v, list):
                raise ExprError(f"invalid argument for len (type {type(v).__name__})")
            return float(len(v))
        x = _num(v, name)  # isNaN/isInf of a list is an error (evaluate.go)
        return math.isnan(x) if name == "isNaN" else math.isinf(x)

    return run


def compile_condition(text: str) -> Node:
    """Compile a condition; raises :class:`ExprError` when it is outside the subset."""
    return _Parser(_tokens(text)).parse()


def evaluate(text: str, result: Value) -> bool:
    """Evaluate one condition against ``result``; runtime problems raise :class:`ExprError`."""
    value = compile_condition(text)(result)
    if not isinstance(value, bool):
        raise ExprError(f"expected condition to return bool, got {_show(value)}")
    return value


def measurement_phase(
    result: Value, success: str | None, failure: str | None
) -> tuple[str, str | None]:
    """The phase of one measurement (``EvaluateResult`` in evaluate.go) and, for an Error,
    the reason."""
    try:
        ok = evaluate(success, result) if success else None
        bad = evaluate(failure, result) if failure else None
    except ExprError as exc:
        return ERROR, str(exc)
    if ok is None and bad is None:
        return SUCCESSFUL, None
    if bad is None:
        return (SUCCESSFUL if ok else FAILED), None
    if ok is None:
        return (FAILED if bad else SUCCESSFUL), None
    if bad:
        return FAILED, None
    return (SUCCESSFUL if ok else INCONCLUSIVE), None


# Run phase: the worst metric phase wins (utils/analysis/helpers.go: analysisStatusOrder).
PHASE_ORDER = (SUCCESSFUL, "Running", "Pending", INCONCLUSIVE, ERROR, FAILED)


def run_phase(phases: list[str]) -> str:
    return max(phases, key=PHASE_ORDER.index) if phases else SUCCESSFUL
