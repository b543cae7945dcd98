"""How many requests a gate needs before its verdict means something, and how long that takes.

Two families of tests, both one-sided (a gate fails only when the candidate is *worse*), at
significance α = 0.05 and power 0.8 (docs/analysis.md has a worked example):

* Latency quantiles (TTFT p95/p99, ITL p95). Latency is modelled as log-normal with shape σ
  (``analysis.latencySpread``, the standard deviation of ln latency). The sample p-quantile of n
  requests is asymptotically normal; on the log scale its variance is
  ``σ² · p(1-p) / (n · φ(z_p)²)`` (φ the standard normal density, z_p its p-quantile). Detecting
  that the candidate's quantile is ``maxRegression`` times the stable's — a shift of
  ``ln(maxRegression)`` on the log scale — with two groups of n requests needs
  ``n = 2 · (z_{1-α} + z_{1-β})² · σ² · p(1-p) / φ(z_p)² / ln(maxRegression)²``.
* Error rate: the classic two-proportion sample size for an increase from p0 (the error-rate
  SLO, the worst acceptable baseline) to p0 + δ (``maxErrorRateIncrease``):
  ``n = (z_{1-α}·√(2·p̄(1-p̄)) + z_{1-β}·√(p0(1-p0) + p1(1-p1)))² / δ²``.

And the Wilson score interval of a proportion (the judge's agreement with its calibration set,
the candidate's loss share under the judge): unlike the normal ("Wald") interval it stays inside
[0, 1] and keeps its coverage near 0 and 1 and for the small counts a calibration set has
(Newcombe 1998, method 3).

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05
POWER = 0.8
_Z = NormalDist()


def _z_sum(alpha: float, power: float) -> float:
    return _Z.inv_cdf(1 - alpha) + _Z.inv_cdf(power)


def quantile_samples(
    quantile: float, max_regression: float, spread: float,
    *, alpha: float = ALPHA, power: float = POWER,
) -> int:
    """Requests per generation to detect a ``max_regression``-fold rise of a latency quantile."""
    if not 0 < quantile < 1 or max_regression <= 1 or spread <= 0:
        raise ValueError("need 0 < quantile < 1, max_regression > 1 and spread > 0")
    zp = _Z.inv_cdf(quantile)
    var_log_quantile = spread**2 * quantile * (1 - quantile) / _Z.pdf(zp) ** 2
    n = 2 * _z_sum(alpha, power) ** 2 * var_log_quantile / math.log(max_regression) ** 2
    return math.ceil(round(n, 9))


def proportion_samples(
    baseline: float, increase: float, *, alpha: float = ALPHA, power: float = POWER,
) -> int:
    """Requests per generation to detect an error rate rising from ``baseline`` by ``increase``."""
    p0, p1 = baseline, baseline + increase
    if not 0 <= p0 < 1 or not 0 < p1 < 1:
        raise ValueError("need 0 <= baseline < baseline + increase < 1")
    pbar = (p0 + p1) / 2
    za, zb = _Z.inv_cdf(1 - alpha), _Z.inv_cdf(power)
    root = za * math.sqrt(2 * pbar * (1 - pbar)) + zb * math.sqrt(p0 * (1 - p0) + p1 * (1 - p1))
    return math.ceil(round(root**2 / increase**2, 9))


def bake_seconds(samples: int, request_rate: float, share: float) -> int:
    """Seconds until a group that gets ``share`` of ``request_rate`` req/s has ``samples``."""
    if share <= 0 or request_rate <= 0:
        raise ValueError("need a positive request rate and share")
    return math.ceil(round(samples / (request_rate * share), 9))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval of ``successes`` out of ``n`` (no continuity
    correction); ``(0, 1)`` when ``n`` is 0: nothing is known."""
    if n < 0 or not 0 <= successes <= n or not 0 < confidence < 1:
        raise ValueError("need 0 <= successes <= n and 0 < confidence < 1")
    if n == 0:
        return 0.0, 1.0
    z = _Z.inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # the exact ends (0 successes: lower 0; all: upper 1) without rounding drift
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi
