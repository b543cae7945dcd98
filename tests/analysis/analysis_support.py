"""Helpers for the analysis tests (imported by this name: test modules never import a conftest)."""

from __future__ import annotations

from typing import Any

from gen_support import REPO

EXAMPLE = REPO / "examples" / "vllm-disagg-image-bump" / "rollout.yaml"


def gate_metrics(prepared: Any, step: int) -> list[dict[str, Any]]:
    """The step's metrics exactly as its AnalysisRun carries them, args resolved."""
    from dgdgen.analysis import gates
    from dgdgen.render.analysis import analysis_run

    run = analysis_run(prepared, step, hook=False)
    assert run is not None
    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    return [gates.resolve_args(m, args) for m in run["spec"]["metrics"]]
