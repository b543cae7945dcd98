"""The judge's calibration: labelled pairs it must agree with before its verdicts may gate.

A calibration set is JSONL in the repository, one labelled pair a line: ``prompt``, the
``stable`` and the ``candidate`` answer, and ``label`` — which one is better (``stable``,
``candidate`` or ``tie``), as a person judged it. Before the gate asks the generations anything,
the judge is asked every pair in both orders exactly as the gate would ask it
(:meth:`dgdgen.analysis.quality.Judge.prefer`), and its verdict is read the way the gate reads
it: the candidate's mean preference over both orders above one half is "candidate", below is
"stable", one half is "tie".

What the result records:

* **agreement** — pairs whose verdict is the label, with its Wilson interval (95 %). A judge
  error (failed request, no verdict) is a disagreement: a judge that cannot answer has not
  agreed.
* **precision / recall for "candidate worse"** — the verdict the gate acts on (a loss):
  of the pairs the judge called worse, how many were (precision: false alarms roll back a good
  candidate); of the pairs labelled worse, how many it caught (recall: misses pass a bad one).
* **position consistency** — pairs where both orders gave the candidate the same points; a
  judge that prefers whatever comes first ties everything and is caught here.

**The judge may gate only when the interval's lower bound reaches ``minAgreement``**, not its
point estimate: the calibration set is small (tens of pairs), and 9 of 10 is a point estimate of
0.9 with a lower bound of 0.60 — a judge that agrees only 60 % of the time gets 9 or more of 10
right in 4.6 % of runs (15 % at 70 %), and a point-estimate rule would let it gate. The lower
bound makes "agrees at least this often" a claim at 95 % confidence, and makes a set too small
to show it say so (all of n pairs agreed has the lower bound n / (n + 3.84): 16 pairs are
needed for 0.8). Anything short of it — including a budget spent before every pair was asked —
is Inconclusive, never a pass.

No I/O but the judge's requests (the file is read by the caller or by :func:`load_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dgdgen.analysis.quality import Judge
from dgdgen.analysis.scorers import jsonl_objects
from dgdgen.analysis.stats import wilson_interval
from dgdgen.errors import InputError, Location

LABELS = ("stable", "candidate", "tie")
CONFIDENCE = 0.95
_KEYS = ("prompt", "stable", "candidate", "label")


@dataclass(frozen=True)
class LabelledPair:
    prompt: str
    stable: str
    candidate: str
    label: str  # one of LABELS: the better answer
    line: int


def load_pairs(path: Path, text: str | None = None) -> list[LabelledPair]:
    """Parse a JSONL calibration set; one :class:`InputError` at the first bad line."""
    pairs: list[LabelledPair] = []
    for n, where, obj in jsonl_objects(path, text,
                                       "`prompt`, `stable`, `candidate` and `label`"):
        unknown = sorted(set(obj) - set(_KEYS))
        if unknown:
            raise InputError(f"unknown key {unknown[0]!r}; expected `prompt`, `stable`, "
                             "`candidate` and `label`", location=where, field=(unknown[0],))
        for key in _KEYS:
            if key not in obj:
                raise InputError("missing", location=where, field=(key,))
            if not isinstance(obj[key], str):
                raise InputError("expected a string", location=where, field=(key,))
        if not obj["prompt"]:
            raise InputError("expected a non-empty string", location=where, field=("prompt",))
        if obj["label"] not in LABELS:
            raise InputError(f"expected one of {', '.join(LABELS)} (the better answer), got "
                             f"{obj['label']!r}", location=where, field=("label",))
        pairs.append(LabelledPair(obj["prompt"], obj["stable"], obj["candidate"], obj["label"], n))
    if not pairs:
        raise InputError("the calibration set has no labelled pairs", location=Location(str(path)))
    return pairs


def verdict_of(preference: float) -> str:
    """The gate's reading of a pair's preference as a label."""
    return "candidate" if preference > 0.5 else ("stable" if preference < 0.5 else "tie")


def _share(k: int, n: int) -> float | None:
    return k / n if n else None


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


@dataclass(frozen=True)
class Calibration:
    """What the judge did on the calibration set."""

    pairs: int  # labelled pairs in the set
    asked: int  # pairs asked (fewer when the budget ran out)
    agreed: int
    errors: int
    consistent: int
    caught: int  # labelled "stable" (candidate worse) and judged so
    called_worse: int  # judged "stable"
    labelled_worse: int  # labelled "stable", among the pairs asked
    calls: int  # judge requests the calibration sent
    min_agreement: float

    @property
    def agreement(self) -> float | None:
        return _share(self.agreed, self.asked)

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.agreed, self.asked, CONFIDENCE)

    @property
    def precision(self) -> float | None:
        return _share(self.caught, self.called_worse)

    @property
    def recall(self) -> float | None:
        return _share(self.caught, self.labelled_worse)

    @property
    def consistency(self) -> float | None:
        return _share(self.consistent, self.asked)

    @property
    def complete(self) -> bool:
        return self.asked == self.pairs

    @property
    def passed(self) -> bool:
        """May the judge gate: every pair asked and the lower bound at ``min_agreement``."""
        return self.complete and self.interval[0] >= self.min_agreement

    def reason(self) -> str:
        """One line: the measured agreement, its interval, the threshold and what follows."""
        lo, hi = self.interval
        measured = (f"judge agreement {_fmt(self.agreement)} ({self.agreed} of {self.asked} "
                    f"labelled pairs), {CONFIDENCE:.0%} interval [{lo:.2f}, {hi:.2f}]")
        if not self.complete:
            return (f"judge calibration stopped by the judge-call budget after {self.asked} of "
                    f"{self.pairs} labelled pairs ({self.calls} calls): {measured}; the judge "
                    "may not gate")
        if self.passed:
            return f"{measured}, lower bound >= minAgreement {self.min_agreement:g}"
        return (f"{measured}, lower bound {lo:.2f} < minAgreement {self.min_agreement:g}: the "
                "judge may not gate")

    def details(self) -> str:
        """Precision / recall for "candidate worse", position consistency, errors, calls."""
        return (f"candidate worse: precision {_fmt(self.precision)} ({self.caught} of "
                f"{self.called_worse} called), recall {_fmt(self.recall)} ({self.caught} of "
                f"{self.labelled_worse} labelled); position consistency "
                f"{_fmt(self.consistency)} ({self.consistent} of {self.asked}); "
                f"{self.errors} errors; {self.calls} judge calls")

    def as_dict(self) -> dict[str, object]:
        lo, hi = self.interval
        return {
            "pairs": self.pairs, "asked": self.asked, "agreed": self.agreed,
            "agreement": self.agreement, "interval": [lo, hi], "confidence": CONFIDENCE,
            "minAgreement": self.min_agreement, "precisionWorse": self.precision,
            "recallWorse": self.recall, "positionConsistency": self.consistency,
            "errors": self.errors, "calls": self.calls, "passed": self.passed,
        }


def calibrate(judge: Judge, pairs: Sequence[LabelledPair], min_agreement: float) -> Calibration:
    """Ask the judge every labelled pair (both orders) while its budget lasts."""
    asked = agreed = errors = consistent = caught = called_worse = labelled_worse = 0
    start = judge.calls
    for p in pairs:
        if not judge.can_ask():
            break
        r = judge.prefer(p.prompt, p.stable, p.candidate)
        asked += 1
        labelled_worse += p.label == "stable"
        if r.preference is None:
            errors += 1
            continue
        said = verdict_of(r.preference)
        agreed += said == p.label
        consistent += r.consistent
        called_worse += said == "stable"
        caught += said == "stable" == p.label
    return Calibration(len(pairs), asked, agreed, errors, consistent, caught, called_worse,
                       labelled_worse, judge.calls - start, min_agreement)
