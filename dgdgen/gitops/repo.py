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
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    env.update(extra or {})
    return env


def git(cwd: str, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(
            ["git", "-C", cwd, *args], capture_output=True, text=True, env=_env(env),
            input=stdin, check=False,
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


def dirty(top: str) -> Dirty:
    """Uncommitted changes anywhere in the work tree (staged, unstaged or untracked)."""
    r = git(top, "status", "--porcelain=v1", "--untracked-files=all")
    return Dirty(tuple(line[3:] for line in r.stdout.splitlines() if line.strip()))


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


def commit(top: str, paths: Sequence[str], message: str, author: str | None) -> str | None:
    """Stage ``paths`` (additions and deletions) and commit only them. Returns the new commit id,
    or None when there was nothing to commit."""
    rel = [os.path.relpath(p, top) for p in paths]
    git(top, "add", "-A", "--", *rel)
    staged = git(top, "diff", "--cached", "--quiet", "--", *rel, check=False)
    if staged.returncode == 0:
        return None
    git(top, "commit", "-q", "--no-verify", "-F", "-", "--", *rel, stdin=message,
        env=identity(top, author))
    return head(top)


def head(top: str) -> str:
    return git(top, "rev-parse", "HEAD").stdout.strip()


def current_branch(top: str) -> str | None:
    r = git(top, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    return r.stdout.strip() or None


def push(top: str, remote: str, branch: str | None) -> str:
    """Push HEAD to ``remote``'s ``branch`` (default: the checked-out branch). Returns the ref."""
    target = branch or current_branch(top)
    if not target:
        raise InputError(
            "HEAD is detached: give gitops.branch in the spec so --push knows where to push",
            location=Location(top),
        )
    git(top, "push", "-q", remote, f"HEAD:refs/heads/{target}")
    return f"{remote}/{target}"


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
