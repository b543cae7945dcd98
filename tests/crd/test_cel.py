"""CEL x-kubernetes-validations, evaluated with cel-python and dgdgen's Kubernetes library."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dgdgen import crd
from dgdgen.crd import cel


def cel_messages(found: list[crd.Violation]) -> list[str]:
    return [v.message for v in found if v.rule and " " in v.rule]


def test_v1beta1_duplicate_names_case_insensitive(v1beta1: dict[str, Any]) -> None:
    comps = v1beta1["spec"]["components"]
    comps[1]["name"] = comps[0]["name"].upper()
    found = crd.validate(v1beta1)
    assert [(v.path, v.message) for v in found] == [
        (("spec", "components"), "component names must be unique case-insensitively")
    ]
    assert found[0].rule is not None and "lowerAscii" in found[0].rule


def test_v1beta1_two_epp_components(v1beta1: dict[str, Any]) -> None:
    comps = v1beta1["spec"]["components"]
    comps.append({"name": "epp-a", "type": "epp", "eppConfig": {"config": {}}})
    assert cel_messages(crd.validate(v1beta1)) == []
    comps.append({"name": "epp-b", "type": "epp", "eppConfig": {"config": {}}})
    assert cel_messages(crd.validate(v1beta1)) == ["at most one component may have type epp"]


def test_min_available_greater_than_replicas(v1beta1: dict[str, Any]) -> None:
    comp = v1beta1["spec"]["components"][1]
    comp["replicas"] = 2
    comp["minAvailable"] = 2
    assert crd.validate(v1beta1) == []
    comp["minAvailable"] = 3
    found = crd.validate(v1beta1)
    assert [(v.path, v.message) for v in found] == [
        (("spec", "components", 1),
         "minAvailable must be less than or equal to replicas unless replicas is 0")
    ]
    comp["replicas"] = 0
    assert crd.validate(v1beta1) == []


def test_v1alpha1_shared_memory_quantity(v1alpha1: dict[str, Any]) -> None:
    name = next(iter(v1alpha1["spec"]["services"]))
    service = v1alpha1["spec"]["services"][name]
    service["sharedMemory"] = {"size": "0"}
    found = crd.validate(v1alpha1)
    assert [(v.path, v.message) for v in found] == [
        (("spec", "services", name, "sharedMemory"), "size is required when disabled is false")
    ]
    service["sharedMemory"] = {"size": "0", "disabled": True}
    assert crd.validate(v1alpha1) == []
    service["sharedMemory"] = {"size": "512Mi"}
    assert crd.validate(v1alpha1) == []
    service["sharedMemory"] = {"size": "lots"}
    found = crd.validate(v1alpha1)
    assert next(v.rule for v in found) == "pattern"
    assert len(found) == 2 and "invalid quantity" in found[1].message  # a CEL runtime error


def test_sidecar_container_without_image(v1beta1: dict[str, Any]) -> None:
    containers = v1beta1["spec"]["components"][1]["podTemplate"]["spec"]["containers"]
    del containers[0]["image"]  # the main container may inherit the component image
    assert crd.validate(v1beta1) == []
    containers.append({"name": "sidecar"})
    found = crd.validate(v1beta1)
    assert [(v.path, v.message) for v in found] == [
        (("spec", "components", 1, "podTemplate", "spec", "containers", 1),
         "sidecar containers must specify a non-empty image")
    ]


def test_backend_annotation_in_map(v1beta1: dict[str, Any]) -> None:
    comp = v1beta1["spec"]["components"][1]
    comp["podTemplate"]["metadata"] = {
        "annotations": {"nvidia.com/vllm-distributed-executor-backend": "RAY"}
    }
    assert crd.validate(v1beta1) == []
    comp["podTemplate"]["metadata"]["annotations"]["nvidia.com/vllm-distributed-executor-backend"] = "k8s"
    assert cel_messages(crd.validate(v1beta1)) == [
        "podTemplate backend annotation must be mp or ray, case-insensitively"
    ]


def test_restart_is_an_optional_old_self_rule(v1beta1: dict[str, Any]) -> None:
    # `oldSelf.hasValue() || !has(self.restart)` with optionalOldSelf: evaluated on create too.
    v1beta1["spec"]["restart"] = {"id": "r1"}
    assert cel_messages(crd.validate(v1beta1)) == [
        "spec.restart must be unset on create; set spec.restart.id after creation to request a restart"
    ]
    old = copy.deepcopy(v1beta1)
    del old["spec"]["restart"]
    assert crd.validate(v1beta1, old=old) == []


def test_transition_rule_only_with_old(v1beta1: dict[str, Any]) -> None:
    old = copy.deepcopy(v1beta1)
    old["spec"]["components"][1].update(replicas=2, minAvailable=1)
    new = copy.deepcopy(old)
    new["spec"]["components"][1]["minAvailable"] = 2
    # On create the rule `minAvailable is immutable` cannot apply.
    assert crd.validate(new) == []
    found = crd.validate(new, old=old)
    assert [(v.path, v.message) for v in found] == [
        (("spec", "components", 1), "minAvailable is immutable after creation")
    ]
    assert crd.validate(old, old=old) == []


def test_transition_rule_correlates_v1alpha1_map_entries(v1alpha1: dict[str, Any]) -> None:
    name = next(iter(v1alpha1["spec"]["services"]))
    old = copy.deepcopy(v1alpha1)
    old["spec"]["services"][name].update(replicas=2, minAvailable=1)
    new = copy.deepcopy(old)
    new["spec"]["services"][name]["minAvailable"] = 2
    assert [v.message for v in crd.validate(new, old=old)] == [
        "minAvailable is immutable after creation"
    ]
    # A service that did not exist before has no old value: the rule is not applied.
    renamed = copy.deepcopy(new)
    renamed["spec"]["services"]["Brand" + name] = renamed["spec"]["services"].pop(name)
    assert crd.validate(renamed, old=old) == []


def test_httproute_cel_rules(httproute: dict[str, Any]) -> None:
    match = {"path": {"type": "PathPrefix", "value": "/v1//chat"}}
    httproute["spec"]["rules"][0]["matches"] = [match]
    found = crd.validate(httproute)
    assert [(v.path, v.message) for v in found] == [
        (("spec", "rules", 0, "matches", 0, "path"),
         "must not contain '//' when type one of ['Exact', 'PathPrefix']")
    ]
    match["path"]["value"] = "/v1/chat"
    assert crd.validate(httproute) == []
    httproute["spec"]["rules"][0]["timeouts"] = {"request": "10s", "backendRequest": "1m"}
    assert [v.message for v in crd.validate(httproute)] == [
        "backendRequest timeout cannot be longer than request timeout"
    ]


def test_httproute_parent_refs_namespace_escaping(httproute: dict[str, Any]) -> None:
    # The rule reads `p1.__namespace__`: the property name is escaped as the API server does.
    ref = httproute["spec"]["parentRefs"][0]
    httproute["spec"]["parentRefs"] = [dict(ref, namespace="a"), dict(ref, namespace="a")]
    messages = [v.message for v in crd.validate(httproute)]
    assert "sectionName must be unique when parentRefs includes 2 or more references to the same parent" in messages
    httproute["spec"]["parentRefs"] = [dict(ref, namespace="a"), dict(ref, namespace="b")]
    assert crd.validate(httproute) == []


def test_inference_pool_rules() -> None:
    pool = {
        "apiVersion": "inference.networking.k8s.io/v1",
        "kind": "InferencePool",
        "metadata": {"name": "qwen-blue"},
        "spec": {
            "selector": {"matchLabels": {"app": "qwen"}},
            "targetPorts": [{"number": 8000}],
            "endpointPickerRef": {"name": "epp", "port": {"number": 9002}},
        },
    }
    assert crd.validate(pool) == []
    del pool["spec"]["endpointPickerRef"]["port"]  # kind defaults to Service, which needs a port
    assert [v.message for v in crd.validate(pool)] == [
        "port is required when kind is 'Service' or unspecified (defaults to 'Service')"
    ]
    pool["spec"]["endpointPickerRef"]["port"] = {"number": 9002}
    pool["spec"]["targetPorts"] = [{"number": 8000}, {"number": 8000}]
    assert "port number must be unique" in [v.message for v in crd.validate(pool)]


@pytest.mark.parametrize(
    "text,value",
    [("0", 0), ("1Gi", 2**30), ("500m", 0.5), ("1.5k", 1500), ("2e3", 2000), ("-1", -1)],
)
def test_quantity_parsing(text: str, value: float) -> None:
    q = cel.parse_quantity(text)
    assert q is not None and q.amount == value


@pytest.mark.parametrize("text", ["", "1GB", "1..2", " 1", "Gi", "1e"])
def test_quantity_rejects(text: str) -> None:
    assert cel.parse_quantity(text) is None


def test_escape() -> None:
    assert cel.escape("namespace") == "__namespace__"
    assert cel.escape("a.b-c/d") == "a__dot__b__dash__c__slash__d"
    assert cel.escape("x__y") == "x__underscores__y"
    assert cel.escape("has space") is None


def test_k8s_string_library() -> None:
    prog = cel.compile_rule("self.split('/')[0].lowerAscii() == 'abc' && 'a,b'.split(',').size() == 2")
    assert bool(cel.evaluate(prog, {"self": cel.to_cel("ABC/def", {"type": "string"})}))
    prog = cel.compile_rule("quantity(self).compareTo(quantity('1Gi')) == 1")
    assert bool(cel.evaluate(prog, {"self": cel.to_cel("2Gi", {"type": "string"})}))
    assert not bool(cel.evaluate(prog, {"self": cel.to_cel("1024Mi", {"type": "string"})}))
