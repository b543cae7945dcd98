"""The cel-cpp fast path (dgdgen/crd/celcpp.py) decides only that a rule holds; cel-python decides
everything else. These tests show that the fast path changes no outcome: over every rule of
every vendored schema it takes only rules cel-python compiles, and over every object the
examples render, the upstream examples and the checker corpus — and mutations of each value a
rule sees — cel-cpp never says ``true`` where cel-python does not, and ``crd.validate`` reports
the same violations with and without it."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dgdgen import crd, yamlio
from dgdgen.crd import catalog, cel, celcpp, overlays, structural

REPO = Path(__file__).resolve().parents[2]

# Where cel-python fails to evaluate a rule that holds: an error raised inside a comprehension
# (`filter`) escapes the `||` around it, although CEL absorbs an error when the other operand
# decides (`true || error` is true: the CEL language definition, "Logical Operators"; cel-go and
# cel-cpp do). cel-python reports "CEL rule failed to evaluate"; the API server (cel-go) and the
# fast path accept. Each entry is shown by test_known_cel_python_defects.
KNOWN_CEL_PYTHON_DEFECTS = {
    # DynamoGraphDeployment v1beta1 .spec.components: unique component names, on a component
    # without a name (itself reported as `required field is missing`).
    "self.all(c1, !has(c1.name) || self.filter(c2, has(c2.name) && "
    "c2.name.lowerAscii() == c1.name.lowerAscii()).size() == 1)":
        ([{"name": "a"}, {"x": 1}], "no such member in mapping: 'name'"),
}


def _rules() -> Iterator[tuple[str, dict[str, Any]]]:
    names = tuple(overlays.available())
    for (api_version, kind), with_overlays in itertools.product(catalog.kinds(), ((), names)):
        schema = crd._schema(api_version, kind, with_overlays)
        assert schema is not None
        for where, rule in crd._rules(schema, ""):
            yield f"{kind}{where}", rule


def _objects() -> list[dict[str, Any]]:
    paths = sorted(REPO.glob("examples/*/rendered/**/*.yaml"))
    paths += sorted((REPO / "tests" / "data" / "upstream" / "dynamo" / "examples").glob("*.yaml"))
    paths += sorted((REPO / "tests" / "check" / "corpus").glob("*/*.yaml"))
    out = []
    for path in paths:
        for doc in yamlio.load_file(str(path)):
            data = doc.data
            if isinstance(data, dict) and catalog.load(str(data.get("apiVersion")),
                                                       str(data.get("kind"))) is not None:
                out.append(data)
    return out


def test_cel_cpp_is_installed() -> None:
    """A dependency: without it every rule goes to cel-python (correct, only slower)."""
    assert celcpp._environment() is not None


def test_fast_names_mean_the_same_in_cel_python() -> None:
    assert (celcpp.FAST_NAMES | celcpp.OPTIONAL_NAMES) <= cel.SUPPORTED


def test_every_rule_the_fast_path_takes_is_one_cel_python_evaluates() -> None:
    """Else a rule cel-python reports as "not evaluated" could pass silently."""
    taken = total = 0
    for where, rule in _rules():
        source = rule["rule"]
        total += 1
        fast = celcpp.program(source, bool(rule.get("optionalOldSelf")))
        if fast is None:
            continue
        taken += 1
        slow = cel.compile_rule(source)  # raises cel.Unsupported if cel-python cannot
        assert fast.uses_old_self == slow.uses_old_self, where
    # Nearly every vendored rule is plain CEL: the fast path must not be silently off.
    assert taken >= 0.9 * total, (taken, total)


@pytest.mark.parametrize(("source", "code", "old_self"), [
    ('self.a == "x(" && oldSelf.b', 'self.a == "" && oldSelf.b', True),
    ("r'a\\' == self", '"" == self', False),  # no escapes in a raw literal
    ("self.x == 'it\\'s oldSelf'", 'self.x == ""', False),
    ("self.x // oldSelf is not used\n && true", "self.x \n && true", False),
    ("'''one\ntwo''' == self", '"" == self', False),
    ('b"\\x00" == self', '"" == self', False),
    ("self.oldSelf == 1", "self.oldSelf == 1", False),
    ("oldSelfish == 1", "oldSelfish == 1", False),
    ("has(oldSelf.x)", "has(oldSelf.x)", True),
])
def test_code_of_hides_literals_and_comments(source: str, code: str, old_self: bool) -> None:
    assert celcpp.code_of(source) == code
    assert celcpp.uses_old_self(code) is old_self


@pytest.mark.parametrize("source", ['"open', "'''open", "'line\nbreak'"])
def test_unterminated_literals_go_to_cel_python(source: str) -> None:
    assert celcpp.code_of(source) is None
    assert celcpp.program(source) is None


@pytest.mark.parametrize("source", [
    "self.?spec.orValue(1) == 1",                 # optional syntax
    "quantity(self.size) > quantity('1Gi')",      # Kubernetes library
    "url(self).getHost() == 'x'",
    "self.isSorted()",
    "self.find('a') == 'a'",
    'self.name == "x(" && frobnicate(self)',       # an unknown function outside the literal
])
def test_the_fast_path_leaves_rules_to_cel_python(source: str) -> None:
    assert celcpp.program(source) is None


def _admissible(value: Any, node: Any) -> bool:
    """Whether the API server would run CEL on this value: no type errors against the schema
    (apiextensions-apiserver skips CEL otherwise; structural.Walker.run_deferred)."""
    walker = structural.Walker(run_cel=False)
    walker.walk(value, node, ())
    return walker._type_errors == 0


def _mutations(value: Any) -> Iterator[Any]:
    """The value and variants that break what rules usually require of it."""
    yield value
    if isinstance(value, dict):
        for key in sorted(value, key=str):
            rest = {k: v for k, v in value.items() if k != key}
            yield rest
            for variant in ("", "Bad Value!", 0, -1, [], {}):
                yield {**value, key: variant}
        yield {**value, "extra": "x"}
    elif isinstance(value, list):
        yield []
        for i, item in enumerate(value):
            if isinstance(item, dict) and item:
                yield [*value[:i], {k: v for k, v in item.items() if k != min(item)},
                       *value[i + 1:]]
        if value:
            yield value + value
            yield value[:1] * 3
            yield list(reversed(value))
    elif isinstance(value, str):
        yield from ("", value.upper(), value + "/x", "http://" + value, value * 40)
    elif isinstance(value, bool):
        yield not value
    elif isinstance(value, (int, float)):
        yield from (0, -1, value * 1000)


def _deferred(obj: dict[str, Any]) -> list[tuple[Any, Any, tuple[Any, ...]]]:
    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    schema = crd._schema(api_version, kind, tuple(overlays.available()))
    assert schema is not None
    new = structural.defaulted(obj, schema)
    walker = structural.Walker()
    walker.walk(new, schema, ())
    return [(value, node, path) for value, node, path, _ in walker._deferred]


def test_cel_cpp_never_holds_where_cel_python_does_not() -> None:
    checked = fast_true = 0
    disagreements = []
    seen: set[tuple[str, str]] = set()
    for obj in _objects():
        for value, node, _ in _deferred(obj):
            for rule in node["x-kubernetes-validations"]:
                source, optional = rule["rule"], bool(rule.get("optionalOldSelf"))
                fast = celcpp.program(source, optional)
                if fast is None:
                    continue
                for variant in _mutations(value):
                    key = (source, repr(variant))
                    if key in seen:
                        continue
                    seen.add(key)
                    # On create: oldSelf absent (a transition rule is then not evaluated).
                    if fast.uses_old_self and not optional or not _admissible(variant, node):
                        continue
                    checked += 1
                    if not celcpp.holds(fast, variant, node):
                        continue
                    fast_true += 1
                    slow = cel.compile_rule(source)
                    activation: dict[str, Any] = {"self": cel.to_cel(variant, node)}
                    if slow.uses_old_self:
                        activation["oldSelf"] = cel.Optional()
                    try:
                        result = cel.evaluate(slow, activation)
                    except cel.EvalError as exc:
                        result = exc
                    if not cel.is_true(result):
                        disagreements.append((source, variant, result))
    # cel-cpp found true where cel-python found false: never; where cel-python failed to
    # evaluate: only for its known defect.
    assert [d for d in disagreements
            if not isinstance(d[2], cel.EvalError) or d[0] not in KNOWN_CEL_PYTHON_DEFECTS] == []
    assert checked > 2000 and checked > fast_true > 500, (checked, fast_true)


def test_transition_rules_agree_on_update() -> None:
    """Rules with oldSelf, evaluated on an update: each rendered DGD against its mutations."""
    checked = 0
    for obj in _objects():
        if obj["kind"] != "DynamoGraphDeployment":
            continue
        for value, node, _ in _deferred(obj):
            for rule in node["x-kubernetes-validations"]:
                source, optional = rule["rule"], bool(rule.get("optionalOldSelf"))
                fast = celcpp.program(source, optional)
                if fast is None or not fast.uses_old_self:
                    continue
                for old in itertools.islice(_mutations(value), 12):
                    if not _admissible(old, node):
                        continue
                    checked += 1
                    if not celcpp.holds(fast, value, node, old, True):
                        continue
                    slow = cel.compile_rule(source)
                    old_cel = cel.to_cel(old, node)
                    activation = {"self": cel.to_cel(value, node),
                                  "oldSelf": cel.Optional(old_cel, True) if optional else old_cel}
                    assert cel.is_true(cel.evaluate(slow, activation)), (source, value, old)
    assert checked > 0


def _put(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    if not path:
        return value if isinstance(value, dict) else out
    parent: Any = out
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return out


def test_validate_reports_the_same_with_and_without_the_fast_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: each object, and each with one value a rule sees replaced by a mutation of
    the same type (so CEL runs and rules fail), validated both ways."""
    objects = []
    for obj in _objects():
        objects.append(obj)
        for value, node, path in _deferred(obj):
            for variant in itertools.islice(_mutations(value), 1, 6):
                if type(variant) is type(value) and _admissible(variant, node):
                    objects.append(_put(obj, path, variant))

    def run() -> list[list[crd.Violation]]:
        structural._RESULTS.clear()
        crd._VALIDATED.clear()
        return [crd.validate(o) for o in objects]

    with_fast = run()
    monkeypatch.setattr(celcpp, "program", lambda source, optional=False: None)
    without = run()
    for fast, slow in zip(with_fast, without):
        # Only cel-python's spurious "failed to evaluate" of its known defect goes away.
        assert fast == [v for v in slow if not (v.rule in KNOWN_CEL_PYTHON_DEFECTS
                                                and "failed to evaluate" in v.message)]
    failed_cel = sum(any(v.rule and v.rule not in structural.__dict__ and " " in v.rule
                         for v in found) for found in with_fast)
    assert failed_cel > 20, failed_cel


@pytest.mark.parametrize("source", sorted(KNOWN_CEL_PYTHON_DEFECTS))
def test_known_cel_python_defects(source: str) -> None:
    value, error = KNOWN_CEL_PYTHON_DEFECTS[source]
    fast = celcpp.program(source)
    assert fast is not None and celcpp.holds(fast, value, None)
    with pytest.raises(cel.EvalError, match=error):
        cel.evaluate(cel.compile_rule(source), {"self": cel.to_cel(value, None)})
