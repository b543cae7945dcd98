from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import cli_server

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("*/rollout.yaml"))


def copy_example_inputs(example: Path, tmp: Path) -> None:
    """What an example's spec reads besides its DGD: the quality gate's prompt set (``*.jsonl``,
    next to the spec), for a copy of the spec in ``tmp``."""
    for p in sorted(example.glob("*.jsonl")):
        shutil.copy(p, tmp / p.name)


def run_cli(*args: str, cwd: Path | str | None = None, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """``python -m dgdgen ARGS`` as a process of its own: its exit code and output. It runs as a
    fork of this worker's command server (cli_server.py), which imported dgdgen once, unless
    ``env`` changes what an interpreter reads only when it starts (then a fresh one runs it)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return cli_server.run(list(args), cwd=Path(cwd or REPO), env=full_env, timeout=300)


def without_roll_settings(text: str) -> str:
    """A rendered manifest without the operator's rolling-update annotations (which an in-place
    rollback adds to the stable's workers: CLU201)."""
    lines = text.splitlines(keepends=True)
    out = [x for x in lines if "nvidia.com/deployment-rolling-update-" not in x]
    # an `annotations:` key left with nothing under it went with them
    return "".join(x for i, x in enumerate(out) if not (
        x.strip() == "annotations:" and (i + 1 == len(out) or
                                         len(out[i + 1]) - len(out[i + 1].lstrip())
                                         <= len(x) - len(x.lstrip()))))


def stable_only_parent(monkeypatch: Any) -> None:
    """A renderer bug for the tests of the invariants: the GAMMA parent Service selects the
    stable's frontend at every step (as it did before CLU101)."""
    from dgdgen.render import traffic

    real = traffic.frontend_selector

    def stable_only(prepared: Any, revision: str | None) -> dict[str, str]:
        return real(prepared, prepared.stable.revision if revision else revision)

    monkeypatch.setattr(traffic, "frontend_selector", stable_only)
