"""The deploy repository is untrusted input: a pull request can change the rollout's index, its
files and its staging area. Each hostile shape is committed into a real Git repository (as a
merged pull request would be) and the commands that read it — rollback (which removes files),
promote, status, render --check (the CI drift check) and a re-render — are run against it: each
gets one clear error (exit 2, the index, the field), nothing outside the rollout's directory is
touched, and nothing outside it is read or printed."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from gitops_support import Workspace, cli, git

INDEX = ".dgdgen-index"
SECRET = "SECRET-TOKEN-123"


def _at_step_1(ws: Workspace) -> None:
    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into, "--commit").code == 0
    assert cli("promote", spec, "--into", into).code == 0


def _fingerprint(root: Path, skip: Path) -> dict[str, bytes]:
    """Every file under ``root`` but ``skip`` and git's own caches (the index, logs and the
    writer lock dgdgen keeps in the git directory), by content."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for name in filenames:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            if rel in (".git/index", ".git/dgdgen.lock") or rel.startswith(".git/logs"):
                continue
            out[rel] = p.read_bytes() if not p.is_symlink() else b"-> " + os.readlink(p).encode()
    return out


class Scene:
    def __init__(self, ws: Workspace, tmp_path: Path) -> None:
        self.ws = ws
        self.secret = tmp_path / "secret.txt"
        self.secret.write_text(SECRET + "\n")
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        (self.outside / "x.yaml").write_text("kind: Keep\n")
        (ws.work / "README.md").write_text("the repository's own readme\n")
        git(ws.work, "add", "README.md")
        git(ws.work, "commit", "-q", "-m", "readme")

    def index(self) -> dict[str, object]:
        doc: dict[str, object] = json.loads((self.ws.into / INDEX).read_text())
        return doc

    def merge(self, message: str = "a pull request") -> None:
        git(self.ws.work, "add", "-A")
        git(self.ws.work, "commit", "-q", "-m", message)

    def plant_files(self, **extra: object) -> None:
        doc = self.index()
        files = dict(doc["files"])  # type: ignore[call-overload]
        files.update(extra)
        doc["files"] = files
        (self.ws.into / INDEX).write_text(json.dumps(doc, indent=2) + "\n")
        self.merge()

    def before(self) -> tuple[dict[str, bytes], dict[str, bytes], str]:
        return (_fingerprint(self.ws.work, self.ws.into), _fingerprint(self.ws.into, Path("/-")),
                self.ws.head())

    def unchanged(self, before: tuple[dict[str, bytes], dict[str, bytes], str]) -> None:
        assert _fingerprint(self.ws.work, self.ws.into) == before[0]
        assert _fingerprint(self.ws.into, Path("/-")) == before[1]
        assert self.ws.head() == before[2]
        assert self.secret.read_text() == SECRET + "\n"
        assert (self.outside / "x.yaml").read_text() == "kind: Keep\n"


@pytest.fixture
def scene(ws: Workspace, tmp_path: Path) -> Scene:
    _at_step_1(ws)
    return Scene(ws, tmp_path)


def _commands(ws: Workspace) -> list[tuple[str, ...]]:
    spec, into = str(ws.spec), str(ws.into)
    return [
        ("rollback", spec, "--into", into),
        ("promote", spec, "--into", into, "--skip-gate", "--reason", "test"),
        ("gate", spec, "--into", into, "--result", "passed"),
        ("status", spec, "--into", into),
        ("render", spec, "--into", into, "--check"),
        ("render", spec, "--into", into, "--commit"),
    ]


# Each: the "files" entry a pull request adds, and what the error must say about it.
ENTRIES: dict[str, Callable[[Scene], tuple[object, str]]] = {
    "parent-of-repo": lambda s: ("../../README.md", "'..' component"),
    "absolute": lambda s: (str(s.secret), "absolute path"),
    "git-head": lambda s: ("../../.git/HEAD", "'..' component"),
    "empty": lambda s: ("", "empty path"),
    "dot": lambda s: (".", "'.' or '..' component"),
    "dotdot": lambda s: ("..", "'.' or '..' component"),
    "nul": lambda s: ("a\0b.yaml", "NUL character"),
    "dot-git-inside": lambda s: (".git/config", "inside a .git directory"),
    "dot-git-upper": lambda s: ("sub/.GIT/hooks/pre-commit", "inside a .git directory"),
    "unnormalised": lambda s: ("sub/../x.yaml", "'..' component"),
    "dot-slash": lambda s: ("./x.yaml", "'.' or '..' component"),
    "trailing-slash": lambda s: ("x.yaml/", "empty"),
    "backslash": lambda s: ("..\\..\\README.md", "backslash"),
    "drive": lambda s: ("C:/Windows/x", "absolute path"),
    "newline": lambda s: ("a\nb.yaml", "characters dgdgen never writes"),
    "own-index": lambda s: (INDEX, "dgdgen's own bookkeeping"),
    "staging": lambda s: (".dgdgen-staging/JOURNAL", "dgdgen's own bookkeeping"),
}


