"""Paired statistics for the quality gate: the same prompt answered by the stable and the candidate.

Each prompt gives a pair of scores (stable, candidate). A pair is a *loss* when the candidate
scored lower, a *win* when higher, a *tie* otherwise; ties carry no information about which
generation is better and are dropped (the sign test's usual treatment).

* ``sign_test_pvalue`` — exact one-sided binomial test of "the candidate loses more often than
  ``max_loss_share`` of the decided pairs". It needs no assumption about the scale of the
  scores, so it is valid for 0/1 scorers (exact match, JSON validity, truncation) and for a
  judge's preference alike; that is why the gate uses it.
* ``wilcoxon_pvalue`` — one-sided Wilcoxon signed-rank test (normal approximation with the
  tie correction, zero differences dropped), for graded scores where the size of a
  difference means something.
* ``sign_test_samples`` — decided pairs needed to detect a loss share of
  ``max_loss_share + effect`` at α = 0.05 with power 0.8 (one-sample proportion formula).
  Fewer *scored* pairs than that is Inconclusive, never a pass. Scored, not decided: a tie is
  evidence that the generations agree, so a candidate that ties on every prompt passes once
  enough prompts were scored, instead of staying Inconclusive for ever.

Pure functions, no I/O; checked against ``scipy.stats`` in tests/analysis/test_paired.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from dgdgen.analysis.stats import ALPHA, POWER

_Z = NormalDist()


def _log_binom_pmf(k: int, n: int, p: float) -> float:
    return (
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        + k * math.log(p) + (n - k) * math.log1p(-p)
    )


def sign_test_pvalue(losses: int, decided: int, max_loss_share: float = 0.5) -> float:
    """P(X >= losses) for X ~ Binomial(decided, max_loss_share): small means "worse than allowed"."""
    if decided < 0 or not 0 <= losses <= decided or not 0 < max_loss_share < 1:
        raise ValueError("need 0 <= losses <= decided and 0 < max_loss_share < 1")
    if losses == 0:
        return 1.0
    total = math.fsum(
        math.exp(_log_binom_pmf(k, decided, max_loss_share)) for k in range(losses, decided + 1)
    )
    return min(1.0, total)


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Average ranks (1-based) and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def wilcoxon_pvalue(differences: Sequence[float]) -> float:
    """One-sided p-value that the differences (candidate - stable) are centred below zero."""
    d = [x for x in differences if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    ranks, ties = _ranks([abs(x) for x in d])
    r_plus = math.fsum(r for r, x in zip(ranks, d, strict=True) if x > 0)
    mean = n * (n + 1) / 4
    var = n * (n + 1) * (2 * n + 1) / 24 - math.fsum(t**3 - t for t in ties) / 48
    if var <= 0:
        return 1.0
    return _Z.cdf((r_plus - mean) / math.sqrt(var))


def sign_test_samples(
    max_loss_share: float, effect: float, *, alpha: float = ALPHA, power: float = POWER,
) -> int:
    """Decided pairs needed to detect a loss share of ``max_loss_share + effect``."""
    p0, p1 = max_loss_share, max_loss_share + effect
    if not 0 < p0 < p1 < 1:
        raise ValueError("need 0 < max_loss_share < max_loss_share + effect < 1")
    za, zb = _Z.inv_cdf(1 - alpha), _Z.inv_cdf(power)
    root = za * math.sqrt(p0 * (1 - p0)) + zb * math.sqrt(p1 * (1 - p1))
    return math.ceil(round(root**2 / effect**2, 9))


@dataclass(frozen=True)
class PairedVerdict:
    verdict: str  # "Successful" | "Failed" | "Inconclusive"
    wins: int
    losses: int
    ties: int
    needed: int
    p_value: float
    reason: str


def paired_verdict(
    pairs: Sequence[tuple[float, float]], *, max_loss_share: float, effect: float,
    alpha: float = ALPHA, power: float = POWER,
) -> PairedVerdict:
    """The gate: Inconclusive below the sample size, Failed when the sign test rejects."""
    wins = sum(1 for s, c in pairs if c > s)
    losses = sum(1 for s, c in pairs if c < s)
    ties = len(pairs) - wins - losses
    needed = sign_test_samples(max_loss_share, effect, alpha=alpha, power=power)
    decided = wins + losses
    p = sign_test_pvalue(losses, decided, max_loss_share)
    counts = f"{wins} wins, {losses} losses, {ties} ties"
    if p < alpha:
        return PairedVerdict("Failed", wins, losses, ties, needed, p,
                             f"candidate worse: {counts}; sign test p={p:.4g} < {alpha}")
    if len(pairs) < needed:
        return PairedVerdict("Inconclusive", wins, losses, ties, needed, p,
                             f"{len(pairs)} scored pairs < {needed} needed ({counts})")
    return PairedVerdict("Successful", wins, losses, ties, needed, p,
                         f"{counts}; sign test p={p:.4g} >= {alpha}")
