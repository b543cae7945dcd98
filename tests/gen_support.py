from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("*/rollout.yaml"))


def run_cli(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "dgdgen", *args],
        cwd=cwd or REPO, capture_output=True, text=True, env=full_env, timeout=300,
    )


