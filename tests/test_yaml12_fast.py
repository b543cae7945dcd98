"""load_documents reads most streams with libyaml: wherever it does, the result must be exactly
what ruamel.yaml's round-trip loader gives (data, types, positions, document index and start),
and wherever the two could differ it must leave the stream to ruamel.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dgdgen import yamlio
from dgdgen.yamlio import yaml12
from dgdgen.yamlio import ruamel as yamlruamel
from dgdgen.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def _ruamel(text: str) -> list[yamlio.Document]:
    """What load_documents returned before the libyaml path: ruamel.yaml only."""
    from ruamel.yaml.error import YAMLError

    docs = []
    try:
        for i, raw in enumerate(yamlruamel._ruamel_loader().load_all(text)):
            if raw is None:
                continue
            positions: dict[Any, tuple[int, int]] = {}
            data = yamlruamel._plain(raw, (), positions)
            lc = getattr(raw, "lc", None)
            start = lc.line + 1 if lc is not None and getattr(lc, "line", None) is not None else 1
            docs.append(yamlio.Document(data, "f.yaml", i, positions, start))
    except YAMLError:
        return []
    return docs


def _typed(value: Any) -> Any:
    """The value with the type of every scalar spelt out (1 == 1.0 == True in Python)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, repr(value))


def _same(fast: list[yamlio.Document], slow: list[yamlio.Document]) -> None:
    assert [(_typed(d.data), d.positions, d.index, d.start_line) for d in fast] == [
        (_typed(d.data), d.positions, d.index, d.start_line) for d in slow]


def _repository_yaml() -> list[Path]:
    files = [p for pattern in ("examples/**/*.yaml", "tests/**/*.yaml", "templates/**/*.yaml",
                               "argo/**/*.yaml", "policies/**/*.yaml", "*.yaml")
             for p in REPO.glob(pattern)]
    return sorted(p for p in set(files) if p.stat().st_size < 200_000)


def test_libyaml_reads_repository_yaml_exactly_as_ruamel() -> None:
    files = _repository_yaml()
    fast_count = 0
    for f in files:
        text = f.read_text(encoding="utf-8")
        try:
            fast = yaml12._load_yaml12_fast(text, "f.yaml")
        except InputError:  # not YAML (a Helm template): ruamel.yaml refuses it too
            assert _ruamel(text) == [], f
            continue
        if fast is None:
            continue
        fast_count += 1
        _same(fast, _ruamel(text))
    # The fast path must actually serve the manifests dgdgen reads (else it buys nothing).
    assert len(files) > 300 and fast_count > 0.9 * len(files), (fast_count, len(files))


DIFFERENT_IN_YAML_1_1 = ["yes", "No", "on", "OFF", "012", "0o17", "0x1f", "1_000", "1e3",
                         ".inf", "-.Inf", ".nan", "2024-01-02", "3:25:45", "0b101", "=", "+.5"]


@pytest.mark.parametrize("scalar", DIFFERENT_IN_YAML_1_1)
def test_scalars_read_differently_elsewhere_are_ruamels(scalar: str) -> None:
    text = f"a: {scalar}\nb: [{scalar}]\n"
    docs = yamlio.load_documents(text, "f.yaml")
    _same(docs, _ruamel(text))


@pytest.mark.parametrize("text", [
    "a: &x {b: 1}\nc: *x\n",  # alias
    "# A & B\na: &x [1]\nc: *x\n",  # alias, an ampersand elsewhere too
    "<<: {b: 1}\na: 2\n",  # merge key
    "a: !!str 5\n",  # explicit tag
    "a: !custom x\n",
    "1: a\n",  # non-string key
    "? [a]\n: b\n",  # complex key
    "just a scalar\n",
    "a: x\u2028y\n",  # LINE SEPARATOR: a line break in YAML 1.1 only
    "a: x\x85y\n",  # NEL, the same
    "a: x\u2029\n",  # PARAGRAPH SEPARATOR, the same
    "a: \ufeffx\n",  # a byte-order mark inside the text
    "%YAML 1.1\n---\na: yes\n",  # directive
    "%TAG !e! tag:example.com,2000:\n---\na: 1\n",
    "a: &x.y 1\nb: *x.y\n",  # an anchor name libyaml refuses, YAML 1.2 allows
    "a: 1\n...\nb: 2\n",  # a document after `...` without `---`
])
def test_streams_it_gives_up_on(text: str) -> None:
    assert yaml12._load_yaml12_fast(text, "f.yaml") is None


