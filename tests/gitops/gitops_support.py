"""Helpers for the GitOps tests: the example, real git, the CLI in-process, a workspace.

A support module, not the conftest: test modules import these by a name no other test
directory uses (two conftest modules share the name `conftest`, so importing one by that name
breaks when pytest loads another directory's conftest first)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    env = dict(os.environ)
    env.update(GIT_ENV)
    r = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, env=env,
                       check=True)
    return r.stdout


@dataclass
class Result:
    code: int
    out: str
    err: str


def cli(*args: str) -> Result:
    """Run the dgdgen CLI in this process (fast); paths must be absolute."""
    from dgdgen.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
    return Result(code, out.getvalue(), err.getvalue())


@dataclass
class Workspace:
    remote: Path  # bare repository
    work: Path  # a clone with the rollout spec committed
    spec: Path
    into: Path

    def log(self) -> list[str]:
        return git(self.work, "log", "--format=%s").splitlines()

    def head(self) -> str:
        return git(self.work, "rev-parse", "HEAD").strip()

    def files(self, rev: str = "HEAD") -> dict[str, str]:
        """The rendered directory's files at a revision (path relative to it → text)."""
        rel = self.into.relative_to(self.work).as_posix()
        names = git(self.work, "ls-tree", "-r", "--name-only", rev, "--", rel).splitlines()
        return {n[len(rel) + 1:]: git(self.work, "show", f"{rev}:{n}") for n in names}


def make_workspace(root: Path) -> Workspace:
    """A bare remote and a clone of it under ``root``, the example's rollout spec and DGD
    committed and pushed (``rollouts/qwen``); the rendered directory is ``deploy/qwen-router``."""
    import shutil

    remote = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work = root / "work"
    env = dict(os.environ, **GIT_ENV)
    subprocess.run(["git", "clone", "-q", str(remote), str(work)], check=True,
                   capture_output=True, env=env)
    git(work, "checkout", "-q", "-b", "main")
    dry = work / "rollouts" / "qwen"
    dry.mkdir(parents=True)
    shutil.copy(EXAMPLE / "rollout.yaml", dry / "rollout.yaml")
    shutil.copy(EXAMPLE / "dgd.yaml", dry / "dgd.yaml")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "rollout spec")
    git(work, "push", "-q", "origin", "main")
    return Workspace(remote, work, dry / "rollout.yaml", work / "deploy" / "qwen-router")


def rendered_and_pushed(ws: Workspace, tmp_path: Path) -> tuple[str, str, Path, Path]:
    """The baseline rendered, committed and pushed to the bare remote, for the tests that run
    the WorkflowTemplate's container script: (spec, into, the interpreter's bin directory, an
    empty HOME for the script)."""
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    git(ws.work, "push", "-q", "origin", "main")
    home = tmp_path / "home"
    home.mkdir()
    return spec, into, Path(sys.executable).parent, home
