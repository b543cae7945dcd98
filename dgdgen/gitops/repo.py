"""The git side: a thin wrapper over the ``git`` command (the real one: what Argo CD and CI use).

Only this module runs git. Every call is ``git -C <work tree> ...`` with a fixed locale so
messages parse the same everywhere.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dgdgen.errors import DgdgenError, InputError, Location

FALLBACK_AUTHOR = ("dgdgen", "dgdgen@localhost")


class GitError(DgdgenError):
    """git failed (push rejected, no such remote ...): exit 2 with git's own message."""


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # GIT_OPTIONAL_LOCKS=0: a read (git status) never takes git's index lock to refresh it, so
    # it neither races the user's own git commands nor fails on a full disk
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"})
    env.update(extra or {})
    return env


def git(cwd: str, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(
            ["git", "-C", cwd, *args], capture_output=True, text=True, env=_env(env),
            input=stdin, check=False, encoding="utf-8", errors="replace",
        )
    except FileNotFoundError:
        raise GitError("git is not installed (needed to work in a repository)") from None
    if check and r.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {(r.stderr or r.stdout).strip()}")
    return r


def toplevel(path: str) -> str | None:
    """The work tree ``path`` is in, or None."""
    probe = path
    while not os.path.isdir(probe):  # --into may not exist yet
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    try:
        r = git(probe, "rev-parse", "--show-toplevel", check=False)
    except GitError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def init(path: str, branch: str | None) -> str:
    os.makedirs(path, exist_ok=True)
    git(path, "init", "-q", *(["-b", branch] if branch else []))
    return os.path.abspath(path)


@dataclass(frozen=True)
class Dirty:
    paths: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.paths)


def dirty(top: str, under: str | None = None) -> Dirty:
    """Uncommitted changes anywhere in the work tree (staged, unstaged or untracked), or only
    under ``under`` (a path relative to ``top``). NUL-separated, so a path with spaces, quotes or
    non-ASCII characters reads as itself (porcelain's text form quotes them)."""
    spec = ["--", under] if under not in (None, "", ".") else []
    r = git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", *spec,
            env={"GIT_LITERAL_PATHSPECS": "1"})
    out: list[str] = []
    fields = r.stdout.split("\0")
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        out.append(entry[3:])
        if entry[0] in "RC":  # a rename or copy: the next field is its source
            i += 1
    return Dirty(tuple(out))


def require_clean(top: str) -> None:
    d = dirty(top)
    if d:
        shown = ", ".join(d.paths[:5]) + (" …" if len(d.paths) > 5 else "")
        raise InputError(
            f"the work tree has uncommitted changes ({shown}); a promotion must be exactly one "
            "commit of dgdgen's own output",
            location=Location(top),
            hint="commit or remove them first",
        )


def git_dir(top: str) -> str:
    return git(top, "rev-parse", "--absolute-git-dir").stdout.strip()