@pytest.mark.parametrize("shape", sorted(ENTRIES))
def test_hostile_index_entry_is_one_clear_error_and_touches_nothing(scene: Scene,
                                                                     shape: str) -> None:
    key, says = ENTRIES[shape](scene)
    scene.plant_files(**{str(key): "0" * 64})
    before = scene.before()
    for args in _commands(scene.ws):
        r = cli(*args)
        assert r.code == 2, (args, r.out, r.err)
        assert "Traceback" not in r.err and "internal error" not in r.err
        assert INDEX in r.err and "files" in r.err and says in r.err, (args, r.err)
        assert "nothing was touched" in r.err
        assert SECRET not in r.out + r.err
        scene.unchanged(before)


# Other shapes of the index itself: (text, what the error says).
DOCUMENTS: dict[str, tuple[Callable[[Scene], str], str]] = {
    "not-json": (lambda s: "{files: [", "not valid JSON"),
    "deep": (lambda s: "[" * 100_000 + "]" * 100_000, "not a dgdgen index"),
    "array": (lambda s: "[]", "expected a JSON object"),
    "files-list": (lambda s: json.dumps({**s.index(), "files": ["../../README.md"]}),
                   "expected an object of path"),
    "bad-sha": (lambda s: json.dumps({**s.index(), "files": {"x.yaml": "../../README.md"}}),
                "expected a sha256"),
    "unknown-field": (lambda s: json.dumps({**s.index(), "delete": ["../../README.md"]}),
                      "unknown field"),
    "format": (lambda s: json.dumps({**s.index(), "format": 2}), "unsupported index format"),
    "format-bool": (lambda s: json.dumps({**s.index(), "format": True}),
                    "unsupported index format"),
    "huge-int": (lambda s: '{"format": ' + "9" * 5000 + "}", "not a dgdgen index"),
    "step": (lambda s: json.dumps({**s.index(), "step": "../../x"}), "expected a plan state"),
    "gate-result": (lambda s: json.dumps({**s.index(), "gates": {
        "step-01": {"gate": "slo", "result": "passd"}}}), "expected one of passed"),
    "surrogate": (lambda s: json.dumps({**s.index(), "rollout": "\ud800"}),
                  "not encodable text"),
    "huge": (lambda s: json.dumps({**s.index(), "pad": "x" * (5 * 1024 * 1024)}),
             "over 4194304 bytes"),
}


@pytest.mark.parametrize("shape", sorted(DOCUMENTS))
def test_malformed_index_is_one_clear_error(scene: Scene, shape: str) -> None:
    text, says = DOCUMENTS[shape]
    (scene.ws.into / INDEX).write_text(text(scene))
    scene.merge()
    before = scene.before()
    for args in _commands(scene.ws):
        r = cli(*args)
        assert r.code == 2, (args, r.out, r.err)
        assert "Traceback" not in r.err and "internal error" not in r.err
        assert INDEX in r.err and says in r.err, (args, r.err)
        scene.unchanged(before)


def test_index_that_is_a_symlink_is_never_followed(scene: Scene) -> None:
    (scene.ws.into / INDEX).unlink()
    (scene.ws.into / INDEX).symlink_to(scene.secret)
    scene.merge()
    before = scene.before()
    for args in _commands(scene.ws):
        r = cli(*args)
        assert r.code == 2, (args, r.err)
        assert "not a regular file" in r.err and "never follows it" in r.err
        assert SECRET not in r.out + r.err
        scene.unchanged(before)


def _candidate_dgd(ws: Workspace) -> Path:
    """The file the rollback from step 1 removes (the candidate's DGD)."""
    [p] = [p for p in ws.into.glob("dynamographdeployment-*.yaml") if "bs32" in p.read_text()
           and "bs16" not in p.name]
    return p


