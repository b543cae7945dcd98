"""The tests' command server (tests/cli_server.py): a command run through it gives what
`python -m dgdgen` gives in a fresh interpreter, and an environment an interpreter reads only when
it starts gets a fresh interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import cli_server
import pytest
from gen_support import REPO

SPEC = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"


def _fresh(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dgdgen", *args], cwd=cwd, capture_output=True,
                          text=True, check=False)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("args", [
    ["validate", str(SPEC)],
    ["plan", str(SPEC), "--format", "json"],
    ["check", str(REPO / "examples" / "vllm-disagg-block-size" / "rendered" / "step-01"),
     "--format", "json"],
    ["render", "no-such-spec.yaml", "-o", "out"],
    ["promote", "--no-such-flag"],
], ids=lambda a: a[0] + ("-error" if "no-such" in " ".join(a) else ""))
def test_a_served_command_gives_what_a_fresh_interpreter_gives(tmp_path: Path,
                                                                args: list[str]) -> None:
    served = cli_server.run(args, cwd=tmp_path, env=os.environ, timeout=120)
    fresh = _fresh(args, tmp_path)
    assert (served.returncode, served.stdout, served.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr)


def test_a_served_render_writes_the_same_files(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    served = cli_server.run(["render", str(SPEC), "-o", "out"], cwd=tmp_path / "a",
                            env=os.environ, timeout=120)
    fresh = _fresh(["render", str(SPEC), "-o", "out"], tmp_path / "b")
    assert served.returncode == fresh.returncode == 0, served.stderr
    assert served.stderr == fresh.stderr
    assert _tree(tmp_path / "a" / "out") == _tree(tmp_path / "b" / "out") != {}


@pytest.mark.parametrize("var", ["PYTHONHASHSEED", "LC_ALL", "PYTHONWARNINGS"])
def test_what_an_interpreter_reads_at_start_gets_a_fresh_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, var: str) -> None:
    fresh: list[list[str]] = []
    real = subprocess.run

    def record(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        fresh.append(argv)
        return real(argv, **kw)

    monkeypatch.setattr(cli_server.subprocess, "run", record)
    same = cli_server.run(["--version"], cwd=tmp_path, env=os.environ, timeout=60)
    assert same.returncode == 0 and fresh == []
    choices = {"PYTHONHASHSEED": ("7", "8"), "LC_ALL": ("C", "C.UTF-8"),
               "PYTHONWARNINGS": ("error", "default")}[var]
    value = next(v for v in choices if v != os.environ.get(var))
    other = cli_server.run(["--version"], cwd=tmp_path, env={**os.environ, var: value},
                           timeout=60)
    assert other.returncode == 0 and fresh == [[sys.executable, "-m", "dgdgen", "--version"]]
    assert other.stdout == same.stdout


def test_a_worker_whose_server_died_starts_another(tmp_path: Path) -> None:
    """The command handed to a server that died fails; the worker's next command starts a new
    server rather than failing every test after it."""
    old = cli_server._get().pid
    assert old  # never os.kill(0, …): that is this worker's whole process group
    assert cli_server.run(["--version"], cwd=tmp_path, env=os.environ, timeout=60).returncode == 0
    os.kill(old, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="ended"):
        cli_server.run(["--version"], cwd=tmp_path, env=os.environ, timeout=60)
    again = cli_server.run(["--version"], cwd=tmp_path, env=os.environ, timeout=60)
    assert again.returncode == 0
    assert cli_server._get().pid not in (0, old)
