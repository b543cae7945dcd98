"""`isolation: auto` and `in-place` follow the checker's verdict on stable → candidate."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gen_support import REPO

from dgdgen.errors import InputError
from dgdgen.pipeline.prepare import prepare

DGD = REPO / "examples" / "vllm-agg-auto" / "dgd.yaml"


def _spec(tmp_path: Path, change: str, isolation: str) -> str:
    shutil.copy(DGD, tmp_path / "dgd.yaml")
    (tmp_path / "r.yaml").write_text(
        "apiVersion: dgdgen.dev/v1alpha1\nkind: DGDRollout\nmetadata: {name: agg}\nspec:\n"
        "  stable: {dgd: dgd.yaml}\n  candidate:\n    revision: r2\n    components:\n"
        f"      VllmDecodeWorker: {{{change}}}\n  isolation: {isolation}\n"
        "  capacity: {maxSurge: 100%}\n")
    return str(tmp_path / "r.yaml")


def test_safe_change_rolls_in_place(tmp_path: Path) -> None:
    p = prepare(_spec(tmp_path, "env: {set: {DYN_LOG: debug}}", "auto"))
    assert p.mode == "in-place" and [s.candidate.weight for s in p.plan.steps] == [0, 100]
    assert any("config-only" in n for n in p.plan.notes)


def test_new_model_family_is_isolated_with_small_first_steps(tmp_path: Path) -> None:
    p = prepare(_spec(tmp_path, "args: {set: {--model: meta-llama/Llama-3.1-8B}}", "auto"))
    assert p.mode == "separate-dgd"
    assert [s.candidate.weight for s in p.plan.steps] == [0, 2, 5, 10, 25, 50, 100]
    assert p.plan.steps[1].pause_seconds == 1800
    assert any("new-family" in n for n in p.plan.notes)


def test_block_size_change_refused_in_place(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        prepare(_spec(tmp_path, "args: {set: {--block-size: 32}}", "in-place"))
    assert "in-place is not allowed" in str(err.value)
    assert "kv_cache_block_size" in str(err.value)
    assert "r.yaml:10:3" in str(err.value)


def test_in_place_without_migration_limit_is_noted(tmp_path: Path) -> None:
    # --migration-limit is a frontend flag (dynamo/frontend/frontend_args.py in 1.6.1); the
    # upstream frontend of the example has none.
    from example_support import upstream_copy

    p = prepare(str(upstream_copy(tmp_path, "vllm-agg-auto")))
    assert p.mode == "in-place"
    assert any("has no --migration-limit" in n and "Frontend" in n for n in p.plan.notes)
    # the bundled example sets it, so the note is gone
    bundled = prepare(str(REPO / "examples" / "vllm-agg-auto" / "rollout.yaml"))
    assert not any("has no --migration-limit" in n for n in bundled.plan.notes)


def test_separate_dgd_has_no_in_place_migration_note(tmp_path: Path) -> None:
    from example_support import upstream_copy

    p = prepare(str(upstream_copy(tmp_path, "vllm-disagg-block-size")))
    assert p.mode == "separate-dgd"
    assert not any("has no --migration-limit" in n for n in p.plan.notes)
