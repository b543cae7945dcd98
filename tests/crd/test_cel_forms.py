"""cel-python's typing forms, remembered (dgdgen/crd/cel.py ``_RememberedForm``): the same
subscription gives the same form typing gives, and the evaluator's isinstance forms are left
alone."""

from __future__ import annotations

import typing

import celpy.evaluation

from dgdgen.crd import cel


def test_remembered_forms_subscript_as_typing_does() -> None:
    cel.compile_rule("self.a == 1")  # builds the environment, which installs the forms
    for name in cel._REMEMBERED:
        form = getattr(celpy.evaluation, name)
        assert isinstance(form, cel._RememberedForm), name
        assert form.form is getattr(typing, name)
    ev = celpy.evaluation
    assert ev.Union[int, str] == typing.Union[int, str]  # noqa: UP007 - typing's own form
    assert ev.List[ev.Result] == typing.List[ev.Result]  # noqa: UP006
    assert ev.Tuple[int, int] is ev.Tuple[int, int]  # remembered
    assert ev.Dict[str, int] == typing.Dict[str, int]  # noqa: UP006
    # the forms the evaluator passes to isinstance are typing's own
    assert ev.Sequence is typing.Sequence and ev.Mapping is typing.Mapping


def test_a_rule_evaluates_the_same_through_the_remembered_forms() -> None:
    program = cel.compile_rule("self.items.all(x, x.size() > 1) && self.m['k'] in ['a', 'b']")
    from celpy.adapter import json_to_cel

    good = {"self": json_to_cel({"items": ["ab", "cd"], "m": {"k": "a"}})}
    bad = {"self": json_to_cel({"items": ["ab", "c"], "m": {"k": "a"}})}
    assert cel.is_true(cel.evaluate(program, good))
    assert not cel.is_true(cel.evaluate(program, bad))
