"""The value every validator in :mod:`dgdgen.crd` returns."""

from __future__ import annotations

from dataclasses import dataclass

from dgdgen.errors import format_path

FieldPath = tuple[str | int, ...]


@dataclass(frozen=True, order=True)
class Violation:
    """One reason the API server would reject (or silently alter) an object.

    ``path`` is the field path inside the object (``("spec", "components", 1, "name")``);
    ``rule`` names what failed: the CEL expression of an ``x-kubernetes-validations`` rule, or
    the schema keyword (``"type"``, ``"required"``, ``"unknown-field"``, ``"maxItems"`` ...).
    ``reason`` is the CEL rule's ``reason`` (``FieldValueInvalid`` when the rule gives none).
    """

    path: FieldPath
    message: str
    rule: str | None = None
    reason: str | None = None

    def __str__(self) -> str:
        where = format_path(self.path) or "<object>"
        return f"{where}: {self.message}"
