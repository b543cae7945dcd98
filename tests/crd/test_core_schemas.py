"""The vendored Kubernetes core schemas (schemas/kubernetes/): verbatim, pinned, and used."""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _core_objects() -> list[dict[str, Any]]:
    from dgdgen import yamlio

    out = []
    for path in sorted(REPO.glob("examples/*/rendered/**/*.yaml")):
        for doc in yamlio.load_file(str(path)):
            data = doc.data
            if isinstance(data, dict) and core.known(str(data.get("apiVersion")),
                                                     str(data.get("kind"))):
                out.append(data)
    return out


def _variants(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The object, and copies with one field at a time changed: removed, given the wrong type,
    an unknown sibling, a negative number."""
    yield obj

    def walk(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        yield path
        if isinstance(node, dict):
            for k, v in node.items():
                yield from walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, (*path, i))

    for path in itertools.islice(walk(obj, ()), 1, None):
        for change in ("drop", "type", "extra", "negative"):
            out = copy.deepcopy(obj)
            parent: Any = out
            for step in path[:-1]:
                parent = parent[step]
            value = parent[path[-1]]
            if change == "drop" and isinstance(parent, dict):
                del parent[path[-1]]
            elif change == "type":
                parent[path[-1]] = 7 if isinstance(value, str) else "seven"
            elif change == "extra" and isinstance(value, dict):
                value["bogusField"] = 1
            elif change == "negative" and isinstance(value, int) and not isinstance(value, bool):
                parent[path[-1]] = -value - 1
            else:
                continue
            yield out


def test_the_rust_validator_finds_valid_only_what_jsonschema_finds_valid() -> None:
    """Valid from jsonschema-rs is the answer (crd/core.py); every rendered core object and
    every one-field variant of it is judged alike by both validators, and validate() reports
    the same with and without the fast path."""
    checked = invalid = 0
    for obj in _core_objects():
        api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
        fast, slow = core._fast_validator(api_version, kind), core._validator(api_version, kind)
        assert fast is not None
        for variant in _variants(obj):
            checked += 1
            errors = list(slow.iter_errors(variant))
            assert fast.is_valid(variant) == (not errors), (kind, variant, errors[:1])
            invalid += bool(errors)
    assert checked > 1000 and checked > invalid > 300, (checked, invalid)


def test_validate_is_the_same_without_the_rust_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [v for o in _core_objects()[:40] for v in itertools.islice(_variants(o), 30)]
    with_fast = [core.validate(o) for o in objects]
    monkeypatch.setattr(core, "_fast_validator", lambda api_version, kind: None)
    assert [core.validate(o) for o in objects] == with_fast
    assert any(with_fast) and not all(with_fast)
