"""The index a rendered directory keeps (``.dgdgen-index``): what dgdgen owns there, the
recorded step, the step it came from and the gate results — and its shape, checked before
anything acts on it.

The index is read back from a Git repository that pull requests change, so it is untrusted
input: every path it names must be relative, normalised, made of the characters dgdgen writes in
file names, and never ``..``, ``.git``, absolute or one of dgdgen's own bookkeeping names; every
field has its type and bounds. A hostile index is one clear error (file, line, field) before any
file is touched (docs/robustness.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dgdgen.errors import InputError, Location

INDEX = ".dgdgen-index"
STAGING = ".dgdgen-staging"
INDEX_FORMAT = 1
GATE_RESULTS = ("passed", "failed", "inconclusive")
# The index of a real rollout lists a few dozen files in a few kB; the bounds only keep a hostile
# one from costing more than that by orders of magnitude.
MAX_INDEX_BYTES = 4 * 1024 * 1024
MAX_FILES = 10_000
# A file name component as dgdgen writes them (output.file_component: DNS-1123 characters, `_`
# for the rest); anything else in an index was not written by dgdgen.
_COMPONENT = re.compile(r"[A-Za-z0-9._-]{1,255}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_LABEL = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")  # a plan state label: step-03, rollback-02, …

_SINCE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")  # UTC, to the second
MAX_HOLD_TEXT = 1024


@dataclass(frozen=True)
class Hold:
    """A hold (``dgdgen pause``): promote and cleanup refuse until ``dgdgen resume`` removes
    it; rollback is never held. Who, why and since when (UTC, ``YYYY-MM-DDTHH:MM:SSZ``)."""

    by: str
    reason: str
    since: str

    def to_json(self) -> dict[str, str]:
        return {"by": self.by, "reason": self.reason, "since": self.since}


@dataclass(frozen=True)
class GateResult:
    gate: str
    result: str  # passed | failed | inconclusive
    message: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"gate": self.gate, "result": self.result}
        if self.message:
            out["message"] = self.message
        return out


# --------------------------------------------------------------------------- paths


def path_problem(rel: object) -> str | None:
    """Why ``rel`` cannot name a file dgdgen owns inside its directory, or None when it can."""
    if not isinstance(rel, str):
        return f"expected a relative file path (a string), got {type(rel).__name__}"
    if not rel:
        return "an empty path"
    if "\0" in rel:
        return "a path holding a NUL character"
    if rel.startswith("/") or re.match(r"[A-Za-z]:", rel) or "\\" in rel:
        return "an absolute path (or one with a backslash); only paths inside the directory"
    if len(rel) > 1024:
        return "a path longer than 1024 characters"
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            return ("not a normalised path inside the directory (an empty, '.' or '..' "
                    "component)")
        if part.lower() == ".git":
            return "a path inside a .git directory"
        if not _COMPONENT.fullmatch(part):
            return "a file name with characters dgdgen never writes (letters, digits, '.', '_' " \
                "and '-' only)"
    if parts[0] in (INDEX, STAGING):
        return f"a path of dgdgen's own bookkeeping ({parts[0]})"
    return None


def shown(value: object) -> str:
    """A value from an untrusted file, printable whatever it holds (control characters, lone
    surrogates and all), and short."""
    text = json.dumps(value, ensure_ascii=True) if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _line_of(text: str, key: str) -> int | None:
    """The line of ``"key":`` in the index text (as dgdgen writes it: one key per line)."""
    needle = json.dumps(key) + ":"
    at = text.find(needle)
    return None if at < 0 else text.count("\n", 0, at) + 1


# --------------------------------------------------------------------------- the index


@dataclass(frozen=True)
class Index:
    """What the directory holds: the rollout, the recorded state and the owned files."""

    rollout: str
    stable_revision: str
    candidate_revision: str
    step: str  # a plan state label: step-00 .. step-NN, rollback, cleanup
    previous: str | None  # the state the last transition came from (decides sync waves)
    files: dict[str, str] = field(default_factory=dict)  # relative path -> sha256
    gates: dict[str, GateResult] = field(default_factory=dict)  # step label -> result
    hold: Hold | None = None  # dgdgen pause; written only while there is one

    def to_text(self) -> str:
        doc: dict[str, Any] = {
            "format": INDEX_FORMAT,
            "generator": "dgdgen",
            "rollout": self.rollout,
            "stableRevision": self.stable_revision,
            "candidateRevision": self.candidate_revision,
            "step": self.step,
            "previous": self.previous,
            "gates": {k: v.to_json() for k, v in sorted(self.gates.items())},
            "files": dict(sorted(self.files.items())),
        }
        if self.hold is not None:
            doc["hold"] = self.hold.to_json()
        return json.dumps(doc, indent=2) + "\n"

    @classmethod
    def parse(cls, text: str, where: str) -> Index:
        """The index, checked for shape; one :class:`InputError` naming the first problems (the
        file, the line where it can be found, the field) before anything acts on it."""
        return _IndexParser(text, where).parse()


_INDEX_KEYS = {"format", "generator", "rollout", "stableRevision", "candidateRevision", "step",
               "previous", "gates", "files", "hold"}


class _IndexParser:
    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.problems: list[tuple[tuple[str | int, ...], str, int | None]] = []

    def _bad(self, path: tuple[str | int, ...], message: str, line_key: str | None = None
             ) -> None:
        line = _line_of(self.text, line_key) if line_key is not None else None
        if line is None and path and isinstance(path[0], str):
            line = _line_of(self.text, path[0])
        self.problems.append((path, message, line))

    def _error(self) -> InputError:
        path, message, line = self.problems[0]
        more = len(self.problems) - 1
        if more:
            message += f" (and {more} more problem(s): " + "; ".join(
                f"{'.'.join(str(p) for p in q)}: {m}" for q, m, _ in self.problems[1:4]) + (
                " …" if more > 3 else "") + ")"
        return InputError(
            f"{message}; the index is not one dgdgen wrote, so nothing was touched",
            location=Location(self.where, line), field=path,
            hint="restore it from the last dgdgen commit (git checkout <commit> -- <dir>/"
            f"{INDEX}), or review the change that edited it",
        )

    def _string(self, doc: Mapping[str, Any], key: str, *, label: bool = False,
                optional: bool = False) -> str | None:
        value = doc.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value or len(value) > 253:
            self._bad((key,), f"expected a non-empty string, got {shown(value)}")
            return None
        if label and not _LABEL.fullmatch(value):
            self._bad((key,), f"expected a plan state (step-NN, rollback-NN, rollback, cleanup), "
                      f"got {shown(value)}")
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            self._bad((key,), f"not encodable text: {shown(value)}")
            return None
        return value

    def parse(self) -> Index:
        if len(self.text) > MAX_INDEX_BYTES:
            raise InputError(f"the index is over {MAX_INDEX_BYTES} bytes; dgdgen writes a few kB",
                             location=Location(self.where))
        try:
            doc = json.loads(self.text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not a dgdgen index: not valid JSON ({exc.msg})",
                             location=Location(self.where, exc.lineno, exc.colno)) from None
        except (ValueError, RecursionError) as exc:
            raise InputError(f"not a dgdgen index: {str(exc) or 'nested too deeply'}",
                             location=Location(self.where)) from None
        if not isinstance(doc, dict):
            raise InputError(f"not a dgdgen index: expected a JSON object, got {shown(doc)}",
                             location=Location(self.where))
        for key in sorted(set(doc) - _INDEX_KEYS, key=str):
            self._bad((key,), "unknown field")
        if doc.get("format") != INDEX_FORMAT or isinstance(doc.get("format"), bool):
            self._bad(("format",), f"unsupported index format {shown(doc.get('format'))} "
                      f"(this dgdgen reads format {INDEX_FORMAT})")
        if doc.get("generator") != "dgdgen":
            self._bad(("generator",), f"expected \"dgdgen\", got {shown(doc.get('generator'))}")
        rollout = self._string(doc, "rollout")
        stable = self._string(doc, "stableRevision")
        candidate = self._string(doc, "candidateRevision")
        step = self._string(doc, "step", label=True)
        previous = self._string(doc, "previous", label=True, optional=True)
        gates = self._gates(doc.get("gates", {}))
        files = self._files(doc.get("files"))
        hold = self._hold(doc["hold"]) if "hold" in doc else None
        if self.problems:
            raise self._error()
        assert rollout and stable and candidate and step
        return Index(rollout, stable, candidate, step, previous, files, gates, hold)

    def _hold(self, raw: object) -> Hold | None:
        if not isinstance(raw, dict) or set(raw) != {"by", "reason", "since"}:
            self._bad(("hold",), "expected {by, reason, since} (written by `dgdgen pause`), got "
                      f"{shown(raw)}")
            return None
        ok = True
        for key in ("by", "reason"):
            value = raw[key]
            if not isinstance(value, str) or not value.strip() or len(value) > MAX_HOLD_TEXT \
                    or any(ord(c) < 32 for c in value):
                self._bad(("hold", key), f"expected one line of text (at most {MAX_HOLD_TEXT} "
                          f"characters), got {shown(value)}", key)
                ok = False
                continue
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                self._bad(("hold", key), f"not encodable text: {shown(value)}", key)
                ok = False
        since = raw["since"]
        if not isinstance(since, str) or not _SINCE.fullmatch(since):
            self._bad(("hold", "since"), f"expected a UTC time YYYY-MM-DDTHH:MM:SSZ, got "
                      f"{shown(since)}", "since")
            ok = False
        return Hold(raw["by"], raw["reason"], raw["since"]) if ok else None

    def _gates(self, raw: object) -> dict[str, GateResult]:
        if not isinstance(raw, dict):
            self._bad(("gates",), f"expected an object of step → gate result, got {shown(raw)}")
            return {}
        out = {}
        for label, value in raw.items():
            where = ("gates", label)
            if not _LABEL.fullmatch(label):
                self._bad(where, f"expected a plan state as the key, got {shown(label)}", label)
                continue
            if not isinstance(value, dict) or set(value) - {"gate", "result", "message"}:
                self._bad(where, "expected {gate, result, message}", label)
                continue
            gate, result, message = value.get("gate"), value.get("result"), value.get("message", "")
            if not isinstance(gate, str) or not gate or len(gate) > 253:
                self._bad(where + ("gate",), f"expected a gate name, got {shown(gate)}", label)
            elif result not in GATE_RESULTS:
                self._bad(where + ("result",), f"expected one of {', '.join(GATE_RESULTS)}, got "
                          f"{shown(result)}", label)
            elif not isinstance(message, str) or len(message) > 65536:
                self._bad(where + ("message",), "expected a string (at most 64 kB)", label)
            else:
                try:
                    message.encode("utf-8")
                except UnicodeEncodeError:
                    self._bad(where + ("message",), f"not encodable text: {shown(message)}",
                              label)
                    continue
                out[label] = GateResult(gate, str(result), message)
        return out

    def _files(self, raw: object) -> dict[str, str]:
        if not isinstance(raw, dict):
            self._bad(("files",), f"expected an object of path → sha256, got {shown(raw)}")
            return {}
        if len(raw) > MAX_FILES:
            self._bad(("files",), f"{len(raw)} entries; dgdgen owns at most {MAX_FILES} files "
                      "in one directory")
            return {}
        out = {}
        for rel, sha in raw.items():
            problem = path_problem(rel)
            if problem is not None:
                self._bad(("files", shown(rel)), f"{problem}: {shown(rel)}", rel)
            elif not isinstance(sha, str) or not _SHA256.fullmatch(sha):
                self._bad(("files", rel), f"expected a sha256 (64 hex digits), got {shown(sha)}",
                          rel)
            else:
                out[rel] = sha
        return out


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
