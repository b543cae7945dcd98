"""Generator benchmarks: `dgdgen --help` cold start and rendering every example, every step.

    python benchmarks/bench_generator.py [--runs N]

Prints a Markdown table for docs/performance.md. Each figure is the median (and min) of N runs
of a fresh process, so imports are included, as a user sees them.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _time(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    specs = sorted(str(p) for p in (REPO / "examples").glob("*/rollout.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            ("python -c pass (interpreter floor)", _time([sys.executable, "-c", "pass"], args.runs)),
            ("dgdgen --help", _time([sys.executable, "-m", "dgdgen", "--help"], args.runs)),
            (f"dgdgen plan (1 example)", _time([sys.executable, "-m", "dgdgen", "plan", specs[0]], args.runs)),
            (f"dgdgen render, all {len(specs)} examples, all steps, validated",
             _time([sys.executable, "-m", "dgdgen", "render", *specs, "-o", os.path.join(tmp, "o")],
                   max(3, args.runs // 3))),
        ]
    print(f"machine: {os.cpu_count()} CPUs, {_cpu()}; Python {platform.python_version()}; "
          f"{platform.system()} {platform.release()}")
    print()
    print("| command | median | min | runs |")
    print("| --- | --- | --- | --- |")
    for name, ts in rows:
        print(f"| {name} | {statistics.median(ts) * 1000:.0f} ms | {min(ts) * 1000:.0f} ms | {len(ts)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
