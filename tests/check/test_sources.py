"""Where the checked files come from (dgdgen/check/sources.py): the paths resolved, and which
bases Git is asked for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dgdgen.check import sources

DGD = (Path(__file__).resolve().parent / "corpus" / "vllm-replicas-only" / "old.yaml").read_text()


def test_realpaths_are_those_of_os_path_realpath(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each folder resolved once gives what resolving every path whole gives: symlinked files
    and folders, a folder reached through `..` after a symlink, relative paths, a loop, missing
    files."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "a.yaml").write_text("a: 1\n")
    (real / "sub" / "b.yaml").write_text("b: 1\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "c.yaml").write_text("c: 1\n")
    (tmp_path / "linkdir").symlink_to(real / "sub")
    (real / "link.yaml").symlink_to(tmp_path / "other" / "c.yaml")
    (real / "rel.yaml").symlink_to(Path("sub") / "b.yaml")
    (real / "loop.yaml").symlink_to("loop.yaml")
    monkeypatch.chdir(real)
    paths = [
        "a.yaml", "./a.yaml", "sub/b.yaml", "link.yaml", "rel.yaml", "loop.yaml", "missing.yaml",
        str(tmp_path / "linkdir" / "b.yaml"), str(tmp_path / "linkdir" / ".." / "a.yaml"),
        str(tmp_path / "linkdir" / ".." / "link.yaml"), "sub/../a.yaml", ".", "..", "/",
        str(tmp_path / "linkdir"), str(tmp_path / "linkdir") + "/",
    ]
    assert sources.realpaths(paths) == [os.path.realpath(p) for p in paths]
    # the `..` after a symlinked folder is the parent of its target, as the kernel resolves it
    assert sources.realpaths([str(tmp_path / "linkdir" / ".." / "a.yaml")]) == [
        str((real / "a.yaml").resolve())]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})


def test_git_is_asked_only_for_files_with_a_path_at_the_base(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file outside the work tree has no base, nor has a file Git lists as added since the
    base: Git is not asked for them (no process at all when no file can have one), and a
    committed file that happens to be named like a placeholder is never taken for a base."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "tracked.yaml").write_text(DGD)
    (repo / "<none>").write_text(DGD)
    (repo / "<outside>").write_text(DGD)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "new.yaml").write_text(DGD)
    _git(repo, "add", "new.yaml")
    outside = tmp_path / "outside.yaml"
    outside.write_text(DGD)
    asked: list[list[str]] = []
    blobs = sources.Git.blobs

    def spy(self: sources.Git, specs: list[str]) -> list[str | None]:
        asked.append(list(specs))
        return blobs(self, specs)

    monkeypatch.setattr(sources.Git, "blobs", spy)
    monkeypatch.chdir(repo)
    files = sources.collect(["tracked.yaml", "new.yaml", str(outside)], None)
    assert asked == [["HEAD:tracked.yaml", "HEAD:new.yaml"]]  # new.yaml: not at HEAD
    assert [f.base is not None for f in files] == [True, False, False]
    asked.clear()
    files = sources.collect([str(outside)], None)
    assert asked == [[]] and [f.base for f in files] == [None]
    asked.clear()
    files = sources.collect([], "HEAD")  # every YAML file changed since HEAD: new.yaml, added
    assert [f.file for f in files] == ["new.yaml"] and files[0].base is None
    assert asked == [[]]
    asked.clear()
    (repo / "tracked.yaml").write_text(DGD.replace("replicas: 1", "replicas: 2"))
    _git(repo, "add", "tracked.yaml")
    files = sources.collect([], None)  # pre-commit: the staged files against HEAD, one process
    assert asked == [[":new.yaml", ":tracked.yaml", "HEAD:tracked.yaml"]]
    assert [(f.file, f.base is not None) for f in files] == [("new.yaml", False),
                                                            ("tracked.yaml", True)]
    assert files[1].head != files[1].base


def test_displayed_names_are_those_of_each_path_alone(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each folder's relative path found once names every file as the path alone would: below
    the current folder relative, elsewhere as given; `..`, `.`, doubled slashes, a file whose
    name starts with two dots."""
    (tmp_path / "cwd" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "cwd")
    paths = ["a.yaml", "./a.yaml", "sub/b.yaml", "sub//b.yaml", "sub/../a.yaml", "..x.yaml",
             "sub/..x.yaml", "../c.yaml", str(tmp_path / "cwd" / "sub" / "b.yaml"),
             str(tmp_path / "elsewhere" / "d.yaml"), "/", ".", "..", "sub/", "sub/.",
             "sub/.."]
    assert sources._displays(paths) == [sources._display(p) for p in paths]


def test_a_file_unchanged_since_the_base_is_read_once_and_still_compared(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose text at the base is its own is parsed once (its documents serve both sides),
    and its facts are built once while the ConfigMaps and Secrets are the same on both sides;
    a ConfigMap changed in another file still makes the unchanged DGD's change (both sides
    resolved against their own objects)."""
    from dgdgen.check.engine import Options, run

    dgd = """apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: agg}
spec:
  components:
    - name: worker
      type: worker
      podTemplate:
        spec:
          containers:
            - name: main
              command: [python3, -m, dynamo.vllm]
              args: [--model, m]
              env:
                - name: DYN_CUSTOM_JINJA_TEMPLATE
                  valueFrom: {configMapKeyRef: {name: chat, key: path}}
"""
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: chat}\ndata: {path: /t/%s.jinja}\n"
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "dgd.yaml").write_text(dgd)
    (repo / "cm.yaml").write_text(cm % "a")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    monkeypatch.chdir(repo)

    files = sources.collect(["dgd.yaml", "cm.yaml"], None)
    assert all(f.base is f.head for f in files)
    report = run(files, Options())
    [pair] = report.pairs
    assert pair.base is pair.head and pair.verdict is not None
    assert not report.categories and not report.findings

    (repo / "cm.yaml").write_text(cm % "b")
    files = sources.collect(["dgd.yaml", "cm.yaml"], None)
    assert files[0].base is files[0].head and files[1].base is not files[1].head
    report = run(files, Options())
    [pair] = report.pairs
    assert pair.base is not None and pair.base is not pair.head
    flag = "--custom-jinja-template"
    assert pair.base.components["worker"].flags[flag].value == "/t/a.jinja"
    assert pair.head.components["worker"].flags[flag].value == "/t/b.jinja"
    assert report.categories == ["mdc-checksum"]


@pytest.mark.parametrize("refusal", ["gitdir-nowhere", "another-owner"])
def test_a_work_tree_git_refuses_is_a_clear_error(tmp_path: Path, refusal: str) -> None:
    """`check FILE` reads the file at HEAD from the work tree around it. Where git refuses that
    repository — its `.git` points nowhere, or another user owns it (git's "dubious ownership",
    what a CI checkout owned by someone else meets) — the answer is git's own reason, exit 2, not
    an internal error."""
    from gen_support import run_cli

    work = tmp_path / "work"
    work.mkdir()
    (work / "dgd.yaml").write_text(DGD)
    if refusal == "gitdir-nowhere":
        (work / ".git").write_text(f"gitdir: {tmp_path / 'nowhere'}\n")
        said = "not a git repository"
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can give a folder to another user")
        subprocess.run(["git", "init", "-q", str(work)], check=True)
        for d, _, names in os.walk(work):
            for name in [".", *names]:
                os.chown(os.path.join(d, name), 65534, 65534)
        said = "dubious ownership"
    r = run_cli("check", "dgd.yaml", cwd=work)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"dgdgen check: error: git cat-file failed in {work}: fatal: ")
    assert said in r.stderr and "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
