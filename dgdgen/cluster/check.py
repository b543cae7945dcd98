"""Run every invariant over a rendered tree: one public function for the commands."""

from __future__ import annotations

from dgdgen.check.findings import Finding
from dgdgen.cluster.rules import Tree
from dgdgen.cluster.rules.registry import RULES
from dgdgen.cluster.transitions import read_tree


def check_tree(root: str) -> list[Finding]:
    tree = Tree(root, read_tree(root))
    return sorted(f for m in RULES.values() for f in m.check(tree))
