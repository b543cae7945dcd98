"""The README's plan table is the current output (its commands run in tests/test_docs_run.py)."""

from __future__ import annotations

from gen_support import REPO, run_cli


def test_readme_plan_table_is_current() -> None:
    r = run_cli("plan", "examples/vllm-disagg-block-size/rollout.yaml")
    table = "\n".join(r.stdout.splitlines()[3:])
    assert table in (REPO / "README.md").read_text()
