"""Resource use of `dgdgen rehearse` on the bundled examples (processes, RSS, wall time).

    sudo python benchmarks/bench_rehearse.py [--time-scale 0.02] [--rate 20] [--min-requests 30]

Runs each example whose traffic provider moves traffic, as a user would (a fresh process, a
private network namespace), and prints a Markdown table for docs/rehearse.md with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-scale", default="0.02")
    ap.add_argument("--rate", default="20")
    ap.add_argument("--min-requests", default="30")
    ap.add_argument("--candidate-slowdown", default="1")
    ap.add_argument("--no-min-requests", action="store_true",
                    help="keep the spec's own minimum sample")
    ap.add_argument("examples", nargs="*")
    args = ap.parse_args()
    examples = args.examples or sorted(
        str(p.relative_to(REPO)) for p in (REPO / "examples").glob("*/rollout.yaml")
    )
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}; time scale {args.time_scale}, {args.rate} requests/s, "
          f"--min-requests {'(spec)' if args.no_min_requests else args.min_requests}, "
          f"candidate slowdown {args.candidate_slowdown}\n")
    print("| example | provider | result | exit | wall (s) | requests | failed | truncated "
          "| max split error (points) | gates | processes (peak) | RSS peak (MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for ex in examples:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.monotonic()
            r = subprocess.run(
                [sys.executable, "-m", "dgdgen", "rehearse", str(REPO / ex), "--report",
                 f"{tmp}/r", "--time-scale", args.time_scale, "--rate", args.rate,
                 "--candidate-slowdown", args.candidate_slowdown,
                 "--min-requests", "spec" if args.no_min_requests else args.min_requests],
                capture_output=True, text=True, check=False,
            )
            wall = time.monotonic() - t
            report = Path(tmp) / "r" / "report.json"
            name = ex.split("/")[1]
            if not report.exists():
                reason = (r.stderr.strip().splitlines() or ["?"])[-1][:120]
                print(f"| {name} | — | not rehearsed: {reason} | {r.returncode} | {wall:.0f} "
                      "| | | | | | | |")
                continue
            d = json.loads(report.read_text())
            errs = [s["splitErrorPoints"] for s in d["states"] if s["splitErrorPoints"] is not None]
            gates = ", ".join(f"{s['state']} {s['verdict']}" for s in d["states"] if s["verdict"])
            print(f"| {name} | {d['provider']} | {d['result']} | {r.returncode} | {wall:.0f} | "
                  f"{d['requests']} | {d['failed']} | {d['truncated']} | "
                  f"{max(errs, default=0):.1f} | {gates or '—'} | {d['processesPeak']} | "
                  f"{d['rssPeakMB']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
