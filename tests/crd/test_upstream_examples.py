"""Every real DGD (and the GAIE HTTPRoute) from Dynamo's repository validates cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from dgdgen import crd, yamlio

# Verbatim upstream copies, vendored with their provenance (tests/data/upstream/README.md).
UPSTREAM_EXAMPLES = Path(__file__).resolve().parents[1] / "data" / "upstream" / "dynamo" / "examples"


def upstream_examples() -> list[Path]:
    return sorted(UPSTREAM_EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", upstream_examples(), ids=lambda p: p.name)
def test_upstream_example_is_valid(path: Path) -> None:
    docs = yamlio.load_file(str(path))
    assert docs
    for doc in docs:
        assert crd.known(doc.data["apiVersion"], doc.data["kind"]) or doc.data["kind"] in {
            "PersistentVolumeClaim", "ConfigMap"
        }
        problems = [v for v in crd.validate(doc.data) if v.rule != crd.UNKNOWN_KIND]
        assert problems == [], f"{path.name}: {[str(v) for v in problems]}"


def test_both_dgd_versions_are_covered() -> None:
    versions = set()
    for path in upstream_examples():
        for doc in yamlio.load_file(str(path)):
            if doc.data["kind"] == "DynamoGraphDeployment":
                versions.add(doc.data["apiVersion"])
    assert len(upstream_examples()) >= 12
    assert versions == {"nvidia.com/v1alpha1", "nvidia.com/v1beta1"}


def test_vendored_kinds() -> None:
    assert set(crd.kinds()) >= {
        ("nvidia.com/v1alpha1", "DynamoGraphDeployment"),
        ("nvidia.com/v1beta1", "DynamoGraphDeployment"),
        ("gateway.networking.k8s.io/v1", "HTTPRoute"),
        ("inference.networking.k8s.io/v1", "InferencePool"),
        ("argoproj.io/v1alpha1", "AnalysisTemplate"),
        ("argoproj.io/v1alpha1", "ClusterAnalysisTemplate"),
        ("argoproj.io/v1alpha1", "AnalysisRun"),
        ("argoproj.io/v1alpha1", "Application"),
        ("argoproj.io/v1alpha1", "ApplicationSet"),
        ("argoproj.io/v1alpha1", "AppProject"),
        ("argoproj.io/v1alpha1", "WorkflowTemplate"),
    }


@pytest.mark.parametrize("api_version,kind", crd.kinds())
def test_no_unsupported_cel_rules(api_version: str, kind: str) -> None:
    # Every rule of every vendored kind compiles with cel-python and uses only implemented
    # functions; a new upstream rule that does not shows up here, not as a silent pass.
    assert crd.unsupported_rules(api_version, kind) == []
    assert crd.unsupported_rules(api_version, kind, overlays=["dgd-proposed-rollout-fields"]) == []


def test_unsupported_rule_is_reported_not_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    from dgdgen.crd.structural import Walker

    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.a.base64Decode() == 'x'", "message": "m"}],
    }
    w = Walker()
    w.walk({"a": "eA=="}, schema, ())
    w.run_deferred()
    assert len(w.violations) == 1
    assert w.violations[0].reason == "Unsupported"
    assert "base64Decode" in w.violations[0].message
