"""The cluster model's cost, and the property run over random specs.

    python benchmarks/bench_cluster.py [--specs 2000]

1. For every bundled example: the model's CPU time over its whole rendered tree (every state at
   rest and every moment of every transition), per state and per moment.
2. ``--specs`` random specs drawn as ``tests/cluster/test_render_properties.py`` draws them
   (derandomized: the same specs every run), each rendered and checked with its Argo objects
   (0-3 clusters in drawn waves): how many rendered, how many were refused, how many findings
   of each invariant, and the time.

Figures go to docs/performance.md ("The cluster model").
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "tests" / "cluster")]


def per_example() -> None:
    from dgdgen.cluster.check import check_tree
    from dgdgen.cluster.rules import Tree
    from dgdgen.cluster.transitions import read_tree

    print("| example | states | transitions | moments | model CPU (s) | per state (ms) | "
          "per moment (ms) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for rollout in sorted(REPO.glob("examples/*/rollout.yaml")):
        root = str(rollout.parent / "rendered")
        tree = Tree(root, read_tree(root))
        moments = sum(1 for _ in tree.moments())
        best = min(_cpu(lambda: check_tree(root)) for _ in range(5))
        print(f"| {rollout.parent.name} | {len(tree.states)} | {len(tree.transitions)} | "
              f"{moments} | {best:.3f} | {1000 * best / len(tree.states):.1f} | "
              f"{1000 * best / moments:.2f} |")


def _cpu(fn: object) -> float:
    t = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t


def random_specs(n: int) -> None:
    from hypothesis import HealthCheck, given, settings
    from test_render_properties import GITOPS_OWNED, RENDERER_OWNED, argo_objects, specs

    from dgdgen import yamlio
    from dgdgen.cluster.check import check_files
    from dgdgen.errors import DgdgenError
    from dgdgen.pipeline.files import all_files
    from dgdgen.pipeline.prepare import prepare

    counts: collections.Counter[str] = collections.Counter()
    model = [0.0]
    states = [0]
    bugs: list[str] = []

    @settings(max_examples=n, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(specs())
    def run(drawn: tuple[Path, dict[str, object]]) -> None:
        example, doc = drawn
        tmp = Path(tempfile.mkdtemp())
        try:
            for name in os.listdir(example):
                if name not in ("rollout.yaml", "rendered") and (example / name).is_file():
                    shutil.copy(example / name, tmp / name)
            (tmp / "rollout.yaml").write_text(yamlio.dump(doc))
            try:
                prepared = prepare(str(tmp / "rollout.yaml"))
                files = all_files(prepared, validate=False)
                argo = argo_objects(prepared)
            except DgdgenError:
                counts["refused"] += 1
                return
            counts["rendered"] += 1
            fan_out = len(prepared.loaded.spec.spec.gitops.clusters)
            counts[f"clusters {fan_out}"] += 1
            states[0] += len({k.split("/", 1)[0] for k in files if "/" in k})
            t = time.process_time()
            found = check_files(files, str(tmp / "out"))
            model[0] += time.process_time() - t
            gitops = check_files(argo, str(tmp / "argo"))
            for f in found + gitops:
                counts[f.code] += 1
                if f.code in (RENDERER_OWNED if f in found else GITOPS_OWNED):
                    bugs.append(f"{example.name}: {f.code} {f.message}")
        finally:
            shutil.rmtree(tmp)

    t0 = time.monotonic()
    c0 = time.process_time()
    run()
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    print(f"\n{n} random specs: {counts['rendered']} rendered, {counts['refused']} refused; "
          f"findings: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())
                                     if k.startswith("CLU")) or "none")
          + f"; renderer bugs: {len(bugs)}; rendered with 0/1/2/3 clusters: "
          + "/".join(str(counts[f"clusters {n}"]) for n in range(4)))
    print(f"run: {wall:.1f} s wall, {cpu:.1f} s CPU; the model: {model[0]:.2f} s CPU over "
          f"{states[0]} states ({1000 * model[0] / max(states[0], 1):.2f} ms per state)")
    for b in bugs[:10]:
        print("  BUG", b)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=2000)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M %Z')}, load "
          f"{os.getloadavg()[0]:.1f}\n")
    per_example()
    random_specs(args.specs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
