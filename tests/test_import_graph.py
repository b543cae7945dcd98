"""The import graph of the `dgdgen` package has no cycle (STYLE.md, principle 1).

Every `import` statement of every module counts: top-level ones, those under `if TYPE_CHECKING:`
(still a dependency) and function-local ones (a hidden dependency, but one all the same). An edge
goes to the module named (``from dgdgen.render import dgds`` → ``dgdgen.render.dgds``, ``from
dgdgen.plan import Plan`` → ``dgdgen.plan``), relative imports resolved; the implicit import of a
parent package is not an edge, as in grimp / import-linter.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dgdgen"

Edges = dict[str, dict[str, str]]  # module → {imported module: "file:line" of the first import}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> Edges:
    """Every intra-package import edge of the package at ``root``."""
    files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    pkg = root.name
    graph: Edges = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges: dict[str, str] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in files else source
                           for a in node.names]
            for target in targets:
                if (target == pkg or target.startswith(pkg + ".")) and target != name:
                    assert target in files, f"{path}:{node.lineno}: imports {target}, not found"
                    edges.setdefault(target, f"{path.relative_to(root.parent)}:{node.lineno}")
        graph[name] = edges
    return graph


def cycles(graph: Edges) -> list[tuple[list[str], list[str]]]:
    """Each strongly connected component of more than one module (Tarjan), with a shortest
    cycle through its first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    found = []
    for comp in sorted(components):
        members = set(comp)
        start = comp[0]
        # breadth-first from start back to start inside the component: a shortest cycle
        paths = {w: [start, w] for w in sorted(graph[start]) if w in members}
        queue = list(paths)
        while start not in paths:
            v = queue.pop(0)
            for w in sorted(graph[v]):
                if w in members and w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
        found.append((comp, paths[start]))
    return found


def describe(graph: Edges, comp: list[str], cycle: list[str]) -> str:
    return (" → ".join(cycle) + "\n" + "\n".join(
        f"    {a} imports {b} at {graph[a][b]}" for a, b in itertools.pairwise(cycle))
        + f"\n  (one of the cycles among {len(comp)} modules: {', '.join(comp)})")


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 50 and sum(map(len, graph.values())) > 200  # the whole package was read
    found = cycles(graph)
    if found:
        pytest.fail("import cycles in dgdgen/:\n" + "\n".join(describe(graph, *c) for c in found),
                    pytrace=False)


def test_a_cycle_is_found_and_named(tmp_path: Path) -> None:
    """The detector itself: a TYPE_CHECKING import closing a loop with a function-local one."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "top.py").write_text("def run():\n    from pkg.sub import low\n")
    (pkg / "sub" / "low.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import run\n")
    (pkg / "sub" / "other.py").write_text("from . import low\nimport pkg.top\n")
    graph = import_graph(pkg)
    assert graph["pkg.top"] == {"pkg.sub.low": "pkg/top.py:2"}
    assert graph["pkg.sub.low"] == {"pkg.top": "pkg/sub/low.py:3"}
    assert graph["pkg.sub.other"] == {"pkg.sub.low": "pkg/sub/other.py:1",
                                      "pkg.top": "pkg/sub/other.py:2"}
    ((comp, cycle),) = cycles(graph)
    assert comp == ["pkg.sub.low", "pkg.top"]
    assert cycle == ["pkg.sub.low", "pkg.top", "pkg.sub.low"]
    assert describe(graph, comp, cycle) == (
        "pkg.sub.low → pkg.top → pkg.sub.low\n"
        "    pkg.sub.low imports pkg.top at pkg/sub/low.py:3\n"
        "    pkg.top imports pkg.sub.low at pkg/top.py:2\n"
        "  (one of the cycles among 2 modules: pkg.sub.low, pkg.top)")
    (pkg / "sub" / "low.py").write_text("import os\n")
    assert cycles(import_graph(pkg)) == []


# Issue 35: a module past this many lines is split along its responsibilities, or says why it is
# one piece in a paragraph of its docstring that starts with "Why one module:".
LONG_MODULE_LINES = 600


def long_modules_without_reason(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n")
        if lines <= LONG_MODULE_LINES:
            continue
        doc = ast.get_docstring(ast.parse(text, filename=str(path))) or ""
        if not any(p.startswith("Why one module:") for p in doc.split("\n\n")):
            out.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return out


def test_long_modules_say_why_they_are_one() -> None:
    missing = long_modules_without_reason(PACKAGE)
    if missing:
        pytest.fail(f"modules past {LONG_MODULE_LINES} lines with no 'Why one module:' paragraph "
                    "in their docstring (split them, or say why they are one):\n  "
                    + "\n  ".join(missing), pytrace=False)


def test_a_long_module_without_a_reason_is_named(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "x = 1\n" * LONG_MODULE_LINES
    (pkg / "short.py").write_text('"""Short."""\n' + "x = 1\n" * 10)
    (pkg / "long.py").write_text('"""Long.\n\nIt grew."""\n' + body)
    (pkg / "said.py").write_text('"""Long.\n\nWhy one module: one table."""\n' + body)
    assert long_modules_without_reason(pkg) == [f"pkg/long.py: {LONG_MODULE_LINES + 3} lines"]
