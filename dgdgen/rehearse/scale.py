"""The rehearsal's copy of the rollout spec: the same rollout with its clock scaled.

Pauses, the analysis window and interval are multiplied by ``--time-scale`` (whole seconds, at
least 1 s); the expected request rate becomes the rehearsal's own load rate, so the gates' minimum
bake time and windows are sized for the traffic that really flows; ``--min-requests`` lowers
the gates' minimum sample (a scaled clock cannot collect a production-sized one; by default to
what every gate's scaled bake collects, :func:`dgdgen.rehearse.run.auto_min_requests`). Every
change is listed, so the report can show it.
"""

from __future__ import annotations

import copy
import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgdgen import yamlio
from dgdgen.spec import parse_duration


def scaled_duration(text: str, factor: float) -> str:
    seconds = max(1, math.ceil(parse_duration(text) * factor))
    return f"{seconds}s"


@dataclass(frozen=True)
class Change:
    field: str
    original: str
    rehearsed: str


@dataclass(frozen=True)
class ScaledSpec:
    path: Path
    changes: tuple[Change, ...]


def write_scaled_spec(
    data: dict[str, Any],
    spec_path: Path,
    dest_dir: Path,
    *,
    time_scale: float,
    request_rate: float,
    min_requests: int | None,
    auto: bool = False,
) -> ScaledSpec:
    """Write ``dest_dir/rollout.yaml`` (and the stable DGD file it reads) scaled as above."""
    out = copy.deepcopy(data)
    changes: list[Change] = []
    spec = out["spec"]
    dest_dir.mkdir(parents=True, exist_ok=True)
    stable = spec.get("stable") or {}
    if isinstance(stable.get("dgd"), str):
        src = (spec_path.parent / stable["dgd"]).resolve()
        shutil.copyfile(src, dest_dir / "dgd.yaml")
        stable["dgd"] = "dgd.yaml"
    for i, step in enumerate(spec.get("steps") or []):
        if isinstance(step, dict) and isinstance(step.get("pause"), str):
            new = scaled_duration(step["pause"], time_scale)
            changes.append(Change(f"spec.steps[{i}].pause", step["pause"], new))
            step["pause"] = new
    analysis = spec.get("analysis")
    quality = analysis.get("quality") if isinstance(analysis, dict) else None
    if isinstance(quality, dict) and isinstance(quality.get("prompts"), str):
        # the quality gate's prompt set, read by `validate`, the ConfigMap and `analyze`
        shutil.copyfile((spec_path.parent / quality["prompts"]).resolve(),
                        dest_dir / "quality-prompts.jsonl")
        quality["prompts"] = "quality-prompts.jsonl"
    judge = quality.get("judge") if isinstance(quality, dict) else None
    calibration = judge.get("calibration") if isinstance(judge, dict) else None
    if isinstance(calibration, dict) and isinstance(calibration.get("pairs"), str):
        # the judge's calibration set, read like the prompt set
        shutil.copyfile((spec_path.parent / calibration["pairs"]).resolve(),
                        dest_dir / "judge-calibration.jsonl")
        calibration["pairs"] = "judge-calibration.jsonl"
    if isinstance(analysis, dict) and analysis.get("enabled"):
        for key, default in (("window", "5m"), ("interval", "1m")):
            old = analysis.get(key, default)
            new = scaled_duration(old, time_scale)
            changes.append(Change(f"spec.analysis.{key}", old, new))
            analysis[key] = new
        old_rate = analysis.get("expectedRequestRate")
        analysis["expectedRequestRate"] = request_rate
        changes.append(Change("spec.analysis.expectedRequestRate", str(old_rate or "—"),
                              f"{request_rate:g}"))
        if min_requests is not None:
            changes.append(Change("spec.analysis.minRequests",
                                  str(analysis.get("minRequests", "derived")),
                                  f"{min_requests} (auto)" if auto else str(min_requests)))
            analysis["minRequests"] = min_requests
    gitops = spec.get("gitops")
    if isinstance(gitops, dict):
        gitops.pop("remote", None)
    path = dest_dir / "rollout.yaml"
    path.write_text(yamlio.dump(out))
    return ScaledSpec(path, tuple(changes))
