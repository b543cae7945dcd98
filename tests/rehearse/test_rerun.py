"""A rehearsal run again as a reader runs docs/rehearse.md's commands again: the same command, in
the same folder, over the report of the run before it, with the same temp folder.

The docs run follows every document twice (tests/test_docs_run.py); docs/rehearse.md's rehearsal
blocks are marked to run in its first reading only, and this test is what their second reading
proved, on one short rollout instead of four on the default clock: the second run exits as the
first did, its report is its own (report.json, report.md and chart.svg all rewritten, and saying
what that run printed), and after each run nothing of it is left in the temp folder — a run does
not depend on, or trip over, what the one before it left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from rehearse_support import REPO, require_runtime

from dgdgen import yamlio

EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"
FILES = ["chart.svg", "report.json", "report.md"]
# one ungated step and the promotion: the re-run is the claim, not the gates (tests/rehearse
# has those); 3 s of bake at 10 requests/s
LOAD = ("--time-scale", "0.05", "--rate", "10")
pytestmark = [pytest.mark.slow, pytest.mark.rehearse]
SUMMARY = re.compile(r"rehearsal completed: (\d+) requests, 0 failed, 0 truncated, ([\d.]+) s")


def _spec(dest: Path) -> Path:
    shutil.copy(EXAMPLE / "dgd.yaml", dest / "dgd.yaml")
    spec = yamlio.load_file(str(EXAMPLE / "rollout.yaml"))[0].data
    spec["spec"]["steps"] = [{"weight": 50, "pause": "1m"}, {"weight": 100}]
    spec["spec"]["analysis"] = {"enabled": False}
    (dest / "rollout.yaml").write_text(yamlio.dump(spec))
    return dest / "rollout.yaml"


def _rehearse(cwd: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """`dgdgen rehearse rollout.yaml --report rehearsal/` as a reader types it: a fresh
    interpreter, the default work folder (a temporary one), ``tmp`` as its TMPDIR."""
    return subprocess.run(
        [sys.executable, "-m", "dgdgen", "rehearse", "rollout.yaml", "--report", "rehearsal/",
         *LOAD], cwd=cwd, env={**os.environ, "TMPDIR": str(tmp)}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=300)


def test_a_rehearsal_run_again_over_its_report_gets_its_own(tmp_path: Path) -> None:
    require_runtime()
    # short: HAProxy's sockets must fit in 97 bytes under it (dgdgen.rehearse.proxy.socket_dir)
    tmp = Path(tempfile.mkdtemp(prefix="rr-", dir="/tmp"))
    cwd = tmp_path
    try:
        _spec(cwd)
        report = cwd / "rehearsal"
        runs = []
        for run in (1, 2):
            started = time.time()
            done = _rehearse(cwd, tmp)
            log = done.stdout + done.stderr
            assert done.returncode == 0, (run, log)
            assert sorted(os.listdir(tmp)) == [], (run, "left in TMPDIR", os.listdir(tmp))
            assert sorted(os.listdir(report)) == FILES, (run, os.listdir(report))
            # every file of the report written by this run, none kept from the one before (a
            # second's slack for a file system's coarser timestamps: a run takes far longer)
            assert all((report / f).stat().st_mtime >= started - 1 for f in FILES), run
            found = SUMMARY.search(log)
            assert found is not None, log
            data = json.loads((report / "report.json").read_text())
            # the report says what this run printed, and its three files say the same run
            assert (data["requests"], data["wallSeconds"]) == (
                int(found.group(1)), float(found.group(2))), (run, log)
            assert data["result"] == "completed" and data["exitCode"] == 0, data
            head = (report / "report.md").read_text().splitlines()[2]
            assert f"— {data['requests']} requests" in head, head
            assert f"{data['wallSeconds']} s" in head, head
            assert f">{data['states'][-1]['state']}<" in (report / "chart.svg").read_text()
            runs.append(data)
        assert [r["states"][-1]["state"] for r in runs] == ["cleanup", "cleanup"], runs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
