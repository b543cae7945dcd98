"""Run every invariant over a rendered tree — on disk (``dgdgen verify``) or in memory, before
``render`` writes it. One public function per source."""

from __future__ import annotations

from collections.abc import Mapping

from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import forget
from dgdgen.cluster.rules import Tree
from dgdgen.cluster.rules.registry import RULES
from dgdgen.cluster.transitions import State, read_tree, states_of
from dgdgen.errors import DgdgenError


def _run(tree: Tree) -> list[Finding]:
    try:
        return sorted(f for m in RULES.values() for f in m.check(tree))
    finally:
        forget()


def check_tree(root: str) -> list[Finding]:
    """The invariants' findings on the rendered tree (or single state) in folder ``root``."""
    return _run(Tree(root, read_tree(root)))


def check_files(files: Mapping[str, str], root: str) -> list[Finding]:
    """The same over files not yet written (relative path → text), shown under ``root``."""
    return _run(Tree(root, states_of(files, root)))


def check_move(frm: State | None, to: State, root: str) -> list[Finding]:
    """The findings of one GitOps move: ``to`` at rest and the transition from ``frm`` (whose
    own findings at rest are not reported: they are no reason to refuse leaving it)."""
    if frm is None:
        return _run(Tree(root, [to], pairs=[]))
    return _run(Tree(root, [frm, to], pairs=[(frm, to)], quiet=frozenset({frm.label})))


class InvariantBroken(DgdgenError):
    """Rendered objects that would break an invariant on a cluster: nothing is written, exit 1."""

    exit_code = 1

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("\n".join(
            f"{f.file}:{f.line}:{f.column}: {f.object}: {f.code} {f.slug}: {f.message}"
            for f in findings) + "\nnothing was written (docs/invariants.md says what each "
            "invariant protects and how to keep it)")


def require(findings: list[Finding]) -> list[Finding]:
    """Refuse error findings (:class:`InvariantBroken`); the warnings are returned."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if errors:
        raise InvariantBroken(errors)
    return [f for f in findings if f.severity is not Severity.ERROR]
