"""cel-python's typing forms, remembered (dgdgen/crd/celpy_speed.py ``RememberedForm``): the same
subscription gives the same form typing gives, and the evaluator's isinstance forms are left
alone. And the constants of a rule (``remember_constants``): a literal, list or map with no name
in it is evaluated once, an error never remembered, and every rule evaluates as before."""

from __future__ import annotations

import typing

import celpy.evaluation
import pytest

from dgdgen.crd import cel, celpy_speed


def test_remembered_forms_subscript_as_typing_does() -> None:
    cel.compile_rule("self.a == 1")  # builds the environment, which installs the forms
    for name in celpy_speed.REMEMBERED:
        form = getattr(celpy.evaluation, name)
        assert isinstance(form, celpy_speed.RememberedForm), name
        assert form.form is getattr(typing, name)
    ev = celpy.evaluation
    assert ev.Union[int, str] == typing.Union[int, str]  # noqa: UP007 - typing's own form
    assert ev.List[ev.Result] == typing.List[ev.Result]  # noqa: UP006
    assert ev.Tuple[int, int] is ev.Tuple[int, int]  # remembered
    assert ev.Dict[str, int] == typing.Dict[str, int]  # noqa: UP006
    # a list of arguments is new at each subscription: its items are what is remembered
    assert ev.Callable[[ev.Result], int] is ev.Callable[[ev.Result], int]
    assert ev.Callable[[ev.Result], int] == typing.Callable[[ev.Result], int]
    assert ev.Callable[[ev.Result], int] is not ev.Callable[[int], int]
    assert ev.Optional[int] == typing.Optional[int]  # noqa: UP007
    # the forms the evaluator passes to isinstance are typing's own
    assert ev.Sequence is typing.Sequence and ev.Mapping is typing.Mapping


def test_a_rule_evaluates_the_same_through_the_remembered_forms() -> None:
    program = cel.compile_rule("self.items.all(x, x.size() > 1) && self.m['k'] in ['a', 'b']")
    from celpy.adapter import json_to_cel

    good = {"self": json_to_cel({"items": ["ab", "cd"], "m": {"k": "a"}})}
    bad = {"self": json_to_cel({"items": ["ab", "c"], "m": {"k": "a"}})}
    assert cel.is_true(cel.evaluate(program, good))
    assert not cel.is_true(cel.evaluate(program, bad))


def _eval(rule: str, **values: object) -> object:
    from celpy.adapter import json_to_cel

    return cel.evaluate(cel.compile_rule(rule), {k: json_to_cel(v) for k, v in values.items()})


def test_a_constant_is_evaluated_once_and_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = "self.role in ['prefill', 'decode'] ? {'a': [1, 2 + 3]}['a'] : [self.role]"
    visits: list[str] = []
    literal = celpy.evaluation.Evaluator.literal
    def counted(self: celpy.evaluation.Evaluator, tree: typing.Any) -> typing.Any:
        visits.append(str(tree.children[0]))
        return literal(self, tree)

    monkeypatch.setattr(celpy.evaluation.Evaluator, "literal", counted)
    assert _eval(rule, self={"role": "decode"}) == [1, 5]
    first = sorted(visits)
    assert first == ["'a'", "'a'", "'decode'", "'prefill'", "1", "2", "3"]
    visits.clear()
    assert _eval(rule, self={"role": "prefill"}) == [1, 5]
    assert visits == []  # every constant of the rule remembered, none built again
    assert _eval(rule, self={"role": "worker"}) == ["worker"]  # the names still read anew
    # what a rule builds from a remembered constant is new: the constant stays as it was
    assert _eval("[1] + self.more", self={"more": [2]}) == [1, 2]
    assert _eval("[1] + self.more", self={"more": [3]}) == [1, 3]
    assert _eval("[1]", self={}) == [1]


def test_an_erroring_constant_errs_each_time() -> None:
    for _ in range(2):
        with pytest.raises(cel.EvalError):
            _eval("self.a == [1 / 0]", self={"a": [1]})
    assert cel.is_true(_eval("self.a == [4 / 2]", self={"a": [2]}))
