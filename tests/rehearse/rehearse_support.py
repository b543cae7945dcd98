"""The rehearsal and the runtime-semantics proofs need the real Dynamo runtime (the `rehearse`
extra + the ai-dynamo wheels, installed by `.ci/run`), haproxy, prometheus and a private network
namespace (root). Under CI a skip for any of them fails (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _can_unshare() -> bool:
    r = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    return r.returncode == 0


def require_runtime() -> None:
    from dgdgen import runtime

    reason = runtime.missing()
    if reason:
        pytest.skip(f"ai-dynamo runtime missing: {reason}")
    for tool in ("haproxy", "prometheus"):
        if not (shutil.which(tool) or os.path.exists(f"/usr/sbin/{tool}")
                or os.path.exists(f"/usr/bin/{tool}")):
            pytest.skip(f"{tool} not installed")
    if not shutil.which("unshare") or not _can_unshare():
        pytest.skip("ai-dynamo runtime needs a private network namespace (root): unshare -n failed")


def rehearse(tmp: Path, spec: str, *args: str, timeout: float = 600) -> tuple[int, dict, str]:
    """Run `dgdgen rehearse` as a user would; (exit code, report.json, stderr)."""
    require_runtime()
    report = tmp / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "dgdgen", "rehearse", str(REPO / spec), "--report", str(report),
         "--workdir", str(tmp / "work"), *args],
        capture_output=True, text=True, timeout=timeout, cwd=tmp, check=False,
    )
    data = json.loads((report / "report.json").read_text()) if (report / "report.json").exists() \
        else {}
    return proc.returncode, data, proc.stdout + proc.stderr
