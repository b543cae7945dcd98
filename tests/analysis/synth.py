"""Synthetic Dynamo frontend metrics (names and labels as ai-dynamo 1.6.1 prometheus_names.py,
buckets as ai-dynamo/dynamo 2a6da14c8 lib/llm/src/http/service/metrics.rs, plus the labels the
rendered PodMonitors add at scrape time) for three scenarios."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from statistics import NormalDist

# Default bucket upper bounds, first bucket 0 (ai-dynamo/dynamo 2a6da14c8
# lib/llm/src/http/service/metrics.rs: log-spaced, 2 significant figures).
TTFT_BUCKETS = ("0", "0.0022", "0.0047", "0.01", "0.022", "0.047", "0.1", "0.22", "0.47", "1",
                "2.2", "4.7", "10", "22", "48", "100", "220", "480", "+Inf")
ITL_BUCKETS = ("0", "0.0019", "0.0035", "0.0067", "0.013", "0.024", "0.045", "0.084", "0.16",
               "0.3", "0.56", "1.1", "2", "+Inf")
MODEL = "Qwen/Qwen3-0.6B"
MINUTES = 30
PER_MINUTE = 1000
ERRORS_PER_MINUTE = 2


def lognormal_cumulative(buckets: tuple[str, ...], median: float, sigma: float,
                         n: int) -> list[int]:
    """Cumulative counts per bucket for n requests of a log-normal latency."""
    out = []
    for le in buckets:
        if le == "+Inf":
            out.append(n)
        elif float(le) == 0:
            out.append(0)
        else:
            out.append(round(n * NormalDist(math.log(median), sigma).cdf(math.log(float(le)))))
    return out


def _labels(ns: str, rollout: str, gen: str, **extra: str) -> str:
    labels = {"namespace": ns, "dgdgen_rollout": rollout, "dgdgen_generation": gen,
              "model": MODEL, **extra}
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def generation_series(ns: str, rollout: str, gen: str, *, ttft_median: float,
                      traffic: bool, profile: Sequence[float] | None = None
                      ) -> dict[str, list[float]]:
    """Series name{labels} -> cumulative value at minute 0..MINUTES. With ``profile`` (requests
    in each minute, MINUTES of them), every counter follows it in proportion instead of the
    constant PER_MINUTE."""
    per_min = PER_MINUTE if traffic else 0
    errs = ERRORS_PER_MINUTE if traffic else 0
    series: dict[str, list[float]] = {}
    done = list(itertools.accumulate(profile, initial=0.0)) if profile is not None else None
    assert done is None or len(done) == MINUTES + 1

    def counter(key: str, inc: float) -> None:
        if done is not None:  # inc per PER_MINUTE requests
            series[key] = [inc / PER_MINUTE * n for n in done]
        else:
            series[key] = [inc * t for t in range(MINUTES + 1)]

    req = "dynamo_frontend_requests_total"
    common = {"endpoint": "chat_completions", "request_type": "stream"}
    counter(req + _labels(ns, rollout, gen, **common, status="success", error_type=""),
            per_min - errs)
    counter(req + _labels(ns, rollout, gen, **common, status="error", error_type="internal"), errs)
    for name, buckets, median, sigma in (
        ("dynamo_frontend_time_to_first_token_seconds", TTFT_BUCKETS, ttft_median, 0.5),
        ("dynamo_frontend_inter_token_latency_seconds", ITL_BUCKETS, 0.02, 0.4),
    ):
        cum = lognormal_cumulative(buckets, median, sigma, per_min)
        for le, c in zip(buckets, cum):
            counter(f"{name}_bucket" + _labels(ns, rollout, gen, le=le), c)
        counter(f"{name}_count" + _labels(ns, rollout, gen), per_min)
    return series


STABLE_TTFT_MEDIAN = 0.3
SCENARIOS = {
    # candidate TTFT median relative to the stable's, and whether it gets traffic
    "healthy": (1.0, True),
    "ttft-50pct-worse": (1.5, True),
    "no-traffic": (1.0, False),
}


def scenario(name: str, ns: str, rollout: str, stable: str, candidate: str
             ) -> dict[str, list[float]]:
    factor, traffic = SCENARIOS[name]
    out = generation_series(ns, rollout, stable, ttft_median=STABLE_TTFT_MEDIAN, traffic=True)
    out.update(generation_series(ns, rollout, candidate,
                                 ttft_median=STABLE_TTFT_MEDIAN * factor, traffic=traffic))
    return out


def histogram_quantile(q: float, buckets: tuple[str, ...], cumulative: list[int]) -> float:
    """Prometheus' classic-histogram interpolation (reference for the promtool values)."""
    total = cumulative[-1]
    if total == 0:
        return math.nan
    rank = q * total
    prev_le, prev_c = 0.0, 0
    for le, c in zip(buckets, cumulative):
        if c >= rank:
            if le == "+Inf":
                return prev_le
            upper = float(le)
            if upper == 0:
                return 0.0
            return prev_le + (upper - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = (float(le) if le != "+Inf" else prev_le), c
    return math.nan
