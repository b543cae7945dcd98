"""The documentation runs as written, in the order a newcomer reads it. Every console block of
README.md and of the documents its "Documentation" list links (docs/**/*.md, examples/README.md)
— a fenced block whose commands start with `$ ` — is run, document after document in that order,
in ONE scratch copy of this checkout (a fresh Git repository, as a clone would be), with `dgdgen`
on PATH and NO git identity: a scratch HOME without a .gitconfig, no system config
(GIT_CONFIG_NOSYSTEM), no EMAIL or GIT_* variables, and git told never to guess one from the
user and host names (user.useConfigOnly, through GIT_CONFIG_COUNT: the strictest reader, on any
host), so a document that commits with git itself must set an identity as a command the reader
sees. What one document leaves behind (an `out/` folder, a repository next to the checkout) is
there for the next, as it is for a reader. Each document starts in a bash session of its own at
the top of the checkout; its blocks run in the order of the file.

The documents are followed TWICE in a row, in the same scratch copy: the second reading starts
with everything the first one made in place (the `out/` folders, the rehearsals' reports, the
repositories next to the checkout) and must pass the same way, outputs compared as the first
time — a reader who runs a page again, or the next page after a re-run, gets what it shows.
Then the README's "Start over" line must remove everything they made: the checkout is as
cloned (nothing ignored left either) and nothing is left next to it. A command must exit 0, or the code its trailing `# exit N` comment names. Lines
between a command and the next one are its expected output (stdout and stderr, as a terminal
shows them) and must match exactly. The blocks are discovered, not listed: a new or edited doc is
covered. Following all of them must leave the checkout as it was: nothing untracked, nothing
modified (outputs go under ignored folders).

The only blocks not run are those marked, on the line before the fence, with
`<!-- docs-run: needs a live Prometheus -->` or `<!-- docs-run: needs a live HAProxy socket -->`;
and one marker spares the second reading a block: `<!-- docs-run: first reading only: TEST -->`,
allowed only on a block of `dgdgen rehearse` commands and naming the test that runs a rehearsal
again over the report and the temp folder of the one before it (what the second reading proved
of those blocks, on one short rollout instead of four on the default clock: 15 CPU-seconds
instead of 111, and four minutes off the suite's longest chain, measured 2026-12-07). Any other
`docs-run:` marker fails. Shell blocks without `$ ` prompts (kubectl, docker, argo against a
cluster) are illustrations, not run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gen_support import REPO

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)\s*$")
MARKER = re.compile(r"<!--\s*docs-run:\s*(.*?)\s*-->")
ALLOWED_SKIPS = ("needs a live Prometheus", "needs a live HAProxy socket")
# a block run in the first reading only; the marker names the test that proves its second run
ONCE = "first reading only: "
RERUN_PROOF = "tests/rehearse/test_rerun.py"
EXIT = re.compile(r"#\s*exits?\s+(\d+(?:\s+or\s+\d+)*)\b[^'\"]*$")
LINKED = re.compile(r"`((?:docs|examples)/[\w./-]*?(?:\.md|/))`")


@dataclass(frozen=True)
class Command:
    text: str
    output: tuple[str, ...] | None = None  # the lines the block shows after it, if any


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    commands: tuple[Command, ...]
    skip: str | None


def reading_order(readme: Path = REPO / "README.md") -> list[str]:
    """README.md, then what its "Documentation" list links, in the list's order (a folder
    stands for its Markdown files, sorted)."""
    text = readme.read_text(encoding="utf-8")
    section = text[text.index("\n## Documentation\n"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    order = ["README.md"]
    for rel in LINKED.findall(section):
        found = ([rel] if rel.endswith(".md")
                 else [str(q.relative_to(REPO)) for q in sorted((REPO / rel).glob("*.md"))])
        order += [r for r in found if r not in order]
    return order


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
        commands: list[Command] = []
        k = 0
        while k < len(body):
            if body[k].startswith("$ "):
                cmd = body[k][2:]
                while cmd.endswith("\\") and k + 1 < len(body):
                    k += 1
                    cmd = cmd[:-1] + " " + body[k].strip()
                shown: list[str] = []
                while k + 1 < len(body) and not body[k + 1].startswith("$ "):
                    k += 1
                    shown.append(body[k])
                commands.append(Command(cmd, tuple(shown) if shown else None))
            k += 1
        if commands:
            name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
            out.append(Block(name, start + 1, tuple(commands),
                             marker.group(1) if marker else None))
    return out


ALL = {str(p.relative_to(REPO)): blocks(p) for p in _docs()}
RUNNABLE = {doc: bl for doc, bl in ALL.items() if bl}
ORDER = [doc for doc in reading_order() if doc in RUNNABLE]
READINGS = (1, 2)  # the documents are followed twice in a row
SEQUENCE = [(reading, doc) for reading in READINGS for doc in ORDER]


def test_blocks_are_found_in_the_readme_and_the_docs() -> None:
    assert len(ALL["README.md"]) >= 5
    assert len([doc for doc in RUNNABLE if doc.startswith("docs/")]) >= 2
    assert any("git init" in c.text or "--init" in c.text
               for b in ALL["README.md"] for c in b.commands)


def test_every_document_with_commands_is_linked_from_the_readme() -> None:
    """A document the README does not link has no place in the reading order."""
    assert sorted(set(RUNNABLE) - set(ORDER)) == []
    assert ORDER[0] == "README.md" and ORDER.index("docs/validation.md") < ORDER.index(
        "docs/gitops.md") < ORDER.index("examples/README.md")


def test_the_reading_order_is_the_documentation_list(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text(
        "# x\n\nsee `docs/b.md` first\n\n## Documentation\n\n* `docs/c.md` — c\n"
        "* `docs/a.md` — a; `docs/rules/` has pages; `docs/c.md` again\n"
        "* `examples/README.md` — e\n\n## Later\n\n`docs/z.md`\n")
    order = reading_order(tmp_path / "README.md")
    assert order[:3] == ["README.md", "docs/c.md", "docs/a.md"]
    assert order[-1] == "examples/README.md" and "docs/z.md" not in order
    assert all(r.startswith("docs/rules/") and r.endswith(".md") for r in order[3:-1])


def test_only_live_service_blocks_are_skipped() -> None:
    bad = [(b.doc, b.line, b.skip) for bl in ALL.values() for b in bl
           if b.skip is not None and b.skip not in ALLOWED_SKIPS and not _once(b)]
    assert bad == [], f"allowed markers: {ALLOWED_SKIPS}, or {ONCE!r}{RERUN_PROOF}"


def _once(b: Block) -> bool:
    """Whether ``b`` is marked to run in the first reading only, and may be: every command of
    it a `dgdgen rehearse` (a rehearsal's run again is what the named test proves), and the
    test the marker names exists."""
    return (b.skip == ONCE + RERUN_PROOF and (REPO / RERUN_PROOF).is_file()
            and all(re.match(r"dgdgen rehearse\s", c.text) for c in b.commands))


def test_a_first_reading_marker_is_refused_on_other_commands(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        f"<!-- docs-run: {ONCE}{RERUN_PROOF} -->\n```console\n$ dgdgen rehearse a.yaml\n```\n"
        f"<!-- docs-run: {ONCE}{RERUN_PROOF} -->\n```console\n$ dgdgen rehearse a.yaml\n"
        "$ dgdgen plan a.yaml\n```\n"
        f"<!-- docs-run: {ONCE}tests/no_such_test.py -->\n```console\n$ dgdgen rehearse a\n```\n")
    assert [_once(b) for b in blocks(doc)] == [True, False, False]
    first, second = (_script(blocks(doc)[:1], reading) for reading in READINGS)
    assert "dgdgen rehearse a.yaml" in first and "dgdgen rehearse" not in second


def test_the_parser_reads_prompts_continuations_markers_and_exit_codes(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n\n```console\n$ dgdgen a \\\n    b\noutput line\n$ dgdgen c  # exit 3\n```\n\n"
        "<!-- docs-run: needs a live Prometheus -->\n  ```console\n  $ dgdgen d\n  ```\n"
        "```sh\ndgdgen not-a-prompt\n```\n"
    )
    found = blocks(doc)
    assert [[c.text for c in b.commands] for b in found] == [
        ["dgdgen a  b", "dgdgen c  # exit 3"], ["dgdgen d"]]
    assert [c.output for c in found[0].commands] == [("output line",), None]
    assert [b.skip for b in found] == [None, "needs a live Prometheus"]
    assert [_expected_exit(c.text) for c in found[0].commands] == [(0,), (3,)]
    assert _expected_exit("dgdgen rehearse x  # exit 0 or 1 (a race)") == (0, 1)


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


def test_a_drifted_sample_fails_the_run(sandbox: dict[str, str], tmp_path: Path) -> None:
    doc = tmp_path / "sample.md"
    doc.write_text("```console\n$ printf 'a\\nb\\n'; printf 'c\\n' >&2\na\nb\nc\n"
                   "$ echo two\ntwo\n```\n```console\n$ echo three\n3\n```\n")
    found = blocks(doc)
    done = subprocess.run(["bash", "-c", _script(found[:1])], cwd=tmp_path, env=sandbox,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    done = subprocess.run(["bash", "-c", _script(found)], cwd=tmp_path, env=sandbox,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 97
    assert "output differs from the sample" in done.stderr and "+three" in done.stderr


def _expected_exit(command: str) -> tuple[int, ...]:
    """The exit codes a command's trailing `# exit N` (or `# exit N or M`: a command whose
    outcome the doc says depends on a race in the real runtime it plays) allows."""
    m = EXIT.search(command)
    return tuple(int(c) for c in m.group(1).split(" or ")) if m else (0,)


def _script(bl: list[Block], reading: int = READINGS[0]) -> str:
    lines = ["set -u", 'sample="$(mktemp)"; seen="$(mktemp)"',
             'trap \'rm -f "$sample" "$seen"\' EXIT']
    for b in bl:
        if b.skip is not None and not (_once(b) and reading == READINGS[0]):
            continue
        for cmd in b.commands:
            where = f"{b.doc}:{b.line}: $ {cmd.text}"
            code = _expected_exit(cmd.text)
            lines.append(f"printf '\\n>>> %s\\n' {shlex.quote(where)} >&2")
            if cmd.output is None:
                lines.append(cmd.text)
            else:
                lines.append(f"{{ {cmd.text}\n}} >\"$seen\" 2>&1")
            shown = ' cat "$seen" >&2;' if cmd.output is not None else ""
            allowed = "|".join(map(str, code))
            lines.append(
                f"rc=$?; case $rc in {allowed}) ;; *) "
                f"printf 'docs-run: exit %s, expected {' or '.join(map(str, code))}: %s\\n' "
                f"\"$rc\" {shlex.quote(where)} >&2;{shown} exit 97;; esac"
            )
            if cmd.output is not None:
                lines += [
                    f"printf '%s\\n' {' '.join(shlex.quote(x) for x in cmd.output)} >\"$sample\"",
                    'if ! diff -u "$sample" "$seen" >&2; then '
                    f"printf 'docs-run: output differs from the sample: %s\\n' "
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
    # the clone's history has an author whoever runs the tests; the reader's own git has none
    who = ["-c", "user.name=checkout", "-c", "user.email=checkout@localhost"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], [*who, "commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("docs-run")
    home = root / "home"
    home.mkdir()
    # `dgdgen` on PATH as the README's set-up leaves it: the virtual environment's bin/ first
    # (what `. .venv/bin/activate` does), with the console script the install put there.
    bindir = _venv_bin()
    # no git identity anywhere: no ~/.gitconfig (nor XDG one), no system config, no EMAIL, and
    # git may not make one up from the user and host names (it would on a host with a domain)
    # ... and Python writes bytecode, as in a reader's own shell: a command that imported dgdgen
    # from the checkout it runs in (not the installed one) would leave __pycache__ there, which
    # "Start over" then finds (PYTHONDONTWRITEBYTECODE in the test's environment hid one)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") and k not in ("EMAIL", "PYTHONDONTWRITEBYTECODE")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="user.useConfigOnly",
               GIT_CONFIG_VALUE_0="true",
               PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}",
               VIRTUAL_ENV=str(bindir.parent),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
               # a terminal's order of stdout and stderr lines, which the samples show
               PYTHONUNBUFFERED="1")
    return env


def _venv_bin() -> Path:
    """The bin/ folder of the environment running the tests, holding its `dgdgen` script."""
    bindir = Path(sys.prefix) / "bin"
    assert (bindir / "dgdgen").is_file() and (bindir / "activate").is_file(), (
        f"{bindir} has no `dgdgen` console script or `activate`: run the tests from the virtual "
        "environment the README's set-up makes (`pip install -e '.[test]'` puts `dgdgen` there)")
    return bindir


def _setup_section() -> list[str]:
    """The shell blocks of the README's "Set up" section: the set-up command, then the tests'."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Set up\n"):]
    section = section[:section.index("\n## ", 1)]
    return [b.strip() for b in re.findall(r"^```sh\n(.*?)^```", section, re.MULTILINE | re.DOTALL)]


