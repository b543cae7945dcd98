"""The invariants of rendered states: one module per invariant (frozen metadata + ``check(tree)``)
and the explicit registry in :mod:`dgdgen.cluster.rules.registry`.

Codes are forever (STYLE.md principle 4): ``CLU1xx`` client paths and serving capacity,
``CLU2xx`` roll settings and termination, ``CLU3xx`` GitOps objects. Each finding names the
state or the moment of a transition where the invariant breaks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import Graph, Key, build
from dgdgen.cluster.transitions import Moment, State, moments, transitions


@dataclass(frozen=True)
class InvariantMeta:
    code: str
    slug: str
    severity: Severity
    summary: str  # what, one line
    rationale: str  # why, with the finding that motivated it and the upstream citation
    remediation: str
    finding_of: str = ""  # the review finding that motivated it
    help: str = ""  # what to do, in a few words: the `help:` line under a finding's headline

    def finding(self, *, file: str, line: int | None, column: int | None, message: str,
                object: str, key: str = "", details: str = "") -> Finding:
        """``message`` is the headline; ``details`` the whole text when the headline leaves
        some out."""
        return Finding(file=file, line=line or 1, column=column or 1, code=self.code,
                       slug=self.slug, severity=self.severity, message=message, object=object,
                       remediation=self.remediation, key=key, details=details,
                       help=self.help)


@dataclass
class Tree:
    """The states of one rendered tree, their transitions, and the graph of every moment."""

    root: str
    states: list[State]
    pairs: list[tuple[State, State]] | None = None  # the transitions, when not the tree's own
    # states whose own findings at rest are not reported (the state a GitOps move leaves: what
    # it breaks is no reason to refuse leaving it); they still tell a transition's findings apart
    quiet: frozenset[str] = frozenset()

    @cached_property
    def transitions(self) -> list[tuple[State, State]]:
        return self.pairs if self.pairs is not None else transitions(self.states)

    def moments(self) -> Iterator[Moment]:
        """Every state at rest, then every moment of every transition."""
        for s in self.states:
            yield from moments(None, s)
        for a, b in self.transitions:
            yield from moments(a, b)

    def graph(self, moment: Moment) -> Graph:
        return build(moment.objects)

    def where(self, moment: Moment, key: Key, path: tuple[str | int, ...] = ()
              ) -> tuple[str, int | None, int | None]:
        """The file and line of ``key`` (at ``path``) in the state that brings it, else the one
        before."""
        for state in (moment.to, moment.frm):
            if state is not None and key in state.documents:
                loc = state.documents[key].location(path)
                return loc.file, loc.line, loc.column
        return self.root, None, None


def object_name(key: Key) -> str:
    return f"{key[0]}/{key[1] + '/' if key[1] else ''}{key[2]}"


def mapping_at(d: Any, *path: str) -> Mapping[str, Any]:
    """The mapping at ``path`` inside ``d``; empty where the tree has anything else (a rendered
    tree is untrusted input: a mangled one must not crash a rule)."""
    for p in path:
        d = d.get(p) if isinstance(d, Mapping) else None
    return d if isinstance(d, Mapping) else {}


def list_of(d: Any) -> list[Any]:
    """``d`` if it is a list, else empty."""
    return d if isinstance(d, list) else []
