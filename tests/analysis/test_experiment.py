"""The A/B experiment's statistics, checked against scipy.stats on the same samples."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from dgdgen.analysis.experiment import (
    CANDIDATE_BETTER,
    NO_DIFFERENCE,
    STABLE_BETTER,
    UNDECIDED,
    decide,
    experiment_samples,
    mann_whitney,
)


@pytest.mark.parametrize("seed", range(8))
def test_mann_whitney_matches_scipy_with_ties(seed: int) -> None:
    rng = random.Random(seed)
    # ratings 1..5: ties everywhere, unequal group sizes
    stable = [rng.randint(1, 5) for _ in range(60 + seed)]
    candidate = [min(5, rng.randint(1, 5) + (seed % 3 == 0)) for _ in range(35)]
    ref = stats.mannwhitneyu(candidate, stable, alternative="two-sided", use_continuity=False,
                             method="asymptotic")
    got = mann_whitney(stable, candidate)
    assert got.u_candidate == pytest.approx(ref.statistic, rel=1e-12)
    assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_continuous_samples_match_scipy() -> None:
    rng = random.Random(7)
    stable = [rng.lognormvariate(0, 0.5) for _ in range(300)]
    candidate = [rng.lognormvariate(0.1, 0.5) for _ in range(200)]
    ref = stats.mannwhitneyu(candidate, stable, alternative="two-sided", use_continuity=False,
                             method="asymptotic")
    got = mann_whitney(stable, candidate)
    assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_all_equal_values_are_no_evidence() -> None:
    assert mann_whitney([1.0] * 5, [1.0] * 7).p_value == 1.0


def test_win_rate_is_the_share_of_pairs_won() -> None:
    stable, candidate = [1, 2, 3], [2, 4]
    d = decide(stable, candidate, mde=0.45, candidate_share=0.5)
    # pairs won by the candidate: 2>1, 4>1, 4>2, 4>3, and 2=2 counts one half -> 4.5 of 6
    assert d.win_rate == pytest.approx(4.5 / 6)
    assert d.effect == pytest.approx(2 * 4.5 / 6 - 1)
    low = decide(stable, candidate, mde=0.45, candidate_share=0.5, better="lower")
    assert low.win_rate == pytest.approx(1.5 / 6)


@pytest.mark.parametrize(("mde", "share"), [(0.1, 0.5), (0.05, 0.5), (0.1, 0.2)])
def test_sample_size_is_noether(mde: float, share: float) -> None:
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    total = z**2 / (12 * share * (1 - share) * mde**2)
    assert experiment_samples(mde, share) == (math.ceil(total * (1 - share)),
                                              math.ceil(total * share))


def test_sample_size_gives_the_stated_power() -> None:
    """Simulated with scipy's own test: at the planned sizes, a true win rate of 0.5 + mde is
    detected about 80 % of the time and a null effect is rejected about 5 % of the time."""
    mde, share = 0.1, 0.5
    n_s, n_c = experiment_samples(mde, share)
    shift = math.sqrt(2) * stats.norm.ppf(0.5 + mde)  # P(X > Y) = Φ(shift/√2) = 0.5 + mde
    rng = random.Random(11)
    reps = 400

    def rejections(delta: float) -> float:
        hits = 0
        for _ in range(reps):
            s = [rng.gauss(0, 1) for _ in range(n_s)]
            c = [rng.gauss(delta, 1) for _ in range(n_c)]
            hits += stats.mannwhitneyu(c, s, alternative="two-sided").pvalue < 0.05
        return hits / reps

    assert 0.74 <= rejections(shift) <= 0.86
    assert rejections(0.0) <= 0.09


def test_decision() -> None:
    rng = random.Random(3)
    n_s, n_c = experiment_samples(0.1, 0.5)
    stable = [rng.gauss(0, 1) for _ in range(n_s)]
    better = [rng.gauss(0.8, 1) for _ in range(n_c)]
    worse = [rng.gauss(-0.8, 1) for _ in range(n_c)]
    same = [rng.gauss(0, 1) for _ in range(n_c)]
    assert decide(stable, better, mde=0.1, candidate_share=0.5).decision == CANDIDATE_BETTER
    assert decide(stable, worse, mde=0.1, candidate_share=0.5).decision == STABLE_BETTER
    d = decide(stable, same, mde=0.1, candidate_share=0.5)
    assert d.decision == NO_DIFFERENCE, d.summary()
    # lower is better (a latency): the candidate with higher values is the worse one
    assert decide(stable, better, mde=0.1, candidate_share=0.5,
                  better="lower").decision == STABLE_BETTER
    # one short of the planned sample: no decision, however clear the data look
    short = decide(stable, better[:-1], mde=0.1, candidate_share=0.5)
    assert short.decision == UNDECIDED
    assert short.p_value < 1e-6