def test_the_setup_leaves_dgdgen_on_path_as_the_docs_spell_it(tmp_path: Path) -> None:
    """The README's set-up command activates its virtual environment before its first bare
    `dgdgen`, and activating one really puts the install's `dgdgen` (and `pytest`) first on PATH;
    the test command and every documented command are spelled as that leaves them."""
    setup, tests = _setup_section()[:2]
    steps = [s.strip() for s in setup.split("&&")]
    venv_dir = steps[0].removeprefix("python3 -m venv ")
    assert steps[0] != venv_dir, steps
    assert steps[1] == f". {venv_dir}/bin/activate", steps
    assert steps[2].startswith("pip install ") and steps[3].startswith("dgdgen render "), steps
    assert tests == "pytest"
    spelled = [f"{doc}:{b.line}: {c.text}" for doc, bl in ALL.items() for b in bl
               for c in b.commands if "/bin/dgdgen" in c.text or "/bin/pytest" in c.text]
    assert spelled == [], "spelled with a path the set-up does not need"
    bindir = _venv_bin()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = "/usr/bin:/bin"
    script = (f". {shlex.quote(str(bindir))}/activate && command -v dgdgen pytest && "
              "dgdgen --version")
    found = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=60, check=False)
    assert found.returncode == 0, found.stderr
    assert [Path(p).resolve() for p in found.stdout.splitlines()[:2]] == [
        (bindir / "dgdgen").resolve(), (bindir / "pytest").resolve()]


