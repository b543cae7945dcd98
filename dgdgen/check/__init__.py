"""The rollout-safety checker: DGD facts → base/head classification → rules → findings.

The generator uses :func:`verdict` (and :func:`recommend`) for ``isolation: auto``. They are
imported on first use, so `plan` and `validate`, which need only :mod:`dgdgen.check.facts`, do
not load the classifier.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Category", "Change", "Recommendation", "RiskGrade", "Verdict", "recommend", "verdict"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from dgdgen.check import classify

        return getattr(classify, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
