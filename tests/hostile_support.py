"""Helpers for the hostile-input tests: the CLI run in this process (fast enough for thousands of
fuzz examples) and a snapshot of a folder to prove that nothing was written or damaged."""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gen_support import REPO

EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"
# `file:line` (`file:line:col`) at the start of a line or after "error: "
LOCATED = re.compile(r"(^|error: )[^\s:]+\.ya?ml:\d+(:\d+)?:", re.MULTILINE)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def located(self) -> bool:
        return bool(LOCATED.search(self.err))


def cli(*args: str, cwd: Path | None = None) -> Result:
    """``dgdgen ARGS`` in this process; the top-level handler is what is under test, so nothing
    is caught here beyond argparse's SystemExit."""
    from dgdgen.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        os.chdir(old)
    return Result(code, out.getvalue(), err.getvalue())


def snapshot(root: Path) -> dict[str, tuple[int, str]]:
    """Every path under ``root`` (links not followed) → (mode, content or link target)."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                body = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                with open(p, "rb") as fh:
                    body = fh.read().decode("utf-8", "replace")
            else:
                body = "<dir>"
            out[os.path.relpath(p, root)] = (st.st_mode, body)
    return out
