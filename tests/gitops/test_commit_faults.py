"""A commit that cannot be made leaves the tree as it was: git's index lock held (a stale
`.git/index.lock`), a merge in progress, a full disk (a real tmpfs in a private mount namespace:
the whole repository on it, or only its git directory), and a push the remote rejects because
someone else pushed meanwhile. Each refuses with exit 2 and a clear reason, commits nothing,
changes no file; once the cause is gone, the same command makes exactly one commit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from gitops_support import GIT_ENV, Workspace, cli, git


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _at_step_1_passed(ws: Workspace) -> tuple[str, str]:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0
    assert cli("gate", spec, "--into", into, "--result", "passed").code == 0
    return spec, into


def test_stale_index_lock_is_reported_and_never_broken(ws: Workspace) -> None:
    spec, into = _at_step_1_passed(ws)
    lock = ws.work / ".git" / "index.lock"
    lock.write_text("")
    before, head = _snapshot(ws.into), ws.head()
    r = cli("promote", spec, "--into", into)
    assert r.code == 2, r.err
    assert "index.lock" in r.err and "remove the lock file" in r.err
    assert lock.exists()  # reported, never removed
    assert ws.head() == head and _snapshot(ws.into) == before
    lock.unlink()
    r = cli("promote", spec, "--into", into)
    assert r.code == 0, r.err
    assert [s.split(": ", 1)[1] for s in ws.log()[:2]] == [
        "promote to step 2 (bs32 at 50%)", "gate slo of step 1: passed"]
    assert git(ws.work, "status", "--porcelain") == ""


def test_merge_in_progress_is_refused_before_anything_is_written(ws: Workspace) -> None:
    spec, into = _at_step_1_passed(ws)
    git(ws.work, "checkout", "-q", "-b", "side", "HEAD~1")
    (ws.work / "NOTES").write_text("x\n")
    git(ws.work, "add", "NOTES")
    git(ws.work, "commit", "-q", "-m", "side")
    git(ws.work, "checkout", "-q", "main")
    git(ws.work, "merge", "--no-commit", "-s", "ours", "side")  # a clean tree, MERGE_HEAD set
    assert (ws.work / ".git" / "MERGE_HEAD").exists()
    before, head = _snapshot(ws.into), ws.head()
    r = cli("promote", spec, "--into", into)
    assert r.code == 2 and "a merge is in progress" in r.err and "merge --abort" in r.err
    assert ws.head() == head and _snapshot(ws.into) == before
    git(ws.work, "merge", "--abort")
    r = cli("promote", spec, "--into", into)
    assert r.code == 0, r.err
    assert ws.log()[0].endswith("promote to step 2 (bs32 at 50%)")
    assert git(ws.work, "rev-list", "--count", "--merges", "HEAD").strip() == "0"


# The full-disk scenarios run in a private user and mount namespace (unshare -rm: root or an
# unprivileged user alike), where a small tmpfs can be mounted and filled.
_DRIVER = textwrap.dedent('''
    import json, os, subprocess, sys
    root, mode, spec, into, mnt = sys.argv[1:6]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], check=True)
    work = os.path.join(root, "work")
    if mode == "repo":  # the whole work tree on the tmpfs
        subprocess.run(["cp", "-a", work, mnt], check=True)
        work = os.path.join(mnt, "work")
    else:  # only the git directory on it
        subprocess.run(["cp", "-a", os.path.join(work, ".git"), os.path.join(mnt, "gitdir")],
                       check=True)
        subprocess.run(["rm", "-rf", os.path.join(work, ".git")], check=True)
        with open(os.path.join(work, ".git"), "w") as fh:
            fh.write("gitdir: " + os.path.join(mnt, "gitdir") + "\\n")
    spec, into = os.path.join(work, spec), os.path.join(work, into)
    # git refreshes a copied index on its next status; let it, before the disk is full
    subprocess.run(["git", "-C", work, "status", "--porcelain"], check=True, capture_output=True)
    filler = os.path.join(mnt, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    for size in (1 << 16, 4096, 1):  # to the last byte
        try:
            while True:
                os.write(fd, b"\\0" * size)
        except OSError:
            pass
    os.close(fd)
    def run(*args):
        r = subprocess.run([sys.executable, "-m", "dgdgen", *args, spec, "--into", into],
                           capture_output=True, text=True)
        return {"code": r.returncode, "out": r.stdout, "err": r.stderr}
    def state():
        head = subprocess.run(["git", "-C", work, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        files = {}
        for d, _, names in os.walk(into):
            for n in names:
                p = os.path.join(d, n)
                files[os.path.relpath(p, into)] = open(p, "rb").read().hex()
        status = subprocess.run(["git", "-C", work, "status", "--porcelain"],
                                capture_output=True, text=True).stdout
        return {"head": head, "files": files, "status": status}
    out = {"before": state(), "full": run("promote")}
    out["after_full"] = state()
    os.remove(filler)
    out["freed"] = run("promote")
    out["after_freed"] = state()
    out["log"] = subprocess.run(["git", "-C", work, "log", "--format=%s", "-3"],
                                capture_output=True, text=True).stdout.splitlines()
    print(json.dumps(out))
''')


@pytest.mark.parametrize("mode", ["repo", "gitdir"])
def test_full_disk_changes_nothing_and_freed_space_commits_once(ws: Workspace, tmp_path: Path,
                                                                 mode: str) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a private mount namespace")
    _at_step_1_passed(ws)
    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    env = dict(os.environ, **GIT_ENV, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        ["unshare", "-rm", sys.executable, str(driver), str(ws.work.parent), mode,
         str(ws.spec.relative_to(ws.work)), str(ws.into.relative_to(ws.work)), str(mnt)],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    if r.returncode != 0 and "unshare" in r.stderr and "Operation not permitted" in r.stderr:
        pytest.skip(f"this kernel allows no private mount namespace here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    full = out["full"]
    assert full["code"] == 2, full
    assert "No space left" in full["err"] or "diskspace" in full["err"], full["err"]
    assert "Traceback" not in full["err"]
    assert out["after_full"] == out["before"]  # HEAD, every file, a clean work tree
    assert out["before"]["status"] == ""
    assert out["freed"]["code"] == 0, out["freed"]
    assert out["log"][:2] == ["qwen-router: promote to step 2 (bs32 at 50%)",
                              "qwen-router: gate slo of step 1: passed"]
    assert out["after_freed"]["status"] == ""


def test_push_rejected_because_the_remote_moved_takes_the_commit_back(ws: Workspace,
                                                                       tmp_path: Path) -> None:
    spec, into = _at_step_1_passed(ws)
    git(ws.work, "push", "-q", "origin", "main")
    before, head = _snapshot(ws.into), ws.head()
    marker = tmp_path / "push"
    env = dict(os.environ, **GIT_ENV, DGDGEN_TEST_PAUSE_AT=f"push:{marker}")
    proc = subprocess.Popen([sys.executable, "-m", "dgdgen", "promote", spec, "--into", into,
                             "--push"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    # the promotion is committed locally; someone else pushes to the remote before it does
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(ws.remote), str(other))
    (other / "NOTES").write_text("elsewhere\n")
    git(other, "add", "NOTES")
    git(other, "commit", "-q", "-m", "elsewhere")
    git(other, "push", "-q", "origin", "HEAD:main")
    marker.unlink()
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "nothing was pushed" in err and "taken back" in err and "pull" in err
    assert ws.head() == head and _snapshot(ws.into) == before
    assert git(ws.work, "status", "--porcelain") == ""
    assert git(ws.remote, "log", "--format=%s", "-1", "main").strip() == "elsewhere"
    # pulled, the same command promotes once, on top of the other commit, and pushes
    git(ws.work, "pull", "-q", "--ff-only", "origin", "main")
    r = cli("promote", spec, "--into", into, "--push")
    assert r.code == 0, r.err
    assert [s.split(": ", 1)[-1] for s in ws.log()[:2]] == [
        "promote to step 2 (bs32 at 50%)", "elsewhere"]
    assert git(ws.remote, "rev-parse", "main").strip() == ws.head()
