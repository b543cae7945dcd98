"""``render --into`` outside a Git work tree says so (files written, nothing committed); inside one
it does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"
NOTE = "not inside a Git work tree: files written, nothing committed"


def _render(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dgdgen", "render", str(EXAMPLE), *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_into_outside_git_says_so(tmp_path: Path) -> None:
    # tmp_path is outside any work tree (the check below proves it).
    probe = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=tmp_path, capture_output=True, check=False
    )
    assert probe.returncode != 0
    res = _render("--into", str(tmp_path / "deploy"))
    assert res.returncode == 0, res.stderr
    assert NOTE in res.stderr
    assert any((tmp_path / "deploy").iterdir())


def test_into_a_repository_does_not(tmp_path: Path) -> None:
    first = _render("--into", str(tmp_path / "deploy"), "--init")
    assert first.returncode == 0, first.stderr
    again = _render("--into", str(tmp_path / "deploy"))
    assert again.returncode == 0, again.stderr
    assert NOTE not in first.stderr + again.stderr
    assert "0 written" in again.stderr


def test_not_a_work_tree_error_names_its_path_once(tmp_path: Path) -> None:
    into = tmp_path / "deploy"
    for args in (
        ["render", str(EXAMPLE), "--into", str(into), "--commit"],
        ["promote", str(EXAMPLE), "--into", str(into)],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "dgdgen", *args],
            check=False,
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
        assert r.returncode == 2, (args, r.stderr)
        assert "not inside a Git work tree" in r.stderr, r.stderr
        assert r.stderr.count(str(into)) == 1, r.stderr
