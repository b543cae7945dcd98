"""The small family of errors dgdgen raises; the CLI maps them to exit codes in one place."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Path_ = tuple[str | int, ...]


def format_path(path: Sequence[str | int]) -> str:
    """Render a field path as ``spec.services.Frontend.replicas`` / ``spec.steps[2].weight``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The closest known spelling of a misspelt key, if one is close enough."""
    matches = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return matches[0] if matches else None


class DgdgenError(Exception):
    """Base class. ``exit_code`` is what the CLI returns for it; ``notes`` are what the command
    did before it failed (finished an interrupted write, say), printed before the error."""

    exit_code = 2
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        if self.column is None:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.column}"


class InputError(DgdgenError):
    """Bad input: one clear message naming the file, line and field path."""

    def __init__(
        self,
        message: str,
        *,
        location: Location | None = None,
        field: Sequence[str | int] = (),
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.location = location
        self.field = tuple(field)
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = []
        if self.location is not None:
            parts.append(f"{self.location}:")
        if self.field:
            parts.append(f"{format_path(self.field)}:")
        parts.append(self.message)
        text = " ".join(parts)
        if self.hint:
            text += f" ({self.hint})"
        return text


# At most this many problems are reported per field (a list, or a mapping's own keys); the rest
# are counted on one line. A 200,000-item list of wrong values was 200,000 lines.
MAX_PER_FIELD = 10


def field_group(path: Sequence[str | int]) -> Path_:
    """The field a problem at ``path`` counts against for :data:`MAX_PER_FIELD`: the list it is
    in (``spec.steps[3].weight`` → ``spec.steps``: its items are one field), else the mapping
    that holds it (``spec.x1`` → ``spec``)."""
    for i, part in enumerate(path):
        if isinstance(part, int):
            return tuple(path[:i])
    return tuple(path[:-1])


def more_than_shown(count: int) -> str:
    return f"and {count:,} more problem(s) in this field ({MAX_PER_FIELD} shown)"


def capped(errors: Sequence[InputError]) -> list[InputError]:
    """``errors`` with at most :data:`MAX_PER_FIELD` per field (:func:`field_group`) and file, in
    their order; the rest of a field's become one error, where the first of them was."""
    out: list[InputError] = []
    seen: dict[tuple[str, Path_], int] = {}
    extra: dict[tuple[str, Path_], int] = {}
    for e in errors:
        key = (e.location.file if e.location is not None else "", field_group(e.field))
        n = seen.get(key, 0)
        seen[key] = n + 1
        if n < MAX_PER_FIELD:
            out.append(e)
        elif n == MAX_PER_FIELD:
            extra[key] = len(out)
            out.append(InputError("", location=e.location, field=key[1]))
    for key, i in extra.items():
        out[i].message = more_than_shown(seen[key] - MAX_PER_FIELD)
    return out


class InputErrors(DgdgenError):
    """Several independent input errors found in one pass (e.g. all bad fields of a spec), at
    most :data:`MAX_PER_FIELD` per field."""

    def __init__(self, errors: Sequence[InputError]) -> None:
        self.errors = capped(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class PlanError(InputError):
    """The spec is well-formed but describes a rollout that cannot be planned."""


class InputWarning(UserWarning):
    """Input that is accepted but probably not meant; raised with :func:`warnings.warn`, printed
    by the CLI as ``dgdgen CMD: warning: ...`` (and an error under ``-W error``)."""


class ValidationFailed(DgdgenError):
    """Rendered output does not validate against its schema (a defect or an impossible input)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))
