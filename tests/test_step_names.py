"""One spelling for backward steps: the plan's rows, the render folders and ``--step`` all say
``rollback-NN``; ``--step rollback-NN`` renders exactly what the all-steps render puts there."""

from __future__ import annotations

import filecmp
import json
import re
import subprocess
from pathlib import Path

from gen_support import run_cli

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"


def _dgdgen(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=REPO)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_plan_rows_folders_and_step_agree(tmp_path: Path) -> None:
    plan = json.loads(_dgdgen("plan", str(EXAMPLE), "--format", "json").stdout)
    labels = [s["label"] for s in plan["rollback_steps"]]
    assert labels and all(label.startswith("rollback-") for label in labels)
    text = _dgdgen("plan", str(EXAMPLE)).stdout
    assert "rollback→" not in text
    for label in labels:
        assert any(line.startswith(label + " ") for line in text.splitlines()), label

    every = tmp_path / "all"
    assert _dgdgen("render", str(EXAMPLE), "-o", str(every)).returncode == 0
    for label in labels:
        assert (every / label).is_dir(), label
        one = tmp_path / label
        res = _dgdgen("render", str(EXAMPLE), "-o", str(one), "--step", label)
        assert res.returncode == 0, res.stderr
        names = [n for n in _files(one) if not n.startswith(".dgdgen")]
        assert names == _files(every / label)
        _, mismatch, errors = filecmp.cmpfiles(one, every / label, names, shallow=False)
        assert not mismatch and not errors, (mismatch, errors)


def test_unknown_backward_step_lists_the_real_ones(tmp_path: Path) -> None:
    res = _dgdgen("render", str(EXAMPLE), "-o", str(tmp_path / "x"), "--step", "rollback-07")
    assert res.returncode == 2
    assert "rollback-02, rollback and cleanup" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "x").exists()


def test_state_folder_of_a_render_is_not_called_foreign(tmp_path: Path) -> None:
    every = tmp_path / "out"
    assert _dgdgen("render", str(EXAMPLE), "-o", str(every)).returncode == 0
    before = sorted((every / "rollback").iterdir())
    res = _dgdgen("render", str(EXAMPLE), "-o", str(every / "rollback"), "--step", "rollback")
    assert res.returncode == 2
    assert "not written by dgdgen" not in res.stderr
    assert "one state's folder of the dgdgen render in" in res.stderr
    assert sorted((every / "rollback").iterdir()) == before  # nothing half-written
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n", encoding="utf-8")
    res = _dgdgen("render", str(EXAMPLE), "-o", str(foreign), "--step", "rollback")
    assert res.returncode == 2 and "not written by dgdgen render" in res.stderr


def test_render_help_names_every_folder_a_render_writes(tmp_path: Path) -> None:
    every = tmp_path / "all"
    assert _dgdgen("render", str(EXAMPLE), "-o", str(every)).returncode == 0
    shown = _dgdgen("render", "--help").stdout
    for entry in sorted(p.name for p in every.iterdir() if not p.name.startswith(".")):
        pattern = re.sub(r"(?<=-)\d\d$", "NN", entry) if entry != "step-00" else entry
        pattern += "" if "." in entry else "/"
        assert f"DIR/{pattern}" in shown, (entry, pattern)
