"""Golden trees: every example renders byte-identically to its committed `rendered/` tree.

Regenerate after an intended change with ``DGDGEN_REGENERATE=1 pytest tests/test_examples.py``;
the switch refuses to run under CI so a stale golden can never be rewritten there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from gen_support import EXAMPLES

from dgdgen.pipeline.files import all_files
from dgdgen.pipeline.prepare import prepare


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".dgdgen-render"
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_matches_golden(example: Path) -> None:
    rendered = all_files(prepare(str(example / "rollout.yaml")))
    golden_dir = example / "rendered"
    if os.environ.get("DGDGEN_REGENERATE"):
        if os.environ.get("CI"):
            pytest.fail("DGDGEN_REGENERATE is refused under CI: regenerate locally and commit")
        shutil.rmtree(golden_dir, ignore_errors=True)
        for rel, text in rendered.items():
            (golden_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden_dir / rel).write_text(text, encoding="utf-8")
    golden = _tree(golden_dir)
    assert golden, f"{golden_dir} is empty: run DGDGEN_REGENERATE=1 pytest {__file__}"
    assert sorted(rendered) == sorted(golden)
    for rel in rendered:
        assert rendered[rel] == golden[rel], f"{example.name}/rendered/{rel} is stale"


def test_at_least_the_required_examples() -> None:
    names = {p.name for p in EXAMPLES}
    assert len(names) >= 5
    texts = {p.name: (p / "dgd.yaml").read_text() + (p / "rollout.yaml").read_text() for p in EXAMPLES}
    assert any("nvidia.com/v1beta1" in t for t in texts.values())
    assert any("strategy: blue-green" in t for t in texts.values())
    assert any("dynamo.trtllm" in t for t in texts.values())
    assert any("dynamo.sglang" in t and "transfer-backend" in t for t in texts.values())
    assert any("--block-size" in t for t in texts.values())


def test_example_dgds_are_upstream_copies() -> None:
    """The example DGDs are the upstream files (their git blob ids are recorded) plus, on the
    frontend, the request-migration limit the plan asks of a stable that shrinks while it serves;
    every added line is marked and they add nothing else."""
    import hashlib

    from example_support import added_lines, upstream_text

    sources = (EXAMPLES[0].parent / "SOURCES.md").read_text()
    for example in EXAMPLES:
        data = upstream_text(example).encode()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert blob in sources, f"{example.name}/dgd.yaml differs from the upstream blob"
        added = [ln.split("#")[0].strip() for ln in added_lines(example)]
        assert "- name: DYN_MIGRATION_LIMIT" in added and 'value: "3"' in added, example.name
        assert set(added) <= {"envs:", "env:", "- name: DYN_MIGRATION_LIMIT", 'value: "3"'}, added
