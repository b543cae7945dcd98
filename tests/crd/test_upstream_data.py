"""The upstream files the tests read are in the repository, byte-for-byte as recorded."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
DYNAMO = TESTS / "data" / "upstream" / "dynamo"


def test_every_dynamo_example_matches_its_recorded_blob() -> None:
    rows = {m.group(1): m.group(2) for m in re.finditer(
        r"^\| (examples/[^ |]+) \|.*\| ([0-9a-f]{40}) \|$",
        (DYNAMO / "PROVENANCE.md").read_text(encoding="utf-8"), re.M)}
    files = sorted(p.relative_to(DYNAMO).as_posix() for p in (DYNAMO / "examples").glob("*"))
    assert files and sorted(rows) == files
    for rel, blob in rows.items():
        raw = (DYNAMO / rel).read_bytes()
        assert hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest() == blob, rel
    assert "Apache-2.0" in (DYNAMO / "PROVENANCE.md").read_text(encoding="utf-8")


def test_no_test_reads_outside_the_repository() -> None:
    """No test (or helper) names a path above the checkout, such as a sibling `shared/` folder."""
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"""["']shared["']\s*/|parent\s*/\s*["']shared|\.\./shared""", text):
            offenders.append(str(path.relative_to(TESTS)))
    assert offenders == []
