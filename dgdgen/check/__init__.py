"""The rollout-safety checker: DGD facts → base/head classification → rules → findings.

The generator uses :func:`verdict` (and :func:`recommend`) for ``isolation: auto``.
"""

from dgdgen.check.classify import (
    Category,
    Change,
    Recommendation,
    RiskGrade,
    Verdict,
    recommend,
    verdict,
)

__all__ = ["Category", "Change", "Recommendation", "RiskGrade", "Verdict", "recommend", "verdict"]
