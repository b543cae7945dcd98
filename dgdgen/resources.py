"""Shipped data (templates/, schemas/, policies/, argo/), found the same way in a checkout and in
an installed wheel.

In the repository the data sits at the top level; the wheel carries it under ``dgdgen/_data/``
(force-included by the build backend, see pyproject.toml). Code asks for a path relative to one
of those roots and never cares which layout it runs from.
"""

from __future__ import annotations

from pathlib import Path

ROOTS = ("templates", "schemas", "policies", "argo")

# The package's own folder. A wheel is installed unpacked, so its data are plain files beside the
# modules; `importlib.resources` would give the same paths here, and importing it (with
# `tempfile`, `shutil` and the compression modules) cost 6-7 ms of every command
# (docs/performance.md).
_PACKAGE = Path(__file__).resolve().parent


def data(root: str, *parts: str) -> Path:
    """A shipped data file or directory, e.g. ``data("schemas", "rollout-spec.schema.json")``."""
    if root not in ROOTS:
        raise ValueError(f"unknown data root {root!r}")
    packaged = _PACKAGE / "_data" / root
    base = packaged if packaged.is_dir() else _PACKAGE.parent / root
    for part in parts:
        base = base / part
    return base


def read_text(root: str, *parts: str) -> str:
    return data(root, *parts).read_text(encoding="utf-8")


def read_bytes(root: str, *parts: str) -> bytes:
    return data(root, *parts).read_bytes()
