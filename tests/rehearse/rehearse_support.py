"""The rehearsal and the runtime-semantics proofs need the real Dynamo runtime (the `rehearse`
extra + the ai-dynamo wheels, installed by `.ci/run`), haproxy, prometheus and a private network
namespace (as root, or inside an unprivileged user namespace where the kernel allows one, as
`dgdgen rehearse` does). Under CI a skip for any of them fails (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import cli_server
import pytest

REPO = Path(__file__).resolve().parents[2]


@functools.cache
def netns_refusal() -> str | None:
    """Why the product cannot enter its private network namespace here, or None when it can.

    The same mechanism `dgdgen rehearse` uses (dgdgen.runtime.netns): as root a network namespace,
    otherwise an unprivileged user namespace with it, where the kernel allows one.
    """
    from dgdgen.runtime import RuntimeUnavailable
    from dgdgen.runtime.netns import run_isolated

    try:
        run_isolated(os.getpid, timeout=60)
    except RuntimeUnavailable as exc:
        return str(exc)
    return None


def require_runtime() -> None:
    from dgdgen import runtime

    reason = runtime.missing()
    if reason:
        pytest.skip(f"ai-dynamo runtime missing: {reason}")
    for tool in ("haproxy", "prometheus"):
        if not (shutil.which(tool) or os.path.exists(f"/usr/sbin/{tool}")
                or os.path.exists(f"/usr/bin/{tool}")):
            pytest.skip(f"{tool} not installed")
    refusal = netns_refusal()
    if refusal:
        pytest.skip(f"ai-dynamo runtime needs a private network namespace: {refusal}")


def rehearse(tmp: Path, spec: str, *args: str, timeout: float = 600) -> tuple[int, dict, str]:
    """Run `dgdgen rehearse` as a user would, a process of its own (forked from the worker's
    command server, tests/cli_server.py); (exit code, report.json, stderr)."""
    require_runtime()
    report = tmp / "report"
    proc = cli_server.run(
        ["rehearse", str(REPO / spec), "--report", str(report), "--workdir", str(tmp / "work"),
         *args], cwd=tmp, env=os.environ, timeout=timeout)
    data = json.loads((report / "report.json").read_text()) if (report / "report.json").exists() \
        else {}
    return proc.returncode, data, proc.stdout + proc.stderr


# The A/B experiment of tests/rehearse/test_experiment_steps.py: a small planned sample, 15 ratings a
# generation at 50/50.
EXPERIMENT_MDE = 0.3


def experiment_spec(tmp: Path) -> Path:
    """vllm-disagg-block-size with one A/B experiment step at 50/50 (the gamma provider: no
    stickiness to configure), then 100 %."""
    example = REPO / "examples" / "vllm-disagg-block-size"
    text = (example / "rollout.yaml").read_text()
    head, _, rest = text.partition("  steps:\n")
    rest = rest[rest.index("  traffic:\n"):]
    rest = rest.replace("    expectedRequestRate: 40\n", "    expectedRequestRate: 40\n"
                        "    experiment:\n      metric: user rating 1-5\n"
                        f"      minimumDetectableEffect: {EXPERIMENT_MDE}\n"
                        "      better: higher\n")
    assert "experiment:" in rest
    text = (head + "  steps:\n    - weight: 50\n      pause: 10m\n      gate: experiment\n"
            "    - weight: 100\n" + rest)
    folder = tmp / "spec"
    folder.mkdir()
    shutil.copy(example / "dgd.yaml", folder / "dgd.yaml")
    (folder / "rollout.yaml").write_text(text)
    return folder / "rollout.yaml"


@contextlib.contextmanager
def short_workdir(prefix: str) -> Iterator[Path]:
    """A private folder at the top of the temp folder, removed with everything in it on the way
    out. The runtime proofs put their Dynamo processes' sockets and discovery files in it, and
    pytest's own temp folders (deep under xdist) can be too long for a UNIX socket's path."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
