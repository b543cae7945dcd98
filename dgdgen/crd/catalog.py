"""Which CRDs dgdgen validates against, and the compact schemas derived from them.

The vendored CRDs under ``schemas/crds/`` are verbatim upstream copies (see
``schemas/crds/PROVENANCE.md``). Parsing them at run time is slow (the WorkflowTemplate CRD alone
is 2.7 MB of YAML), so :func:`regenerate` derives one small JSON file per served
(group, version, kind) under ``schemas/crds/compiled/``: the ``openAPIV3Schema`` with the
``description`` texts removed, plus the sha256 of the YAML it came from. A test fails when the
derived files drift from the vendored originals; regenerate with ``python -m dgdgen.crd
--regenerate``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgdgen import resources

COMPILED_DIR = "compiled"
INDEX_FILE = "index.json"


@dataclass(frozen=True)
class Source:
    """One vendored CRD file and where it came from."""

    path: str  # relative to schemas/crds/
    upstream: str  # repository and path inside it
    ref: str  # release tag / commit the copy was taken at


# Which DGD CRD dgdgen validates against, as `verify` says it. Not a release: the file at Dynamo's
# release tags could not be obtained here (the repository's snapshot is larger than the fetch
# limit, and the code index holds the file at one commit no tag names), so the copy is main of
# 2026-08-20, two months before 1.6.0 (schemas/crds/PROVENANCE.md).
DGD_CRD = "Dynamo main df7deed0d (2026-08-20), not a release tag"

SOURCES: tuple[Source, ...] = (
    Source(
        "dynamo/nvidia.com_dynamographdeployments.yaml",
        "github.com/ai-dynamo/dynamo deploy/operator/config/crd/bases/"
        "nvidia.com_dynamographdeployments.yaml",
        "main df7deed0d (2026-08-20)",
    ),
    Source(
        "gateway-api/gateway.networking.k8s.io_httproutes.v1.6.1.standard.yaml",
        "github.com/kubernetes-sigs/gateway-api config/crd/standard/"
        "gateway.networking.k8s.io_httproutes.yaml",
        "v1.6.1 (8bb74df)",
    ),
    Source(
        "gaie/inference.networking.k8s.io_inferencepools.v1.6.0.yaml",
        "github.com/kubernetes-sigs/gateway-api-inference-extension config/crd/bases/"
        "inference.networking.k8s.io_inferencepools.yaml",
        "v1.6.0 (992e5c2)",
    ),
    Source(
        "argo-rollouts/analysis-template-crd.yaml",
        "github.com/argoproj/argo-rollouts manifests/crds/analysis-template-crd.yaml",
        "v1.9.1 (b6bd3bcf8f60d717a98763d26acc983db7f97cb0)",
    ),
    Source(
        "argo-rollouts/cluster-analysis-template-crd.yaml",
        "github.com/argoproj/argo-rollouts manifests/crds/cluster-analysis-template-crd.yaml",
        "v1.9.1 (b6bd3bcf8f60d717a98763d26acc983db7f97cb0)",
    ),
    Source(
        "argo-rollouts/analysis-run-crd.yaml",
        "github.com/argoproj/argo-rollouts manifests/crds/analysis-run-crd.yaml",
        "v1.9.1 (b6bd3bcf8f60d717a98763d26acc983db7f97cb0)",
    ),
    Source(
        "argo-cd/application-crd.yaml",
        "github.com/argoproj/argo-cd manifests/crds/application-crd.yaml",
        "v3.5.1 (109ca7ca71139e514114499d294a492e7910a965)",
    ),
    Source(
        "argo-cd/applicationset-crd.yaml",
        "github.com/argoproj/argo-cd manifests/crds/applicationset-crd.yaml",
        "v3.5.1 (109ca7ca71139e514114499d294a492e7910a965)",
    ),
    Source(
        "argo-cd/appproject-crd.yaml",
        "github.com/argoproj/argo-cd manifests/crds/appproject-crd.yaml",
        "v3.5.1 (109ca7ca71139e514114499d294a492e7910a965)",
    ),
    Source(
        "prometheus-operator/monitoring.coreos.com_podmonitors.yaml",
        "github.com/prometheus-operator/prometheus-operator example/prometheus-operator-crd/"
        "monitoring.coreos.com_podmonitors.yaml",
        "v0.91.0 (00749296a6ed0225f09f8bd9849d764f1280d766)",
    ),
    Source(
        "argo-workflows/argoproj.io_workflowtemplates.yaml",
        "github.com/argoproj/argo-workflows manifests/base/crds/full/"
        "argoproj.io_workflowtemplates.yaml",
        "main f016ad89eb269d282aec06dc491c29f396a38df4 (= v4.1.2)",
    ),
)

# Keys that carry no validation meaning; dropping them keeps the derived files small.
_DROP_KEYS = frozenset({"description", "example", "externalDocs", "title"})


def _strip(node: Any, *, in_properties: bool = False) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            # Inside "properties" the keys are field names (a field may be called "description").
            if not in_properties and key in _DROP_KEYS:
                continue
            if not in_properties and key in ("default", "enum"):
                out[key] = value  # data, not schema: keep verbatim
                continue
            out[key] = _strip(value, in_properties=(key == "properties" and not in_properties))
        return out
    if isinstance(node, list):
        return [_strip(item) for item in node]
    return node


def compiled_name(group: str, version: str, kind: str) -> str:
    return f"{group}_{version}_{kind}.json"


def compile_sources(crd_root: Path) -> dict[str, str]:
    """Derive the compiled files from the vendored CRDs: ``{file name: JSON text}``."""
    import yaml

    from dgdgen.crd.structural import default_paths

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files: dict[str, str] = {}
    index: dict[str, Any] = {}
    for source in SOURCES:
        raw = (crd_root / source.path).read_bytes()
        sha = hashlib.sha256(raw).hexdigest()
        for crd in yaml.load_all(raw, Loader=loader):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            spec = crd["spec"]
            group = spec["group"]
            kind = spec["names"]["kind"]
            for version in spec["versions"]:
                if not version.get("served", True):
                    continue
                name = compiled_name(group, version["name"], kind)
                doc = {
                    "apiVersion": f"{group}/{version['name']}",
                    "kind": kind,
                    "plural": spec["names"]["plural"],
                    "scope": spec.get("scope", "Namespaced"),
                    "source": source.path,
                    "sourceSha256": sha,
                    "deprecated": bool(version.get("deprecated", False)),
                    "schema": _strip(version["schema"]["openAPIV3Schema"]),
                }
                # Where defaulting acts, so that a run need not walk the whole schema for it.
                doc["defaultPaths"] = default_paths(doc["schema"])
                files[name] = json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"
                index[f"{group}/{version['name']}/{kind}"] = name
    files[INDEX_FILE] = json.dumps(index, sort_keys=True, indent=1) + "\n"
    return files


def regenerate(crd_root: Path) -> list[str]:
    """Rewrite ``compiled/`` from the vendored CRDs; returns the files written."""
    return write_compiled(compile_sources(crd_root), crd_root / COMPILED_DIR)


def write_compiled(files: dict[str, str], out_dir: Path) -> list[str]:
    """Make ``out_dir`` hold exactly ``files`` (``*.json`` not among them are removed)."""
    out_dir.mkdir(exist_ok=True)
    for stale in out_dir.glob("*.json"):
        if stale.name not in files:
            stale.unlink()
    for name, text in sorted(files.items()):
        (out_dir / name).write_text(text, encoding="utf-8")
    return sorted(files)


@functools.lru_cache(maxsize=1)
def index() -> dict[str, str]:
    """``"group/version/Kind"`` -> compiled file name, for every vendored served version."""
    text = resources.read_text("schemas", "crds", COMPILED_DIR, INDEX_FILE)
    loaded: dict[str, str] = json.loads(text)
    return loaded


def key(api_version: str, kind: str) -> str:
    return f"{api_version}/{kind}"


@functools.cache
def load(api_version: str, kind: str) -> dict[str, Any] | None:
    """The compiled entry for an apiVersion/kind, or None when it is not vendored."""
    name = index().get(key(api_version, kind))
    if name is None:
        return None
    loaded: dict[str, Any] = json.loads(
        resources.read_text("schemas", "crds", COMPILED_DIR, name)
    )
    return loaded


def kinds() -> list[tuple[str, str]]:
    """Every vendored (apiVersion, kind), sorted."""
    out = []
    for k in index():
        group_version, _, kind = k.rpartition("/")
        out.append((group_version, kind))
    return sorted(out)
