"""A conservative static estimate of the policy's CEL cost, as far as it can be known offline.

The API server meters every CEL evaluation of an admission policy (cel-go's runtime cost: one
unit per operation, string operations by length / 10, comprehensions by the size of what they
iterate) and stops an evaluation at 1,000,000 units per expression (``PerCallLimit``) and
10,000,000 for the whole policy on one request (``RuntimeCELCostBudget``); see
k8s.io/apiserver/pkg/apis/cel/config.go. The DGD CRD sets no ``maxItems`` / ``maxLength`` on the
lists and strings the policy reads, so no static bound exists without assumptions.

This estimator walks the parsed expression (cel-python's grammar, the same CEL) and charges, with
every list at most ``n`` items and every string at most ``length`` characters:

* 1 per node; comprehensions (``map``, ``filter``, ``exists``, ``all``, ``exists_one``):
  the range plus ``n`` × (body + 1);
* string functions and ``+``: ``ceil(length / 10)``; ``matches``: ``length`` (a regex scan);
* ``in``, ``indexOf``, ``lastIndexOf``: ``n`` × ``ceil(length / 10)`` (a list scan);
* ``==`` / ``!=``: ``ceil(length / 10)``, or ``n`` × that when an operand is a list of flags or a
  whole ``spec`` (deep comparison; the spec counted as ``n`` × ``n`` strings);
* ``?:``: the condition plus the dearer branch.

It overestimates (every list at its bound at once), and it is not cel-go's estimator: it bounds
what the metered runtime cost can reach for objects within the bounds, not a certified figure.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import lark

from dgdgen.policy.schema import expressions

PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
_MACROS = frozenset({"map", "filter", "exists", "all", "exists_one"})
_STRING_FUNCS = frozenset({"startsWith", "endsWith", "contains", "replace", "split", "lowerAscii",
                           "upperAscii", "trim", "substring", "join", "string"})
_LIST_SCANS = frozenset({"indexOf", "lastIndexOf"})
# What a list holds, by the name it is read through (dgdgen/policy/cel.py's records).
_ARG_LISTS = frozenset({"argv", "tokens", "at", "pairs", "named", "norm", "flags", "diff",
                        "every", "command", "args", "script", "segs", "fw",
                        "eff"})
_ENV_LISTS = frozenset({"env", "envs"})
_COMPONENT_LISTS = frozenset({"components", "services", "pairs_var", "changed", "main",
                              "containers"})


@dataclass(frozen=True)
class Estimate:
    path: str
    cost: int


def _text(tree: Any) -> str:
    return " ".join(str(t) for t in tree.scan_values(lambda v: isinstance(v, lark.Token)))


class _Estimator:
    def __init__(self, n: int, length: int, components: int | None, args: int | None,
                 env: int | None) -> None:
        self.n = n
        self.s = math.ceil(length / 10)
        self.length = length
        self.bounds = {"components": components or n, "args": args or n, "env": env or n}

    def _kind_size(self, node: Any) -> int:
        """The bound of a list by what it holds, from the last name in its expression."""
        words = [w for w in _text(node).replace(".", " ").split() if w.isidentifier()]
        last = words[-1] if words else ""
        if last in _ARG_LISTS:
            return self.bounds["args"]
        if last in _ENV_LISTS:
            return self.bounds["env"]
        if last in _COMPONENT_LISTS or last.startswith(("new", "old")):
            return self.bounds["components"]
        return self.n

    def _size(self, node: Any) -> int:
        """A list literal's own length; any other list: the bound."""
        lits = list(node.find_data("list_lit"))
        if len(lits) == 1 and _text(node) == _text(lits[0]):
            exprs = [c for c in lits[0].children if isinstance(c, lark.Tree)]
            return len(exprs[0].children) if exprs else 0
        return self._kind_size(node)

    def cost(self, node: Any) -> int:
        if not isinstance(node, lark.Tree):
            return 0
        kind = node.data
        kids = node.children
        if kind == "expr" and len(kids) == 3:  # cond ? a : b
            return 1 + self.cost(kids[0]) + max(self.cost(kids[1]), self.cost(kids[2]))
        if kind == "member_dot_arg" and len(kids) >= 2:
            name = str(kids[1])
            target = self.cost(kids[0])
            args = kids[2].children if len(kids) > 2 and isinstance(kids[2], lark.Tree) else []
            if name in _MACROS:
                body = sum(self.cost(a) for a in args[1:])
                return 1 + target + self._size(kids[0]) * (body + 1)
            own = sum(self.cost(a) for a in args)
            if name in _LIST_SCANS:
                return 1 + target + own + self._kind_size(kids[0]) * self.s
            if name == "matches":
                return 1 + target + own + self.length
            if name in _STRING_FUNCS:
                return 1 + target + own + self.s
            return 1 + target + own
        if kind in ("relation_in",):
            return 1 + sum(self.cost(k) for k in kids) + self._size(kids[-1]) * self.s
        if kind in ("relation_eq", "relation_ne"):
            text = _text(node)
            n_args, n_comps = self.bounds["args"], self.bounds["components"]
            scale = n_comps * n_args if "spec" in text else (n_args if "flags" in text else 1)
            return 1 + sum(self.cost(k) for k in kids) + scale * self.s
        if kind == "addition_add":
            return 1 + sum(self.cost(k) for k in kids) + self.s
        return (1 if kind in ("member_dot", "member_index", "literal", "ident") else 0) + sum(
            self.cost(k) for k in kids)


@functools.cache
def _tree(source: str) -> Any:
    import celpy

    return celpy.Environment().compile(source)


def estimate(doc: Mapping[str, Any], *, n: int, length: int, components: int | None = None,
             args: int | None = None, env: int | None = None) -> list[Estimate]:
    """The estimated worst-case cost of every expression of a policy, in document order. Lists
    are bounded by what they hold (components, argument words / flags, env entries), each
    defaulting to ``n``; other lists by ``n``."""
    est = _Estimator(n, length, components, args, env)
    return [Estimate(path, est.cost(_tree(src))) for path, src in expressions(doc)]