def head_or_none(top: str) -> str | None:
    """HEAD's commit, or None on an unborn branch (a new repository)."""
    r = git(top, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    return r.stdout.strip() or None if r.returncode == 0 else None


_BUSY = (
    ("MERGE_HEAD", "a merge is in progress", "finish it (git commit) or abort it (git merge --abort)"),
    ("CHERRY_PICK_HEAD", "a cherry-pick is in progress", "finish or abort it (git cherry-pick --abort)"),
    ("REVERT_HEAD", "a revert is in progress", "finish or abort it (git revert --abort)"),
    ("rebase-merge", "a rebase is in progress", "finish or abort it (git rebase --abort)"),
    ("rebase-apply", "a rebase or git am is in progress", "finish or abort it (git rebase --abort)"),
)


def require_committable(top: str) -> None:
    """Refuse, before anything is written, what would make the commit fail or land wrongly: git's
    index lock held (another git command running, or a stale lock a killed one left: reported,
    never removed), a merge, rebase, cherry-pick or revert in progress."""
    gd = git_dir(top)
    for name, what, fix in _BUSY:
        if os.path.lexists(os.path.join(gd, name)):
            raise InputError(f"{what} in {top}; a promotion commit now would be part of it",
                             location=Location(top), hint=fix)
    lock = os.path.join(gd, "index.lock")
    if os.path.lexists(lock):
        raise InputError(
            f"git's index is locked ({lock} exists): another git command is running, or one was "
            "killed and left its lock; nothing was written",
            location=Location(top),
            hint="wait for the other git command; if none is running, remove the lock file",
        )


def identity(top: str, author: str | None) -> dict[str, str]:
    """Environment for the commit's author and committer: the spec's ``commitAuthor``, else git's
    configured identity, else a fixed fallback (containers and CI often have none)."""
    if author:
        m = re.match(r"^(.+?) <(.+)>$", author)
        assert m, author  # validated by the spec model
        name, email = m.group(1), m.group(2)
    else:
        n = git(top, "config", "user.name", check=False).stdout.strip()
        e = git(top, "config", "user.email", check=False).stdout.strip()
        if n and e:
            return {}
        name, email = FALLBACK_AUTHOR
    return {
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
    }


def write_commit(top: str, base: str | None, entries: Sequence[tuple[str, str | None]],
                 message: str, author: str | None) -> str | None:
    """A commit of ``base``'s tree with ``entries`` (path relative to ``top`` → the file whose
    bytes become its blob, or None to remove it), made in Git's object store alone: the work
    tree, git's index and every ref stay as they are (a temporary index). Returns the commit
    id, or None when the tree would not change. A failure here (a full disk, a broken object
    store) has changed nothing anyone sees."""
    gd = git_dir(top)
    tmp_index = os.path.join(gd, f"dgdgen-index-{os.getpid()}.tmp")
    env = {"GIT_INDEX_FILE": tmp_index}
    try:
        if base is not None:
            git(top, "read-tree", base, env=env)
        else:
            git(top, "read-tree", "--empty", env=env)
        adds = [(p, src) for p, src in entries if src is not None]
        shas: list[str] = []
        if adds:
            # --no-filters: the blob is exactly the bytes dgdgen rendered
            r = git(top, "hash-object", "-w", "--no-filters", "--stdin-paths",
                    stdin="".join(src + "\n" for _, src in adds))
            shas = r.stdout.split()
        lines = [f"100644 {sha}\t{p}" for (p, _), sha in zip(adds, shas, strict=True)]
        lines += [f"0 {'0' * 40}\t{p}" for p, src in entries if src is None]
        git(top, "update-index", "-z", "--index-info", env=env,
            stdin="".join(x + "\0" for x in lines))
        tree = git(top, "write-tree", env=env).stdout.strip()
        if base is not None and git(top, "rev-parse", f"{base}^{{tree}}").stdout.strip() == tree:
            return None
        parents = ["-p", base] if base is not None else []
        return git(top, "commit-tree", tree, *parents, "-F", "-", stdin=message,
                   env=identity(top, author)).stdout.strip()
    finally:
        for leftover in (tmp_index, tmp_index + ".lock"):
            try:
                os.remove(leftover)
            except FileNotFoundError:
                pass


class RefMoved(GitError):
    """HEAD was not where the command found it: someone committed in between."""


def advance_head(top: str, new: str, old: str | None, subject: str) -> None:
    """Move HEAD (its branch) from ``old`` to ``new`` in one compare-and-swap ref transaction:
    refused, with nothing changed, when HEAD is no longer ``old``."""
    r = git(top, "update-ref", "-m", f"commit (dgdgen): {subject}", "HEAD", new,
            old or "0" * 40, check=False)
    if r.returncode != 0:
        now = head_or_none(top)
        if now != old:
            raise RefMoved(f"HEAD moved from {(old or 'nothing')[:12]} to {(now or 'nothing')[:12]}"
                           " while the commit was made")
        raise GitError(f"git update-ref failed: {(r.stderr or r.stdout).strip()}")


def sync_index(top: str, entries: Sequence[tuple[str, str | None]], commit: str) -> None:
    """Make git's index agree with ``commit`` for the paths of ``entries`` (after the work tree
    was moved), so ``git status`` is clean."""
    if not entries:
        return
    r = git(top, "ls-tree", "-z", "--full-tree", commit, "--", *[p for p, _ in entries],
            env={"GIT_LITERAL_PATHSPECS": "1"})
    lines = []
    present = set()
    for item in r.stdout.split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        mode, _kind, sha = meta.split()
        lines.append(f"{mode} {sha}\t{path}")
        present.add(path)
    lines += [f"0 {'0' * 40}\t{p}" for p, _ in entries if p not in present]
    git(top, "update-index", "-z", "--index-info", stdin="".join(x + "\0" for x in lines))
    git(top, "update-index", "-q", "--refresh", check=False)


def committed(top: str, path: str) -> bool:
    """Whether anything at or under ``path`` (relative to ``top``) is in HEAD's tree or git's
    index: it arrived in (or is on its way into) a commit."""
    env = {"GIT_LITERAL_PATHSPECS": "1"}
    if git(top, "ls-files", "-z", "--cached", "--", path, env=env).stdout:
        return True
    if head_or_none(top) is None:
        return False
    return bool(git(top, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", path,
                    env=env).stdout)


def show(top: str, rev: str, path: str) -> str | None:
    """``path`` (relative to ``top``) as ``rev`` holds it, or None."""
    r = git(top, "cat-file", "blob", f"{rev}:{path}", check=False)
    return r.stdout if r.returncode == 0 else None


def changed_between(top: str, old: str | None, new: str | None, path: str) -> bool:
    """Whether any commit from ``old`` to ``new`` changed something under ``path``."""
    if old == new:
        return False
    if old is None or new is None:
        return True
    r = git(top, "diff", "--quiet", old, new, "--", path, check=False,
            env={"GIT_LITERAL_PATHSPECS": "1"})
    return r.returncode != 0


def subject_of(top: str, rev: str) -> str:
    return git(top, "log", "-1", "--format=%s", rev, check=False).stdout.strip()


def head(top: str) -> str:
    return git(top, "rev-parse", "HEAD").stdout.strip()


def current_branch(top: str) -> str | None:
    r = git(top, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return r.stdout.strip() or None


class PushRejected(GitError):
    """The remote refused the push because its branch moved (someone else pushed)."""


def push(top: str, remote: str, branch: str | None) -> str:
    """Push HEAD to ``remote``'s ``branch`` (default: the checked-out branch), never forced.
    Returns the ref; :class:`PushRejected` when the remote branch holds commits HEAD does not."""
    target = branch or current_branch(top)
    if not target:
        raise InputError(
            "HEAD is detached: give gitops.branch in the spec so --push knows where to push",
            location=Location(top),
        )
    r = git(top, "push", "--porcelain", remote, f"HEAD:refs/heads/{target}", check=False)
    if r.returncode != 0:
        # porcelain: "!<TAB>from:to<TAB>[rejected] (fetch first)" when the branch moved;
        # "[remote rejected] (hook declined)" is a refusal of another kind
        moved = [line.split("\t")[-1].strip() for line in r.stdout.splitlines()
                 if line.startswith("!\t") and line.split("\t")[-1].startswith("[rejected]")]
        if moved:
            raise PushRejected(f"refused the push: {moved[0]}")
        raise GitError(f"git push failed: {(r.stderr or r.stdout).strip()}")
    return f"{remote}/{target}"


def undo(top: str, commit: str, parent: str | None) -> None:
    """Take back ``commit`` (HEAD, never pushed) with its files: HEAD, git's index and the work
    tree return to ``parent``; files nobody committed are kept (``reset --keep``)."""
    if parent is None:
        raise GitError("cannot take back the first commit of a repository")
    git(top, "reset", "-q", "--keep", parent)


def unpushed(top: str, remote: str, branch: str | None, path: str) -> list[str] | None:
    """Commits on HEAD that touch ``path`` and are not on ``remote``'s ``branch`` (oldest
    first): what a failed ``--push`` left behind. None when the remote's branch holds a commit
    HEAD does not have (the local branch is behind or has diverged)."""
    target = branch or current_branch(top)
    if not target:
        return []
    r = git(top, "ls-remote", "--heads", remote, f"refs/heads/{target}")
    remote_sha = r.stdout.split()[0] if r.stdout.strip() else None
    if remote_sha is not None:
        known = git(top, "merge-base", "--is-ancestor", remote_sha, "HEAD", check=False)
        if known.returncode != 0:
            return None
    rng = f"{remote_sha}..HEAD" if remote_sha else "HEAD"
    out = git(top, "rev-list", "--reverse", rng, "--", os.path.relpath(path, top))
    return out.stdout.split()


def remote_file(top: str, remote: str, branch: str | None, path: str) -> str | None:
    """``path`` as the remote's ``branch`` holds it (after :func:`unpushed` looked, the commit is
    known locally), or None when the remote has no such branch or file."""
    target = branch or current_branch(top)
    if not target:
        return None
    r = git(top, "ls-remote", "--heads", remote, f"refs/heads/{target}")
    if not r.stdout.strip():
        return None
    sha = r.stdout.split()[0]
    shown = git(top, "show", f"{sha}:{os.path.relpath(path, top)}", check=False)
    return shown.stdout if shown.returncode == 0 else None
