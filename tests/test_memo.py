"""Content-keyed reuse: each distinct object is dumped (and validated) once, and only objects
that are exactly the same tree share a result."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest

from dgdgen import crd, yamlio
from dgdgen.crd import catalog

# Pairs that are == in Python (or differ only in ways == does not see) but are different YAML.
NEAR_TWINS: list[tuple[Any, Any]] = [
    ({"a": 1}, {"a": 1.0}),
    ({"a": 1}, {"a": True}),
    ({"a": 0}, {"a": False}),
    ({"a": 1}, {"a": "1"}),
    ({"a": 0.0}, {"a": -0.0}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ({"a": [1, 2]}, {"a": [2, 1]}),
    ({"a": None}, {"a": "null"}),
    ({"a": {}}, {"a": []}),
]


def _fresh_dump(obj: Any) -> str:
    """What dgdgen's dumper writes for ``obj``, bypassing the reuse."""
    buf = io.StringIO()
    yamlio._dumper().dump(yamlio._ordered(obj), buf)
    return buf.getvalue()


@pytest.mark.parametrize(("a", "b"), NEAR_TWINS)
def test_content_key_tells_near_twins_apart(a: Any, b: Any) -> None:
    assert yamlio.content_key(a) is not None
    assert yamlio.content_key(a) != yamlio.content_key(b)
    assert yamlio.content_key(a) == yamlio.content_key(copy.deepcopy(a))


def test_content_key_refuses_other_types() -> None:
    class Name(str):
        pass

    assert yamlio.content_key({"a": (1, 2)}) is None
    assert yamlio.content_key({Name("a"): 1}) is None
    assert yamlio.content_key({1: "a"}) is None


@pytest.mark.parametrize(("a", "b"), NEAR_TWINS)
def test_dump_of_near_twins_is_each_ones_own(a: Any, b: Any) -> None:
    first, second = yamlio.dump(a), yamlio.dump(b)
    assert first == _fresh_dump(a)
    assert second == _fresh_dump(b)
    assert yamlio.dump(copy.deepcopy(a)) == first


def test_equal_objects_are_dumped_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = yamlio._dumper()

    class Counting:
        def dump(self, data: Any, stream: Any) -> None:
            calls.append(data)
            real.dump(data, stream)

    monkeypatch.setattr(yamlio, "_dumper", lambda: Counting())
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "memo-dump-once"},
           "data": {"k": "line one\nline two\n"}}
    texts = [yamlio.dump(copy.deepcopy(obj)) for _ in range(3)]
    assert len(calls) == 1
    assert texts == [texts[0]] * 3
    obj["data"]["k"] = "changed"
    assert yamlio.dump(obj) != texts[0]
    assert len(calls) == 2


def _httproute(weight: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "memo", "namespace": "inference"},
        "spec": {"rules": [{"backendRefs": [{"name": "svc", "port": 8000, "weight": weight}]}]},
    }


def test_validation_outcome_follows_the_content() -> None:
    assert catalog.load("gateway.networking.k8s.io/v1", "HTTPRoute") is not None
    assert crd.validate(_httproute(1), reuse=True) == []
    bad = crd.validate(_httproute("1"), reuse=True)  # a string where an integer belongs
    assert "type" in [v.rule for v in bad]
    assert crd.validate(_httproute(1), reuse=True) == []  # not the string's outcome
    again = crd.validate(_httproute("1"), reuse=True)
    assert again == bad
    again.clear()  # the caller's list is its own
    assert crd.validate(_httproute("1"), reuse=True) == bad
    assert [v.rule for v in crd.validate(_httproute(-1), reuse=True)] == ["minimum"]
