"""Resource use of `dgdgen rehearse` on the bundled examples (wall, overhead, CPU, memory).

    python benchmarks/bench_rehearse.py [--time-scale 0.05] [--rate 20] [--min-requests 30]
        [--repeat 3] [examples/vllm-disagg-block-size/rollout.yaml ...]

Runs each example whose traffic provider moves traffic, as a user would (a fresh process, a
private network namespace), and prints a Markdown table for docs/rehearse.md with the machine.

Per run: the rehearsal's own wall time and how it splits (`wallSecondsBy` of report.json), the
overhead (wall time less the scaled bakes), the CPU time of the whole process tree (user + system
of every descendant, from the kernel's accounting of waited-for children: on a shared machine it
moves less than the wall time), the peak memory of the local processes as the report samples it
(RSS summed, and PSS: shared pages such as the Dynamo core library counted once), and the same
for the whole process tree sampled here, the rehearsal's own Python included; and the memory
it took (how far the machine's MemAvailable fell below its value at the start: on a machine
where nothing else starts meanwhile, what the tree really took). Each run gets a
private ``TMPDIR``; whatever is left in it afterwards is counted (it must be nothing). With
``--repeat N`` a median row follows the N runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc (a process started in another PID namespace is
    still a child by its host PID)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in kB; (0, 0) once it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def mem_available_mb() -> float:
    """The kernel's estimate of the memory a new process could take without swapping."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


class TreeSampler(threading.Thread):
    """Peak RSS and PSS summed over a process tree, sampled twice a second; and how far the
    machine's available memory fell below what it was when the sampler was made (``taken``: what
    the tree really took, every page counted once, page tables and the kernel's part included,
    on a machine where nothing else starts meanwhile)."""

    def __init__(self, root: int, available_before: float) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.available_before = available_before
        self.taken = 0.0
        self.rss_peak = self.pss_peak = 0.0
        self.procs_peak = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            pids = _tree(self.root)
            rss = pss = 0
            for pid in pids:
                r, p = _memory_kb(pid)
                rss, pss = rss + r, pss + p
            self.rss_peak = max(self.rss_peak, rss / 1024)
            self.pss_peak = max(self.pss_peak, pss / 1024)
            self.procs_peak = max(self.procs_peak, len(pids))
            self.taken = max(self.taken, self.available_before - mem_available_mb())


def _bake(data: dict[str, Any]) -> float:
    return float(next((v for k, v in data["wallSecondsBy"].items() if k == "bake"), 0.0))


