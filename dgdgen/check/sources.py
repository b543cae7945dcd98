"""Where the checked files come from: the working tree, the Git index, a revision.

Uses the real ``git`` through subprocess (no GitPython):

* no paths, no base — pre-commit mode: the staged YAML files (index) against ``HEAD``;
* paths, no base — the files as they are against ``HEAD`` (pre-commit passes the staged files
  and stashes unstaged changes, so the working tree is the index);
* ``--base REV`` — working-tree files (the given paths, or every YAML file that differs from
  REV) against REV.

Outside a Git work tree only the single-file rules run. Blobs are read with one
``git cat-file --batch`` process, so many files cost one fork.
"""

from __future__ import annotations

import gc
import os
import subprocess
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from dgdgen.check import siblings
from dgdgen.check.context import FileInput, SiblingLoader
from dgdgen.errors import InputError, Location
from dgdgen.yamlio import Document, load_documents_fast, read_bytes, read_text

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Git:
    top: str

    def run(self, *args: str) -> bytes:
        proc = subprocess.run(["git", "-C", self.top, *args], capture_output=True, check=False)
        if proc.returncode != 0:
            msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise InputError(f"git {args[0]} failed: {msg[-1] if msg else proc.returncode}")
        return proc.stdout

    def verify(self, rev: str) -> None:
        proc = subprocess.run(["git", "-C", self.top, "rev-parse", "--verify", "--quiet",
                               rev + "^{commit}"], capture_output=True, check=False)
        if proc.returncode != 0:
            raise InputError(f"unknown Git revision {rev!r}")

    def blobs(self, specs: list[str]) -> list[str | None]:
        """Contents of ``REV:path`` / ``:path`` specs (None when missing)."""
        if not specs:
            return []
        data = "".join(s + "\n" for s in specs).encode("utf-8")
        proc = subprocess.run(["git", "-C", self.top, "cat-file", "--batch"], input=data,
                              capture_output=True, check=False)
        if proc.returncode != 0:
            # git refuses the whole repository: a `.git` pointing nowhere, or a work tree another
            # user owns ("detected dubious ownership", git 2.35.2+), which a CI checkout often is
            lines = [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines()
                     if ln.strip()]
            said = lines[0] + (f" ({lines[-1]})" if len(lines) > 1 else "") if lines else \
                f"exit {proc.returncode}"
            raise InputError(f"git cat-file failed in {self.top}: {said}")
        out: list[str | None] = []
        buf = proc.stdout
        pos = 0
        for _ in specs:
            nl = buf.index(b"\n", pos)
            header = buf[pos:nl].decode("utf-8", "replace")
            pos = nl + 1
            if header.endswith((" missing", " ambiguous")):
                out.append(None)
                continue
            size = int(header.rsplit(" ", 1)[1])
            out.append(buf[pos:pos + size].decode("utf-8", "replace"))
            pos += size + 1
        return out

    def changed(self, *diff_args: str) -> list[tuple[str, str | None]]:
        """(path, path at the base) of changed files, renames followed, deletions left out."""
        raw = self.run("diff", "--name-status", "-z", "-M", "--diff-filter=ACMRT", *diff_args)
        parts = raw.decode("utf-8", "replace").split("\0")
        out: list[tuple[str, str | None]] = []
        i = 0
        while i < len(parts) and parts[i]:
            status = parts[i]
            if status.startswith(("R", "C")):
                out.append((parts[i + 2], parts[i + 1]))
                i += 3
            else:
                out.append((parts[i + 1], None if status == "A" else parts[i + 1]))
                i += 2
        return out


def git_top(cwd: str = ".") -> Git | None:
    """The work tree around ``cwd``: found by looking for `.git` upwards (no subprocess on the
    pre-commit path); `git` itself answers only when the layout is unusual."""
    d = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return Git(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    try:
        proc = subprocess.run(["git", "-C", cwd, "rev-parse", "--show-toplevel"],
                              capture_output=True, check=False)
    except FileNotFoundError:
        return None
    if proc.returncode != 0:
        return None
    return Git(proc.stdout.decode().strip())


def _is_yaml(path: str) -> bool:
    return path.lower().endswith(YAML_SUFFIXES)


def _display(path: str) -> str:
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def _displays(paths: list[str]) -> list[str]:
    """:func:`_display` of each path, each folder's relative path found once (the files of a
    checked folder share it)."""
    folders: dict[str, str] = {}
    out: list[str] = []
    for path in paths:
        folder, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir):
            out.append(_display(path))
            continue
        rel = folders.get(folder)
        if rel is None:
            rel = folders[folder] = os.path.relpath(folder) if folder else os.curdir
        rel = name if rel == os.curdir else os.path.join(rel, name)
        out.append(rel if not rel.startswith("..") else path)
    return out


