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


class InputErrors(DgdgenError):
    """Several independent input errors found in one pass (e.g. all bad fields of a spec)."""

    def __init__(self, errors: Sequence[InputError]) -> None:
        self.errors = list(errors)
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
