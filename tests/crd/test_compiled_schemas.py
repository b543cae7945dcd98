"""The derived schemas under schemas/crds/compiled/ match the vendored CRDs they come from."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from dgdgen.crd import catalog
from dgdgen.crd.__main__ import REPO_CRDS, stale_files

SHARED_UPSTREAM = REPO_CRDS.parents[1] / ".." / "shared" / "upstream"


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


# Vendored straight from the upstream repository (no copy under ../shared/upstream); their
# sha256 and git blob id are pinned in PROVENANCE.md by test_provenance_table_matches_files.
FROM_UPSTREAM_REPOSITORY = {"prometheus-operator/monitoring.coreos.com_podmonitors.yaml"}


@pytest.mark.skipif(not SHARED_UPSTREAM.is_dir(), reason="../shared/upstream is not available")
def test_vendored_copies_are_verbatim() -> None:
    names = {p.name: p for p in SHARED_UPSTREAM.rglob("*.yaml")}
    for source in catalog.SOURCES:
        ours = (REPO_CRDS / source.path).read_bytes()
        candidates = [p for p in SHARED_UPSTREAM.rglob(Path(source.path).name)]
        if not candidates and source.path in FROM_UPSTREAM_REPOSITORY:
            continue
        assert any(p.read_bytes() == ours for p in candidates), source.path
    assert names  # the folder really held CRDs
