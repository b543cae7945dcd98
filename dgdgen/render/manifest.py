"""One rendered object and the file it goes to: the value every renderer returns, below the
renderers and the package's :func:`dgdgen.render.render_state` that gathers them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Manifest:
    obj: dict[str, Any]
    overlays: tuple[str, ...] = ()  # schema overlays the object needs (proposed fields)

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def filename(self) -> str:
        # One path component whatever the object's name holds (`--no-validate` lets any name
        # through): output paths stay inside the output folder by construction.
        return file_component(f"{self.kind.lower()}-{self.name}.yaml")


def file_component(name: str) -> str:
    """``name`` as one safe file name: characters outside DNS-1123 names plus ``_`` become
    ``_`` and a leading dot is escaped, so it never holds a separator and is never ``..``."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return "_" + safe[1:] if safe.startswith(".") else safe
