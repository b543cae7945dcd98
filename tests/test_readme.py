"""The README's plan table is the current output (its commands run in tests/test_docs_run.py)."""

from __future__ import annotations

from gen_support import REPO, run_cli


def test_readme_plan_table_is_current() -> None:
    r = run_cli("plan", "examples/vllm-disagg-block-size/rollout.yaml")
    lines = r.stdout.splitlines()
    # the table: from its header on (the notes above it vary with the example)
    table = "\n".join(lines[next(i for i, t in enumerate(lines) if t.startswith("step ")):])
    assert table in (REPO / "README.md").read_text()
