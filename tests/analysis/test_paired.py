"""The quality gate's paired statistics, checked against scipy.stats on the same samples."""

from __future__ import annotations

import random

import pytest
from scipy import stats

from dgdgen.analysis.paired import (
    paired_verdict,
    sign_test_pvalue,
    sign_test_samples,
    wilcoxon_pvalue,
)


@pytest.mark.parametrize(
    ("losses", "decided", "share"),
    [(0, 10, 0.5), (7, 10, 0.5), (15, 20, 0.5), (30, 40, 0.6), (1, 1, 0.5), (55, 100, 0.5)],
)
def test_sign_test_matches_scipy_binomtest(losses: int, decided: int, share: float) -> None:
    expected = stats.binomtest(losses, decided, share, alternative="greater").pvalue
    assert sign_test_pvalue(losses, decided, share) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_wilcoxon_matches_scipy_with_ties_and_zeros(seed: int) -> None:
    rng = random.Random(seed)
    # Integer-valued differences so that ties and zeros really occur.
    d = [rng.randint(-3, 2) for _ in range(40)]
    expected = stats.wilcoxon(
        d, zero_method="wilcox", correction=False, alternative="less", method="approx",
    ).pvalue
    assert wilcoxon_pvalue(d) == pytest.approx(expected, rel=1e-9)


def test_sample_size_detects_the_effect_with_the_stated_power() -> None:
    n = sign_test_samples(0.5, 0.2)
    # Exact power of the one-sided binomial test at that n, from scipy: near 0.8.
    crit = int(stats.binom.isf(0.05, n, 0.5)) + 1  # smallest k with P(X >= k) <= 0.05
    power = stats.binom.sf(crit - 1, n, 0.7)
    assert 0.75 <= power <= 0.9, (n, power)
    assert sign_test_samples(0.5, 0.1) > n  # a smaller effect needs more pairs


def test_verdicts() -> None:
    needed = sign_test_samples(0.5, 0.2)
    worse = [(1.0, 0.0)] * 30 + [(0.0, 1.0)] * 5
    assert paired_verdict(worse, max_loss_share=0.5, effect=0.2).verdict == "Failed"
    equal = [(1.0, 0.0)] * 20 + [(0.0, 1.0)] * 20 + [(1.0, 1.0)] * 10
    assert 40 >= needed
    assert paired_verdict(equal, max_loss_share=0.5, effect=0.2).verdict == "Successful"
    few = [(1.0, 0.0), (0.0, 1.0)] * 5 + [(1.0, 1.0)] * 5  # no evidence either way, too few
    assert len(few) < needed
    v = paired_verdict(few, max_loss_share=0.5, effect=0.2)
    assert v.verdict == "Inconclusive" and v.ties == 5 and v.needed == needed
    all_ties = [(3.0, 3.0)] * needed  # the generations agree on every prompt
    assert paired_verdict(all_ties, max_loss_share=0.5, effect=0.2).verdict == "Successful"
    assert paired_verdict(all_ties[1:], max_loss_share=0.5, effect=0.2).verdict == "Inconclusive"
