"""``python -m dgdgen.crd --regenerate``: rebuild schemas/crds/compiled/ from the vendored CRDs and
schemas/kubernetes/compiled/ from the vendored core schemas.

``--check`` exits 1 (and names the files) when the committed derived files are stale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dgdgen.crd import catalog, core

REPO_CRDS = Path(__file__).resolve().parents[2] / "schemas" / "crds"
REPO_KUBERNETES = REPO_CRDS.parent / "kubernetes"


def _stale(fresh: dict[str, str], out_dir: Path) -> list[str]:
    stale = []
    for name, text in sorted(fresh.items()):
        path = out_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(name)
    if out_dir.is_dir():
        stale.extend(sorted(p.name for p in out_dir.glob("*.json") if p.name not in fresh))
    return stale


def stale_files(crd_root: Path) -> list[str]:
    """Derived CRD files that differ from (or are missing next to) a fresh compile."""
    return _stale(catalog.compile_sources(crd_root), crd_root / catalog.COMPILED_DIR)


def stale_core_files(kubernetes_root: Path) -> list[str]:
    """The same for the core-kind bundles (:func:`dgdgen.crd.core.compile_sources`)."""
    return _stale(core.compile_sources(kubernetes_root), kubernetes_root / core.COMPILED_DIR)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dgdgen.crd", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--regenerate", action="store_true", help="rewrite the compiled schemas")
    mode.add_argument("--check", action="store_true", help="exit 1 if they are stale")
    parser.add_argument("--crds", type=Path, default=REPO_CRDS, help="the schemas/crds directory")
    parser.add_argument("--kubernetes", type=Path, default=REPO_KUBERNETES,
                        help="the schemas/kubernetes directory")
    args = parser.parse_args(argv)
    crd_out = args.crds / catalog.COMPILED_DIR
    core_out = args.kubernetes / core.COMPILED_DIR
    if args.check:
        stale = [crd_out / n for n in stale_files(args.crds)]
        stale += [core_out / n for n in stale_core_files(args.kubernetes)]
        for path in stale:
            print(f"stale: {path}")
        return 1 if stale else 0
    for name in catalog.regenerate(args.crds):
        print(crd_out / name)
    for name in catalog.write_compiled(core.compile_sources(args.kubernetes), core_out):
        print(core_out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
