"""Type-check every CEL expression of the policy with cel-cpp's checker (the PyPI package
``cel-expr-python``, imported lazily; a test extra), in an environment declared like the API
server's for a ValidatingAdmissionPolicy on a custom resource:

* ``object``, ``oldObject``, ``params``: ``dyn`` (a CRD's objects are not typed for admission
  policies that match several versions), ``request``: ``map(string, dyn)``;
* ``variables``: ``map(string, dyn)`` — looser than the API server, which types each variable
  from its expression, so a type error that hides behind a variable is caught only where the
  variable's own expression is checked (each is);
* the Kubernetes library functions the policy calls, with their upstream signatures: cel-go
  ext strings (``split``, ``replace``, ``lowerAscii``, ``trim``, ``substring``, ``indexOf``,
  ``join``) and k8s lists (``<list>.indexOf``, ``<list>.lastIndexOf``), over strings, the only
  element type the policy uses them with.

Each expression must also have the result type its field needs: ``bool`` for conditions and
validations, ``string`` for messages, ``string`` or ``null`` for audit annotations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from dgdgen.policy.schema import expressions


def available() -> bool:
    try:
        import cel_expr_python.cel  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return False
    return True


def _last_index(items: list[Any], x: Any) -> int:
    for i in range(len(items) - 1, -1, -1):
        if items[i] == x:
            return i
    return -1


def _index(items: list[Any], x: Any) -> int:
    for i, item in enumerate(items):
        if item == x:
            return i
    return -1


def _substring(s: str, start: int, end: int | None = None) -> str:
    if not 0 <= start <= (len(s) if end is None else end) <= len(s):
        raise ValueError(f"substring({start}, {end}) out of range")
    return s[start:end]


@functools.cache
def environment() -> Any:
    from cel_expr_python import cel

    t = cel.Type
    s, i, dyn = t.STRING, t.INT, t.DYN
    ls = t.List(s)
    o, f = cel.Overload, cel.FunctionDecl

    def member(name: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
        return o(name, ret, params, is_member=True, impl=impl)

    decls = [
        f("lastIndexOf", [member("list_lastIndexOf", i, [ls, s], _last_index)]),
        f("indexOf", [member("list_indexOf", i, [ls, s], _index),
                      member("string_indexOf", i, [s, s], lambda a, b: a.find(b))]),
        f("split", [member("string_split", ls, [s, s], lambda a, b: a.split(b))]),
        f("replace", [member("string_replace", s, [s, s, s], lambda a, b, c: a.replace(b, c))]),
        f("lowerAscii", [member("string_lowerAscii", s, [s],
                                lambda a: "".join(ch.lower() if ch.isascii() else ch
                                                  for ch in a))]),
        f("trim", [member("string_trim", s, [s], lambda a: a.strip())]),
        f("substring", [member("string_substring", s, [s, i], _substring),
                        member("string_substring_range", s, [s, i, i], _substring)]),
        f("join", [member("list_join", s, [ls, s], lambda a, b: b.join(a))]),
    ]
    return cel.NewEnv(variables={"object": dyn, "oldObject": dyn, "params": dyn,
                                 "request": t.Map(s, dyn), "variables": t.Map(s, dyn)},
                      functions=decls)


_RESULT = {"expression": ("BOOL",), "messageExpression": ("STRING",),
           "valueExpression": ("STRING", "NULL_TYPE", "DYN")}


def check(doc: Mapping[str, Any]) -> list[str]:
    """Type errors of every expression of a policy ("path: message"); empty when all check."""
    env = environment()
    out: list[str] = []
    for path, source in expressions(doc):
        try:
            compiled = env.compile(source)
        except Exception as exc:  # noqa: BLE001 - cel-cpp reports errors as RuntimeError/ValueError
            out.append(f"{path}: {str(exc).splitlines()[0]}")
            continue
        field = path.rsplit(".", 1)[-1]
        got = compiled.return_type().name()
        allowed = _RESULT.get(field, ("BOOL", "DYN")) + ("DYN",)
        if got not in allowed and not (field == "expression" and "variables[" in path):
            out.append(f"{path}: has type {got}, needs {' or '.join(allowed[:-1])}")
    return out


@functools.cache
def _compiled(source: str) -> Any:
    return environment().compile(source)


def evaluate(policy: Mapping[str, Any], old: Any, new: Any) -> tuple[str, ...] | None:
    """A second engine: the policy on UPDATE ``old`` → ``new`` with cel-cpp. None when a match
    condition excludes the update, else the rule codes of the failing validations. Variables
    are evaluated eagerly, in order (the API server evaluates them lazily: the same values)."""
    spec = policy["spec"]
    values: dict[str, Any] = {}
    data = {"object": new, "oldObject": old, "params": None, "variables": values,
            "request": {"operation": "UPDATE"}}
    for cond in spec.get("matchConditions", []):
        if _compiled(cond["expression"]).eval(data=data).value() is not True:
            return None
    for var in spec.get("variables", []):
        values[var["name"]] = _compiled(var["expression"]).eval(data=data).plain_value()
    codes = []
    for v in spec.get("validations", []):
        if _compiled(v["expression"]).eval(data=data).value() is not True:
            message = _compiled(v["messageExpression"]).eval(data=data).value()
            codes.append(str(message).split(" ", 1)[0])
    return tuple(sorted(set(codes)))
