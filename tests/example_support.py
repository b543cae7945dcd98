"""The bundled examples' DGDs as upstream ships them.

Each example's `dgd.yaml` is an upstream file plus the stable frontend's request-migration limit,
every added line marked (examples/SOURCES.md). Tests that need the upstream file exactly (the
provenance check, the plan's warning for an unprotected stable, the "before" loss figure) drop
the marked lines.
"""

from __future__ import annotations

from pathlib import Path

from gen_support import copy_example_inputs

REPO = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = REPO / "examples"
MARK = "# + request migration (examples/SOURCES.md)"


def upstream_text(example: str | Path) -> str:
    """The example's dgd.yaml without the lines it adds to the upstream file."""
    path = Path(example)
    if not path.is_absolute():
        path = EXAMPLES_DIR / path
    text = (path / "dgd.yaml").read_text()
    return "".join(ln for ln in text.splitlines(keepends=True) if MARK not in ln)


def added_lines(example: str | Path) -> list[str]:
    path = Path(example)
    if not path.is_absolute():
        path = EXAMPLES_DIR / path
    return [ln for ln in (path / "dgd.yaml").read_text().splitlines() if MARK in ln]


def upstream_copy(tmp: Path, example: str) -> Path:
    """A copy of the example (rollout spec and upstream DGD) in ``tmp``; returns the spec."""
    (tmp / "dgd.yaml").write_text(upstream_text(example))
    (tmp / "rollout.yaml").write_text((EXAMPLES_DIR / example / "rollout.yaml").read_text())
    copy_example_inputs(EXAMPLES_DIR / example, tmp)
    return tmp / "rollout.yaml"