@dataclass
class Reader:
    """One scratch checkout read in SEQUENCE: each document runs once per reading, after the
    ones before it."""

    checkout: Path
    env: dict[str, str]
    done: dict[tuple[int, str], subprocess.CompletedProcess[str]] = field(default_factory=dict)

    def follow(self, doc: str, reading: int = READINGS[0]) -> subprocess.CompletedProcess[str]:
        for earlier in SEQUENCE[:SEQUENCE.index((reading, doc)) + 1]:
            if earlier not in self.done and _cannot_run(earlier[1]) is None:
                reading_now, now = earlier
                self.done[earlier] = subprocess.run(
                    ["bash", "-c", _script(RUNNABLE[now], reading_now)], cwd=self.checkout,
                    env=self.env, capture_output=True, text=True, timeout=900)
        return self.done[(reading, doc)]


@pytest.fixture(scope="module")
def reader(sandbox: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Reader:
    checkout = tmp_path_factory.mktemp("reader") / "checkout"
    checkout.mkdir()
    _checkout(checkout)
    return Reader(checkout, dict(sandbox))


def _rehearses(doc: str) -> bool:
    return any(re.match(r"dgdgen rehearse\b(?!.*--help)", c.text)
               for b in RUNNABLE[doc] if b.skip is None or _once(b) for c in b.commands)


def _cannot_run(doc: str) -> str | None:
    """Why ``doc`` cannot run on this machine: `pip install -e '.[test]'` alone has no Dynamo
    runtime, so a doc that rehearses is skipped there, as tests/rehearse is (and fails under CI,
    which installs it: tests/conftest.py)."""
    if not _rehearses(doc):
        return None
    from dgdgen import runtime

    reason = runtime.missing()
    return None if reason is None else \
        f"{doc} runs `dgdgen rehearse`: ai-dynamo runtime missing: {reason}"


# The readings form one chain in one scratch checkout (the `reader` fixture, module-scoped: its
# tests share one worker, in this order). Long: docs/rehearse.md rehearses four rollouts on the
# default time scale in its first reading, about 4–5 minutes; the chain is 7–8 minutes on two
# CPUs and is the suite's longest, so it starts first (tests/suite_support.py).
LONG_CHAIN = [pytest.mark.slow, pytest.mark.long(minutes=8)]


@pytest.mark.parametrize(("reading", "doc"), SEQUENCE,
                         ids=[f"{doc}, reading {reading}" for reading, doc in SEQUENCE])
@LONG_CHAIN[0]
@LONG_CHAIN[1]
def test_doc_runs_as_written_after_the_ones_before_it(reading: int, doc: str,
                                                      reader: Reader) -> None:
    """Each document after the ones before it. Long: run on its own, a document runs every one
    before it first (docs/rehearse.md's rehearsals take 4–5 minutes, in the first reading)."""
    reason = _cannot_run(doc)
    if reason is not None:
        pytest.skip(reason)
    done = reader.follow(doc, reading)
    failed = [f"{d} (reading {r})" for r, d in SEQUENCE[:SEQUENCE.index((reading, doc))]
              if (r, d) in reader.done and reader.done[(r, d)].returncode != 0]
    assert done.returncode == 0, (
        f"{doc}, reading {reading}" + (f" (after {', '.join(failed)} failed)" if failed else "")
        + f":\n{done.stderr[-4000:]}\n--- stdout ---\n{done.stdout[-2000:]}")


def _status(checkout: Path, *extra: str) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", *extra],
                          cwd=checkout, capture_output=True, text=True, check=True).stdout