def test_owned_file_edited_by_hand_is_kept_not_removed(scene: Scene) -> None:
    victim = _candidate_dgd(scene.ws)
    victim.write_text(victim.read_text() + "# a hand edit someone relies on\n")
    scene.merge("hand edit")
    before = scene.before()
    r = cli("rollback", str(scene.ws.spec), "--into", str(scene.ws.into))
    assert r.code == 2, r.err
    assert "no longer hold what dgdgen wrote" in r.err and victim.name in r.err
    assert "kept" in r.err
    scene.unchanged(before)
    # restored to what dgdgen wrote, the rollback goes through and removes it
    git(scene.ws.work, "revert", "--no-edit", "HEAD")
    r = cli("rollback", str(scene.ws.spec), "--into", str(scene.ws.into))
    assert r.code == 0, r.err
    assert not victim.exists()


def test_owned_file_replaced_by_a_symlink_is_neither_read_nor_followed(scene: Scene) -> None:
    victim = _candidate_dgd(scene.ws)
    victim.unlink()
    victim.symlink_to(scene.secret)
    scene.merge("a symlink in place of a manifest")
    before = scene.before()
    spec, into = str(scene.ws.spec), str(scene.ws.into)
    r = cli("render", spec, "--into", into, "--check")
    assert r.code == 1 and victim.name in r.out and "not a regular file" in r.out
    assert SECRET not in r.out + r.err
    r = cli("status", spec, "--into", into)
    assert r.code == 1 and SECRET not in r.out + r.err
    r = cli("rollback", spec, "--into", into)
    assert r.code == 2 and victim.name in r.err and "kept" in r.err
    assert SECRET not in r.out + r.err
    scene.unchanged(before)
    assert victim.is_symlink()


def test_owned_path_behind_a_symlinked_folder_is_not_touched(scene: Scene) -> None:
    """An index entry `sub/x.yaml` where `sub` is a committed symlink to a folder elsewhere,
    with the hash of the file there: removing it would delete outside the directory."""
    import hashlib

    (scene.ws.into / "sub").symlink_to(scene.outside, target_is_directory=True)
    sha = hashlib.sha256(b"kind: Keep\n").hexdigest()
    scene.plant_files(**{"sub/x.yaml": sha})
    before = scene.before()
    spec, into = str(scene.ws.spec), str(scene.ws.into)
    r = cli("rollback", spec, "--into", into)
    assert r.code == 2 and "sub/x.yaml" in r.err and "kept" in r.err
    r = cli("render", spec, "--into", into, "--check")
    assert r.code == 1 and "kind: Keep" not in r.out
    scene.unchanged(before)


def test_planted_journal_is_refused_and_touches_nothing(scene: Scene) -> None:
    staging = scene.ws.into / ".dgdgen-staging"
    (staging / "files").mkdir(parents=True)
    (staging / "JOURNAL").write_text(json.dumps(
        {"write": [], "delete": ["../../README.md", str(scene.secret)], "commit": None}))
    scene.merge("a staging folder")
    before = scene.before()
    spec, into = str(scene.ws.spec), str(scene.ws.into)
    for args in [("rollback", spec, "--into", into), ("render", spec, "--into", into)]:
        r = cli(*args)
        assert r.code == 2, (args, r.err)
        assert ".dgdgen-staging is committed in Git" in r.err and "nothing was touched" in r.err
        scene.unchanged(before)
    r = cli("status", spec, "--into", into)
    assert r.code == 1 and "committed in Git" in r.out, r.out + r.err
    r = cli("render", spec, "--into", into, "--check")  # a staging folder is never "up to date"
    assert r.code == 1 and "a folder committed in Git, which dgdgen never commits" in r.out
    scene.unchanged(before)


def _journal(**extra: object) -> str:
    doc: dict[str, object] = {"format": 2, "write": [], "delete": [], "commit": None,
                              "parent": None, "intent": "render --into", "subject": ""}
    doc.update(extra)
    return json.dumps(doc)


