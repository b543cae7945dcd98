"""cel-python 0.5.0, faster and with the same results: what :mod:`dgdgen.crd.cel` installs in
its evaluator before the first rule is compiled (:func:`install`), and marks in each compiled rule
(:func:`remember_constants`).

cel-python interprets a rule's parse tree node by node at every evaluation; the admission
policy's rules are long (a few thousand nodes) and `dgdgen policy test`, `dgdgen verify` and the
tests evaluate them thousands of times. Two costs of that interpreter are not the rule's own: the
typing forms it subscribes at run time (:class:`RememberedForm`), and the constants it builds
again at every evaluation (:func:`remember_constants`). Neither changes a value: see each.
"""

from __future__ import annotations

from typing import Any

import lark


class RememberedForm:
    """A typing form (``Union``, ``List``, …) whose subscriptions are remembered by the identity
    of their arguments.

    cel-python 0.5.0's evaluator writes ``cast(Union[Result, NameContainer], value)`` and the like
    in the body of its visitor methods, so each node it visits subscripts a typing form at run
    time. typing caches the result, but looking it up hashes the arguments, and ``Result`` is a
    Union of every CEL type whose hash typing recomputes each time: a third of the evaluator's
    CPU on the policy corpus (tests/policy/test_corpus_agreement.py, 19.6 → 13.7 s for 20 cases;
    ``Callable``, ``Iterable`` and ``Optional`` too since 2026-12-07: 34.9 → 32.9 s for all 67).
    ``cast`` ignores its type, and the arguments are the module's own constants, so the same
    subscription by the same objects is the same form: remembering it changes no result."""

    def __init__(self, form: Any) -> None:
        self.form = form
        self._memo: dict[object, tuple[Any, Any]] = {}

    def __getitem__(self, params: Any) -> Any:
        key = _identity(params)
        hit = self._memo.get(key)
        if hit is None:
            # kept with the form: an argument that stays referenced never lends its id to another
            hit = self._memo[key] = (params, self.form[params])
        return hit[1]


def _identity(params: Any) -> Any:
    """A subscription's arguments by identity; a list of them (``Callable[[A, B], C]`` writes
    a new one each time) by the identities of its items."""
    if isinstance(params, (tuple, list)):
        return (type(params), *map(_identity, params))
    return id(params)


# The forms cel-python's evaluator only ever subscripts (never passes to isinstance, as it
# does Sequence and Mapping).
REMEMBERED = ("Union", "List", "Tuple", "Dict", "Callable", "Iterable", "Optional")


def _remember_typing_forms() -> None:
    import typing

    import celpy.evaluation

    for name in REMEMBERED:
        if getattr(celpy.evaluation, name, None) is getattr(typing, name):
            setattr(celpy.evaluation, name, RememberedForm(getattr(typing, name)))


# The parse-tree nodes of an expression with no name in it: literals, list and map literals,
# parentheses and operators. CEL values are immutable and its operators pure, so such an
# expression has one value, whatever the activation.
_PURE_NODES = frozenset({
    "expr", "conditionalor", "conditionaland", "relation", "relation_eq", "relation_ne",
    "relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_in", "addition",
    "addition_add", "addition_sub", "multiplication", "multiplication_mul", "multiplication_div",
    "multiplication_mod", "unary", "unary_not", "unary_neg", "member", "primary", "paren_expr",
    "literal", "list_lit", "map_lit", "exprlist", "mapinits"})
_UNSET = object()
# id(primary node) → [the node, its value once evaluated]; nodes of cached programs only
_CONSTANTS: dict[int, list[Any]] = {}


def remember_constants(tree: lark.Tree[Any]) -> None:
    """Mark the primaries of ``tree`` that hold no name (a literal, a list or map of them): the
    evaluator :func:`install` patches (``_constant_primaries``) evaluates each once.

    cel-python 0.5.0 interprets the parse tree node by node at every evaluation, and a list
    literal's each element is a dozen nodes deep (``c.type in ["prefill", "decode"]`` inside a
    ``map()`` builds the list again for every element): the policy's rules are mostly such
    tables (the corpus of tests/policy/test_corpus_agreement.py: 46.8 → 34.9 CPU-s). A value
    is remembered only when it is not an error; CEL's functions and macros build new values and
    never change their arguments (nor do those of :data:`dgdgen.crd.cel.FUNCTIONS`), so a
    shared one stays as built."""
    pure: dict[int, bool] = {}
    for sub in tree.iter_subtrees():  # bottom-up: a node's children come before it
        pure[id(sub)] = sub.data in _PURE_NODES and all(  # (one not seen yet: not remembered)
            pure.get(id(c), False) for c in sub.children if isinstance(c, lark.Tree))
        if sub.data == "primary" and pure[id(sub)]:
            _CONSTANTS[id(sub)] = [sub, _UNSET]


def _constant_primaries() -> None:
    """Give cel-python's evaluator the constants :func:`remember_constants` marked."""
    from celpy.evaluation import CELEvalError, Evaluator

    evaluate = Evaluator.primary
    if getattr(evaluate, "remembers_constants", False):
        return

    def primary(self: Evaluator, tree: lark.Tree[Any]) -> Any:
        slot = _CONSTANTS.get(id(tree))
        if slot is None or slot[0] is not tree:
            return evaluate(self, tree)
        if slot[1] is _UNSET:
            value = evaluate(self, tree)
            if isinstance(value, CELEvalError):
                return value
            slot[1] = value
        return slot[1]

    primary.remembers_constants = True  # type: ignore[attr-defined]
    Evaluator.primary = primary  # type: ignore[method-assign]


def install() -> None:
    """Remembered typing forms and constant primaries in cel-python's evaluator (once)."""
    _remember_typing_forms()
    _constant_primaries()
