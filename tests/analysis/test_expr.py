"""The expr subset evaluator against the documented semantics (docs/analysis.md, "The expr
subset"; argo-rollouts v1.9.1 utils/evaluate/evaluate.go)."""

from __future__ import annotations

import math

import pytest

from dgdgen.analysis.expr import ExprError, evaluate, measurement_phase, run_phase

NAN = math.nan
GUARDED_OK = "len(result) > 0 && !isNaN(result[0]) && result[0] <= 2"
GUARDED_BAD = "len(result) > 0 && !isNaN(result[0]) && result[0] > 2"


@pytest.mark.parametrize(("text", "result", "value"), [
    ("result[0] >= 0.95", [0.97], True),
    ("result >= 0.95", 0.97, True),  # scalar: no [0]
    ("result[0] <= 2.0", [NAN], False),  # every comparison with NaN is false
    ("result[0] > 2.0", [NAN], False),
    ("result[0] != 1", [NAN], True),
    ("isNaN(result[0]) || result[0] <= 2.0", [NAN], True),
    ("!isNaN(result[0]) && result[0] <= 2.0", [NAN], False),
    ("len(result) == 0 || result[0] >= 0.95", [], True),  # documented "empty passes" idiom
    ("len(result) > 0 && result[0] >= 0.95", [], False),  # documented "empty fails" idiom
    ("isInf(result[0])", [math.inf], True),
    ("result[0] - result[1] <= 0.01", [0.02, 0.015], True),
    ("result[-1] == 3", [1, 2, 3], True),
    ("2 * (result[0] + 1) / 4 == 1", [1.0], True),
    ("false", [1.0], False),
    ("true && !false", [], True),
])
def test_values(text: str, result: object, value: bool) -> None:
    assert evaluate(text, result) is value  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "result"), [
    ("result[0] >= 0.95", []),  # indexing an empty vector is a runtime error
    ("isNaN(result)", [1.0]),  # isNaN of a vector (only works for scalars)
    ("result[0]", [1.0]),  # not a bool
    ("len(result)", [1.0]),
    ("result[0] && true", [1.0]),
])
def test_runtime_errors(text: str, result: object) -> None:
    with pytest.raises(ExprError):
        evaluate(text, result)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", [
    "all(result, # < 1)", "result[0] in [1, 2]", "default(result, 0) > 1", "result[0] >",
    "asFloat(result[0]) > 1", "result[0] ?? 1",
])
def test_outside_the_subset_is_refused(text: str) -> None:
    with pytest.raises(ExprError):
        evaluate(text, [1.0])


@pytest.mark.parametrize(("result", "success", "failure", "phase"), [
    ([1.0], None, None, "Successful"),  # neither set
    ([3.0], "result[0] <= 2", None, "Failed"),  # only success set and false
    ([NAN], "result[0] <= 2", None, "Failed"),  # NaN with success only: Failed
    ([NAN], None, "result[0] > 2", "Successful"),  # NaN with failure only: Successful
    ([NAN], "result[0] <= 2", "result[0] > 2", "Inconclusive"),  # both: Inconclusive
    ([1.0], GUARDED_OK, GUARDED_BAD, "Successful"),
    ([3.0], GUARDED_OK, GUARDED_BAD, "Failed"),
    ([], GUARDED_OK, GUARDED_BAD, "Inconclusive"),  # empty: never a pass
    ([NAN], GUARDED_OK, GUARDED_BAD, "Inconclusive"),
    ([], "result[0] <= 2", "result[0] > 2", "Error"),  # unguarded empty: Error
    ([100.0], "result[0] >= 50", "false", "Successful"),
    ([10.0], "result[0] >= 50", "false", "Inconclusive"),
])
def test_measurement_phase(result: object, success: str | None, failure: str | None,
                           phase: str) -> None:
    assert measurement_phase(result, success, failure)[0] == phase  # type: ignore[arg-type]


def test_run_phase_worst_wins() -> None:
    assert run_phase(["Successful", "Inconclusive"]) == "Inconclusive"
    assert run_phase(["Inconclusive", "Error"]) == "Error"
    assert run_phase(["Error", "Failed", "Successful"]) == "Failed"
    assert run_phase([]) == "Successful"


def test_every_rendered_condition_is_in_the_subset() -> None:
    from dgdgen.analysis.expr import compile_condition
    from dgdgen.analysis.gates import METRICS, conditions, resolve_args

    numbers = {m.bound_arg: "1.5" for m in METRICS.values() if m.bound_arg}
    for name in METRICS:
        if name not in ("probe", "quality"):  # Job metrics: the Job's exit is the verdict
            for c in conditions(name):
                compile_condition(resolve_args(c, numbers))