@pytest.mark.parametrize("shape", ["old-format", "new-format", "committed-commit"])
def test_a_journal_that_arrives_in_a_commit_is_never_trusted(scene: Scene, shape: str) -> None:
    """A pull request commits a well-formed journal of an "interrupted write" that removes a file
    of the rollout's directory dgdgen never owned (with its true hash); the operator has an
    uncommitted edit of another one. The next writing command touches neither: it refuses the
    staging folder before anything else, and the dirty tree is reported as dirty."""
    import hashlib

    ws = scene.ws
    theirs = ws.into / "team-notes.yaml"  # the team's own file in the rollout's directory
    theirs.write_text("kind: TeamNotes\n")
    dgd = _candidate_dgd(ws).name
    sha = hashlib.sha256(b"kind: TeamNotes\n").hexdigest()
    if shape == "old-format":
        journal = json.dumps({"write": [], "delete": [theirs.name, dgd], "commit": None})
    elif shape == "new-format":
        journal = _journal(delete=[[theirs.name, sha]])
    else:  # names the commit HEAD is now, so recovery would "finish" it
        journal = _journal(delete=[[theirs.name, sha]], commit=ws.head(), parent=None)
    (ws.into / ".dgdgen-staging").mkdir()
    (ws.into / ".dgdgen-staging" / "JOURNAL").write_text(journal)
    scene.merge("a pull request")
    edited = ws.into / dgd
    edited.write_text(edited.read_text() + "# the operator's uncommitted edit\n")
    before = _tree(ws.work)
    spec, into = str(ws.spec), str(ws.into)
    for args in [("rollback", spec, "--into", into),
                 ("promote", spec, "--into", into, "--skip-gate", "--reason", "t"),
                 ("gate", spec, "--into", into, "--result", "passed"),
                 ("render", spec, "--into", into, "--commit"),
                 ("render", spec, "--into", into)]:
        r = cli(*args)
        assert r.code == 2, (args, r.out, r.err)
        assert ".dgdgen-staging is committed in Git" in r.err, (args, r.err)
        assert _tree(ws.work) == before
    assert theirs.read_text() == "kind: TeamNotes\n"
    assert edited.read_text().endswith("# the operator's uncommitted edit\n")


def test_a_journal_touches_only_files_it_proves_dgdgen_wrote(ws: Workspace) -> None:
    """Outside Git (nothing arrives in a commit there), a journal written in place of a killed
    render's, removing a file of the directory dgdgen never owned and replacing another with
    the true hash of neither: the next write refuses it, and both files stay."""
    import hashlib

    spec, into = str(ws.spec), str(ws.into)
    assert cli("render", spec, "--into", into).code == 0
    theirs = ws.into / "team-notes.yaml"
    theirs.write_text("kind: TeamNotes\n")
    [owned, *_] = sorted(p for p in ws.into.glob("*.yaml") if p != theirs)
    kept = owned.read_text()
    staging = ws.into / ".dgdgen-staging"
    (staging / "files").mkdir(parents=True)
    (staging / "files" / owned.name).write_text("kind: Replaced\n")
    (staging / "JOURNAL").write_text(_journal(
        delete=[[theirs.name, "0" * 64]],
        write=[[owned.name, "1" * 64, hashlib.sha256(b"kind: Replaced\n").hexdigest()]]))
    r = cli("render", spec, "--into", into)
    assert r.code == 2, r.err
    assert "do not hold what it found there" in r.err and "nothing was touched" in r.err
    assert theirs.name in r.err and owned.name in r.err
    assert theirs.read_text() == "kind: TeamNotes\n" and owned.read_text() == kept


def test_staging_that_is_a_symlink_is_refused(scene: Scene) -> None:
    link = scene.ws.into / ".dgdgen-staging"
    link.symlink_to(scene.outside, target_is_directory=True)
    before = scene.before()
    r = cli("rollback", str(scene.ws.spec), "--into", str(scene.ws.into))
    assert r.code == 2 and "not a folder dgdgen made" in r.err
    scene.merge("a staging symlink")
    before = scene.before()
    r = cli("rollback", str(scene.ws.spec), "--into", str(scene.ws.into))
    assert r.code == 2 and "committed in Git" in r.err
    scene.unchanged(before)


def test_gitops_path_inside_dot_git_is_refused(ws: Workspace) -> None:
    spec = ws.spec.read_text()
    assert "    path: deploy/qwen-router\n" in spec
    ws.spec.write_text(spec.replace("    path: deploy/qwen-router\n", "    path: .git/hooks\n"))
    r = cli("validate", str(ws.spec))
    assert r.code == 2 and "spec.gitops.path" in r.err and ".git" in r.err
    ws.spec.write_text(spec)
    r = cli("render", str(ws.spec), "--into", str(ws.work / ".git" / "x"))
    assert r.code == 2 and "inside a .git folder" in r.err
    assert not (ws.work / ".git" / "x").exists()


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (symlinks as their target), git's directory left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if Path(dirpath, d).is_symlink()]:
            p = Path(dirpath, name)
            rel = str(p.relative_to(root))
            out[rel] = b"-> " + os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
    return out


