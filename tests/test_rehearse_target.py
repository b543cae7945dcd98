"""The in-place rehearsal plays the worker namespaces the spec's Dynamo release and worker backing
give (spec.dynamo), the same model the checker states (dgdgen.check.inplace)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dgdgen.pipeline.prepare import in_place_roll, prepare
from gen_support import REPO

EXAMPLE = REPO / "examples" / "vllm-agg-auto"


def _spec(tmp: Path, dynamo: str) -> str:
    shutil.copy(EXAMPLE / "dgd.yaml", tmp / "dgd.yaml")
    text = (EXAMPLE / "rollout.yaml").read_text()
    (tmp / "rollout.yaml").write_text(text.replace("  isolation: auto\n",
                                                   f"  isolation: auto\n{dynamo}"))
    return str(tmp / "rollout.yaml")


@pytest.mark.parametrize(("dynamo", "hashed"), [
    ("", True),  # default: the newest release, Deployment-backed workers
    ('  dynamo: {version: "1.6", workersRunBy: grove}\n', True),
    ('  dynamo: {version: "1.4", workersRunBy: grove}\n', False),
    ('  dynamo: {version: "1.4"}\n', True),
    ('  dynamo: {workersRunBy: unmanaged}\n', False),
])
def test_rehearsed_namespaces_follow_spec_dynamo(tmp_path: Path, dynamo: str,
                                                 hashed: bool) -> None:
    roll = in_place_roll(prepare(_spec(tmp_path, dynamo)))
    assert roll.hashed is hashed, roll.why


def test_rehearse_help_says_the_default_comes_from_the_spec() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "dgdgen", "rehearse", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "spec.dynamo" in " ".join(out.split())
