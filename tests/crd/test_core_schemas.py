"""The vendored Kubernetes core schemas (schemas/kubernetes/): verbatim, pinned, and used."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dgdgen import crd
from dgdgen.crd import core

REPO = Path(__file__).resolve().parents[2]
VENDORED = REPO / "schemas" / "kubernetes"


def _files() -> list[Path]:
    return sorted((VENDORED / core.SCHEMA_SET).glob("*.json"))


def test_provenance_pins_every_vendored_file() -> None:
    provenance = (VENDORED / "PROVENANCE.md").read_text(encoding="utf-8")
    rows = [line for line in provenance.splitlines() if line.startswith(f"| `{core.SCHEMA_SET}/")]
    assert len(rows) == len(_files()) > 1
    for path in _files():
        raw = path.read_bytes()
        row = next(line for line in rows if f"`{core.SCHEMA_SET}/{path.name}`" in line)
        assert hashlib.sha256(raw).hexdigest() in row, path.name
        assert hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest() in row, path.name
        assert "Apache-2.0" in row
    assert "Apache License" in (VENDORED / "LICENSE").read_text(encoding="utf-8")


def test_vendored_files_equal_the_kubernetes_validate_package() -> None:
    """Byte-for-byte the files of kubernetes-validate (the `test` extra) for the same version."""
    pytest.importorskip("kubernetes_validate")
    from importlib import resources

    theirs = resources.files("kubernetes_validate") / "kubernetes-json-schema" / core.SCHEMA_SET
    assert theirs.is_dir(), f"kubernetes-validate no longer ships {core.SCHEMA_SET}"
    for path in _files():
        assert (theirs / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize(("api_version", "kind"), [
    ("v1", "Service"), ("v1", "ConfigMap"), ("v1", "ServiceAccount"), ("v1", "Secret"),
    ("v1", "Namespace"), ("v1", "PersistentVolumeClaim"), ("apps/v1", "Deployment"),
    ("policy/v1", "PodDisruptionBudget"), ("batch/v1", "Job"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
])
def test_vendored_kind_is_known(api_version: str, kind: str) -> None:
    assert crd.known(api_version, kind)


def test_kinds_not_vendored_are_unknown_not_guessed() -> None:
    assert not crd.known("v1", "Pod")
    assert not crd.known("apps/v1", "StatefulSet")
    assert not crd.known("v1", "ServiceSpec")  # a sub-object's schema is not a kind
    found = crd.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert [v.rule for v in found] == [crd.UNKNOWN_KIND]


def test_deployment_errors_are_all_reported() -> None:
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "proxy"},
        "spec": {
            "replicas": "two",
            "selector": {"matchLabels": {"app": "proxy"}},
            "template": {
                "metadata": {"labels": {"app": "proxy"}},
                "spec": {"containers": [{"name": "haproxy", "image": "haproxy:3.2",
                                         "portz": [{"containerPort": 8080}]}]},
            },
        },
    }
    found = {(v.path, v.rule) for v in crd.validate(deployment)}
    assert (("spec", "replicas"), "type") in found
    assert (("spec", "template", "spec", "containers", 0, "portz"), "unknown-field") in found
    del deployment["spec"]["replicas"]  # type: ignore[attr-defined]
    del deployment["spec"]["template"]["spec"]["containers"][0]["portz"]  # type: ignore[index]
    assert crd.validate(deployment) == []
