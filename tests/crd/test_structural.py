"""Strict structural validation: the negatives the API server (or its pruning) would produce."""

from __future__ import annotations

import copy
from typing import Any

from dgdgen import crd


def rules(violations: list[crd.Violation]) -> list[tuple[tuple[str | int, ...], str | None]]:
    return [(v.path, v.rule) for v in violations]


def test_unknown_field_at_several_depths(v1beta1: dict[str, Any]) -> None:
    v1beta1["spec"]["bogusTop"] = 1
    v1beta1["spec"]["components"][0]["replica"] = 2  # misspelt
    v1beta1["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["imagePullPolicyX"] = "x"
    v1beta1["metadata"]["labelz"] = {}
    found = crd.validate(v1beta1)
    assert rules(found) == [
        (("metadata", "labelz"), "unknown-field"),
        (("spec", "components", 0, "replica"), "unknown-field"),
        (("spec", "components", 1, "podTemplate", "spec", "containers", 0, "imagePullPolicyX"),
         "unknown-field"),
        (("spec", "bogusTop"), "unknown-field"),
    ]
    assert "did you mean 'replicas'" in found[1].message


def test_valid_object_gives_nothing(v1beta1: dict[str, Any], v1alpha1: dict[str, Any]) -> None:
    assert crd.validate(v1beta1) == []
    assert crd.validate(v1alpha1) == []


def test_input_is_not_modified(v1beta1: dict[str, Any]) -> None:
    before = copy.deepcopy(v1beta1)
    crd.validate(v1beta1)
    assert v1beta1 == before  # defaults are applied to a copy


def test_wrong_type_blocks_cel(v1beta1: dict[str, Any]) -> None:
    v1beta1["spec"]["components"][0]["replicas"] = "two"
    v1beta1["spec"]["components"][0]["minAvailable"] = 5  # would fail a CEL rule
    found = crd.validate(v1beta1)
    assert rules(found) == [
        (("spec", "components", 0, "replicas"), "type"),
        ((), "x-kubernetes-validations"),
    ]


def test_enum_violation(v1beta1: dict[str, Any]) -> None:
    v1beta1["spec"]["components"][0]["type"] = "gateway"
    found = crd.validate(v1beta1)
    assert rules(found) == [(("spec", "components", 0, "type"), "enum")]
    assert '"frontend"' in found[0].message


def test_required_field(v1beta1: dict[str, Any]) -> None:
    del v1beta1["spec"]["components"][0]["name"]
    assert (("spec", "components", 0, "name"), "required") in rules(crd.validate(v1beta1))


def test_int_or_string(v1beta1: dict[str, Any]) -> None:
    limits = v1beta1["spec"]["components"][1]["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]
    limits["nvidia.com/gpu"] = 1
    assert crd.validate(v1beta1) == []
    limits["nvidia.com/gpu"] = True
    assert rules(crd.validate(v1beta1))[0] == (
        ("spec", "components", 1, "podTemplate", "spec", "containers", 0, "resources", "limits",
         "nvidia.com/gpu"), "type")
    limits["nvidia.com/gpu"] = [1]
    assert rules(crd.validate(v1beta1))[0][1] == "type"


def test_null_is_rejected_for_non_nullable(v1beta1: dict[str, Any]) -> None:
    v1beta1["spec"]["components"][0]["replicas"] = None
    assert rules(crd.validate(v1beta1)) == [(("spec", "components", 0, "replicas"), "nullable")]


def test_minimum_and_int32(v1alpha1: dict[str, Any]) -> None:
    service = next(iter(v1alpha1["spec"]["services"].values()))
    service["replicas"] = -1
    assert rules(crd.validate(v1alpha1)) == [
        (("spec", "services", next(iter(v1alpha1["spec"]["services"])), "replicas"), "minimum")
    ]
    service["replicas"] = 2**31
    assert [r for _, r in rules(crd.validate(v1alpha1))] == ["format"]


def test_metadata_rules(v1beta1: dict[str, Any]) -> None:
    v1beta1["metadata"]["labels"] = {"app": "x" * 64, "bad key!": "v"}
    v1beta1["metadata"]["namespace"] = "Not_A_Label"
    found = rules(crd.validate(v1beta1))
    assert (("metadata", "labels", "app"), "labelValue") in found
    assert (("metadata", "labels", "bad key!"), "key") in found
    assert (("metadata", "namespace"), "name") in found
    del v1beta1["metadata"]
    assert (("metadata",), "required") in rules(crd.validate(v1beta1))


def test_list_map_keys_must_be_unique(v1beta1: dict[str, Any]) -> None:
    containers = v1beta1["spec"]["components"][1]["podTemplate"]["spec"]["containers"]
    containers.append(copy.deepcopy(containers[0]))
    found = rules(crd.validate(v1beta1))
    assert (("spec", "components", 1, "podTemplate", "spec", "containers", 1),
            "x-kubernetes-list-map-keys") in found


def test_unknown_kind_is_a_clear_result() -> None:
    found = crd.validate({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert [v.rule for v in found] == [crd.UNKNOWN_KIND]
    assert "Widget" in found[0].message
    assert not crd.known("example.com/v1", "Widget")
    assert [v.rule for v in crd.validate({"kind": "Widget"})] == ["required"]
    assert [v.rule for v in crd.validate(["not", "a", "mapping"])] == ["type"]


def test_version_hint_for_unvendored_version() -> None:
    found = crd.validate({"apiVersion": "nvidia.com/v2", "kind": "DynamoGraphDeployment"})
    assert "nvidia.com/v1beta1" in found[0].message


def test_httproute_max_items(httproute: dict[str, Any]) -> None:
    rule = httproute["spec"]["rules"][0]
    ref = rule["backendRefs"][0]
    rule["backendRefs"] = [dict(ref, name=f"pool-{i}") for i in range(17)]
    found = crd.validate(httproute)
    assert (("spec", "rules", 0, "backendRefs"), "maxItems") in rules(found)
    rule["backendRefs"] = rule["backendRefs"][:16]
    assert crd.validate(httproute) == []


def test_httproute_pattern(httproute: dict[str, Any]) -> None:
    httproute["spec"]["hostnames"] = ["Not A Host!"]
    assert rules(crd.validate(httproute)) == [(("spec", "hostnames", 0), "pattern")]


def test_analysis_template_unknown_field() -> None:
    template = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "ttft"},
        "spec": {
            "args": [{"name": "namespace"}],
            "metrics": [
                {
                    "name": "ttft-p90",
                    "interval": "1m",
                    "successCondition": "result[0] < 2",
                    "failureLimit": 1,
                    "provider": {
                        "prometheus": {
                            "address": "http://prometheus:9090",
                            "query": "histogram_quantile(0.9, sum(rate(x[5m])) by (le))",
                        }
                    },
                }
            ],
        },
    }
    assert crd.validate(template) == []
    template["spec"]["metrics"][0]["provider"]["prometheus"]["queryTimeout"] = "30s"
    assert rules(crd.validate(template)) == [
        (("spec", "metrics", 0, "provider", "prometheus", "queryTimeout"), "unknown-field")
    ]
    template["spec"]["metrics"][0]["failureLimit"] = "1"  # int-or-string in Argo Rollouts
    assert len(crd.validate(template)) == 1


def test_core_kind_against_the_vendored_kubernetes_schema() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "fe"},
        "spec": {"selector": {"app": "fe"}, "ports": [{"port": 8000, "targetPort": 8000}]},
    }
    assert crd.known("v1", "Service")
    assert crd.validate(service) == []
    service["spec"]["ports"][0]["prot"] = 1
    service["spec"]["type"] = 3
    found = rules(crd.validate(service))
    assert (("spec", "ports", 0, "prot"), "unknown-field") in found
    assert any(path == ("spec", "type") for path, _ in found)


