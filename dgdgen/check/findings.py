"""Findings are values: immutable, ordered, format-neutral (STYLE.md principle 5)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from operator import attrgetter
from typing import Any


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls(text.lower())
        except ValueError:
            raise ValueError(
                f"unknown severity {text!r} (choose from info, warning, error)"
            ) from None


@dataclass(frozen=True, order=True)
class Finding:
    # Field order is the sort order: by file, position, then code.
    file: str
    line: int
    column: int
    code: str
    slug: str
    severity: Severity
    message: str
    object: str
    category: str | None = None  # for diff findings: mdc-checksum, kv-transfer, runtime-version
    component: str | None = None
    remediation: str = ""
    key: str = ""  # what the finding is about, stable across line moves (for the fingerprint)
    suppressed: bool = False
    suppression_reason: str | None = None
    # Say it short, then deep (STYLE.md principle 12): ``message`` is the headline a reviewer
    # reads at a glance (what changed, the consequence in a few words); ``details`` the whole
    # finding — mechanics, release and worker-backing specifics, sources — for ``--verbose``, the
    # JSON ``details`` field, SARIF's message markdown and JUnit's failure text ("" when the
    # headline says it all); ``help`` one short line of what to do.
    details: str = ""
    help: str = ""
    # The end of ``details`` that explains the rule rather than this finding (what the operator
    # does with an in-place change): the verbose text report prints it once per rule and run.
    explanation: str = ""

    @property
    def fingerprint(self) -> str:
        """Stable identity for baselines and code scanning: independent of line numbers."""
        import hashlib  # lazily: the pre-commit path rarely needs it

        text = "\x1f".join((self.code, self.file, self.object, self.component or "", self.key,
                            self.message if not self.key else ""))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def suppress(self, reason: str) -> Finding:
        return replace(self, suppressed=True, suppression_reason=reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "slug": self.slug,
            "severity": self.severity.value,
            "category": self.category,
            "message": self.message,
            "details": self.details or self.message,
            "help": self.help,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "object": self.object,
            "component": self.component,
            "remediation": self.remediation,
            "fingerprint": self.fingerprint,
            "suppressed": self.suppressed,
            "suppression_reason": self.suppression_reason,
        }


# The sort key of findings, the order ``order=True`` compares them in (their fields, in order),
# as one tuple per finding built in C: the generated ``__lt__`` builds two tuples for every
# comparison (10,000 findings: about 120,000 comparisons).
ORDER = attrgetter(*(f.name for f in fields(Finding)))
