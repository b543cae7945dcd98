"""Output paths that cannot be written: exit 2 with the reason, nothing damaged, nothing left
behind. And paths that must stay inside the output folder whatever the names say."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hostile_support import EXAMPLE, cli, snapshot

from dgdgen.errors import InputError


@pytest.fixture
def work(tmp_path: Path) -> Path:
    for name in ("rollout.yaml", "dgd.yaml"):
        (tmp_path / name).write_text((EXAMPLE / name).read_text())
    (tmp_path / "afile").write_text("x\n")
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    return tmp_path


def _unchanged(work: Path, before: dict[str, tuple[int, str]]) -> None:
    after = snapshot(work)
    assert after == before, sorted(set(after) ^ set(before))


@pytest.mark.parametrize(("command", "target", "reason"), [
    ("render", "afile/out", "a part of the path is a file, not a directory"),
    ("render", "afile", "output path exists and is not a directory"),
    ("render", "loop1", "symlink loop"),
    ("render", "loop1/out", "symlink loop"),
    ("argo", "loop1", "symlink loop"),
    ("argo", "afile/out", "a part of the path is a file, not a directory"),
    ("render-into", "afile", "--into path exists and is not a directory"),
    ("render-into", "loop1", "symlink loop"),
    ("render-into", "afile/x", "a part of the path is a file, not a directory"),
])
def test_unwritable_output_is_exit_2_and_nothing_changes(work: Path, command: str, target: str,
                                                         reason: str) -> None:
    before = snapshot(work)
    spec = str(work / "rollout.yaml")
    out = str(work / target)
    if command == "render":
        r = cli("render", spec, "-o", out)
    elif command == "argo":
        r = cli("argo", spec, "-o", out)
    else:
        r = cli("render", spec, "--into", out, "--init")
    assert r.code == 2, r.err
    assert reason in r.err and target in r.err
    assert "Traceback" not in r.err and "internal error" not in r.err
    _unchanged(work, before)


def test_render_under_proc_is_exit_2(work: Path) -> None:
    r = cli("render", str(work / "rollout.yaml"), "-o", "/proc/dgdgen-out")
    assert r.code == 2 and "/proc/dgdgen-out: cannot write the output" in r.err, r.err


def test_render_into_a_folder_it_may_not_write(work: Path) -> None:
    """A read-only folder; as root (who writes anywhere) sysfs, which refuses everyone."""
    ro = work / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    target = "/sys/dgdgen-out" if os.geteuid() == 0 else str(ro / "out")
    try:
        r = cli("render", str(work / "rollout.yaml"), "-o", target)
        assert r.code == 2, r.err
        assert f"{target}: cannot write the output: " in r.err
        assert ("Permission denied" in r.err) or ("Operation not permitted" in r.err)
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


def test_symlink_to_an_earlier_output_is_written_through(work: Path) -> None:
    spec = str(work / "rollout.yaml")
    assert cli("render", spec, "-o", str(work / "first")).code == 0
    earlier = (work / "first" / "plan.json").stat().st_ino
    os.symlink("first", work / "link")
    r = cli("render", spec, "-o", str(work / "link"))
    assert r.code == 0, r.err
    assert os.path.islink(work / "link") and os.readlink(work / "link") == "first"
    # replaced through the link: the folder it names holds new files
    assert (work / "first" / "plan.json").stat().st_ino != earlier
    assert [n for n in os.listdir(work) if ".new-" in n or ".old-" in n] == []


def test_a_file_no_dgdgen_write_put_there_is_never_deleted(work: Path) -> None:
    """`render -o out/` replaces out/ as a whole, but only what a dgdgen write listed in its
    marker: a picture or another command's output put there since is refused, exit 2."""
    spec = str(work / "rollout.yaml")
    out = work / "out"
    assert cli("render", spec, "-o", str(out)).code == 0
    (out / "plan.svg").write_text("<svg/>\n")
    (out / "notes").mkdir()
    (out / "notes" / "mine.txt").write_text("keep me\n")
    before = snapshot(work)
    r = cli("render", spec, "-o", str(out))
    assert r.code == 2, r.err
    assert "holds 2 file(s) that dgdgen did not write there (notes/mine.txt, plan.svg)" in r.err
    assert "--force" in r.err and "Traceback" not in r.err
    _unchanged(work, before)
    # a write into a folder inside that output is refused before anything is made there
    r = cli("argo", spec, "-o", str(out / "argo"))
    assert r.code == 2 and "inside the dgdgen output in" in r.err, r.err
    _unchanged(work, before)
    # --force replaces it, and the next plain render is allowed again
    assert cli("render", spec, "-o", str(out), "--force").code == 0
    assert not (out / "plan.svg").exists() and not (out / "notes").exists()
    assert cli("render", spec, "-o", str(out)).code == 0
    # a file dgdgen wrote, edited by hand since, is no longer only dgdgen's
    (out / "plan.json").write_text("edited by hand\n")
    before = snapshot(work)
    r = cli("render", spec, "-o", str(out))
    assert r.code == 2 and "1 file(s) that no longer hold what dgdgen wrote there (plan.json" \
        in r.err, r.err
    _unchanged(work, before)
    assert cli("render", spec, "-o", str(out), "--force").code == 0


