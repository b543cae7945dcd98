"""The documentation runs as written. Every console block of README.md, docs/**/*.md and
examples/*.md — a fenced block whose commands start with `$ ` — is run, in the order of the file,
by one bash session in a scratch copy of this checkout (a fresh Git repository, as a clone would
be), with `dgdgen` on PATH and a git identity in a scratch HOME. A command must exit 0, or the code its trailing
`# exit N` comment names. The blocks are discovered, not listed: a new or edited doc is covered.

The only blocks not run are those marked, on the line before the fence, with
`<!-- docs-run: needs a live Prometheus -->` or `<!-- docs-run: needs a live HAProxy socket -->`;
any other `docs-run:` marker fails. Shell blocks without `$ ` prompts (kubectl, docker, argo
against a cluster) are illustrations, not run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gen_support import REPO

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)\s*$")
MARKER = re.compile(r"<!--\s*docs-run:\s*(.*?)\s*-->")
ALLOWED_SKIPS = ("needs a live Prometheus", "needs a live HAProxy socket")
EXIT = re.compile(r"#\s*exits?\s+(\d+)\b[^'\"]*$")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    commands: tuple[str, ...]
    skip: str | None


def _docs() -> list[Path]:
    return ([REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))
            + sorted((REPO / "examples").glob("*.md")))


def blocks(path: Path) -> list[Block]:
    """The console blocks of one Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, start = m.group(1), m.group(2), i
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.search(before)
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        commands: list[str] = []
        k = 0
        while k < len(body):
            if body[k].startswith("$ "):
                cmd = body[k][2:]
                while cmd.endswith("\\") and k + 1 < len(body):
                    k += 1
                    cmd = cmd[:-1] + " " + body[k].strip()
                commands.append(cmd)
            k += 1
        if commands:
            name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
            out.append(Block(name, start + 1, tuple(commands),
                             marker.group(1) if marker else None))
    return out


ALL = {str(p.relative_to(REPO)): blocks(p) for p in _docs()}
RUNNABLE = {doc: bl for doc, bl in ALL.items() if bl}


def test_blocks_are_found_in_the_readme_and_the_docs() -> None:
    assert len(ALL["README.md"]) >= 5
    assert len([doc for doc in RUNNABLE if doc.startswith("docs/")]) >= 2
    assert any("git init" in c or "--init" in c for b in ALL["README.md"] for c in b.commands)


def test_only_live_service_blocks_are_skipped() -> None:
    bad = [(b.doc, b.line, b.skip) for bl in ALL.values() for b in bl
           if b.skip is not None and b.skip not in ALLOWED_SKIPS]
    assert bad == [], f"allowed markers: {ALLOWED_SKIPS}"


def test_the_parser_reads_prompts_continuations_markers_and_exit_codes(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n\n```console\n$ dgdgen a \\\n    b\noutput line\n$ dgdgen c  # exit 3\n```\n\n"
        "<!-- docs-run: needs a live Prometheus -->\n  ```console\n  $ dgdgen d\n  ```\n"
        "```sh\ndgdgen not-a-prompt\n```\n"
    )
    found = blocks(doc)
    assert [b.commands for b in found] == [("dgdgen a  b", "dgdgen c  # exit 3"), ("dgdgen d",)]
    assert [b.skip for b in found] == [None, "needs a live Prometheus"]
    assert [_expected_exit(c) for c in found[0].commands] == [0, 3]


def test_a_drifted_command_fails_the_run(sandbox: dict[str, str], tmp_path: Path) -> None:
    doc = tmp_path / "drift.md"
    doc.write_text("```console\n$ dgdgen rules list\n$ dgdgen plan no/such/rollout.yaml\n"
                   "$ touch never-reached\n```\n```console\n$ dgdgen rules list  # exit 1\n```\n")
    found = blocks(doc)
    done = subprocess.run(["bash", "-c", _script(found)], cwd=tmp_path, env=sandbox,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 97
    assert "exit 2, expected 0" in done.stderr and "no/such/rollout.yaml" in done.stderr
    assert not (tmp_path / "never-reached").exists()
    done = subprocess.run(["bash", "-c", _script(found[1:])], cwd=tmp_path, env=sandbox,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 97 and "exit 0, expected 1" in done.stderr


def _expected_exit(command: str) -> int:
    m = EXIT.search(command)
    return int(m.group(1)) if m else 0


def _script(bl: list[Block]) -> str:
    lines = ["set -u"]
    for b in bl:
        if b.skip is not None:
            continue
        for cmd in b.commands:
            where = f"{b.doc}:{b.line}: $ {cmd}"
            lines += [
                f"printf '\\n>>> %s\\n' {shlex.quote(where)} >&2",
                cmd,
                f"rc=$?; if [ $rc -ne {_expected_exit(cmd)} ]; then "
                f"printf 'docs-run: exit %s, expected {_expected_exit(cmd)}: %s\\n' \"$rc\" "
                f"{shlex.quote(where)} >&2; exit 97; fi",
            ]
    return "\n".join(lines) + "\n"


def _checkout(dest: Path) -> None:
    """A copy of this checkout's files (tracked and new, not ignored) as a fresh repository."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "checkout"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("docs-run")
    bindir, home = root / "bin", root / "home"
    bindir.mkdir()
    home.mkdir()
    shim = bindir / "dgdgen"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m dgdgen "$@"\n')
    shim.chmod(0o755)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Docs Reader\n\temail = reader@example.com\n[init]\n\tdefaultBranch = main\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    return env


@pytest.mark.parametrize("doc", sorted(RUNNABLE), ids=str)
def test_doc_runs_as_written(doc: str, sandbox: dict[str, str], tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    env = dict(sandbox)
    _checkout(checkout)
    script = _script(RUNNABLE[doc])
    done = subprocess.run(["bash", "-c", script], cwd=checkout, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{doc}:\n{done.stderr[-4000:]}\n--- stdout ---\n{done.stdout[-2000:]}"
