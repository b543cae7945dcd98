"""Sample sizes: the formulas of docs/analysis.md, checked against values worked by hand."""

from __future__ import annotations

import math

import pytest

from dgdgen.analysis.stats import bake_seconds, proportion_samples, quantile_samples


def test_quantile_sample_worked_example() -> None:
    # docs/analysis.md: p95, maxRegression 1.2, sigma 0.5, one-sided alpha 0.05, power 0.8
    # z = 1.6449 + 0.8416 = 2.4865; phi(1.6449) = 0.10314; 0.95*0.05/0.10314^2 = 4.4652
    # n = 2 * 2.4865^2 * 0.25 * 4.4652 / ln(1.2)^2 = 415.07 -> 416
    assert quantile_samples(0.95, 1.2, 0.5) == 416
    assert quantile_samples(0.99, 1.2, 0.5) == 1297  # 1296.1 by hand
    assert quantile_samples(0.95, 1.5, 0.5) < quantile_samples(0.95, 1.2, 0.5)
    assert quantile_samples(0.95, 1.2, 1.0) == pytest.approx(4 * 415.07, abs=4)


def test_two_proportion_sample_worked_example() -> None:
    # p0 0.01 -> p1 0.02: (1.6449*sqrt(2*.015*.985) + 0.8416*sqrt(.0099+.0196))^2 / .01^2
    expected = (1.6448536 * math.sqrt(2 * 0.015 * 0.985)
                + 0.8416212 * math.sqrt(0.01 * 0.99 + 0.02 * 0.98)) ** 2 / 0.01**2
    assert proportion_samples(0.01, 0.01) == math.ceil(expected) == 1826


def test_bake_time() -> None:
    assert bake_seconds(1826, 25, 0.1) == 731  # 12m11s, as `dgdgen plan` shows
    with pytest.raises(ValueError):
        bake_seconds(10, 25, 0)


def test_bad_inputs() -> None:
    with pytest.raises(ValueError):
        quantile_samples(0.95, 1.0, 0.5)
    with pytest.raises(ValueError):
        proportion_samples(0.99, 0.02)
