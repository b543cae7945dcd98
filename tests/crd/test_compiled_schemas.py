"""The derived schemas under schemas/crds/compiled/ match the vendored CRDs they come from."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from dgdgen.crd import catalog, core
from dgdgen.crd.__main__ import REPO_CRDS, REPO_KUBERNETES, stale_core_files, stale_files

def test_compiled_schemas_are_fresh() -> None:
    stale = stale_files(REPO_CRDS)
    assert stale == [], f"run `python -m dgdgen.crd --regenerate`; stale: {stale}"


def test_staleness_is_detected(tmp_path: Path) -> None:
    crds = tmp_path / "crds"
    shutil.copytree(REPO_CRDS, crds)
    assert stale_files(crds) == []
    target = crds / "gaie" / "inference.networking.k8s.io_inferencepools.v1.6.0.yaml"
    target.write_text(target.read_text().replace("maxItems: 8", "maxItems: 9"))
    assert stale_files(crds) == ["inference.networking.k8s.io_v1_InferencePool.json"]
    (crds / "compiled" / "leftover.json").write_text("{}")
    assert "leftover.json" in stale_files(crds)


def test_provenance_table_matches_files() -> None:
    provenance = (REPO_CRDS / "PROVENANCE.md").read_text()
    for source in catalog.SOURCES:
        raw = (REPO_CRDS / source.path).read_bytes()
        row = next(line for line in provenance.splitlines() if f"`{source.path}`" in line)
        assert hashlib.sha256(raw).hexdigest() in row
        blob = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()  # git hash-object
        assert blob in row
        assert "Apache-2.0" in row


# The upstream records taken when the CRDs were copied (tests/data/upstream/*/SOURCES.md and
# dynamo/PROVENANCE.md), independent of schemas/crds/PROVENANCE.md. PodMonitor was copied straight
# from prometheus-operator and has no such record; its sha256 and blob are pinned above.
UPSTREAM_RECORDS = Path(__file__).resolve().parents[1] / "data" / "upstream"
FROM_UPSTREAM_REPOSITORY = {"prometheus-operator/monitoring.coreos.com_podmonitors.yaml"}


def test_vendored_copies_are_verbatim() -> None:
    records = "\n".join(p.read_text(encoding="utf-8")
                        for p in sorted(UPSTREAM_RECORDS.glob("*/*.md")))
    # Full blob ids, and the abbreviated `99b47edc…` form some records use.
    recorded = set(re.findall(r"\b[0-9a-f]{40}\b", records))
    recorded |= set(re.findall(r"\b([0-9a-f]{8,39})…", records))
    assert len(recorded) > 10
    checked = 0
    for source in catalog.SOURCES:
        if source.path in FROM_UPSTREAM_REPOSITORY:
            continue
        raw = (REPO_CRDS / source.path).read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()
        assert any(blob.startswith(r) for r in recorded), f"{source.path}: blob {blob} unrecorded"
        checked += 1
    assert checked == len(catalog.SOURCES) - len(FROM_UPSTREAM_REPOSITORY)


def test_core_bundles_are_fresh() -> None:
    stale = stale_core_files(REPO_KUBERNETES)
    assert stale == [], f"run `python -m dgdgen.crd --regenerate`; stale: {stale}"


def test_core_bundle_staleness_is_detected(tmp_path: Path) -> None:
    root = tmp_path / "kubernetes"
    shutil.copytree(REPO_KUBERNETES, root)
    assert stale_core_files(root) == []
    definitions = root / core.SCHEMA_SET / "_definitions.json"
    # A definition the Service bundle reaches changes: its bundle and the index are stale.
    text = definitions.read_text()
    assert text.count('"io.k8s.api.core.v1.ServicePort": {') == 1
    definitions.write_text(text.replace('"io.k8s.api.core.v1.ServicePort": {',
                                        '"io.k8s.api.core.v1.ServicePort": {"minProperties": 1,'))
    stale = stale_core_files(root)
    assert "service-v1.json" in stale and "index.json" in stale
    assert "configmap-v1.json" not in stale
