"""The checker's loader memoises scalar tag resolution: it must read every scalar exactly as
PyYAML's SafeLoader does, however often the same text comes back, quoted or not."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from dgdgen import yamlio
from dgdgen.errors import Location

REPO = Path(__file__).resolve().parents[1]

SCALARS = ["yes", "No", "on", "OFF", "true", "False", "~", "null", "", "0", "012", "0x1f", "0o17",
           "1_000", "-3", "+7", "1.5", "1e3", "1.0e3", ".inf", "-.Inf", ".nan", "2024-01-02",
           "2001-12-14t21:59:43.10-05:00", "8000", "1Gi", "abc", "3:25:45"]


def _stream() -> str:
    lines = []
    for i, s in enumerate(SCALARS):
        lines.append(f"p{i}: {s}" if s else f"p{i}:")
        lines.append(f"q{i}: '{s}'")
        lines.append(f"d{i}: \"{s}\"")
        lines.append(f"l{i}: [{s}, '{s}']" if s else f"l{i}: []")
    return "\n".join(lines) + "\n"


def test_same_values_as_safe_loader_twice_over() -> None:
    text = _stream()
    expected = yaml.load(text, Loader=yaml.SafeLoader)
    for _ in range(2):  # the second pass is served from the memo
        assert yaml.load(text, Loader=yamlio._fast_loader()) == expected
        (doc,) = yamlio.load_documents_fast(text, "t.yaml")
        assert {k: v for k, v in doc.data.items() if not k.startswith("l")} == {
            k: (v.isoformat() if hasattr(v, "isoformat") else v)
            for k, v in expected.items() if not k.startswith("l")}
        # the same types too (True == 1): the walk reads integers, booleans and null itself
        assert {k: type(v) for k, v in doc.data.items() if not k.startswith("l")} == {
            k: str if hasattr(v, "isoformat") else type(v)
            for k, v in expected.items() if not k.startswith("l")}
    got = yaml.load(text, Loader=yamlio._fast_loader())
    assert got["p0"] is True and got["q0"] == "yes" and got["d0"] == "yes"
    assert got["p11"] == 31 and got["q11"] == "0x1f"


def test_repository_yaml_reads_as_with_safe_loader() -> None:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(REPO.glob("tests/check/corpus/**/*.yaml"))
    assert len(files) > 100
    for f in files:
        text = f.read_text()
        assert list(yaml.load_all(text, Loader=yamlio._fast_loader())) == list(
            yaml.load_all(text, Loader=yaml.CSafeLoader)), f


def _walked(text: str) -> list[dict[yamlio.FieldPath, tuple[int, int]]]:
    """The positions of each document as a dict, recorded by the walk that keeps them so."""
    loader = yamlio._fast_loader()(text)
    try:
        out = []
        for _, node in yamlio._roots(loader):
            if isinstance(node, yaml.ScalarNode):
                continue
            positions: dict[yamlio.FieldPath, tuple[int, int]] = {}
            yamlio._walker11(loader).walk(node, (), positions)
            out.append(positions)
        return out
    finally:
        loader.dispose()


PACKED = [
    "a: 1\nb:\n  - x\n  - {c: 2, d: [3, 4]}\n  - - deep\n    - er\ne: {}\nf: []\n",
    "k: &v [1, 2]\nl: *v\nm: {n: *v}\n",  # aliases expand into collections of their own
    "x: |\n  line\n  two\ny: [a, [b, [c]], {d: e}]\n---\nz: 1\n---\n- [p, q]\n- r\n",
    "? [a, b]\n: 1\ntrue: 2\n8000: 3\n",
]


def test_packed_positions_are_the_walked_ones() -> None:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(REPO.glob("tests/check/corpus/**/*.yaml"))
    for text in PACKED + [f.read_text() for f in files]:
        docs = [d for d in yamlio.load_documents_fast(text, "t.yaml") if d.data is not None]
        walked = _walked(text)
        assert len(docs) == len(walked)
        for doc, expected in zip(docs, walked):
            assert isinstance(doc.positions, yamlio.PackedPositions), text
            assert dict(doc.positions) == expected and list(doc.positions) == list(expected)
            for path, where in expected.items():
                assert doc.positions[path] == where and path in doc.positions
                assert doc.location(path) == Location("t.yaml", *where)


def test_packed_positions_of_missing_fields() -> None:
    (doc,) = yamlio.load_documents_fast("a:\n  b: [x, y]\nc: z\n", "t.yaml")
    for path in [("a", "q"), ("a", "b", 2), ("a", "b", -1), ("a", "b", "0"), ("c", "x"),
                 ("a", 0), ()]:
        assert path not in doc.positions and doc.positions.get(path) is None
    assert doc.location(("a", "b", 5, "k")) == Location("t.yaml", 2, 3)  # its parent
    assert doc.location(("q",)) == Location("t.yaml", 1, 1)


def test_a_merge_key_keeps_the_walked_positions() -> None:
    text = "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  z: 3\n"
    (doc,) = yamlio.load_documents_fast(text, "t.yaml")
    assert doc.data["use"] == {"x": 1, "y": 2, "z": 3}
    assert not isinstance(doc.positions, yamlio.PackedPositions)
    assert doc.positions == _walked(text)[0]


def test_repository_yaml_walks_to_the_safe_loaders_values_and_types() -> None:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(REPO.glob("tests/check/corpus/**/*.yaml"))
    for f in files:
        text = f.read_text()
        expected = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
        got = [d.data for d in yamlio.load_documents_fast(text, str(f))]
        # JSON tells true from 1 and null from "" (a date is its ISO text in both)
        assert json.dumps(got, default=lambda o: o.isoformat()) == json.dumps(
            expected, default=lambda o: o.isoformat()), f