def _expand(paths: Iterable[str]) -> list[str]:
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                out += [os.path.join(root, f) for f in sorted(files) if _is_yaml(f)]
        else:
            out.append(p)
    return out


def _parse(text: str, display: str) -> list[Document]:
    try:
        docs = load_documents_fast(text, display)
    except InputError as exc:
        if exc.location is not None and not exc.location.file:
            exc.location = Location(display, exc.location.line, exc.location.column)
        raise
    for doc in docs:
        check_object_shape(doc)
    return docs


# Fields of every Kubernetes object that rules read, with the shape the API server demands.
_OBJECT_SHAPE: tuple[tuple[tuple[str, ...], type, str], ...] = (
    (("metadata",), dict, "a mapping"),
    (("metadata", "name"), str, "a string"),
    (("metadata", "namespace"), str, "a string"),
    (("metadata", "labels"), dict, "a mapping"),
    (("metadata", "annotations"), dict, "a mapping"),
    (("spec",), dict, "a mapping"),
    (("data",), dict, "a mapping"),
)


def check_object_shape(doc: Document) -> None:
    """The typed boundary of the checker: a Kubernetes object (a mapping with a string
    apiVersion and kind) whose metadata, spec or data has the wrong shape is one error at its
    file:line here, so no rule ever walks a list where the API demands a mapping. DGDs get the
    full model check in :func:`dgdgen.model.dgd.parse`."""
    data = doc.data
    if not (isinstance(data, dict) and isinstance(data.get("apiVersion"), str)
            and isinstance(data.get("kind"), str)):
        return
    for path, want, what in _OBJECT_SHAPE:
        node: object = data
        for part in path[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        value = node.get(path[-1]) if isinstance(node, dict) else None
        if value is not None and not isinstance(value, want):
            raise InputError(f"must be {what}, got {type(value).__name__}",
                             location=doc.location(path), field=path)


def collect(paths: list[str], base: str | None, *, use_git: bool = True) -> list[FileInput]:
    git = git_top() if use_git else None
    if base is not None and git is None:
        raise InputError("--base needs a Git work tree")
    if git is not None and base is not None:
        git.verify(base)

    if not paths:
        if git is None:
            raise InputError("no files given, and not in a Git work tree to find staged files")
        if base is None:  # pre-commit mode: index vs HEAD
            changed = [(p, b) for p, b in git.changed("--cached") if _is_yaml(p)]
            # The staged texts and those at HEAD in one git process; an added file has none.
            blobs = git.blobs([":" + p for p, _ in changed]
                              + ["HEAD:" + b for _, b in changed if b])
            heads = blobs[:len(changed)]
            at_head = iter(blobs[len(changed):])
            bases = [next(at_head) if b else None for _, b in changed]
            staged = []
            for (p, _), h, b in zip(changed, heads, bases):
                name = _display(os.path.join(git.top, p))
                staged.append(FileInput(name, _parse(h or "", name),
                                        _parse(b, name) if b is not None else None))
            return staged
        changed = [(p, b) for p, b in git.changed(base) if _is_yaml(p)]
        paths = [os.path.join(git.top, p) for p, _ in changed]
        renames = {os.path.realpath(os.path.join(git.top, p)): b for p, b in changed}
    else:
        renames = {}

    files = _expand(paths)
    rev = base or "HEAD"
    base_texts: list[str | None] = [None] * len(files)
    if git is not None:
        # Only the files of the work tree that have a path at the base are asked for: a file
        # outside it, or added since, has none (and no git process runs when no file has one).
        top = os.path.realpath(git.top)
        asked: list[int] = []
        specs: list[str] = []
        for i, real in enumerate(realpaths(files)):
            rel = os.path.relpath(real, top)
            if rel == os.pardir or rel.startswith(os.pardir + os.sep):
                continue
            old = renames.get(real, rel)
            if old:
                asked.append(i)
                specs.append(f"{rev}:{old}")
        for i, text in zip(asked, git.blobs(specs)):
            base_texts[i] = text
    shown = _displays(files)
    parsed = _parse_files(list(zip(files, shown)), base_texts)
    return [FileInput(name, head, base) for name, (head, base) in zip(shown, parsed)]


def realpaths(paths: Iterable[str]) -> list[str]:
    """``os.path.realpath`` of each path, each folder resolved once: realpath looks up every
    component of every path, and a checked folder's files share all but the last."""
    folders: dict[str, str] = {}
    out: list[str] = []
    for path in paths:
        folder, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir):  # not a file's own name: resolved whole
            out.append(os.path.realpath(path))
            continue
        real = folders.get(folder)
        if real is None:
            real = folders[folder] = os.path.realpath(folder)
        full = os.path.join(real, name)
        out.append(os.path.realpath(full) if os.path.islink(full) else full)
    return out


