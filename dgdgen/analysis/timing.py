"""When a gate's metrics measure: a step's timing (initial delay, interval, count), and a new
generation's cold KV cache.

A new generation's workers start with an empty KV cache, so its time to first token is high until
prefixes are cached again (Dynamo's rolling-update task guide,
``docs/fern/pages/kubernetes/operations/rolling-updates.md``: "new workers start with an empty KV
cache"). At the candidate's first step with traffic the TTFT metrics wait ``spec.analysis.warmUp``
on top of their window, so a gate does not read the warm-up as a regression; the error and ITL
metrics measure from the start (docs/analysis.md, "Timing and defaults"). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared


@dataclass(frozen=True)
class Timing:
    initial_delay: int  # seconds
    interval: int
    count: int
    warm_up: int = 0  # what the TTFT metrics wait on top of initial_delay


def warms_up(metric: str) -> bool:
    """Whether a metric reads time to first token, which a cold KV cache raises."""
    return metric.startswith("ttft")


def warm_up_seconds(prepared: Prepared, state: PlanStep, metrics: Sequence[str], warm_up: int) -> int:
    """The warm-up of ``state``'s TTFT metrics: ``warm_up`` at the candidate's first step with
    traffic when the gate reads TTFT, else 0."""
    first = next((s for s in prepared.plan.steps if s.kind == "step" and s.candidate.weight > 0),
                 None)
    if first is None or first.index != state.index or not any(warms_up(n) for n in metrics):
        return 0
    return warm_up


def delay_and_count(analysis: Any, metric: str, timing: Timing) -> tuple[int, int]:
    """A metric's initialDelay and count: a TTFT metric of a warm-up step starts ``warm_up``
    later and, when the count is derived from the step's pause, takes as many fewer measurements
    as the warm-up lasts (at least one, never fewer than failureLimit)."""
    if not timing.warm_up or not warms_up(metric):
        return timing.initial_delay, timing.count
    count = timing.count
    if not analysis.count:
        count = max(1, analysis.failure_limit, count - timing.warm_up // timing.interval)
    return timing.initial_delay + timing.warm_up, count
