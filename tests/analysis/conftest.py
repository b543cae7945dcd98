from __future__ import annotations

from pathlib import Path

import pytest
from gen_support import REPO

EXAMPLE = REPO / "examples" / "vllm-disagg-image-bump" / "rollout.yaml"


@pytest.fixture(scope="session")
def prepared():  # type: ignore[no-untyped-def]
    from dgdgen.pipeline import prepare

    return prepare(str(EXAMPLE))


def gate_metrics(prepared, step: int) -> list[dict]:  # type: ignore[no-untyped-def,type-arg]
    """The step's metrics exactly as its AnalysisRun carries them, args resolved."""
    from dgdgen.analysis import gates
    from dgdgen.render.analysis import analysis_run

    run = analysis_run(prepared, step, hook=False)
    assert run is not None
    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    return [gates.resolve_args(m, args) for m in run["spec"]["metrics"]]


__all__ = ["EXAMPLE", "Path", "gate_metrics"]