def _parse_files(items: list[tuple[str, str]], base_texts: list[str | None]
                 ) -> list[tuple[list[Document], list[Document] | None]]:
    """Read and parse files, and their texts at the base (None: no base), in this process, with
    the cyclic garbage collector paused; every file first, then the bases (the first error
    reported is that of the first file that has one, as a check without a base reports).

    Parsed documents are acyclic and live until the run ends, yet every collection triggered by
    their allocation scans all of them again: with the collector running, 2,000 files cost
    about 1.6 s of CPU instead of 1.0 s, and the cost grows faster than the number of files.
    Afterwards they are frozen (``gc.freeze``) so later collections skip them too; reference
    counting still frees them. A process pool does not pay on this (2-CPU) machine: sending the
    parsed documents back costs more than parsing saves (docs/performance.md).

    A base text equal to the file's own (a file unchanged since the base) is not parsed again:
    the file's documents serve as its base's too (the checker never changes a document), and
    :func:`dgdgen.check.context.build` then builds their facts once."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        heads: list[list[Document]] = []
        unchanged: list[bool] = []
        for (path, shown), base in zip(items, base_texts):
            text = read_text(path, display=shown)
            heads.append(_parse(text, shown))
            unchanged.append(base == text)
        return [(head, head if same else _parse(base, shown) if base is not None else None)
                for head, same, base, (_, shown) in zip(heads, unchanged, base_texts, items)]
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def load_pair(old: str, new: str) -> FileInput:
    """``dgdgen diff OLD NEW``: NEW is the head, OLD its base."""
    new_shown, old_shown = _display(new), _display(old)
    head = _parse(read_text(new, display=new_shown), new_shown)
    base = _parse(read_text(old, display=old_shown), old_shown)
    return FileInput(new_shown, head, base)


def could_contain(text: str, group: Sequence[str]) -> bool:
    """Whether a YAML text can spell one of the strings of ``group`` in a scalar. A plain or
    quoted scalar holds its characters literally (line folding only inserts spaces); only a
    double-quoted escape (``\\x41``, ``\\u0041``, an escaped line break) can spell one
    otherwise, so a text with a backslash always qualifies. Case is ignored."""
    if "\\" in text:
        return True
    lowered = text.lower()
    return any(s.lower() in lowered for s in group)


class _Sibling:
    """One sibling file's bytes, with its ASCII-lowercased copy and its digest made once, when
    first needed (the same file answers the pre-filters of every rule)."""

    __slots__ = ("_digest", "_lowered", "path", "raw")

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        self.raw = raw
        self._lowered: bytes | None = None
        self._digest: str | None = None

    def could_contain(self, group: Sequence[str]) -> bool:
        """:func:`could_contain` on the bytes. ASCII lowercasing keeps every literal
        occurrence of a string (what the pre-filter's soundness rests on) and needs no
        decoding."""
        if b"\\" in self.raw:
            return True
        if self._lowered is None:
            self._lowered = self.raw.lower()
        low = self._lowered
        return any(s.lower().encode("utf-8") in low for s in group)

    @property
    def digest(self) -> str:
        if self._digest is None:
            self._digest = siblings.digest(self.raw)
        return self._digest


def _list_siblings(directory: str, checked_real: set[str]) -> list[_Sibling]:
    """The YAML files of ``directory`` that are not checked, in name order, each read once."""
    found: list[_Sibling] = []
    try:
        with os.scandir(directory) as it:
            names = sorted(e.name for e in it if _is_yaml(e.name))
    except OSError:
        return found
    for name in names:
        path = os.path.join(directory, name)
        if path in checked_real:
            continue
        try:  # the limits of every other input (regular files, size): else skipped
            found.append(_Sibling(path, read_bytes(path)))
        except InputError:
            continue
    return found


def sibling_loader(checked: Iterable[str],
                   cache: siblings.FactsCache | None = None) -> SiblingLoader:
    """The sibling objects (:class:`dgdgen.check.siblings.SiblingObject`) of YAML files in the
    directory of a checked file that are not checked themselves.

    Each directory is listed and each file read once per run. A file's objects come from the
    facts cache when its bytes were seen before (``cache``, by default
    :meth:`FactsCache.default`). Otherwise a file whose text cannot spell a kind the
    cross-file rules read (:data:`~dgdgen.check.siblings.SIBLING_KINDS`) holds none, and any
    other file is parsed only when its text passes the caller's pre-filter (``require``: for
    every group, one of its strings, :func:`could_contain`) and, when the caller names the
    ``namespaces`` it looks in, its head does not prove that its only document is in another one
    (:func:`dgdgen.check.siblings.head_namespace`), so a pre-commit run does not grow with the
    folder. A file that is not UTF-8 or does not parse holds none. What was learnt is saved to
    the cache after the call that learnt it."""
    names = list(checked)
    reals = realpaths(names)
    checked_real = set(reals)
    folder_of = {f: os.path.dirname(real) for f, real in zip(names, reals)}
    listed: dict[str, list[_Sibling]] = {}
    resolved: dict[str, list[siblings.SiblingObject]] = {}
    answers: dict[tuple[str, tuple[tuple[str, ...], ...], frozenset[str | None] | None],
                  list[siblings.SiblingObject]] = {}
    store: list[siblings.FactsCache] = [cache] if cache is not None else []

    def facts_cache() -> siblings.FactsCache:
        if not store:
            store.append(siblings.FactsCache.default())
        return store[0]

    def load(file: str, require: Sequence[Sequence[str]] = (),
             namespaces: Collection[str | None] | None = None) -> list[siblings.SiblingObject]:
        directory = folder_of.get(file)
        if directory is None:
            directory = folder_of[file] = os.path.dirname(os.path.realpath(file))
        wanted = None if namespaces is None else frozenset(namespaces)
        key = (directory, tuple(tuple(group) for group in require), wanted)
        if key in answers:  # checked files in one folder share their siblings
            return answers[key]
        if directory not in listed:
            listed[directory] = _list_siblings(directory, checked_real)
        out: list[siblings.SiblingObject] = []
        for sib in listed[directory]:
            objs = resolved.get(sib.path)
            if objs is None:
                fc = facts_cache()
                facts = fc.get(sib.digest)
                if facts is None:
                    if not sib.could_contain(siblings.SIBLING_KINDS):
                        facts = []
                    elif not all(sib.could_contain(group) for group in require):
                        continue  # this caller cannot find anything here: not parsed
                    elif wanted is not None and _elsewhere(sib, wanted, fc):
                        continue  # only objects of another namespace: not parsed
                    else:
                        facts = _sibling_facts(sib)
                    fc.put(sib.digest, facts)
                objs = [siblings.SiblingObject(sib.path, *fact) for fact in facts]
                resolved[sib.path] = objs
            out += objs
        if store:
            store[0].save()  # when this call learnt something
        answers[key] = out
        return out

    return load


def _elsewhere(sib: _Sibling, wanted: frozenset[str | None], fc: siblings.FactsCache) -> bool:
    """Whether the head of the sibling proves that all its objects are in a namespace other
    than those ``wanted`` (:func:`dgdgen.check.siblings.head_namespace`; what it found is kept
    in the facts cache, so an unchanged sibling is not read again)."""
    ns = fc.head(sib.digest)
    if ns is None:
        try:
            text = sib.raw.decode("utf-8")
        except UnicodeDecodeError:
            return True  # holds no object (_sibling_facts)
        ns = siblings.head_namespace(text)
        if ns is None:
            return False
        fc.put_head(sib.digest, ns)
    return ns not in wanted


def _sibling_facts(sib: _Sibling) -> list[siblings.Fact]:
    try:
        text = sib.raw.decode("utf-8")
    except UnicodeDecodeError:
        return []
    try:
        docs = load_documents_fast(text, _display(sib.path))
    except InputError:
        return []
    return siblings.facts_of(docs)