def test_an_output_whose_marker_lists_no_files_is_not_replaced(work: Path) -> None:
    out = work / "out"
    out.mkdir()
    (out / ".dgdgen-render").write_text(
        "This directory is written by `dgdgen render`; it is replaced on every run.\n")
    (out / "x.yaml").write_text("kind: ConfigMap\n")
    r = cli("render", str(work / "rollout.yaml"), "-o", str(out))
    assert r.code == 2 and "did not record what it wrote" in r.err, r.err
    assert (out / "x.yaml").read_text() == "kind: ConfigMap\n"


@pytest.mark.parametrize("marker", ["names-only", "wrong-hash", "symlinked-file"])
def test_a_planted_marker_does_not_give_the_teams_files_away(work: Path, marker: str) -> None:
    """A folder of the team's own files, and a `.dgdgen-render` someone planted listing them:
    as an older dgdgen wrote it (names only, no content hashes), with hashes that are not the
    files', or listing a symlink. `render -o` into it is refused without --force, nothing is
    deleted."""
    import hashlib

    out = work / "team"
    out.mkdir()
    (out / "deployment.yaml").write_text("kind: Deployment  # the team's own\n")
    (out / "notes").mkdir()
    (out / "notes" / "runbook.md").write_text("call the on-call\n")
    head = ("This directory is written by dgdgen (render -o, argo -o) and replaced on every "
            "run. The files it wrote")
    names = ["deployment.yaml", "notes/runbook.md"]
    if marker == "names-only":
        text = head + ":\n" + "".join(f"{n}\n" for n in names)
    elif marker == "wrong-hash":
        text = head + ", each after the sha256 of what it wrote:\n" + "".join(
            f"{hashlib.sha256(n.encode()).hexdigest()}  {n}\n" for n in names)
    else:
        (work / "secret.yaml").write_text("kind: Secret\n")
        (out / "deployment.yaml").unlink()
        (out / "deployment.yaml").symlink_to(work / "secret.yaml")
        real = {"deployment.yaml": work / "secret.yaml", "notes/runbook.md": out / names[1]}
        text = head + ", each after the sha256 of what it wrote:\n" + "".join(
            f"{hashlib.sha256(real[n].read_bytes()).hexdigest()}  {n}\n" for n in names)
    (out / ".dgdgen-render").write_text(text)
    before = snapshot(work)
    r = cli("render", str(work / "rollout.yaml"), "-o", str(out))
    assert r.code == 2, r.err
    assert "--force" in r.err and "Traceback" not in r.err
    _unchanged(work, before)


def test_output_folder_has_a_folders_usual_mode(work: Path) -> None:
    old = os.umask(0o022)
    try:
        assert cli("render", str(work / "rollout.yaml"), "-o", str(work / "out")).code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((work / "out").stat().st_mode) == 0o755
    (work / "out").chmod(0o750)  # a mode the user chose is kept on the next render
    assert cli("render", str(work / "rollout.yaml"), "-o", str(work / "out")).code == 0
    assert stat.S_IMODE((work / "out").stat().st_mode) == 0o750


