"""The rule catalogue: one module per rule (frozen metadata + ``check(ctx)``), and the explicit
registry in :mod:`dgdgen.check.rules.registry`.

Codes are forever (STYLE.md principle 4): ``DGD0xx`` checker hygiene, ``DGD1xx`` hazards visible
in one file, ``DGD2xx`` rollout hazards of a base → head change, ``RTE3xx`` traffic routes,
``ANA4xx`` analysis gates. A renamed slug stays reachable through ``aliases``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.inplace import Namespaces, consequence


@dataclass(frozen=True)
class RuleMeta:
    code: str
    slug: str
    severity: Severity
    summary: str  # what, one line
    rationale: str  # why, with the upstream citation
    remediation: str
    needs_base: bool = False  # a diff rule: only fires when the file has a base revision
    category: str | None = None  # the diff category its findings carry
    aliases: tuple[str, ...] = ()
    # In-place rules: what applying a change of this category does, per release and worker
    # namespaces (dgdgen.check.inplace, the one model): shown in the docs and, for the targeted
    # release and backing, in the SARIF help text and the finding messages.
    in_place: bool = False
    # What to do, in a few words: the one `help:` line under a finding's headline (the full
    # ``remediation`` is behind --verbose, in JSON and on the rule's page).
    help: str = ""

    def consequence(self, release: str, namespaces: Namespaces) -> str | None:
        if not self.in_place or self.category is None:
            return None
        from dgdgen.check.flags import Category

        return consequence(Category(self.category), release, namespaces)

    def finding(self, *, file: str, line: int | None, column: int | None, message: str,
                object: str, component: str | None = None, key: str = "",
                details: str = "", explanation: str = "", category: str | None = None,
                help: str = "") -> Finding:
        """``message`` is the headline; ``details`` the whole text when the headline leaves
        some out; ``category`` the finding's own where the rule has none (DGD205 carries the
        category of the input it could not resolve)."""
        return Finding(
            file=file, line=line or 1, column=column or 1, code=self.code, slug=self.slug,
            severity=self.severity, message=message, object=object,
            category=category or self.category, component=component,
            remediation=self.remediation, key=key, details=details, help=help or self.help,
            explanation=explanation,
        )

    def matches(self, selector: str) -> bool:
        """``--select`` / ``--ignore`` / suppressions: a code, a slug (or alias), or a code
        prefix such as ``DGD2``."""
        s = selector.strip()
        if not s:
            return False
        if s.lower() == self.slug or s.lower() in self.aliases or s.upper() == self.code:
            return True
        return len(s) >= 3 and self.code.startswith(s.upper())

class Rule(Protocol):
    RULE: RuleMeta

    def check(self, ctx: Context) -> Iterator[Finding]: ...
