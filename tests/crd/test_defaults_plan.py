"""The defaulting plan seeded from a compiled schema's ``defaultPaths`` (dgdgen/crd/catalog.py,
structural.seed_defaults) is the plan built by walking the whole schema, for every vendored CRD;
and defaulting through a seeded plan sets the same defaults."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from dgdgen import crd
from dgdgen.crd import catalog, structural


def _walked(node: Any) -> Any:
    """The plan of ``node``, built node by node (the memo is keyed by identity, so a fresh copy
    is never served a seeded entry)."""
    return structural._defaults_plan(node)


def _seeded(node: Any) -> Any:
    hit = structural._PLANS.get(id(node))
    assert hit is not None and hit[0] is node, "a node on a defaulting path has no seeded plan"
    return hit[1]


def _same(seeded_node: Any, walked_node: Any, where: str) -> None:
    a, b = _seeded(seeded_node), _walked(walked_node)
    assert (a is None) == (b is None), where
    if a is None:
        return
    assert a[0] == b[0], f"{where}: defaults set here"
    assert [n for n, _ in a[1]] == [n for n, _ in b[1]], f"{where}: properties with defaults below"
    for (name, sa), (_, sb) in zip(a[1], b[1]):
        _same(sa, sb, f"{where}.{name}")
    assert a[3] == b[3], where
    for i, part in ((2, "additionalProperties"), (4, "items")):
        assert (a[i] is None) == (b[i] is None), f"{where}.{part}"
        if a[i] is not None:
            _same(a[i], b[i], f"{where}.{part}")


@pytest.mark.parametrize("api_version,kind", catalog.kinds())
def test_seeded_plan_is_the_walked_plan(api_version: str, kind: str) -> None:
    entry = catalog.load(api_version, kind)
    assert entry is not None
    # The plan memo is emptied when it reaches 100,000 entries (structural._defaults_plan): what
    # the tests before this one on its worker left there could fill it while the copy below is
    # walked, taking the seeded plans with it (a flake, 2026-12-07: "a node on a defaulting path
    # has no seeded plan"). Start from an empty memo: one schema and its copy stay far below.
    structural._PLANS.clear()
    seeded = copy.deepcopy(entry["schema"])
    walked = json.loads(json.dumps(entry["schema"]))
    structural.seed_defaults(seeded, entry["defaultPaths"])
    _same(seeded, walked, kind)


def test_the_paths_are_where_the_defaults_are() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "default": "x"},
            "b": {"type": "object", "properties": {"c": {"type": "integer", "default": 1}}},
            "d": {"type": "array", "items": {"type": "object", "properties": {
                "e": {"type": "boolean", "default": False}}}},
            "f": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "g": {"type": "string", "default": "y"}}}},
            "h": {"type": "object", "properties": {"i": {"type": "string"}}},
        },
    }
    assert structural.default_paths(schema) == [
        ["properties", "a"],
        ["properties", "b", "properties", "c"],
        ["properties", "d", "items", "properties", "e"],
        ["properties", "f", "additionalProperties", "properties", "g"],
    ]
    seeded = copy.deepcopy(schema)
    structural.seed_defaults(seeded, structural.default_paths(schema))
    value = {"b": {}, "d": [{}, {"e": True}], "f": {"k": {}}, "h": {}}
    expected = {"a": "x", "b": {"c": 1}, "d": [{"e": False}, {"e": True}],
                "f": {"k": {"g": "y"}}, "h": {}}
    assert structural.defaulted(value, seeded) == expected
    assert structural.defaulted(value, copy.deepcopy(schema)) == expected  # walked
    # A path left out is a default not set: the seeded plan is all defaulting follows.
    partial = copy.deepcopy(schema)
    structural.seed_defaults(partial, [p for p in structural.default_paths(schema) if "d" not in p])
    assert structural.defaulted(value, partial)["d"] == [{}, {"e": True}]


def test_a_dgd_is_defaulted_through_the_seeded_plan() -> None:
    """The schema validation uses is seeded, not walked, and its defaults reach a DGD: a
    container port's `protocol` (default TCP) appears in what the CEL rules see."""
    structural._PLANS.clear()
    crd._schema.cache_clear()
    schema = crd._schema("nvidia.com/v1alpha1", "DynamoGraphDeployment", ())
    assert schema is not None
    assert structural._PLANS[id(schema)][0] is schema
    seeded = len(structural._PLANS)
    assert seeded < 300  # the nodes on the 84 paths; a walk plans each of about 3,800 nodes
    dgd = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
           "metadata": {"name": "x"},
           "spec": {"services": {"Frontend": {"componentType": "frontend",
                                              "extraPodSpec": {"mainContainer": {
                                                  "name": "main", "ports": [
                                                      {"containerPort": 8000}]}}}}}}
    out = structural.defaulted(dgd, schema)
    port = out["spec"]["services"]["Frontend"]["extraPodSpec"]["mainContainer"]["ports"][0]
    assert port.get("protocol") == "TCP"
    assert "protocol" not in dgd["spec"]["services"]["Frontend"]["extraPodSpec"][
        "mainContainer"]["ports"][0]
    assert len(structural._PLANS) == seeded  # defaulting found every plan it needed seeded