def run_once(ex: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-rehearse-") as tmp:
        private_tmp = Path(tmp) / "tmp"
        private_tmp.mkdir()
        env = {**os.environ, "TMPDIR": str(private_tmp)}
        available = mem_available_mb()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        popen = subprocess.Popen(
            [sys.executable, "-m", "dgdgen", "rehearse", str(REPO / ex), "--report",
             f"{tmp}/r", "--time-scale", args.time_scale, "--rate", args.rate,
             "--candidate-slowdown", args.candidate_slowdown,
             "--min-requests", "spec" if args.no_min_requests else args.min_requests],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp,
        )
        sampler = TreeSampler(popen.pid, available)
        sampler.start()
        stdout, stderr = popen.communicate()
        sampler.stopped.set()
        sampler.join()
        wall = time.monotonic() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        left = sorted(p.name for p in private_tmp.iterdir())
        report = Path(tmp) / "r" / "report.json"
        row: dict[str, Any] = {
            "example": ex.split("/")[1], "exit": popen.returncode, "command wall": wall,
            "cpu": cpu, "tree rss": sampler.rss_peak, "tree pss": sampler.pss_peak,
            "taken": sampler.taken,
            "tree procs": sampler.procs_peak, "left": left,
        }
        if not report.exists():
            row["reason"] = (stderr.strip().splitlines() or stdout.strip().splitlines()
                             or ["?"])[-1][:120]
            return row
        d = json.loads(report.read_text())
        errs = [s["splitErrorPoints"] for s in d["states"] if s["splitErrorPoints"] is not None]
        row.update(
            provider=d["provider"], result=d["result"], wall=d["wallSeconds"], bake=_bake(d),
            overhead=d["wallSeconds"] - _bake(d), by=d["wallSecondsBy"], requests=d["requests"],
            failed=d["failed"], truncated=d["truncated"], split=max(errs, default=0.0),
            gates=", ".join(f"{s['state']} {s['verdict']}" for s in d["states"] if s["verdict"]),
            procs=d["processesPeak"], rss=d["rssPeakMB"], pss=d.get("pssPeakMB"),
            commands_cpu=d.get("commandsCpuSeconds"),
        )
        return row


def _short(by: dict[str, float]) -> str:
    names = {"GitOps commands": "GitOps", "bake": None, "gates": "gates"}
    out = []
    for k, v in by.items():
        name = names.get(k, k.split(" ", 1)[0])
        if name:
            out.append(f"{name} {v:.1f}")
    return ", ".join(out)


def print_row(row: dict[str, Any], label: str | None = None) -> None:
    name = label or row["example"]
    left = len(row["left"]) if isinstance(row["left"], list) else row["left"]
    if "result" not in row:
        print(f"| {name} | — | not rehearsed: {row.get('reason', '?')} | {row['exit']} "
              f"| {row['command wall']:.1f} | | | | {row['cpu']:.0f} | | | | | | "
              f"{row['tree rss']:.0f} / {row['tree pss']:.0f} | {row['taken']:.0f} | {left} |",
              flush=True)
        return
    pss = f"{row['pss']:.0f}" if row.get("pss") is not None else "—"
    commands = (f" (commands {row['commands_cpu']:.1f})" if row.get("commands_cpu") is not None
                else "")
    print(f"| {name} | {row['provider']} | {row['result']} | {row['exit']} | "
          f"{row['command wall']:.1f} | {row['wall']:.1f} | {row['bake']:.1f} | "
          f"**{row['overhead']:.1f}** ({_short(row['by'])}) | {row['cpu']:.0f}{commands} | "
          f"{row['requests']} | {row['failed']} | {row['truncated']} | {row['split']:.1f} | "
          f"{row['gates'] or '—'} | {row['procs']}: **{row['rss']:.0f}** / {pss} | "
          f"{row['tree procs']}: {row['tree rss']:.0f} / {row['tree pss']:.0f} | "
          f"{row['taken']:.0f} | {left} |",
          flush=True)


def median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(rows[0])
    for key in ("command wall", "cpu", "tree rss", "tree pss", "taken", "wall", "bake", "overhead",
                "rss", "requests", "split", "commands_cpu"):
        values = [r[key] for r in rows if r.get(key) is not None]
        if values:
            out[key] = statistics.median(values)
    pss = [r["pss"] for r in rows if r.get("pss") is not None]
    out["pss"] = statistics.median(pss) if pss else None
    out["by"] = {k: statistics.median(r["by"][k] for r in rows) for k in rows[0]["by"]}
    out["left"] = max(len(r["left"]) for r in rows)
    out["failed"] = max(r["failed"] for r in rows)
    out["truncated"] = max(r["truncated"] for r in rows)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-scale", default="0.02")
    ap.add_argument("--rate", default="20")
    ap.add_argument("--min-requests", default="30")
    ap.add_argument("--candidate-slowdown", default="1")
    ap.add_argument("--no-min-requests", action="store_true",
                    help="keep the spec's own minimum sample")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="rehearse each example N times and add the median row")
    ap.add_argument("examples", nargs="*")
    args = ap.parse_args()
    for ex in args.examples:  # a bundled example's spec, as the usage line shows
        if not ex.startswith("examples/") or not (REPO / ex).is_file():
            ap.error(f"{ex}: expected a bundled example's spec, e.g. "
                     "examples/vllm-disagg-block-size/rollout.yaml")
    examples = args.examples or sorted(
        str(p.relative_to(REPO)) for p in (REPO / "examples").glob("*/rollout.yaml")
    )
    load = os.getloadavg()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, load average {load[0]:.1f} / {load[1]:.1f} / "
          f"{load[2]:.1f} at the start; time scale {args.time_scale}, {args.rate} requests/s, "
          f"--min-requests {'(spec)' if args.no_min_requests else args.min_requests}, "
          f"candidate slowdown {args.candidate_slowdown}\n")
    print("| example | provider | result | exit | command wall (s) | rehearsal wall (s) "
          "| bake (s) | overhead (s) | CPU (s) | requests | failed | truncated "
          "| max split error (points) | gates | local processes: RSS / PSS peak (MB) "
          "| whole tree: RSS / PSS peak (MB) | memory taken (MB) | left in TMPDIR |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- | --- | --- | --- |")
    for ex in examples:
        rows = []
        for _ in range(args.repeat):
            row = run_once(ex, args)
            print_row(row)
            rows.append(row)
        done = [r for r in rows if "result" in r]
        if args.repeat > 1 and len(done) == len(rows):
            print_row(median_row(done), f"{rows[0]['example']} (median of {len(rows)})")
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