def test_stale_staging_folders_are_removed_live_ones_kept(work: Path) -> None:
    import fcntl

    stale = work / ".out.new-killed1"
    stale.mkdir()
    (stale / "half.yaml").write_text("x")
    (work / ".out.old-killed2").mkdir()
    live = work / ".out.new-live"
    live.mkdir()
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as a render that is still running holds its own
    try:
        assert cli("render", str(work / "rollout.yaml"), "-o", str(work / "out")).code == 0
        assert not stale.exists() and not (work / ".out.old-killed2").exists()
        assert live.exists()
    finally:
        os.close(fd)


def test_diff_report_into_a_folder_leaves_nothing(work: Path) -> None:
    (work / "reports").mkdir()
    before = snapshot(work)
    r = cli("diff", str(work / "dgd.yaml"), str(work / "dgd.yaml"), "--format", "json",
            "-o", str(work / "reports"))
    assert r.code == 2 and "is a directory" in r.err, r.err
    _unchanged(work, before)
    r = cli("diff", str(work / "dgd.yaml"), str(work / "dgd.yaml"), "--format", "json",
            "-o", str(work / "afile" / "r.json"))
    assert r.code == 2 and "cannot write the report" in r.err, r.err
    _unchanged(work, before)


# --------------------------------------------------------------------------- confinement


@pytest.mark.parametrize("name", ["../../../../../ESCAPED", "/etc/x", "..", ".hidden", "a/b\\c"])
def test_file_names_are_one_component_by_construction(name: str) -> None:
    from dgdgen.render import Manifest

    m = Manifest({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}})
    assert "/" not in m.filename and "\\" not in m.filename
    assert not m.filename.startswith(".") and m.filename not in ("..", ".")


@pytest.mark.parametrize("rel", ["../x.yaml", "/abs.yaml", "a/../../x.yaml", ""])
def test_write_tree_refuses_escaping_paths(tmp_path: Path, rel: str) -> None:
    from dgdgen.write import write_tree

    with pytest.raises(InputError, match="would leave the output directory"):
        write_tree(str(tmp_path / "out"), {rel: "x"})
    assert os.listdir(tmp_path) == []


def test_into_guard_is_a_clean_error(tmp_path: Path) -> None:
    from dgdgen.gitops import tree

    for rel in ("../../etc/x", "/etc/x", "a/../../x", ".git/config", ""):
        with pytest.raises(InputError, match="refusing to write"):
            tree._safe_rel(rel)


def test_dgd_outside_the_spec_folder_is_refused(work: Path) -> None:
    spec = work / "rollout.yaml"
    spec.write_text(spec.read_text().replace("dgd: dgd.yaml", "dgd: ../../../../../etc/passwd"))
    r = cli("validate", str(spec))
    assert r.code == 2
    assert "spec.stable.dgd: stable DGD file '../../../../../etc/passwd' is outside" in r.err
    assert "--allow-outside-paths" in r.err
    r = cli("validate", str(spec), "--allow-outside-paths")
    assert r.code == 2 and "holds no DynamoGraphDeployment" in r.err  # read, and not a DGD
    spec.write_text(spec.read_text().replace("dgd: ../../../../../etc/passwd", "dgd: loop1"))
    r = cli("validate", str(spec))
    assert r.code == 2 and "loop1: symlink loop" in r.err and "not found" not in r.err


@pytest.mark.parametrize("command", ["check", "plan", "policy"])
def test_an_output_path_that_is_a_fifo_or_device_is_written_through_never_replaced(
    tmp_path: Path, command: str
) -> None:
    """`--output /dev/null` was renamed over: as root that turned the machine's null device into a
    regular file. A FIFO stands in for it here (it can be made without root): it must stay a
    FIFO, and its reader gets the whole output."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    example = EXAMPLE
    args = {"check": ["check", str(example / "dgd.yaml"), "--format", "json", "--output",
                      str(fifo)],
            "plan": ["plan", str(example / "rollout.yaml"), "--format", "json", "-o", str(fifo)],
            "policy": ["policy", "render", "--output", str(fifo)]}[command]
    r = cli(*args)
    reader.join(timeout=60)
    assert r.code in (0, 1), r.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0].strip().startswith((b"{", b"apiVersion", b"---"))
