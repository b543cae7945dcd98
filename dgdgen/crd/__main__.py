"""``python -m dgdgen.crd --regenerate``: rebuild schemas/crds/compiled/ from the vendored CRDs.

``--check`` exits 1 (and names the files) when the committed derived files are stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dgdgen.crd import catalog

REPO_CRDS = Path(__file__).resolve().parents[2] / "schemas" / "crds"


def stale_files(crd_root: Path) -> list[str]:
    """Derived files that differ from (or are missing next to) a fresh compile."""
    fresh = catalog.compile_sources(crd_root)
    out_dir = crd_root / catalog.COMPILED_DIR
    stale = []
    for name, text in sorted(fresh.items()):
        path = out_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    if out_dir.is_dir():
        stale.extend(sorted(p.name for p in out_dir.glob("*.json") if p.name not in fresh))
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dgdgen.crd", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--regenerate", action="store_true", help="rewrite the compiled schemas")
    mode.add_argument("--check", action="store_true", help="exit 1 if they are stale")
    parser.add_argument("--crds", type=Path, default=REPO_CRDS, help="the schemas/crds directory")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.crds)
        for name in stale:
            print(f"stale: {args.crds / catalog.COMPILED_DIR / name}")
        return 1 if stale else 0
    for name in catalog.regenerate(args.crds):
        print(args.crds / catalog.COMPILED_DIR / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