@LONG_CHAIN[0]
@LONG_CHAIN[1]
def test_following_the_docs_leaves_the_checkout_clean(reader: Reader) -> None:
    """Long: after both readings (run on its own, it follows every document twice first)."""
    reader.follow(SEQUENCE[-1][1], SEQUENCE[-1][0])
    status = _status(reader.checkout)
    assert status == "", "left in the checkout by following the docs:\n" + status


def _start_over() -> str:
    """The README's "Start over" command."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("\n## Start over\n"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    [command] = [str(b).strip() for b in re.findall(r"^```sh\n(.*?)^```", section,
                                                    re.MULTILINE | re.DOTALL)]
    return command


@LONG_CHAIN[0]
@LONG_CHAIN[1]
def test_starting_over_removes_what_the_docs_made(reader: Reader) -> None:
    """Long: after both readings (run on its own, it follows every document twice first).

    After both readings, the README's "Start over" line leaves the checkout as cloned —
    nothing untracked, nothing ignored — and nothing next to it: it names every folder and
    repository the documents make."""
    reader.follow(SEQUENCE[-1][1], SEQUENCE[-1][0])
    made = _status(reader.checkout, "--ignored")
    assert "out/" in made and sorted(p.name for p in reader.checkout.parent.iterdir()) != [
        "checkout"], "the documents made nothing to remove"
    subprocess.run(["bash", "-c", _start_over()], cwd=reader.checkout, env=reader.env,
                   check=True, capture_output=True, text=True, timeout=60)
    left = _status(reader.checkout, "--ignored")
    assert left == "", f"left in the checkout after starting over:\n{left}"
    assert sorted(p.name for p in reader.checkout.parent.iterdir()) == ["checkout"]