def _planted_rollout(index: dict[str, object], folder: Path, secret: bool = False) -> str:
    """``folder`` made to look like this rollout's directory: the index, listing one file of
    the team's (or one that holds the secret) with its true hash. Returns that file's name."""
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    name = "team-config.yaml"
    text = (SECRET + "\n") if secret else "kind: TeamOwn\n"
    (folder / name).write_text(text)
    doc = dict(index)
    doc["files"] = {name: hashlib.sha256(text.encode()).hexdigest()}
    (folder / INDEX).write_text(json.dumps(doc, indent=2) + "\n")
    return name


@pytest.mark.parametrize("which", ["rollout-folder", "parent-folder"])
def test_a_symlinked_rollout_folder_inside_the_repository_is_refused(scene: Scene,
                                                                      which: str) -> None:
    """A pull request turns the rollout's folder (or its parent) into a symlink to another
    folder of the repository that looks like the rollout's: every command refuses, and nothing
    there is written, deleted or committed."""
    ws = scene.ws
    index = scene.index()
    git(ws.work, "rm", "-q", "-r", str(ws.into))
    if which == "rollout-folder":
        team = ws.work / "team"
        name = _planted_rollout(index, team)
        ws.into.parent.mkdir(exist_ok=True)  # git took the emptied folder away
        ws.into.symlink_to("../team", target_is_directory=True)
    else:
        team = ws.work / "team" / "qwen-router"
        name = _planted_rollout(index, team)
        assert not (ws.work / "deploy").exists()  # git took the emptied folder away
        (ws.work / "deploy").symlink_to("team", target_is_directory=True)
    scene.merge("a symlinked rollout folder")
    before, head = _tree(ws.work), ws.head()
    for args in _commands(ws):
        r = cli(*args)
        assert r.code == 2, (args, r.out, r.err)
        assert "is a symlink inside the Git work tree" in r.err, (args, r.err)
        assert "Traceback" not in r.err and "internal error" not in r.err
        assert _tree(ws.work) == before and ws.head() == head
    assert (team / name).read_text() == "kind: TeamOwn\n"


def test_a_rollout_folder_symlinked_outside_the_repository_is_neither_read_nor_shown(
        scene: Scene, tmp_path: Path) -> None:
    """The same symlink to a folder outside the repository: `render --check` must not print a
    file there, `status` must not report the outside path, and nothing there is touched."""
    ws = scene.ws
    outside = tmp_path / "elsewhere" / "rollout"
    _planted_rollout(scene.index(), outside, secret=True)
    git(ws.work, "rm", "-q", "-r", str(ws.into))
    ws.into.parent.mkdir(exist_ok=True)
    ws.into.symlink_to(outside, target_is_directory=True)
    scene.merge("a rollout folder that points outside")
    before, outside_before, head = _tree(ws.work), _tree(outside), ws.head()
    for args in _commands(ws):
        r = cli(*args, "--format", "json") if args[0] == "status" else cli(*args)
        assert r.code == 2, (args, r.out, r.err)
        assert "is a symlink inside the Git work tree" in r.err
        assert SECRET not in r.out + r.err and str(outside) not in r.out + r.err, (args, r.err)
        assert _tree(ws.work) == before and _tree(outside) == outside_before
        assert ws.head() == head


def test_a_symlink_above_the_repository_is_followed(ws: Workspace, tmp_path: Path) -> None:
    """The machine's own symlinks above the work tree (``/tmp`` → ``/private/tmp``) are not the
    repository's: a path through one works as the real path does."""
    link = tmp_path / "via-link"
    link.symlink_to(ws.work, target_is_directory=True)
    into = link / ws.into.relative_to(ws.work)
    spec = link / ws.spec.relative_to(ws.work)
    r = cli("render", str(spec), "--into", str(into), "--commit")
    assert r.code == 0, r.err
    assert (ws.into / INDEX).is_file()


def test_an_undecodable_file_is_never_owned(scene: Scene) -> None:
    """An undecodable file reads as a placeholder text; an index listing the placeholder's hash
    for a binary file of the team's must not get it removed (dgdgen never writes one)."""
    import hashlib

    blob = scene.ws.into / "team-logo.bin"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    scene.plant_files(**{blob.name: hashlib.sha256(b"<binary file>\n").hexdigest()})
    before = scene.before()
    r = cli("rollback", str(scene.ws.spec), "--into", str(scene.ws.into))
    assert r.code == 2 and "no longer hold what dgdgen wrote" in r.err and blob.name in r.err
    scene.unchanged(before)
