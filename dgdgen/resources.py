"""Shipped data (templates/, schemas/, policies/, argo/), found the same way in a checkout and in
an installed wheel.

In the repository the data sits at the top level; the wheel carries it under ``dgdgen/_data/``
(force-included by the build backend, see pyproject.toml). Code asks for a path relative to one
of those roots and never cares which layout it runs from.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

ROOTS = ("templates", "schemas", "policies", "argo")


def data(root: str, *parts: str) -> Traversable:
    """A shipped data file or directory, e.g. ``data("schemas", "rollout-spec.schema.json")``."""
    if root not in ROOTS:
        raise ValueError(f"unknown data root {root!r}")
    packaged = resources.files("dgdgen") / "_data" / root
    if packaged.is_dir():
        base: Traversable = packaged
    else:
        base = Path(__file__).resolve().parent.parent / root
    for part in parts:
        base = base / part
    return base


def read_text(root: str, *parts: str) -> str:
    return data(root, *parts).read_text(encoding="utf-8")


def read_bytes(root: str, *parts: str) -> bytes:
    return data(root, *parts).read_bytes()
