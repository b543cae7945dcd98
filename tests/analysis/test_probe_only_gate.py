"""A gate that `dgdgen analyze` cannot measure (the probe is a Job in the cluster) is
Inconclusive, never Successful: recorded as passed, it would let `promote` past an unchecked step.
Found by rehearsing the blue/green example, whose only gate is the probe."""

from __future__ import annotations

import subprocess
import sys

from gen_support import REPO


def test_probe_only_gate_is_inconclusive() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "dgdgen", "analyze",
         str(REPO / "examples" / "vllm-agg-blue-green" / "rollout.yaml"), "--step", "1",
         "--prometheus", "http://127.0.0.1:9", "--format", "json"],
        capture_output=True, text=True, check=False,
    )
    assert r.returncode == 3, r.stdout + r.stderr
    assert '"phase": "Inconclusive"' in r.stdout
