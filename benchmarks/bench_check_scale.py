"""`dgdgen check DIR` against its parse floor, at several folder sizes.

    python benchmarks/bench_check_scale.py [--sizes 2000 20000] [--runs 1]

For each size, a folder of single-DGD files is generated as ``bench_perf.py`` generates its bulk
corpus (the checker corpus's DGDs, each copy with its own name), outside any Git work tree, and
two commands are run back to back, ``--runs`` pairs after one warm-up of each:

* ``dgdgen check DIR --fail-on never`` (every rule, the text report to /dev/null);
* the parse floor (``bench_perf.PARSE_ONLY``): one Python process that reads every file and
  parses it with PyYAML's libyaml loader (``yaml.CSafeLoader``), the files named on its command
  line.

Printed per size: the CPU time (user + system, the process and what it waited for) of each side
in every pair, the medians and the per-pair ratios check / floor; last, how the median ratio of
the largest size compares with that of the smallest (a ratio that grows with the number of files
is work that is not linear in it). The target (docs/performance.md): at most 1.3 at every size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_perf import BIN, ENV, PARSE_ONLY, REPO, bulk_corpus, cpu, machine, paired


def measure(folder: Path, runs: int) -> tuple[float, float, list[float], list[str]]:
    """Median CPU of the check and of the floor over ``runs`` pairs, each pair's ratio, and each
    pair's two CPU times."""
    files = sorted(str(p) for p in folder.iterdir())
    seen: dict[str, list[float]] = {"check": [], "floor": []}

    def check() -> float:
        seen["check"].append(cpu([str(BIN / "dgdgen"), "check", str(folder), "--fail-on",
                                  "never"], cwd=REPO, env=ENV))
        return seen["check"][-1]

    def floor() -> float:
        seen["floor"].append(cpu([sys.executable, "-c", PARSE_ONLY, *files], cwd=REPO, env=ENV))
        return seen["floor"][-1]

    a, b, ratios = paired(check, floor, runs)
    each = [f"{x:.3f} / {y:.3f}"  # the warm-up runs left out
            for x, y in zip(seen["check"][1:], seen["floor"][1:])]
    return a, b, ratios, each


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    ap.add_argument("--runs", type=int, default=1, help="pairs per size (after one warm-up)")
    args = ap.parse_args()
    load = os.getloadavg()
    print(f"Machine: {machine()}; {time.strftime('%Y-%m-%d %H:%M %Z')}; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.runs} pair(s) per size\n")
    print("| files | MB | `dgdgen check DIR` CPU (median) | parse floor CPU (median) "
          "| ratio median (min–max) | each pair: check / floor |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            folder = Path(tmp) / f"bulk{n}"
            total = bulk_corpus(folder, n)
            a, b, ratios, each = measure(folder, args.runs)
            medians[n] = statistics.median(ratios)
            spread = f"{medians[n]:.2f} ({min(ratios):.2f}–{max(ratios):.2f})"
            print(f"| {n:,} | {total / 1e6:.1f} | {a:.3f} s | {b:.3f} s | {spread} "
                  f"| {', '.join(each)} |", flush=True)
            shutil.rmtree(folder)  # free the disk before the next, larger size
    if len(medians) > 1:
        small, large = min(medians), max(medians)
        print(f"\nratio at {large:,} files / ratio at {small:,} files: "
              f"{medians[large] / medians[small]:.2f} (1.00: the cost grows as the floor does)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
