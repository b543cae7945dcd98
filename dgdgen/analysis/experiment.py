"""A/B experiment statistics: two independent samples (one value per user or request, from the
stable and from the candidate at a fixed split) and a decision — candidate better, no
difference, stable better — or, below the planned sample, none yet (docs/analysis.md, "A/B
experiments").

* ``mann_whitney`` — the Mann–Whitney U test, two-sided, normal approximation with the tie
  correction and no continuity correction. It compares whole distributions through ranks, so it
  needs no assumption about their shape: valid for latencies, ratings, 0/1 outcomes alike.
* The effect size is the *win rate* ``W = U_candidate / (n_stable · n_candidate)``: the chance
  that a random candidate value beats a random stable value, ties counting one half (the
  common-language effect size); the rank-biserial correlation ``r = 2·W − 1`` is the same number
  on a −1..1 scale. "Beats" follows ``better``: higher or lower values.
* ``experiment_samples`` — Noether's (1987) sample size for the Mann–Whitney test: to detect a
  win rate of ``0.5 + mde`` at two-sided level α with power 1−β, with a share ``c`` of the
  units on the candidate, the total is
  ``N = (z_{1−α/2} + z_{1−β})² / (12 · c · (1 − c) · mde²)``; the candidate needs ``c·N`` and
  the stable ``(1−c)·N``. The minimum detectable effect is stated as a win rate because that is
  what the test detects, whatever the metric's unit.

Pure functions, no I/O; checked against ``scipy.stats`` in tests/analysis/test_experiment.py.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from dgdgen.analysis.paired import _ranks
from dgdgen.analysis.stats import ALPHA, POWER

_Z = NormalDist()

CANDIDATE_BETTER = "candidate-better"
NO_DIFFERENCE = "no-difference"
STABLE_BETTER = "stable-better"
UNDECIDED = "undecided"


@dataclass(frozen=True)
class MannWhitney:
    u_candidate: float  # pairs (stable, candidate) where the candidate's value is higher, ties 1/2
    z: float
    p_value: float  # two-sided


def mann_whitney(stable: Sequence[float], candidate: Sequence[float]) -> MannWhitney:
    n1, n2 = len(candidate), len(stable)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    ranks, ties = _ranks([*candidate, *stable])
    u = math.fsum(ranks[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    mean = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - math.fsum(t**3 - t for t in ties) / (n * (n - 1))) \
        if n > 1 else 0.0
    if var <= 0:  # every value equal: no evidence either way
        return MannWhitney(u, 0.0, 1.0)
    z = (u - mean) / math.sqrt(var)
    return MannWhitney(u, z, min(1.0, 2 * _Z.cdf(-abs(z))))


def experiment_samples(
    mde: float, candidate_share: float, *, alpha: float = ALPHA, power: float = POWER,
) -> tuple[int, int]:
    """(stable, candidate) units needed to detect a win rate of ``0.5 + mde`` (Noether)."""
    if not 0 < mde < 0.5 or not 0 < candidate_share < 1:
        raise ValueError("need 0 < mde < 0.5 and 0 < candidate share < 1")
    z = _Z.inv_cdf(1 - alpha / 2) + _Z.inv_cdf(power)
    c = candidate_share
    total = z**2 / (12 * c * (1 - c) * mde**2)
    return math.ceil(round(total * (1 - c), 9)), math.ceil(round(total * c, 9))


@dataclass(frozen=True)
class Decision:
    decision: str  # candidate-better | no-difference | stable-better | undecided
    n_stable: int
    n_candidate: int
    needed_stable: int
    needed_candidate: int
    u: float
    p_value: float
    win_rate: float  # P(candidate beats stable) + ½ P(tie), "beats" per `better`
    effect: float  # rank-biserial correlation 2·win_rate − 1

    def summary(self) -> str:
        return (f"{self.decision}: win rate {self.win_rate:.3f} (rank-biserial "
                f"{self.effect:+.3f}), Mann-Whitney U {self.u:g}, p={self.p_value:.4g}; "
                f"n stable {self.n_stable}/{self.needed_stable}, candidate "
                f"{self.n_candidate}/{self.needed_candidate}")


def decide(
    stable: Sequence[float], candidate: Sequence[float], *, mde: float, candidate_share: float,
    better: str = "higher", alpha: float = ALPHA, power: float = POWER,
) -> Decision:
    """The experiment's decision; ``undecided`` until both groups reach their planned size (an
    early look would inflate the error rate: the sample is fixed in advance)."""
    if better not in ("higher", "lower"):
        raise ValueError("better is 'higher' or 'lower'")
    need_s, need_c = experiment_samples(mde, candidate_share, alpha=alpha, power=power)
    mw = mann_whitney(stable, candidate)
    pairs = len(stable) * len(candidate)
    win = mw.u_candidate / pairs if better == "higher" else 1 - mw.u_candidate / pairs
    if len(stable) < need_s or len(candidate) < need_c:
        verdict = UNDECIDED
    elif mw.p_value >= alpha:
        verdict = NO_DIFFERENCE
    else:
        verdict = CANDIDATE_BETTER if win > 0.5 else STABLE_BETTER
    return Decision(verdict, len(stable), len(candidate), need_s, need_c, mw.u_candidate,
                    mw.p_value, win, 2 * win - 1)