def _apply_defaults(value: Any, schema: Any) -> None:
    """The plain definition, in place (structuraldefaulting.Default): the oracle for
    structural.defaulted, which validation uses."""
    if isinstance(value, dict):
        props = schema.get("properties")
        if props:
            for name, sub in props.items():
                if name not in value and "default" in sub:
                    value[name] = copy.deepcopy(sub["default"])
            for name, sub in props.items():
                if name in value:
                    _apply_defaults(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for k, v in value.items():
                if not props or k not in props:
                    _apply_defaults(v, extra)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for v in value:
                _apply_defaults(v, items)


def test_defaulted_equals_copy_then_apply_defaults_and_leaves_the_input_alone() -> None:
    """crd.validate defaults a shared-structure copy (structural.defaulted): the same values as
    copying everything and defaulting in place, on every vendored object the repository holds
    and on variants with fields removed (so that defaults apply)."""
    import itertools
    from pathlib import Path

    from dgdgen import yamlio
    from dgdgen.crd import catalog, structural

    repo = Path(__file__).resolve().parents[2]
    paths = sorted(repo.glob("examples/*/rendered/**/*.yaml"))
    paths += sorted((repo / "tests" / "data" / "upstream").glob("**/*.yaml"))
    paths += sorted((repo / "tests" / "check" / "corpus").glob("*/*.yaml"))
    checked = changed = 0

    def variants(node: Any) -> Any:
        yield node
        if isinstance(node, dict):
            for key in sorted(node, key=str):
                yield {k: v for k, v in node.items() if k != key}
                for sub in itertools.islice(variants(node[key]), 1, 4):
                    yield {**node, key: sub}
        elif isinstance(node, list) and node:
            for sub in itertools.islice(variants(node[0]), 1, 4):
                yield [sub, *node[1:]]

    for path in paths:
        for doc in yamlio.load_file(str(path)):
            data = doc.data
            if not isinstance(data, dict):
                continue
            entry = catalog.load(str(data.get("apiVersion")), str(data.get("kind")))
            if entry is None:
                continue
            schema = entry["schema"]
            for variant in itertools.islice(variants(data), 60):
                before = copy.deepcopy(variant)
                expected = structural.copy_plain(variant)
                _apply_defaults(expected, schema)
                got = structural.defaulted(variant, schema)
                assert got == expected
                assert variant == before  # the input is not modified
                checked += 1
                changed += got is not variant
    assert checked > 2000 and changed > 100, (checked, changed)
