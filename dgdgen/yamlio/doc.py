"""What a loaded YAML document is: plain Python data, and the 1-based line and column of every
mapping key and sequence item, so that any later stage can point at ``file:line:column`` for a
field path (:class:`Document`). The loaders (dgdgen.yamlio) fill it; every stage after them
reads it. :class:`PackedPositions` is the compact form of those positions that the checker's
bulk loader keeps."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dgdgen.errors import Location

FieldPath = tuple[str | int, ...]
Positions = dict[FieldPath, tuple[int, int]]  # 1-based (line, column) of each field


@dataclass
class Document:
    """One YAML document as plain Python data, with the position of every field (a dict, or
    :class:`PackedPositions` from the bulk loader)."""

    data: Any
    file: str
    index: int = 0  # position of the document within a multi-document stream
    positions: Mapping[FieldPath, tuple[int, int]] = field(default_factory=dict)
    start_line: int = 1

    def location(self, path: Sequence[str | int] = ()) -> Location:
        """The closest known location of ``path`` (falls back to its nearest parent)."""
        p: FieldPath = tuple(path)
        positions = self.positions
        while p:
            found = positions.get(p)
            if found is not None:
                return Location(self.file, *found)
            p = p[:-1]
        return Location(self.file, self.start_line, 1)


class PackedPositions(Mapping[FieldPath, tuple[int, int]]):
    """The positions of a document's fields as :func:`~dgdgen.yamlio.yaml11.load_documents_fast` keeps
    them: two 32-bit words per mapping key and sequence item (its 0-based line and column), in
    an array, in the order of the text, instead of a dict of field-path tuples to (line, column)
    tuples.
    A check of 20,000 files held 240 MB of those until its report was written, more than the
    documents themselves.

    A field's words are found by following its path through the data: the text gives a
    collection's fields in their order, each followed by the fields under its value. On the
    first lookup one pass over the collections notes where each one's fields start and, for
    each of its fields whose value is a collection, where the fields under that value end;
    the fields between are plain values, one after another. Most documents have no finding
    and are never asked. It holds as long as the data is not changed: the checker, the only
    user, never changes a document."""

    __slots__ = ("_data", "_index", "_words")

    def __init__(self, data: Any, words: array[int]) -> None:
        self._data = data
        self._words = words
        self._index: dict[int, _Fields] | None = None

    def _field(self, path: FieldPath) -> int | None:
        """The ordinal of ``path``'s field in the text, or None when the data has no such
        field."""
        index = self._index
        if index is None:
            index = self._index = {}
            if type(self._data) is dict or type(self._data) is list:
                _index_fields(self._data, 0, index)
        node = self._data
        found = None
        for part in path:
            if type(node) is dict:
                try:
                    ordinal = list(node).index(part)
                except ValueError:
                    return None
            elif type(node) is list:
                if not isinstance(part, int) or not 0 <= part < len(node):
                    return None
                ordinal = part
            else:
                return None
            fields = index[id(node)]
            if isinstance(fields, int):  # no field's value is a collection
                found = fields + ordinal
            else:
                start, nested, ends = fields
                before = bisect_left(nested, ordinal)  # the collections among those before
                found = start + ordinal if not before else \
                    ends[before - 1] + ordinal - nested[before - 1] - 1
            node = node[part]
        return found

    def get(self, path: FieldPath, default: Any = None) -> Any:
        found = self._field(path)
        if found is None:
            return default
        words = self._words
        return words[2 * found] + 1, words[2 * found + 1] + 1

    def __getitem__(self, path: FieldPath) -> tuple[int, int]:
        found: tuple[int, int] | None = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def __contains__(self, path: object) -> bool:
        return isinstance(path, tuple) and self._field(path) is not None

    def __iter__(self) -> Iterator[FieldPath]:
        """Every field's path, in the order of the text (as the loader met them)."""
        return (p for p, _ in iter_paths(self._data) if p)

    def __len__(self) -> int:
        return len(self._words) // 2


# where a collection's fields start in the text, and unless none has a collection as its value,
# the ordinals of those that do among its fields and where the fields under each value end
_Fields = int | tuple[int, list[int], list[int]]


def _index_fields(node: dict[str, Any] | list[Any], start: int, index: dict[int, _Fields]
                  ) -> int:
    """Note in ``index`` the :data:`_Fields` of ``node``, whose first field is the
    ``start``-th of the text, and of every collection under it; return the ordinal after
    ``node``'s fields (the depth is bounded by the loader's limit)."""
    nested: list[int] = []
    ends: list[int] = []
    at = start
    for ordinal, child in enumerate(node.values() if type(node) is dict else node):
        at += 1
        if type(child) is dict or type(child) is list:
            at = _index_fields(child, at, index)
            nested.append(ordinal)
            ends.append(at)
    index[id(node)] = (start, nested, ends) if nested else start
    return at


def iter_paths(data: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any]]:
    """Every (path, value) pair of a plain data tree, depth first."""
    yield path, data
    if isinstance(data, dict):
        for k, v in data.items():
            yield from iter_paths(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from iter_paths(v, path + (i,))
