"""The proposed-rollout-fields overlay: accepted only when asked for, and checked when it is."""

from __future__ import annotations

from typing import Any

import pytest

from dgdgen import crd
from dgdgen.crd import overlays
from dgdgen.errors import InputError

OVERLAY = "dgd-proposed-rollout-fields"


def test_fields_rejected_without_overlay(v1beta1: dict[str, Any], v1alpha1: dict[str, Any]) -> None:
    v1beta1["spec"]["components"][1].update(workerGroupName="blue", partition=0, paused=False)
    assert sorted(v.path[-1] for v in crd.validate(v1beta1) if v.rule == "unknown-field") == [
        "partition", "paused", "workerGroupName"
    ]
    name = next(iter(v1alpha1["spec"]["services"]))
    v1alpha1["spec"]["services"][name]["workerGroupName"] = "blue"
    assert [v.rule for v in crd.validate(v1alpha1)] == ["unknown-field"]


def test_fields_accepted_with_overlay(v1beta1: dict[str, Any], v1alpha1: dict[str, Any]) -> None:
    v1beta1["spec"]["components"][1].update(
        workerGroupName="blue", partition=1, paused=True, replicas=2
    )
    assert crd.validate(v1beta1, overlays=[OVERLAY]) == []
    name = next(iter(v1alpha1["spec"]["services"]))
    v1alpha1["spec"]["services"][name].update(workerGroupName="green", partition=0)
    assert crd.validate(v1alpha1, overlays=[OVERLAY]) == []


def test_overlay_validates_its_fields(v1beta1: dict[str, Any]) -> None:
    comp = v1beta1["spec"]["components"][1]
    comp.update(workerGroupName="Blue_Group", partition=-1, paused="yes")
    at = ("spec", "components", 1)
    assert [(v.path, v.rule) for v in crd.validate(v1beta1, overlays=[OVERLAY])] == [
        (at + ("workerGroupName",), "pattern"),
        (at + ("partition",), "minimum"),
        (at + ("paused",), "type"),
        ((), "x-kubernetes-validations"),  # CEL is not run over type errors
    ]
    comp.update(workerGroupName="x" * 64, partition=0, paused=False)
    assert [v.rule for v in crd.validate(v1beta1, overlays=[OVERLAY])] == ["maxLength"]


def test_partition_not_above_replicas(v1beta1: dict[str, Any]) -> None:
    comp = v1beta1["spec"]["components"][1]
    comp.update(replicas=2, partition=3)
    found = crd.validate(v1beta1, overlays=[OVERLAY])
    assert [(v.path, v.message) for v in found] == [
        (("spec", "components", 1, "partition"),
         "partition must be less than or equal to replicas (replicas defaults to 1)")
    ]
    comp["partition"] = 2
    assert crd.validate(v1beta1, overlays=[OVERLAY]) == []


def test_overlay_documents_capabilities() -> None:
    overlay = overlays.load(OVERLAY)
    assert overlay.capabilities() == {
        "workerGroupName": "dgd-worker-groups",
        "partition": "dgd-partitioned-rollout",
        "paused": "dgd-partitioned-rollout",
    }
    assert "15214" in overlay.reference
    for patch in overlay.patches:
        for field in patch.fields:
            assert "15214" in field.description


def test_unknown_overlay_is_input_error(v1beta1: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="unknown schema overlay"):
        crd.validate(v1beta1, overlays=["no-such-overlay"])


def test_overlay_refuses_to_shadow_a_released_field(monkeypatch: pytest.MonkeyPatch) -> None:
    patch = overlays.Patch(
        "nvidia.com/v1beta1", "DynamoGraphDeployment", ("spec", "components", "*"),
        (overlays.Field("replicas", "x", "d", {"type": "integer"}),), (),
    )
    from dgdgen.crd import catalog

    schema = catalog.load("nvidia.com/v1beta1", "DynamoGraphDeployment")
    assert schema is not None
    with pytest.raises(InputError, match="already declares"):
        overlays._merge(schema["schema"], patch, "test")
