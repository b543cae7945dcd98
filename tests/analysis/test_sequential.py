"""The judge's statistics: the Wilson interval against published figures, and when the
sequential decision over the gate's pairs stops."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from dgdgen.analysis.sequential import look, look_confidence, looks
from dgdgen.analysis.stats import wilson_interval


@pytest.mark.parametrize(("k", "n", "lo", "hi"), [
    # Newcombe, "Two-sided confidence intervals for the single proportion" (Stat. Med. 1998,
    # 17:857-872), Table I, method 3 (Wilson score, no continuity correction)
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (29, 29, 0.8830, 1.0),
])
def test_wilson_interval_matches_newcombe(k: int, n: int, lo: float, hi: float) -> None:
    got = wilson_interval(k, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)  # nothing asked: nothing known
    assert wilson_interval(20, 20)[0] == pytest.approx(20 / (20 + 1.959964**2))
    # a wider confidence widens it
    assert wilson_interval(8, 10, 0.99)[0] < wilson_interval(8, 10)[0]
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_calibration_lower_bound_needs_sixteen_perfect_pairs() -> None:
    """docs/analysis.md: with minAgreement 0.8, 15 of 15 is not enough, 16 of 16 is."""
    assert wilson_interval(15, 15)[0] < 0.8 <= wilson_interval(16, 16)[0]
    # and why not the point estimate: a 60 % judge scores 9 of 10 or better this often
    assert binom.sf(8, 10, 0.6) == pytest.approx(0.046, abs=1e-3)
    assert wilson_interval(9, 10)[0] == pytest.approx(0.596, abs=1e-3)


def test_looks_are_bonferroni_corrected() -> None:
    assert looks(40, 10) == 31 and looks(5, 10) == 1
    assert look_confidence(40, 10) == pytest.approx(1 - 0.05 / 31)


def test_a_candidate_losing_every_pair_stops_after_ten() -> None:
    """The docstring's figure: 40 prompts, minPairs 10 → Failed at the 10th loss."""
    assert look([0.0] * 9, pairs=40, min_pairs=10, max_loss_share=0.5).verdict is None
    ten = look([0.0] * 10, pairs=40, min_pairs=10, max_loss_share=0.5)
    assert ten.verdict == "Failed" and ten.interval[0] > 0.5
    assert look([1.0] * 10, pairs=40, min_pairs=10, max_loss_share=0.5).verdict == "Successful"


def test_never_settles_before_min_pairs_or_on_ties_alone() -> None:
    assert look([0.0] * 30, pairs=40, min_pairs=31, max_loss_share=0.5).verdict is None
    ties = look([0.5] * 40, pairs=40, min_pairs=10, max_loss_share=0.5)
    assert ties.verdict is None and ties.interval == (0.0, 1.0) and ties.decided == 0
    # half the pairs lost: the interval straddles 0.5, the sign test decides at the end
    mixed = look([0.0, 1.0] * 20, pairs=40, min_pairs=10, max_loss_share=0.5)
    assert mixed.verdict is None and mixed.interval[0] < 0.5 < mixed.interval[1]
    assert "holds maxLossShare 0.5" in mixed.describe(0.5)
