"""The README's plan table is the current output (its commands run in tests/test_docs_run.py)."""

from __future__ import annotations

from gen_support import REPO, run_cli


def test_readme_plan_table_is_current() -> None:
    r = run_cli("plan", "examples/vllm-disagg-block-size/rollout.yaml")
    lines = r.stdout.splitlines()
    # the table: from its header on (the notes above it vary with the example)
    table = "\n".join(lines[next(i for i, t in enumerate(lines) if t.startswith("step ")):])
    assert table in (REPO / "README.md").read_text()


def test_readme_names_every_state_folder_of_the_render() -> None:
    """`out/all/` holds one folder per state: the README lists them all (it left out
    `rollback-02`, the state a rollback from step 3 passes through)."""
    import re

    from dgdgen.pipeline.prepare import prepare

    p = prepare(str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"))
    text = " ".join((REPO / "README.md").read_text().split())
    m = re.search(r"`out/all/` holds one folder per state \(([^)]*)\)", text)
    assert m, "the README no longer describes out/all/"
    named = re.findall(r"`([^`]+)`", m.group(1))
    first, last = p.plan.steps[0].label, p.plan.steps[-1].label
    steps = [s.label for s in p.plan.steps]
    want = [first, last] if len(steps) > 2 else steps
    want += [s.label for s in p.plan.rollback_steps] + ["rollback", "cleanup"]
    assert named == want, named
