"""``dgdgen history``: every rollout a deploy directory went through, read back from Git.

Each dgdgen commit changes the directory's index (:mod:`dgdgen.gitops.index`), so the index at
every commit of the branch that touched it (first parents only: the branch's own line) is the
whole record: the generations (the version is the candidate revision), the step, the gate
results, the hold. A rollout starts with a new pair of generations, with a render back to the
baseline, or with any move after a finished one; it ends in ``cleanup`` (completed) or
``rollback`` (rolled back). The last one can be in progress, rolling back, paused, or
interrupted (a write killed half-way, :mod:`dgdgen.gitops.transaction`); an earlier one that
never ended was superseded. Reads only.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field

from dgdgen.errors import InputError, Location
from dgdgen.gitops import repo
from dgdgen.gitops.index import INDEX, Index
from dgdgen.gitops.target import Target

_STEP = re.compile(r"step-(\d+)")
_TRAILER = re.compile(r"^(Dgdgen-[A-Za-z-]+): (.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str  # UTC, YYYY-MM-DDTHH:MM:SSZ (the committer date)
    author: str
    subject: str
    trailers: tuple[tuple[str, str], ...]
    index: Index


@dataclass
class Rollout:
    stable: str
    candidate: str
    commits: list[Commit] = field(default_factory=list)
    outcome: str = "in progress"
    note: str | None = None

    @property
    def start(self) -> str:
        return self.commits[0].date

    @property
    def ended(self) -> bool:
        return self.commits[-1].index.step in ("rollback", "cleanup")

    @property
    def end(self) -> str | None:
        for c in self.commits:
            if c.index.step in ("rollback", "cleanup"):
                return c.date
        return None

    @property
    def duration(self) -> int | None:
        end = self.end
        return None if end is None else _seconds(end) - _seconds(self.start)

    @property
    def steps(self) -> list[str]:
        """The plan states the rollout was at, in order, each once."""
        out: list[str] = []
        for c in self.commits:
            if c.index.step not in out:
                out.append(c.index.step)
        return out

    @property
    def highest(self) -> int:
        return max((int(m.group(1)) for s in self.steps if (m := _STEP.fullmatch(s))),
                   default=0)

    def gates(self) -> dict[str, str]:
        """Step label → the last recorded gate result, or "skipped" when a promotion
        overrode it (``Dgdgen-Skip-Gate``)."""
        out = {k: v.result for k, v in self.commits[-1].index.gates.items()}
        for c in self.commits:
            for key, value in c.trailers:
                m = re.search(r" of step (\d+) ", value)
                if key == "Dgdgen-Skip-Gate" and m:
                    out[f"step-{int(m.group(1)):02d}"] = "skipped"
        return dict(sorted(out.items()))

    def holds(self) -> list[dict[str, str | None]]:
        out: list[dict[str, str | None]] = []
        held = None
        for c in self.commits:
            h = c.index.hold
            if h is not None and h != held:
                out.append({"by": h.by, "reason": h.reason, "since": h.since, "until": None})
            elif h is None and held is not None and out:
                out[-1]["until"] = c.date
            held = h
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.candidate,
            "stable": self.stable,
            "candidate": self.candidate,
            "outcome": self.outcome,
            "start": self.start,
            "end": self.end,
            "durationSeconds": self.duration,
            "steps": self.steps,
            "highestStep": self.highest,
            "gates": self.gates(),
            "holds": self.holds(),
            "note": self.note,
            "commits": [{"commit": c.sha, "date": c.date, "author": c.author,
                         "step": c.index.step, "subject": c.subject} for c in self.commits],
        }


def _seconds(date: str) -> int:
    return int(datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.UTC).timestamp())


def _commits(t: Target) -> list[tuple[str, str, str, str, tuple[tuple[str, str], ...]]]:
    assert t.top is not None
    path = t.repo_path
    index_path = INDEX if path == "." else f"{path}/{INDEX}"
    if repo.head_or_none(t.top) is None:
        return []
    r = repo.git(t.top, "log", "--first-parent", "--reverse", "--date=format-local:%Y-%m-%dT%H:%M:%SZ",
                 "--format=%H%x1f%cd%x1f%an <%ae>%x1f%B%x1e", "HEAD", "--", index_path,
                 env={"TZ": "UTC", "GIT_LITERAL_PATHSPECS": "1"})
    out = []
    for record in r.stdout.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) != 4:
            continue
        sha, date, author, body = parts
        subject = body.split("\n", 1)[0]
        out.append((sha, date, author, subject, tuple(_TRAILER.findall(body))))
    return out


def _indexes(t: Target, shas: list[str]) -> dict[str, str | None]:
    """The index text at each commit (None where the commit removed it), in one git call
    (bytes: ``--batch`` sizes count bytes, and a hand-edited index need not be ASCII)."""
    import subprocess

    assert t.top is not None
    path = INDEX if t.repo_path == "." else f"{t.repo_path}/{INDEX}"
    r = subprocess.run(["git", "-C", t.top, "cat-file", "--batch"], capture_output=True,
                       input="".join(f"{s}:{path}\n" for s in shas).encode("utf-8"),
                       env=repo._env(), check=False)
    if r.returncode != 0:
        raise repo.GitError(f"git cat-file failed: {r.stderr.decode(errors='replace').strip()}")
    data = r.stdout
    out: dict[str, str | None] = {}
    pos = 0
    for s in shas:
        end = data.index(b"\n", pos)
        header = data[pos:end].split(b" ")
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":
            out[s] = None
            continue
        size = int(header[2])
        out[s] = data[pos:pos + size].decode("utf-8", errors="replace")
        pos += size + 1
    return out


def history(t: Target) -> tuple[list[Rollout], list[str]]:
    """Every rollout of this spec's rollout name in the directory's Git history, oldest first,
    and notes on commits whose index could not be read."""
    from dgdgen.gitops import status

    if t.top is None:
        raise InputError("not inside a Git work tree: the history is the Git log",
                         location=Location(t.into))
    rows = _commits(t)
    texts = _indexes(t, [r[0] for r in rows])
    rollouts: list[Rollout] = []
    notes: list[str] = []
    for sha, date, author, subject, trailers in rows:
        text = texts[sha]
        if text is None:
            continue
        try:
            idx = Index.parse(text, f"{sha[:12]}:{t.repo_path}/{INDEX}")
        except InputError as exc:
            notes.append(f"commit {sha[:12]} ({subject}): skipped: {exc}")
            continue
        if idx.rollout != t.prepared.plan.rollout:
            continue
        c = Commit(sha, date, author, subject, trailers, idx)
        cur = rollouts[-1] if rollouts else None
        last = cur.commits[-1].index.step if cur else None
        if cur is None or (cur.stable, cur.candidate) != (idx.stable_revision,
                                                          idx.candidate_revision) \
                or (idx.step == "step-00" and last != "step-00") \
                or (cur.ended and idx.step != last):
            cur = Rollout(idx.stable_revision, idx.candidate_revision)
            rollouts.append(cur)
        cur.commits.append(c)
    for k, ro in enumerate(rollouts):
        step = ro.commits[-1].index.step
        if step == "cleanup":
            ro.outcome = "completed"
        elif step == "rollback":
            ro.outcome = "rolled back"
        elif k < len(rollouts) - 1:
            ro.outcome = "superseded"
            ro.note = "a new rollout started before this one ended"
        elif step.startswith("rollback-"):
            ro.outcome = "rolling back"
        elif ro.commits[-1].index.hold is not None:
            h = ro.commits[-1].index.hold
            ro.outcome = "paused"
            ro.note = f"paused by {h.by} since {h.since}: {h.reason}"
    if rollouts:
        pending = status._pending(t)
        if pending is not None:
            rollouts[-1].outcome = "interrupted"
            rollouts[-1].note = pending
    return rollouts, notes


def duration(seconds: int | None) -> str:
    if seconds is None:
        return "—"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"
