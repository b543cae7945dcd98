"""The judge's decision over the gate's pairs, asked one pair at a time: stop once it is clear.

A judge call costs (tens of them per step, each a long completion), so the gate with the judge
does not ask every prompt when the answer is already plain. After every scored pair — from
``min_pairs`` on — it looks at the Wilson interval of the candidate's *loss share* (losses over
decided pairs, the quantity ``maxLossShare`` bounds; ties say nothing about direction and, as in
the sign test, are left out):

* the interval lies entirely **above** ``maxLossShare`` → Failed (worse, with confidence);
* entirely **below** → Successful (not worse, with confidence; that also rules out the larger
  loss share the minimum sample is sized for, so the sample-size rule has nothing to add);
* otherwise the next pair is asked. When the prompts run out unsettled, the sign test of
  dgdgen/analysis/paired.py decides exactly as it does for every other scorer (so a candidate
  that ties every pair still passes once enough pairs were scored).

Looking after every pair is a sequential test, and an interval checked L times at 95 % each is
wrong far more often than 5 % over the run. Each look therefore uses confidence 1 - α/L with L
the most looks the run can take (Bonferroni over the looks): conservative, but the overall error
of stopping early stays at most α whatever the data. With α = 0.05, 40 prompts and
``min_pairs`` 10 that is 31 looks at 99.84 % each (z ≈ 3.15): a candidate that loses every pair
stops after 10 pairs (20 judge calls instead of 80).

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dgdgen.analysis.stats import ALPHA, wilson_interval


def looks(pairs: int, min_pairs: int) -> int:
    """The most looks a run of ``pairs`` prompts can take from ``min_pairs`` on (at least 1)."""
    return max(1, pairs - min_pairs + 1)


def look_confidence(pairs: int, min_pairs: int, alpha: float = ALPHA) -> float:
    """The confidence of each look: 1 - α/L (Bonferroni over the looks)."""
    return 1 - alpha / looks(pairs, min_pairs)


@dataclass(frozen=True)
class Look:
    """The loss share after some pairs and whether it settled."""

    losses: int
    decided: int
    scored: int
    interval: tuple[float, float]
    confidence: float
    verdict: str | None  # "Failed" | "Successful" once settled, else None

    def describe(self, max_loss_share: float) -> str:
        lo, hi = self.interval
        text = (f"loss share {self.losses}/{self.decided} decided, interval [{lo:.3f}, "
                f"{hi:.3f}] at {self.confidence:.2%}")
        if self.verdict == "Failed":
            return f"{text} > maxLossShare {max_loss_share:g}"
        if self.verdict == "Successful":
            return f"{text} < maxLossShare {max_loss_share:g}"
        return f"{text} holds maxLossShare {max_loss_share:g}"


def look(
    preferences: Sequence[float], *, pairs: int, min_pairs: int, max_loss_share: float,
    alpha: float = ALPHA,
) -> Look:
    """The look after the scored ``preferences`` (the candidate's, 0.5 a tie) of a run of
    ``pairs`` prompts; settled only from ``min_pairs`` scored pairs on."""
    losses = sum(1 for p in preferences if p < 0.5)
    decided = losses + sum(1 for p in preferences if p > 0.5)
    confidence = look_confidence(pairs, min_pairs, alpha)
    lo, hi = wilson_interval(losses, decided, confidence)
    verdict = None
    if len(preferences) >= min_pairs and decided:
        if lo > max_loss_share:
            verdict = "Failed"
        elif hi < max_loss_share:
            verdict = "Successful"
    return Look(losses, decided, len(preferences), (lo, hi), confidence, verdict)
