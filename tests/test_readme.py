"""The README's commands run: every `$ dgdgen ...` line of a console block succeeds."""

from __future__ import annotations

import shlex
from pathlib import Path

from gen_support import REPO, run_cli


def _commands() -> list[list[str]]:
    cmds = []
    for line in (REPO / "README.md").read_text().splitlines():
        if line.startswith("$ dgdgen "):
            cmds.append(shlex.split(line[len("$ dgdgen "):]))
    return cmds


def test_readme_commands_run(tmp_path: Path) -> None:
    cmds = _commands()
    assert len(cmds) >= 5
    for argv in cmds:
        # output folders of the README go to the test's own directory
        argv = [str(tmp_path / a.rstrip("/")) if a in ("out/", "deploy/") else a for a in argv]
        r = run_cli(*argv)
        assert r.returncode == 0, (argv, r.stderr)


def test_readme_plan_table_is_current() -> None:
    r = run_cli("plan", "examples/vllm-disagg-block-size/rollout.yaml")
    table = "\n".join(r.stdout.splitlines()[3:])
    assert table in (REPO / "README.md").read_text()