def test_a_stream_it_gives_up_on_is_checked_to_its_end_first() -> None:
    """An alias leaves the stream to ruamel.yaml, but a syntax error after it is libyaml's."""
    with pytest.raises(InputError) as err:
        yaml12._load_yaml12_fast("a: &x 1\nb: *x\n---\nc: [1, 2\n", "f.yaml")
    assert err.value.location is not None and err.value.location.line == 5, err.value


@pytest.mark.parametrize("text", [
    "a: [1, 2\n",  # malformed
    "a: 1\na: 2\n",  # duplicate key
    "a: \x9f\n",  # a C1 control character: not printable in YAML 1.2 either
    "a: \"\\ud800\"\n",  # a lone surrogate: ruamel.yaml reads it, and UTF-8 cannot hold it
    "%YAML 1.3\n---\na: 1\n",
    "%YAML 1.2\n---\na: [\n",
])
def test_streams_libyaml_refuses_are_refused(text: str) -> None:
    """What libyaml refuses and YAML 1.2 does not allow is refused there, with libyaml's
    position, never read again by ruamel.yaml (20 s per MB of malformed text)."""
    with pytest.raises(InputError) as err:
        yaml12._load_yaml12_fast(text, "f.yaml")
    assert err.value.location is not None and err.value.location.line is not None


def test_directive_1_2_alone_is_read_by_libyaml() -> None:
    text = "%YAML 1.2\n---\na: [1, x]\n"
    fast = yaml12._load_yaml12_fast(text, "f.yaml")
    assert fast is not None
    _same(fast, _ruamel(text))


@pytest.mark.parametrize("text", [
    "a: true\nb: null\nc: ~\nd: -3\ne: 1.50\nf: '012'\ng: \"yes\"\nh: |\n  x\n  y\ni:\n",
    "---\n---\n- a\n- {b: c, d: [1, 2.0]}\n---\nx: y\n",
    "a:\r\n  b: 1\r\n",
    "# comment\n\nkind: X\nmetadata:\n  name: n  # trailing\n",
    # Text that is not ASCII: both count columns in characters, astral ones included.
    "a: caf\u00e9\n# bs16 \u2192 bs32\nb: 1\n",
    "{\u00e4: 1, b\u00e9: [x, \u00ff, 3]}\n",
    "a: \U0001f600 x\nb: {c: \U0001f600\U0001f600, d: 1}  # \U0001f600\n",
    "- \u65e5\u672c\u8a9e\n- {\u65e5: \u672c, x: 2}\n",
    "a: |\n  \u2192x\n  y\nb: x\u00a0y\n",
    "x:\n  - \u00e4: 1\n    \u00f6: 2\n",
    # An ampersand without an alias (a licence header), an anchor never referred to.
    "# NVIDIA CORPORATION & AFFILIATES\na: 'x & y'\nb: &unused [1, 2]\n",
    "a: &x 1\nb: '*'\n",
])
def test_streams_it_reads(text: str) -> None:
    fast = yaml12._load_yaml12_fast(text, "f.yaml")
    assert fast is not None
    _same(fast, _ruamel(text))


@pytest.mark.parametrize("text", [
    "a: 1\nb: 2\na: 3\n",
    "outer:\n  name: a\n  name: b\n",
    "items:\n  - {k: 1, k: 2}\n",
])
def test_both_loaders_word_a_duplicate_key_alike(text: str) -> None:
    """The checker's libyaml walk and ruamel (spec, validate) report a duplicate key in the same
    words at the same place."""
    said = []
    for load in (yamlio.load_documents, yamlio.load_documents_fast):
        with pytest.raises(InputError) as err:
            load(text, "f.yaml")
        assert err.value.location is not None
        said.append((err.value.message, err.value.location.line, err.value.location.column))
    assert said[0] == said[1], said
    assert "duplicate key" in said[0][0] and "malformed" not in said[0][0], said
