"""Peak memory of the workflow's containers' commands: what sizes the WorkflowTemplate's
requests and limit (dgdgen/gitops/workflow.py: RESOURCES) and the drain Job's.

    python benchmarks/bench_gitops_memory.py

Runs each command as a fresh process in a scratch Git repository holding the
vllm-disagg-block-size example and prints its peak resident set size (getrusage of the child)
and wall time, as a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _peak(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of ``cmd`` run in a fresh child (fork + exec per call)."""
    code = ("import resource, subprocess, sys, time; t=time.perf_counter(); "
            "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
            "time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code, *cmd], cwd=cwd, env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]) / 1024, float(out[1])


def main() -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@e", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@e")
    dgdgen = str(BIN / "dgdgen")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "examples" / "vllm-disagg-block-size", work / "spec")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=work, check=True)
        subprocess.run(["git", "add", "-A"], cwd=work, check=True)
        subprocess.run(["git", "commit", "-qm", "spec"], cwd=work, check=True, env=env)
        spec, into = "spec/rollout.yaml", "deploy"
        rows = [
            ("dgdgen render --commit (baseline)", [dgdgen, "render", spec, "--into", into,
                                                   "--commit"]),
            ("dgdgen promote (step 1)", [dgdgen, "promote", spec, "--into", into]),
            ("dgdgen gate --result passed", [dgdgen, "gate", spec, "--into", into, "--result",
                                             "passed"]),
            ("dgdgen promote (step 2)", [dgdgen, "promote", spec, "--into", into]),
            ("dgdgen status --format json", [dgdgen, "status", spec, "--into", into,
                                             "--format", "json"]),
            ("dgdgen rollback", [dgdgen, "rollback", spec, "--into", into]),
            ("python3 -m dgdgen.gitops.drain (import + one poll)",
             [sys.executable, "-m", "dgdgen.gitops.drain", "--url",
              "http://127.0.0.1:9/metrics", "--timeout", "0", "--zeros", "1"]),
        ]
        print(f"machine: {os.cpu_count()} CPUs; Python {sys.version.split()[0]}\n")
        print("| command | peak RSS | wall |")
        print("| --- | --- | --- |")
        for name, cmd in rows:
            rss, secs = _peak(cmd, work, env)
            print(f"| {name} | {rss:.0f} MiB | {secs:.2f} s |")


if __name__ == "__main__":
    main()
