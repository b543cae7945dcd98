"""The checker's loader memoises scalar tag resolution: it must read every scalar exactly as
PyYAML's SafeLoader does, however often the same text comes back, quoted or not."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
import yaml

from dgdgen import yamlio
from dgdgen.yamlio import yaml11
from dgdgen.yamlio import doc as yamldoc
from dgdgen.errors import InputError, Location

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
        assert yaml.load(text, Loader=yaml11._fast_loader()) == expected
        (doc,) = yamlio.load_documents_fast(text, "t.yaml")
        assert {k: v for k, v in doc.data.items() if not k.startswith("l")} == {
            k: (v.isoformat() if hasattr(v, "isoformat") else v)
            for k, v in expected.items() if not k.startswith("l")}
        # the same types too (True == 1): the walk reads integers, booleans and null itself
        assert {k: type(v) for k, v in doc.data.items() if not k.startswith("l")} == {
            k: str if hasattr(v, "isoformat") else type(v)
            for k, v in expected.items() if not k.startswith("l")}
    got = yaml.load(text, Loader=yaml11._fast_loader())
    assert got["p0"] is True and got["q0"] == "yes" and got["d0"] == "yes"
    assert got["p11"] == 31 and got["q11"] == "0x1f"


def test_repository_yaml_reads_as_with_safe_loader() -> None:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(REPO.glob("tests/check/corpus/**/*.yaml"))
    assert len(files) > 100
    for f in files:
        text = f.read_text()
        assert list(yaml.load_all(text, Loader=yaml11._fast_loader())) == list(
            yaml.load_all(text, Loader=yaml.CSafeLoader)), f


def _built(text: str) -> list[yamlio.Document]:
    """The documents as the builder that reads every case reads them (positions in a dict):
    what the packed reading must equal."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(yaml11, "_packed11", lambda text: None)
        return yamlio.load_documents_fast(text, "t.yaml")


def _typed(value: object) -> object:
    """The value with the type of every scalar spelt out (1 == 1.0 == True in Python)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return type(value).__name__, repr(value)


PACKED = [
    "a: 1\nb:\n  - x\n  - {c: 2, d: [3, 4]}\n  - - deep\n    - er\ne: {}\nf: []\n",
    "x: |\n  line\n  two\ny: [a, [b, [c]], {d: e}]\n---\nz: 1\n---\n- [p, q]\n- r\n",
    "true: 2\n8000: 3\n'q': x\n\"r\": [y, 'z']\nn: ~\nb: yes\nf: 1.5\nd: 2024-01-02\n",
    "--- plain\n--- 5\n---\n- a\n",
]
# Left to the builder: aliases and anchors, merge keys, tags, keys that are collections,
# duplicate keys, values it refuses.
BUILT = [
    "k: &v [1, 2]\nl: *v\nm: {n: *v}\n",
    "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  z: 3\n",
    "? [a, b]\n: 1\n",
    "a: !!str 5\n",
    "a: &x 1\n",
]


def _repository_texts() -> list[str]:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(
        REPO.glob("tests/check/corpus/**/*.yaml"))
    return [f.read_text() for f in files]


def test_packed_positions_are_the_built_ones() -> None:
    texts = PACKED + BUILT + _repository_texts()
    for text in texts:
        docs = yamlio.load_documents_fast(text, "t.yaml")
        built = _built(text)
        assert [(_typed(d.data), d.index, d.start_line) for d in docs] == [
            (_typed(d.data), d.index, d.start_line) for d in built], text
        for doc, expected in zip(docs, built):
            packed = isinstance(doc.positions, yamldoc.PackedPositions)
            assert packed == (text not in BUILT and isinstance(doc.data, (dict, list))), text
            assert dict(doc.positions) == expected.positions
            assert list(doc.positions) == list(expected.positions)
            assert len(doc.positions) == len(expected.positions)
            for path, where in expected.positions.items():
                assert doc.positions[path] == where and path in doc.positions
                assert doc.location(path) == Location("t.yaml", *where)


def test_packed_positions_of_missing_fields() -> None:
    (doc,) = yamlio.load_documents_fast("a:\n  b: [x, y]\nc: z\n", "t.yaml")
    for path in [("a", "q"), ("a", "b", 2), ("a", "b", -1), ("a", "b", "0"), ("c", "x"),
                 ("a", 0), ()]:
        assert path not in doc.positions and doc.positions.get(path) is None
    assert doc.location(("a", "b", 5, "k")) == Location("t.yaml", 2, 3)  # its parent
    assert doc.location(("q",)) == Location("t.yaml", 1, 1)


def test_a_merge_key_keeps_the_built_positions() -> None:
    text = "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  z: 3\n"
    (doc,) = yamlio.load_documents_fast(text, "t.yaml")
    assert doc.data["use"] == {"x": 1, "y": 2, "z": 3}
    assert not isinstance(doc.positions, yamldoc.PackedPositions)
    assert doc.positions == _built(text)[0].positions


def test_what_the_packed_reading_leaves_is_said_as_the_builder_says_it() -> None:
    """A value refused, a duplicate key, nesting over the limit, a syntax error: the same error,
    at the same place, as the builder's (the packed reading gives up and the builder reads the
    stream, or the parser says it first)."""
    for text in ["a: 1\nb: 99999999999999999999\n", "a:\n  b: 1\n  b: 2\n",
                 "9223372036854775808: x\n", "a: " + "[" * 70 + "]" * 70 + "\n",
                 "a: 1\nb: [\n", "a: 1\nb: 2\na: 3\nc: [\n", "k: *nowhere\n"]:
        said = []
        for read in (lambda t: yamlio.load_documents_fast(t, "t.yaml"), _built):
            with pytest.raises(InputError) as err:
                read(text)
            said.append((err.value.message, err.value.location, err.value.field))
        assert said[0] == said[1], (text, said)


def test_repository_yaml_reads_to_the_safe_loaders_values_and_types() -> None:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(
        REPO.glob("tests/check/corpus/**/*.yaml"))
    for f in files:
        text = f.read_text()
        expected = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d is not None]
        got = [d.data for d in yamlio.load_documents_fast(text, str(f))]
        # JSON tells true from 1 and null from "" (a date is its ISO text in both)
        assert json.dumps(got, default=lambda o: o.isoformat()) == json.dumps(
            expected, default=lambda o: o.isoformat()), f


def test_reading_leaves_no_cycle_for_the_collector() -> None:
    """The checker reads with the collector paused: anything a load leaves in a reference cycle
    (the parser and its buffers) would stay until the process exits."""
    text = "a: 1\nb:\n  - {c: [x, 'y']}\n---\n- z\n"
    yamlio.load_documents_fast(text, "t.yaml")  # the memos and the setup, once
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            yamlio.load_documents_fast(text, "t.yaml")
        assert gc.collect() == 0
    finally:
        gc.enable()
