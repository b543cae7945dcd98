"""The one module that owns YAML: loading with positions, and deterministic dumping.

Loading keeps the 1-based line and column of every mapping key and sequence item, so any later
stage can point at ``file:line:column`` for a field path. Two loaders share that contract:

* :func:`load_documents` uses ruamel.yaml's round-trip loader, which builds only plain YAML
  types (no arbitrary object construction: safe) and records positions. Used for rollout specs
  and the DGDs the generator reads.
* :func:`load_documents_fast` builds the data from libyaml's events (PyYAML's C parser) when it
  is available; it exists for the checker, which must read thousands of files at close to the C
  parser's speed.

Both loaders sit behind the same limits (:class:`Limits`, set once by the CLI): only regular
files are read, and only up to a size cap; before either parser builds anything, one linear pass
over the parser's events refuses nesting deeper than a bound, more aliases than a bound, aliases
whose expansion would add more than a bound of nodes (alias bombs), recursive aliases, and tags
other than the plain YAML types (``!!binary``, ``!!python/...``, custom ``!tags``). So every load
takes time and memory linear in the file's size, whoever wrote the file (docs/robustness.md).

Dumping always goes through ruamel.yaml with a fixed configuration: top-level keys in the
Kubernetes order (apiVersion, kind, metadata, spec, ...), other keys in insertion order, no
aliases, a fixed line width, multi-line strings as literal blocks.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import functools
import gc
import io
import os
import re
import stat
import warnings
from array import array
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from sys import intern as _intern
from typing import Any

from dgdgen.errors import InputError, Location

FieldPath = tuple[str | int, ...]
_Positions = dict[FieldPath, tuple[int, int]]  # 1-based (line, column) of each field

TOP_LEVEL_ORDER = ("apiVersion", "kind", "metadata", "spec", "data", "stringData", "status")


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
    """The positions of a document's fields as :func:`load_documents_fast` keeps them: two
    32-bit words per mapping key and sequence item (its 0-based line and column), in an array,
    in the order of the text, instead of a dict of field-path tuples to (line, column) tuples.
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


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Limits:
    """What one YAML input may cost. The defaults are far above any real DGD or rollout spec
    (the largest upstream DGD is a few kB, nested about 12 levels, with no aliases)."""

    max_bytes: int = 8 * 1024 * 1024
    max_depth: int = 64
    max_aliases: int = 1000
    max_alias_nodes: int = 100_000  # nodes alias expansion may add to one document
    # the largest stream ruamel.yaml reads where libyaml cannot (load_documents): its worst
    # cost, about 1.5 s of CPU and 60 MB, is what the rest of a command costs
    max_ruamel_bytes: int = 64 * 1024


_limits = Limits()


def set_limits(limits: Limits) -> None:
    """Set the limits for every later load (the CLI does this once, from --max-input-size)."""
    global _limits
    _limits = limits


def get_limits() -> Limits:
    return _limits


def parse_size(text: str) -> int:
    """``8M`` / ``512k`` / ``1G`` / ``1048576`` → bytes (binary multiples)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"not a size: {text!r} (expected e.g. 8M, 512k, 1G)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]


def _size_error(size: int, file: str) -> InputError:
    return InputError(
        f"input is {size} bytes, over the limit of {_limits.max_bytes} bytes for one YAML file",
        location=Location(file),
        hint="raise it with --max-input-size if the file is meant to be this large",
    )


_PLAIN_TAGS = {
    "tag:yaml.org,2002:" + t: t for t in ("str", "int", "float", "bool", "null", "timestamp")
}
_COLLECTION_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def _shown_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag


def _at(mark: Any) -> tuple[int, int]:
    """The 1-based (line, column) of a parser's mark (PyYAML and ruamel.yaml count from 0)."""
    return mark.line + 1, mark.column + 1


def _too_deep(location: Location) -> InputError:
    """The one refusal of nesting over the limit, whichever pass or parser meets it first."""
    return InputError(f"nested more than {_limits.max_depth} levels deep", location=location)


# Kubernetes reads an integer into an int64 (apimachinery's JSON and YAML decoding; the CRD
# schemas' int32/int64 formats are narrower still), so a wider one is refused where it is read,
# at its field. Python reads any width, but converts at most 4,300 digits between text and int
# (sys.int_info.default_max_str_digits) and a long text costs quadratic time: the text is checked
# before Python reads it, and a value never leaves a loader unbounded.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class _BadScalar(Exception):
    """A scalar that is refused (its message), raised where it is read and turned into an error
    at its field by the walk that knows the field."""


def _int_text_fits(text: str) -> bool:
    """Whether an integer's text may hold a 64-bit value (binary needs 64 digits at most)."""
    digits = text.replace("_", "").lstrip("+-")
    if digits[:2] in ("0x", "0o", "0b", "0X", "0O", "0B"):
        digits = digits[2:]
    return len(digits.lstrip("0")) <= 64


def _int_range_error(text: str) -> _BadScalar:
    shown = text if len(text) <= 40 else f"an integer of {len(text):,} characters"
    return _BadScalar(f"{shown} does not fit in a 64-bit integer (out of range: Kubernetes reads "
                      f"integers from {INT_MIN} to {INT_MAX})")


def _bounded(value: int, text: str | None = None) -> int:
    """``value`` when it fits in 64 bits, else the refusal (``text``: as written)."""
    if INT_MIN <= value <= INT_MAX:
        return value
    raise _int_range_error(text if text is not None else str(value))


def _not_text(value: str) -> _BadScalar | None:
    """The refusal of a string that is not Unicode text: a lone UTF-16 surrogate, which only an
    escape can write (``"\\ud800"``, half of a JSON-style pair), cannot be encoded in UTF-8 and
    Kubernetes' YAML reader refuses it."""
    if value.isascii():
        return None
    for c in value:
        if 0xD800 <= ord(c) <= 0xDFFF:
            return _BadScalar(_surrogate_message(f"\\u{ord(c):04x}"))
    return None


def _surrogate_message(escape: str) -> str:
    return (f"{escape} is half of a UTF-16 surrogate pair, not a character: the string cannot be "
            "encoded in UTF-8 (write the character itself, or its \\U escape of 8 hex digits)")


def _remember(cache: dict[Any, Any], key: Any, value: Any, text: str) -> None:
    """Keep a scalar's reading in a memo: only for short scalars (they repeat: keys, enums; long
    ones rarely), and the memo is emptied when full, so a long-lived process cannot grow it."""
    if len(text) <= 256:
        if len(cache) >= 65536:
            cache.clear()
        cache[key] = value


def _starts_a_node(text: str, indicator: str) -> bool:
    """Whether ``indicator`` (``*`` of an alias, ``!`` of a tag) appears where a node can start:
    at a line's start or after ``- ``, ``? ``, ``: ``, ``[``, ``{``, ``,`` — not in the middle of
    a scalar (``a && !isNaN(x)``). An over-estimate is harmless (the event pass then runs)."""
    i = text.find(indicator)
    while i != -1:
        j = i - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        following = text[i + 1: i + 2]
        if (j < 0 or text[j] in "\n\r-?:,[{") and following and following not in " \t\r\n,]}=":
            return True
        i = text.find(indicator, i + 1)
    return False


# libyaml's C composer recurses on the C stack: about 20,000 nested levels crash the process
# (measured: 20,000 compose, 50,000 segfault); it composes the key of an unsupported mapping key
# (:func:`_collection_key_error`). Below this bound the event pass can be left out: the loaders
# build from events and check the depth as they go (:class:`_Builder`).
_C_SAFE_DEPTH = 2000
_INDENT = re.compile(r"^[ \t]*", re.MULTILINE)
_MARKERS = re.compile(r"^[ \t]*((?:[-?:][ \t]+)+)", re.MULTILINE)  # `- - ` / `? ` / `: ` runs
# an anchor that begins a word, then a tag (`key: &a !!binary ...`: a node's properties come in
# either order), which _starts_a_node does not see; the literal `&` first keeps the search at C
# speed, and only an anchor that begins a word is tried, so it stays linear in the text's size
_ANCHORED_TAG = re.compile(r"&(?<![^ \t\r\n,\[\]{}]&)[^ \t\r\n,\[\]{}]+[ \t]+!")


def _tag_after_anchor(text: str) -> bool:
    """Whether an anchor followed by a tag stands where a node can start (as in
    :func:`_starts_a_node`: not ``a && !isNaN(x)``)."""
    for m in _ANCHORED_TAG.finditer(text):
        j = m.start() - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        if j < 0 or text[j] in "\n\r-?:,[{":
            return True
    return False


def _may_exceed(text: str) -> bool:
    """False when ``text`` certainly has no alias and no tag, and cannot nest deep enough to
    endanger the C composer, so the event pass can be skipped: the bulk checker's common case
    (an anchor without an alias costs nothing; the depth limit is then checked by the walk)."""
    if _starts_a_node(text, "*") or _starts_a_node(text, "!"):
        return True
    if "&" in text and "!" in text and _tag_after_anchor(text):
        return True
    # every nesting level needs a line or a flow bracket of its own, or a `- `/`? `/`: ` on one
    # line: a count of them bounds the depth. Each of those indicators ends in a space of its
    # own, so the spaces bound them too, and the text's length bounds all of them: no count at
    # all for a short file (most DGDs), one count of a character instead of three of a pair
    # for a file of a few kB.
    if len(text) + 2 <= _C_SAFE_DEPTH:
        return False
    flow = text.count("[") + text.count("{")
    lines = text.count("\n")
    if lines + flow + text.count(" ") + 2 <= _C_SAFE_DEPTH:
        return False
    bound = lines + flow + text.count("- ") + text.count("? ") + text.count(": ")
    if bound + 2 <= _C_SAFE_DEPTH:
        return False
    # A long file: a block collection nested in another starts deeper (a list may share its
    # key's indentation, but not twice in a row) or after `- `/`? `/`: ` on the same line, so
    # the distinct indentations and the longest run of indicators bound the depth too.
    indents = len(set(map(len, _INDENT.findall(text))))
    markers = max(map(len, _MARKERS.findall(text)), default=0)
    return flow + 2 * indents + 2 * markers + 2 > _C_SAFE_DEPTH


def check_limits(text: str, file: str, *, always: bool = True) -> bool:
    """Refuse ``text`` before any parser builds it when it is too large, too deep, an alias bomb,
    holds a recursive alias or a tag outside the plain YAML types. One pass over libyaml's
    events (iterative: no recursion, whatever the depth); time and memory linear in the size.
    Syntax errors are left to the loader, which reports them with their position. Returns
    whether the event pass ran (with ``always=False`` it is skipped where it cannot find
    anything)."""
    if len(text) > _limits.max_bytes:
        raise _size_error(len(text), file)
    if not always and not _may_exceed(text):
        return False
    import yaml
    from yaml import events as ev

    lim = _limits
    resolver: Any = yaml.resolver.Resolver()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)

    def fail(message: str, mark: Any, hint: str | None = None) -> InputError:
        return InputError(message, location=Location(file, *_at(mark)), hint=hint)

    try:
        depth = aliases = added = 0
        stack: list[list[Any]] = []  # [anchor, expanded size] of each open collection
        sizes: dict[str, int] = {}
        open_anchors: set[str] = set()
        while loader.check_event():
            e = loader.get_event()
            if isinstance(e, ev.DocumentStartEvent):
                depth = aliases = added = 0
                sizes.clear()
            elif isinstance(e, ev.CollectionStartEvent):
                if e.tag not in (None, "!") and e.tag not in _COLLECTION_TAGS:
                    raise fail(f"unsupported YAML tag {_shown_tag(e.tag)}", e.start_mark,
                               "only plain YAML mappings, lists and scalars are read")
                depth += 1
                if depth > lim.max_depth:
                    raise _too_deep(Location(file, *_at(e.start_mark)))
                stack.append([e.anchor, 1])
                if e.anchor:
                    open_anchors.add(e.anchor)
            elif isinstance(e, ev.CollectionEndEvent):
                anchor, size = stack.pop()
                depth -= 1
                if anchor:
                    sizes[anchor] = size
                    open_anchors.discard(anchor)
                if stack:
                    stack[-1][1] += size
            elif isinstance(e, ev.ScalarEvent):
                if e.tag not in (None, "!"):
                    kind = _PLAIN_TAGS.get(e.tag)
                    if kind is None:
                        raise fail(f"unsupported YAML tag {_shown_tag(e.tag)}", e.start_mark,
                                   "only plain YAML mappings, lists and scalars are read")
                    got = resolver.resolve(yaml.ScalarNode, e.value, (True, False))
                    if kind != "str" and got != e.tag and not (
                        kind == "float" and got == "tag:yaml.org,2002:int"
                    ):
                        raise fail(f"{e.value!r} is not a valid {_shown_tag(e.tag)}",
                                   e.start_mark)
                if e.anchor:
                    sizes[e.anchor] = 1
                if stack:
                    stack[-1][1] += 1
            elif isinstance(e, ev.AliasEvent):
                if e.anchor in open_anchors:
                    raise fail(f"recursive alias *{e.anchor} (it refers to a node that "
                               "contains it)", e.start_mark)
                aliases += 1
                if aliases > lim.max_aliases:
                    raise fail(f"more than {lim.max_aliases} aliases in one document",
                               e.start_mark)
                size = sizes.get(e.anchor or "", 1)
                added += size
                if added > lim.max_alias_nodes:
                    raise fail(
                        f"aliases expand to more than {lim.max_alias_nodes} nodes "
                        "(an alias bomb?)", e.start_mark,
                    )
                if stack:
                    stack[-1][1] += size
    except yaml.YAMLError as exc:
        # the libyaml in PyYAML 6.0.4's wheels (0.2.6) refuses more than 1,000 open flow
        # collections while it scans ahead for a simple key, before the events above reach the
        # bound: the same refusal
        mark = getattr(exc, "problem_mark", None)
        if "maximum nesting depth" in str(getattr(exc, "problem", "")) and mark is not None:
            raise _too_deep(Location(file, *_at(mark))) from None
        return True  # a syntax error: the loader itself reports it, with its position
    finally:
        loader.dispose()
    return True


# --------------------------------------------------------------------------- ruamel loader


def _ruamel_loader() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    yaml.Constructor = _bounded_constructor()
    return yaml


class _WideInt:
    """An integer scalar whose text is too long to hold 64 bits, kept unread (:func:`_scalar`
    refuses it at its field)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


@functools.lru_cache(maxsize=1)
def _bounded_constructor() -> Any:
    """ruamel.yaml's round-trip constructor, but an integer too long for 64 bits is not read
    (ruamel would call int() on it: a ValueError past 4,300 digits, quadratic time before)."""
    from ruamel.yaml.constructor import RoundTripConstructor

    class Constructor(RoundTripConstructor):
        def construct_yaml_int(self, node: Any) -> Any:
            if isinstance(node.value, str) and not _int_text_fits(node.value):
                return _WideInt(node.value)
            return super().construct_yaml_int(node)

    Constructor.add_constructor("tag:yaml.org,2002:int", Constructor.construct_yaml_int)
    return Constructor


def _plain(node: Any, path: FieldPath, positions: _Positions) -> Any:
    """Convert ruamel round-trip containers/scalars to plain Python, recording positions."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key in node:
            try:
                text = _key(key)
            except _BadScalar as exc:
                where: _Positions = {}
                _ruamel_position(where, path, node, "key", key)
                raise InputError(str(exc), location=Location("", *where.get(path, (None, None))),
                                 field=path) from None
            child = path + (text,)
            _ruamel_position(positions, child, node, "key", key)
            out[text] = _plain(node[key], child, positions)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, item in enumerate(node):
            child = path + (i,)
            _ruamel_position(positions, child, node, "item", i)
            items.append(_plain(item, child, positions))
        return items
    try:
        return _scalar(node)
    except _BadScalar as exc:
        raise InputError(str(exc), location=Location("", *positions.get(path, (None, None))),
                         field=path) from None


def _ruamel_position(positions: _Positions, child: FieldPath, node: Any, kind: str,
                     key: Any) -> None:
    """Record where ruamel.yaml saw a mapping's ``key`` or a list's ``item`` (0-based), if it
    did."""
    try:
        line, col = getattr(node.lc, kind)(key)
    except (KeyError, TypeError, AttributeError):
        return
    positions[child] = (line + 1, col + 1)


def _key(key: Any) -> str:
    # Kubernetes keys are strings; a YAML key such as `8000:` or `true:` is read as its text.
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, _WideInt):
        raise _int_range_error(key.text)
    if isinstance(key, int):
        _bounded(int(key))
    if isinstance(key, str):
        bad = _not_text(key)
        if bad is not None:
            raise bad
    return str(key)


def _scalar(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return _bounded(int(value))
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        bad = _not_text(value)
        if bad is not None:
            raise bad
        return str(value)
    if isinstance(value, _WideInt):
        raise _int_range_error(value.text)
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    tag = getattr(getattr(value, "tag", None), "value", None)
    if isinstance(tag, str) and tag in _PLAIN_TAGS:
        # ruamel keeps an explicitly tagged scalar (`!!str 5`) as a TaggedScalar; the event pass
        # has already checked that its text fits the tag, so PyYAML's constructor builds it.
        import yaml

        text = str(value.value)
        if _PLAIN_TAGS[tag] == "int" and not _int_text_fits(text):
            raise _int_range_error(text)
        node = yaml.ScalarNode(tag, text)
        return _scalar(yaml.SafeLoader("").construct_object(node))
    return value


def _yaml_error(exc: Exception, file: str, text: str | None = None) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    # libyaml says "found character that cannot start any token" without the character that the
    # pure-Python parsers name; put it back so both loaders report the same thing.
    index = getattr(mark, "index", None)
    if (text is not None and isinstance(index, int) and 0 <= index < len(text)
            and problem.startswith("found character that ")):
        problem = f"found character {text[index]!r} that " + problem[len("found character that "):]
    context = getattr(exc, "context", None)
    message = f"malformed YAML: {problem}"
    if context:
        message += f" ({context})"
    location = Location(file)
    position = getattr(exc, "position", None)  # a reader error: a character offset, no mark
    if mark is not None:
        location = Location(file, *_at(mark))
    elif isinstance(position, int) and text is not None:
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        location = Location(file, line, column)
    if "maximum nesting depth" in problem:  # libyaml's own bound (1,000), met before ours
        return _too_deep(location)
    if problem.startswith("found incompatible YAML document") and text is not None:
        return _version_error(text, file) or InputError(message, location=location)
    if problem == "found invalid Unicode character escape code" and text is not None:
        return _escape_error(text, file, location, index)
    if type(exc).__name__ == "DuplicateKeyError":
        # ruamel's words for what the libyaml loaders say (_Builder): one message from both
        dup = re.match(r'found duplicate key "(.*)" with value', problem, re.DOTALL)
        if dup:
            return InputError(f"duplicate key {dup[1]!r}", location=location)
    return InputError(message, location=location)


_DIRECTIVE = re.compile(r"^%YAML[ \t]+([^ \t\r\n#]*)", re.MULTILINE)


def _version_error(text: str, file: str) -> InputError | None:
    """The refusal of a ``%YAML`` directive other than 1.1 and 1.2, at its line (libyaml says
    "incompatible YAML document"; ruamel.yaml failed an assertion)."""
    for m in _DIRECTIVE.finditer(text):
        if m[1] not in ("1.1", "1.2"):
            return InputError(
                f"unsupported YAML version {m[1]!r} (%YAML directive): only 1.1 and 1.2 are read",
                location=Location(file, text.count("\n", 0, m.start()) + 1, 1),
                hint="remove the directive: YAML 1.2 is read by default")
    return None


_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})")


def _escape_error(text: str, file: str, location: Location, index: Any) -> InputError:
    """libyaml's "found invalid Unicode character escape code", as ruamel.yaml's path reports a
    string that is not text: the escape, why, and the field it was in."""
    escape, code = "a \\u or \\U escape", -1
    start = text.rfind("\\", 0, index + 1) if isinstance(index, int) else -1
    m = _ESCAPE.match(text, start) if start >= 0 else None
    if m:
        escape, code = m[0], int(m[0][2:], 16)  # noqa: FURB166 - \\u is no int() prefix
    if 0xD800 <= code <= 0xDFFF:
        message = _surrogate_message(escape)
    else:
        message = f"{escape} is not a Unicode character (the last one is U+10FFFF)"
    return InputError(message, location=location, field=_path_before_error(text))


def _path_before_error(text: str) -> FieldPath:
    """The field libyaml was reading when it met a syntax error: the key (or list item) whose
    value it had begun. One pass over the events before the error (linear, no node built)."""
    import yaml
    from yaml import events as ev

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    stack: list[list[Any]] = []  # per open collection: [a mapping?, key or index, in a value?]

    def node_done() -> None:  # the node being read in the innermost collection has ended
        if stack:
            if stack[-1][0]:
                stack[-1][2] = not stack[-1][2]
            else:
                stack[-1][1] += 1

    try:
        while loader.check_event():
            e = loader.get_event()
            if isinstance(e, (ev.ScalarEvent, ev.AliasEvent, ev.CollectionStartEvent)):
                if stack and stack[-1][0] and not stack[-1][2]:  # a key
                    stack[-1][1] = e.value if isinstance(e, ev.ScalarEvent) else "?"
                if isinstance(e, ev.CollectionStartEvent):
                    mapping = isinstance(e, ev.MappingStartEvent)
                    stack.append([mapping, None if mapping else 0, False])
                else:
                    node_done()
            elif isinstance(e, ev.CollectionEndEvent):
                stack.pop()
                node_done()
            elif isinstance(e, ev.DocumentStartEvent):
                stack.clear()
    except yaml.YAMLError:
        pass
    finally:
        loader.dispose()
    path: list[str | int] = []
    for mapping, key, in_value in stack:
        if mapping and not in_value:
            break
        path.append(key)
    return tuple(path)


def load_documents(text: str, file: str) -> list[Document]:
    """Parse every document of a YAML stream (safe: plain YAML types only), keeping positions.

    ruamel.yaml (YAML 1.2) decides what a stream means, but it reads only what libyaml cannot
    read its way: libyaml (:func:`_read12`, about 20 times faster) reads the stream, reports its
    syntax errors, and gives up, leaving the stream to ruamel.yaml, wherever the two could
    differ (an alias, a scalar such as ``0x1F`` that YAML 1.1 types otherwise, a ``%YAML 1.1``
    directive...). ruamel.yaml's pure-Python parser costs up to 25 s and 600 MB per MB of text,
    so it reads at most :attr:`Limits.max_ruamel_bytes`: a larger stream that needs it is
    refused, naming what needs it and where."""
    # The limits first: libyaml's composer must never see an alias bomb or a nesting deep enough
    # to crash it; the event pass runs where a cheap scan cannot rule those out.
    full = check_limits(text, file, always=False)
    with _collector_paused():
        try:
            return _read12(text, file)
        except _GiveUp as exc:
            why = exc
        if why.reason and len(text) > _limits.max_ruamel_bytes:
            raise InputError(
                f"{why.reason} is read only by dgdgen's complete YAML 1.2 reader, which takes "
                f"files of at most {_limits.max_ruamel_bytes:,} bytes; this one is "
                f"{len(text):,}", location=Location(file, *(why.where or (None, None))),
                hint="write that part of the YAML another way (a quoted string, no alias), or "
                     "split the file")
        if not full:  # ruamel.yaml recurses: every limit is checked before it builds anything
            check_limits(text, file)
        return _ruamel_documents(text, file)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a loader builds its nodes and data: they hold
    no cycle, and the collector's passes over millions of new objects cost as much as the parse
    (a 3 MB stream of small mappings: 1.8 s instead of 0.8 s)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _ruamel_documents(text: str, file: str) -> list[Document]:
    from ruamel.yaml.error import YAMLError

    yaml = _ruamel_loader()
    docs: list[Document] = []
    try:
        with warnings.catch_warnings():
            # a re-used anchor is legal YAML (the later one wins); ruamel would print a warning
            warnings.simplefilter("ignore")
            for i, raw in enumerate(yaml.load_all(text)):
                if raw is None:
                    continue
                positions: _Positions = {}
                data = _plain(raw, (), positions)
                start = 1
                lc = getattr(raw, "lc", None)
                if lc is not None and getattr(lc, "line", None) is not None:
                    start = lc.line + 1
                docs.append(Document(data, file, i, positions, start))
    except YAMLError as exc:
        raise _yaml_error(exc, file, text) from None
    except InputError as exc:  # raised by _plain, which knows the line but not the file
        raise _in_file(exc, file) from None
    except Exception as exc:  # ruamel raises a few non-YAMLError types for odd input
        if exc.__class__.__module__.startswith("ruamel"):
            raise _yaml_error(exc, file, text) from None
        if isinstance(exc, TypeError) and "unhashable" in str(exc):
            raise _collection_key_error(text, file) from None
        if isinstance(exc, (AssertionError, ValueError)) and _raised_in_ruamel(exc):
            # `%YAML 1.0` fails an assertion, `"\U00110000"` a chr(): bad input all the same
            raise _version_error(text, file) or InputError(
                f"malformed YAML: {exc}", location=Location(file)) from None
        raise
    return docs


def _raised_in_ruamel(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and "ruamel" in tb.tb_frame.f_code.co_filename


def _collection_key_error(text: str, file: str) -> InputError:
    """ruamel.yaml fails with a TypeError and no position on a mapping key that is a mapping or a
    list holding another one (``? {a: {b: 1}}``): find that key with libyaml, or report the
    syntax error libyaml finds first (the limits were checked before ruamel.yaml ran)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        todo = [n for n in yaml.compose_all(text, Loader=loader) if n is not None][::-1]
    except yaml.YAMLError as exc:
        return _yaml_error(exc, file, text)
    while todo:  # depth first, in the order of the text
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
            for key, _ in node.value:
                inner = key.value if isinstance(key, yaml.SequenceNode) else (
                    [n for pair in key.value for n in pair]
                    if isinstance(key, yaml.MappingNode) else [])
                if any(isinstance(n, yaml.CollectionNode) for n in inner):
                    return InputError(
                        "unsupported mapping key: a mapping or a list holding another one",
                        location=Location(file, *_at(key.start_mark)),
                        hint="Kubernetes keys are strings")
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            continue
        todo.extend(reversed(children))
    return InputError("unsupported mapping key: a mapping or a list holding another one",
                      location=Location(file), hint="Kubernetes keys are strings")


# ----------------------------------------------------------- YAML 1.2 streams read by libyaml

# The composed node graph of libyaml (the C parser, the same YAML syntax) is converted to the
# plain data that ruamel.yaml's round-trip loader + _plain give, for the streams where that is
# certain; anything else raises _GiveUp and ruamel.yaml reads the stream:
# * plain scalars are typed by ruamel.yaml's own YAML 1.2 resolver; accepted are strings,
#   true/false, null and the spellings of numbers that read the same everywhere (decimal
#   integers without leading zeros, d.d floats); octal, hex, exponents, .inf, timestamps,
#   merge keys and the rest give up;
# * quoted and block scalars are strings; any explicit tag gives up;
# * keys must be strings, each at most once (the walk shared with the bulk loader refuses a
#   duplicate, and any error gives up); an alias (a node met twice) gives up;
# * no character the two read differently (_same_text_in_both), no directives (%YAML 1.1 changes the
#   typing), and any error gives up (ruamel.yaml then reports it in its words).
_PLAIN_TAG = "dgdgen:plain"
_QUOTED_TAG = "dgdgen:quoted"  # quoted and block scalars without a tag: strings
_ODD_TAG = "dgdgen:odd"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_SIMPLE_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]+")


class _GiveUp(Exception):
    """What libyaml cannot read the way ruamel.yaml does (``reason``), and where."""

    def __init__(self, reason: str, mark: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where: tuple[int, int] | None = _at(mark) if mark is not None else None


_OUT_OF_RANGE = object()  # a decimal integer wider than 64 bits (its text is the node's)


class _NoPathResolvers:
    """PyYAML pushes and pops its path resolvers at every node; dgdgen's loaders use none (a
    measurable share of a libyaml parse): mixed in before the loader class, these do nothing."""

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


@functools.lru_cache(maxsize=1)
def _yaml12_loader() -> Any:
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeLoader", None)
    if base is None:  # no libyaml: ruamel.yaml reads everything
        return None

    class Loader(_NoPathResolvers, base):  # type: ignore[misc, valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode:
                if implicit[0]:
                    return _PLAIN_TAG
                return _QUOTED_TAG if implicit[1] else _ODD_TAG
            return _MAP_TAG if kind is not yaml.SequenceNode else _SEQ_TAG

    return Loader


_PLAIN12: dict[str, tuple[bool, Any]] = {}


def _plain12(value: str) -> tuple[bool, Any]:
    """(known, value) of a plain scalar as ruamel.yaml's YAML 1.2 round-trip loader reads it."""
    found = _PLAIN12.get(value)
    if found is not None:
        return found
    tag = _resolve12(value)
    result: tuple[bool, Any] = (False, None)
    if tag == _STR_TAG:
        result = (True, value)
    elif tag == "tag:yaml.org,2002:bool":
        result = (True, value.lower() == "true")
    elif tag == "tag:yaml.org,2002:null":
        result = (True, None)
    elif tag == "tag:yaml.org,2002:int" and _DECIMAL.fullmatch(value):
        # at most 19 digits can fit (and int() reads at most 4,300)
        wide = len(value.lstrip("+-")) > 19 or not INT_MIN <= int(value) <= INT_MAX
        result = (True, _OUT_OF_RANGE if wide else int(value))
    elif tag == "tag:yaml.org,2002:float" and _SIMPLE_FLOAT.fullmatch(value):
        result = (True, float(value))
    _remember(_PLAIN12, value, result, value)
    return result


# The implicit resolvers of ruamel.yaml for YAML 1.2 (ruamel/yaml/resolver.py
# `implicit_resolvers`, the entries whose versions include (1, 2), in their order; ruamel.yaml
# 0.19.1, MIT licence, Copyright (c) 2014-2026 Anthon van der Neut, Ruamel bvba). Kept here
# because importing ruamel.yaml for its resolver costs about 10 ms of every command that reads a
# spec; tests/test_yamlio_resolver.py fails when the installed ruamel.yaml's table differs from
# this one and compares both resolvers on thousands of scalars. (tag, pattern, flags, the first
# characters it is tried for: "" is the empty scalar.)
_RESOLVERS12: tuple[tuple[str, str, int, tuple[str, ...]], ...] = (
    ("tag:yaml.org,2002:bool", r"""^(?:true|True|TRUE|false|False|FALSE)$""", re.VERBOSE,
     tuple("tTfF")),
    ("tag:yaml.org,2002:float", r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""", re.VERBOSE, tuple("-+0123456789.")),
    ("tag:yaml.org,2002:int", r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$""", re.VERBOSE, tuple("-+0123456789")),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", 0, ("<",)),
    ("tag:yaml.org,2002:null", r"""^(?: ~
        |null|Null|NULL
        | )$""", re.VERBOSE, ("~", "n", "N", "")),
    ("tag:yaml.org,2002:timestamp", r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
        (?:[Tt]|[ \t]+)[0-9][0-9]?
        :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""", re.VERBOSE, tuple("0123456789")),
    ("tag:yaml.org,2002:value", r"^(?:=)$", 0, ("=",)),
    ("tag:yaml.org,2002:yaml", r"^(?:!|&|\*)$", 0, tuple("!&*")),
)


@functools.lru_cache(maxsize=1)
def _yaml12_resolvers() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """First character ("" for the empty scalar) → the (tag, pattern) pairs tried, in order."""
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, flags, first in _RESOLVERS12:
        rx = re.compile(pattern, flags)
        for ch in first:
            table.setdefault(ch, []).append((tag, rx))
    return table


def _resolve12(value: str) -> str:
    """The tag ruamel.yaml's YAML 1.2 resolver gives a plain scalar (VersionedResolver.resolve
    with implicit plain): the first matching resolver of the value's first character, else str."""
    for tag, rx in _yaml12_resolvers().get(value[:1], ()):
        if rx.match(value):
            return tag
    return _STR_TAG


def _scalar12(tag: str, node: Any) -> Any:
    """The value of a scalar (an event, tagged ``tag``) as ruamel.yaml reads it (gives up on any
    other tag)."""
    if tag == _QUOTED_TAG:
        return node.value
    if tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if value is _OUT_OF_RANGE:
            raise _int_range_error(node.value)
        if known:
            return value
        raise _GiveUp(f"the scalar {node.value[:40]!r}, which YAML 1.1 reads otherwise",
                      node.start_mark)
    if tag == _ODD_TAG:
        raise _GiveUp("the non-specific tag !", node.start_mark)
    raise _GiveUp(f"the tag {_shown_tag(tag)}", node.start_mark)


def _key12(tag: str, node: Any) -> str:
    """A mapping key that is not quoted: a plain scalar ruamel.yaml reads as a string, or give
    up (``true:``, ``8000:``, ``~:``, a collection or an explicitly tagged key)."""
    if tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if known and type(value) is str:
            return value
    raise _GiveUp("a mapping key that is not a string", node.start_mark)


# ------------------------------------------------------------- libyaml's events, built


class _Builder:
    """Plain data built from a libyaml parser's events, for both libyaml loaders, without the
    node graph PyYAML's composer would build first (for a dense stream of small mappings, the
    graph takes twice the memory of the data: 740 MB for 8 MB of ``- {a: 1}``).

    It records the position of every mapping key and sequence item, refuses nesting deeper than
    the limit (the event pass may have been skipped) and duplicate keys, with the line (the file
    is the caller's). The loaders differ only in how they read a scalar: one tagged ``text_tag``
    is its own text (most scalars: no call); any other is read by ``value_of``, or by ``key_of``
    as a mapping key (which must give a string). ``yaml11``: as PyYAML's SafeLoader, aliases are
    expanded (a copy of the anchored data, at the anchor's positions) and ``<<`` merges
    mappings; else an alias or a re-used anchor gives up (:class:`_GiveUp`)."""

    __slots__ = ("anchors", "events", "get", "key_of", "logs", "max_depth", "resolve",
                 "scalar_kind", "text_tag", "value_of", "yaml11")

    def __init__(self, loader: Any, text_tag: str, key_of: Callable[[Any, Any], str],
                 value_of: Callable[[str, Any], Any], *, yaml11: bool) -> None:
        import yaml
        from yaml import events as ev

        self.get = loader.get_event
        self.resolve = loader.resolve
        self.scalar_kind = yaml.ScalarNode
        self.events = (ev.ScalarEvent, ev.AliasEvent, ev.MappingStartEvent, ev.MappingEndEvent,
                       ev.SequenceEndEvent)
        self.text_tag = text_tag
        self.key_of = key_of
        self.value_of = value_of
        self.yaml11 = yaml11
        self.max_depth = _limits.max_depth
        # anchor -> (the anchored scalar's event, or its data and the positions under it
        # relative to it), the anchor's own position
        self.anchors: dict[str, tuple[Any, list[tuple[FieldPath, tuple[int, int]]] | None,
                                      tuple[int, int]]] = {}
        self.logs: list[list[tuple[FieldPath, tuple[int, int]]]] = []  # of open anchored nodes

    def documents(self) -> Iterator[tuple[int, Any, bool, _Positions, int]]:
        """(index, data, whether the root is a scalar, positions, first line) per document."""
        from yaml import events as ev

        get = self.get
        index = 0
        e = get()
        while e is not None and type(e) is not ev.StreamEndEvent:
            if type(e) is ev.DocumentStartEvent:
                self.anchors.clear()
                root = get()
                positions: _Positions = {}
                data = self.node(root, (), positions)[0]
                scalar = type(root) is ev.ScalarEvent
                yield index, data, scalar, positions, root.start_mark.line + 1
                index += 1
                get()  # DocumentEndEvent
            e = get()

    def _tag(self, e: Any) -> str:
        tag = e.tag
        if tag is None or tag == "!":
            tag = self.resolve(self.scalar_kind, e.value, e.implicit)
        return str(tag)

    def _scalar(self, e: Any, as_key: bool, path: FieldPath, positions: _Positions,
                tag: str | None = None) -> Any:
        if tag is None:
            tag = self._tag(e)
        if tag == self.text_tag:
            return e.value
        if as_key:
            try:
                return self.key_of(tag, e)
            except _BadScalar as exc:
                raise InputError(str(exc), location=Location("", *_at(e.start_mark)),
                                 field=path) from None
        try:
            return self.value_of(tag, e)
        except _BadScalar as exc:
            where = positions.get(path) or _at(e.start_mark)
            raise InputError(str(exc), location=Location("", *where), field=path) from None

    def _anchored(self, e: Any) -> None:
        """Refuse a re-used anchor (as PyYAML's composer does; YAML 1.2 allows it)."""
        if e.anchor in self.anchors:
            if not self.yaml11:
                raise _GiveUp("a re-used anchor", e.start_mark)
            from yaml.composer import ComposerError

            raise ComposerError(f"found duplicate anchor {e.anchor!r}; first occurrence", None,
                                "second occurrence", e.start_mark)

    def _alias(self, e: Any, as_key: bool, path: FieldPath, positions: _Positions
               ) -> tuple[Any, tuple[int, int]]:
        if not self.yaml11:
            raise _GiveUp("an alias", e.start_mark)
        found = self.anchors.get(e.anchor)
        if found is None:
            from yaml.composer import ComposerError

            raise ComposerError(None, None, f"found undefined alias {e.anchor!r}", e.start_mark)
        event_or_data, under, at = found
        if under is None:  # a scalar: read again, as a key or a value
            return self._scalar(event_or_data, as_key, path, positions), at
        if as_key:
            raise InputError("unsupported mapping key: an alias of a mapping or a list",
                             location=Location("", *_at(e.start_mark)), field=path,
                             hint="Kubernetes keys are strings")
        for rel, pos in under:
            self._place(positions, path + rel, pos)
        return _copied_data(event_or_data), at

    def _compose(self, e: Any, depth: int) -> Any:
        """The node graph of a (small) collection used as a key, as PyYAML's composer builds
        it: its constructor reads it, as the checker's loader always read such keys."""
        import yaml
        from yaml import events as ev

        t = type(e)
        if t is ev.ScalarEvent:
            return self.scalar_kind(self._tag(e), e.value, e.start_mark, e.end_mark,
                                    style=e.style)
        if t is ev.AliasEvent or e.anchor is not None and depth:
            raise InputError("unsupported mapping key: an anchor or alias inside a key",
                             location=Location("", *_at(e.start_mark)),
                             hint="Kubernetes keys are strings")
        if depth >= self.max_depth:
            raise _too_deep(Location("", *_at(e.start_mark)))
        value: list[Any] = []
        x = self.get()
        if t is ev.SequenceStartEvent:
            while type(x) is not ev.SequenceEndEvent:
                value.append(self._compose(x, depth + 1))
                x = self.get()
            return yaml.SequenceNode(_SEQ_TAG, value, e.start_mark, None)
        while type(x) is not ev.MappingEndEvent:
            value.append((self._compose(x, depth + 1), self._compose(self.get(), depth + 1)))
            x = self.get()
        return yaml.MappingNode(_MAP_TAG, value, e.start_mark, None)

    def _place(self, positions: _Positions, path: FieldPath, at: tuple[int, int]) -> None:
        """Record a position, also in the log of every anchored node being built."""
        positions[path] = at
        for log in self.logs:
            log.append((path, at))

    def node(self, e: Any, path: FieldPath, positions: _Positions, as_key: bool = False
             ) -> tuple[Any, tuple[int, int]]:
        """The data of the node that begins with event ``e``, and the node's position."""
        scalar_event, alias_event, mapping_start, mapping_end, sequence_end = self.events
        t = type(e)
        if t is alias_event:
            return self._alias(e, as_key, path, positions)
        at = (e.start_mark.line + 1, e.start_mark.column + 1)
        anchor = e.anchor
        if anchor is not None:
            self._anchored(e)
        if t is scalar_event:
            if anchor is not None:
                self.anchors[anchor] = (e, None, at)
            return self._scalar(e, as_key, path, positions), at
        if as_key:
            if not self.yaml11:
                raise _GiveUp("a mapping key that is not a string", e.start_mark)
            # PyYAML builds the key (`? [a, b]`), and it is read as its text, as a scalar key is
            return self.key_of(None, self._compose(e, len(path))), at
        if len(path) >= self.max_depth:
            raise _too_deep(Location("", *at))
        log: list[tuple[FieldPath, tuple[int, int]]] | None = None
        if anchor is not None and self.yaml11:
            log = []
            self.logs.append(log)
        get: Callable[[], Any] = self.get
        resolve, kind, text_tag = self.resolve, self.scalar_kind, self.text_tag
        # The common node, a plain scalar without anchor or tag that is its own text, is read
        # here, not by a call per node: a third of the time of a DGD's load.
        if t is mapping_start:
            out: dict[str, Any] = {}
            k = get()
            while type(k) is not mapping_end:
                if type(k) is scalar_event:
                    tag = k.tag
                    if tag is None or tag == "!":
                        tag = resolve(kind, k.value, k.implicit)
                    mark: Any = k.start_mark
                    kat = (mark.line + 1, mark.column + 1)
                    if k.anchor is not None:
                        self._anchored(k)
                        self.anchors[k.anchor] = (k, None, kat)
                    if tag == _MERGE_TAG and self.yaml11:
                        merged = self.node(get(), path, positions)[0]
                        for m in merged if isinstance(merged, list) else [merged]:
                            if isinstance(m, dict):
                                for mk, mv in m.items():
                                    out.setdefault(mk, mv)
                        k = get()
                        continue
                    key = k.value if tag == text_tag else \
                        self._scalar(k, True, path, positions, tag)
                else:
                    key, kat = self.node(k, path, positions, as_key=True)
                if key in out:
                    raise InputError(f"duplicate key {key!r}", location=Location("", *kat))
                child = path + (key,)
                if self.logs:
                    self._place(positions, child, kat)
                else:
                    positions[child] = kat
                v = get()
                if type(v) is scalar_event and v.anchor is None:
                    tag = v.tag
                    if tag is None or tag == "!":
                        tag = resolve(kind, v.value, v.implicit)
                    out[key] = v.value if tag == text_tag else \
                        self._scalar(v, False, child, positions, tag)
                else:
                    out[key] = self.node(v, child, positions)[0]
                k = get()
            data: Any = out
        else:  # a sequence
            items = []
            i = 0
            item = get()
            while type(item) is not sequence_end:
                child = path + (i,)
                if type(item) is alias_event:  # at its anchor's position, as a node met again
                    value, iat = self.node(item, child, positions)
                    self._place(positions, child, iat)
                else:
                    iat = (item.start_mark.line + 1, item.start_mark.column + 1)
                    if self.logs:
                        self._place(positions, child, iat)
                    else:
                        positions[child] = iat
                    if type(item) is scalar_event and item.anchor is None:
                        tag = item.tag
                        if tag is None or tag == "!":
                            tag = resolve(kind, item.value, item.implicit)
                        value = item.value if tag == text_tag else \
                            self._scalar(item, False, child, positions, tag)
                    else:
                        value = self.node(item, child, positions)[0]
                items.append(value)
                i += 1
                item = get()
            data = items
        if log is not None:
            self.logs.pop()
            n = len(path)
            assert anchor is not None
            self.anchors[anchor] = (data, [(p[n:], pos) for p, pos in log], at)
        elif anchor is not None:
            self.anchors[anchor] = (data, [], at)
        return data, at


def _copied_data(value: Any) -> Any:
    """A copy of plain data (an alias expands to a copy of its anchor's data, as the walk of
    PyYAML's node graph built one per visit)."""
    if type(value) is dict:
        return {k: _copied_data(v) for k, v in value.items()}
    if type(value) is list:
        return [_copied_data(v) for v in value]
    return value


# Characters YAML 1.1 (libyaml) and 1.2 (ruamel.yaml) read differently: NEL, LINE and PARAGRAPH
# SEPARATOR are line breaks in 1.1 only, and a byte-order mark inside the text is taken by one and
# refused by the other. Anything else outside the printable set (C0/C1 controls, U+FFFE/FFFF) is
# not YAML 1.2 either, and libyaml refuses it with its position; any other character (é, →,
# emoji) is text to both, and both count columns in characters.
_READ_OTHERWISE = re.compile("[\u0085\u2028\u2029\ufeff]")


def _read12(text: str, file: str) -> list[Document]:
    """:func:`load_documents`' result read with libyaml; :class:`_GiveUp` where ruamel.yaml
    might read it otherwise, an :class:`InputError` for what both refuse (a syntax error, a
    duplicate key, a 64-bit overflow)."""
    odd = None if text.isascii() else _READ_OTHERWISE.search(
        text, 1 if text.startswith("\ufeff") else 0)
    if odd is not None:
        why = _GiveUp(f"the character U+{ord(odd[0]):04X}")
        why.where = _line_column(text, odd.start())
        raise why
    loader_cls = _yaml12_loader()
    if loader_cls is None:
        raise _GiveUp("")  # no libyaml: ruamel.yaml reads everything
    if text.startswith("%") or "\n%" in text or "\r%" in text:
        _directives(text, file)  # a %YAML 1.1 or %TAG directive gives up
    import yaml

    docs: list[Document] = []
    try:
        loader = loader_cls(text)
        try:
            built = _Builder(loader, _QUOTED_TAG, _key12, _scalar12, yaml11=False)
            for i, data, scalar, positions, line in built.documents():
                if not scalar:
                    docs.append(Document(data, file, i, positions, line))
                elif data is not None:
                    raise _GiveUp("a document that is a single scalar")
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        if isinstance(exc, _built_errors()):
            _syntax_check(text, file)  # a syntax error further on is the first to say
        raise _libyaml_refusal(exc, text, file) from None
    except (InputError, _GiveUp) as exc:
        # Built from the events as they come, but a syntax error further on is the first thing
        # to say (and ruamel.yaml would take 20 s per MB to say the same): a linear pass.
        _syntax_check(text, file)
        if isinstance(exc, InputError):  # raised by the builder, which knows no file
            raise _in_file(exc, file) from None
        raise
    return docs


def _line_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of the character at ``index``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _load_yaml12_fast(text: str, file: str) -> list[Document] | None:
    """:func:`load_documents`' result read with libyaml, or None where it might differ."""
    try:
        return _read12(text, file)
    except _GiveUp:
        return None


def _in_file(exc: InputError, file: str) -> InputError:
    """``exc`` (raised where the file is not known) located in ``file``."""
    if exc.location is not None and not exc.location.file:
        exc.location = Location(file, exc.location.line, exc.location.column)
    elif exc.location is None:
        exc.location = Location(file)
    return exc


# libyaml's refusals of what YAML 1.2 allows: an anchor or alias named with characters beyond
# [A-Za-z0-9_-] (`&a.b`), and a document after `...` without `---`. Left to ruamel.yaml.
_STRICTER_IN_LIBYAML = ("did not find expected alphabetic or numeric character",
                        "did not find expected <document start>")


def _libyaml_refusal(exc: Exception, text: str, file: str) -> Exception:
    """A libyaml syntax error as the error of the file, or :class:`_GiveUp` where YAML 1.2 may
    allow what libyaml refuses."""
    problem = str(getattr(exc, "problem", "") or "")
    if problem in _STRICTER_IN_LIBYAML:
        return _GiveUp(f"YAML that libyaml refuses ({problem})",
                       getattr(exc, "problem_mark", None))
    return _yaml_error(exc, file, text)


def _syntax_check(text: str, file: str) -> None:
    """Raise libyaml's syntax error of ``text`` if it has one, unless YAML 1.2 may allow it."""
    import yaml

    exc = _syntax_error(text, file)
    if exc is not None and isinstance(exc.__cause__, yaml.YAMLError):
        refusal = _libyaml_refusal(exc.__cause__, text, file)
        if isinstance(refusal, InputError):
            raise refusal from None


def _syntax_error(text: str, file: str) -> InputError | None:
    """libyaml's syntax error of ``text``, if it has one (events only: nothing is built); the
    parser's own exception is its ``__cause__``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        while loader.check_event():
            loader.get_event()
    except yaml.YAMLError as exc:
        error = _yaml_error(exc, file, text)
        error.__cause__ = exc
        return error
    finally:
        loader.dispose()
    return None


def _directives(text: str, file: str) -> None:
    """Directives, read by libyaml: a %YAML version other than 1.1 or 1.2 is refused (as a
    syntax error is); ``%YAML 1.2`` alone changes nothing; ``%YAML 1.1`` (YAML 1.1 types) and
    ``%TAG`` (tag handles) give up."""
    import yaml
    from yaml import events as ev

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        while loader.check_event():
            e = loader.get_event()
            if isinstance(e, ev.DocumentStartEvent) and (e.tags or e.version not in (None, (1, 2))):
                raise _GiveUp("a %YAML 1.1 or %TAG directive", e.start_mark)
    except yaml.YAMLError as exc:
        raise _libyaml_refusal(exc, text, file) from None
    finally:
        loader.dispose()


def read_text(path: str, *, display: str | None = None) -> str:
    """Read a regular file as UTF-8, at most :attr:`Limits.max_bytes`, with one clear error when
    it is missing, a directory, a FIFO or device (never read: ``/dev/zero`` would not end, a FIFO
    would block), too large, a symlink loop, unreadable or not UTF-8."""
    raw = read_bytes(path, display=display)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})",
                         location=Location(display or path)) from None


def read_bytes(path: str, *, display: str | None = None) -> bytes:
    """The bytes of a regular file, with the checks and errors of :func:`read_text` but the
    UTF-8 one (the checker's sibling files are hashed as bytes, and decoded only when parsed)."""
    shown = display or path
    where = Location(shown)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError("file not found", location=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a YAML file", location=where) from None
    except PermissionError:
        raise InputError("permission denied", location=where) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError("symlink loop (too many levels of symbolic links)",
                             location=where) from None
        raise InputError(f"cannot read: {exc.strerror}", location=where) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a directory, expected a YAML file", location=where)
        if not stat.S_ISREG(st.st_mode):
            raise InputError("not a regular file (a FIFO, device or socket); only regular files "
                             "are read", location=where)
        limit = _limits.max_bytes
        if st.st_size > limit:
            raise _size_error(st.st_size, shown)
        chunks = []
        total = 0
        while True:  # the file may grow while it is read: never read past the limit
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _size_error(total, shown)
        raw = b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", location=where) from None
    finally:
        os.close(fd)
    return raw


def load_file(path: str, *, display: str | None = None) -> list[Document]:
    return load_documents(read_text(path, display=display), display or path)


# --------------------------------------------------------------------------- fast loader


def load_documents_fast(text: str, file: str) -> list[Document]:
    """Like :func:`load_documents`, but parsed by libyaml (YAML 1.1 scalars, as PyYAML's
    SafeLoader resolves them), for bulk checking."""
    import yaml

    check_limits(text, file, always=False)
    docs: list[Document] = []
    # the collector paused while the data is built, as _collector_paused does (spelt out: the
    # context manager costs a few percent of a small file's load)
    enabled = gc.isenabled()
    gc.disable()
    try:
        # no line or column of the text may need more than the 32 bits of a packed word
        read = _packed11(text) if len(text) < 1 << 32 else None
        if read is None:  # what the packed reading leaves: read again, every case
            loader = _fast_loader()(text)
            try:
                read = list(_builder11(loader).documents())
            finally:
                loader.dispose()
        for i, data, scalar, positions, line in read:
            if not (scalar and data is None):
                docs.append(Document(data, file, i, positions, line))
    except yaml.YAMLError as exc:
        if not isinstance(exc, _built_errors()):  # the parser's own: a syntax error
            raise _yaml_error(exc, file, text) from None
        raise (_syntax_error(text, file) or _yaml_error(exc, file, text)) from None
    except InputError as exc:  # raised by the builder, which knows the line but not the file
        # built from the events as they come, but a syntax error further on is the first to say
        raise (_syntax_error(text, file) or _in_file(exc, file)) from None
    finally:
        if enabled:
            gc.enable()
    return docs


@functools.lru_cache(maxsize=1)
def _built_errors() -> tuple[type[Exception], ...]:
    """The errors the builders raise (an undefined alias, a scalar no constructor reads), as
    opposed to the parser's syntax errors."""
    from yaml.composer import ComposerError
    from yaml.constructor import ConstructorError

    return ComposerError, ConstructorError


@functools.lru_cache(maxsize=1)
def _fast_loader() -> Any:
    """libyaml's SafeLoader (PyYAML's pure-Python one where libyaml is missing), with the
    implicit-tag resolution of scalars memoised.

    libyaml parses in C but calls back into Python to resolve the tag of every scalar (a scan
    of the implicit resolvers' regular expressions) and to push and pop the path resolvers at
    every node: about a third of a DGD file's parse time. SafeLoader has no path resolvers, so
    a scalar's tag depends only on its text and its implicit flags, and a mapping's or a
    sequence's only on its kind: the result is kept per (text, flags) (per text alone for a
    plain scalar, the most common case) or per kind, and the path bookkeeping is skipped, with
    the same tags as before."""
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if base.yaml_path_resolvers:  # never for SafeLoader; if so, PyYAML's own resolution
        return base
    plain: dict[str, str] = {}  # plain scalars (implicit == (True, False)): most of them
    cache: dict[tuple[Any, Any], str] = {}
    resolve = base.resolve

    class Loader(_NoPathResolvers, base):  # type: ignore[misc, valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode and implicit[0] and not implicit[1]:
                tag = plain.get(value)
                if tag is None:
                    tag = resolve(self, kind, value, implicit)
                    _remember(plain, value, tag, value)
                return tag
            # a quoted scalar, or a mapping or sequence (their tag depends on the kind only)
            key = (value, implicit) if kind is ScalarNode else (kind, implicit)
            tag = cache.get(key)
            if tag is None:
                tag = resolve(self, kind, value, implicit)
                _remember(cache, key, tag, value if kind is ScalarNode else "")
            return tag

    return Loader


def _builder11(loader: Any) -> _Builder:
    """The :class:`_Builder` for YAML 1.1 as PyYAML's SafeLoader reads it: a scalar that is not a
    string is built by the loader's constructor (``!!str 5``, numbers, booleans, timestamps),
    aliases are expanded and ``<<`` merges."""
    import yaml

    constructors = type(loader).yaml_constructors

    def read(tag: str, e: Any) -> Any:
        if tag == _INT_TAG and not _int_text_fits(e.value):
            raise _int_range_error(e.value)  # before int() reads it
        # what construct_object does for a scalar, without keeping every node it built
        construct = constructors.get(tag) or constructors[None]
        return construct(loader, yaml.ScalarNode(tag, e.value, e.start_mark, e.end_mark,
                                                 style=e.style))

    def key_of(tag: str | None, node: Any) -> str:
        if tag is None:  # a collection (`? [a, b]`): PyYAML builds it
            todo = [node]
            while todo:
                n = todo.pop()
                if isinstance(n, yaml.ScalarNode):
                    if n.tag == _INT_TAG and not _int_text_fits(n.value):
                        raise _int_range_error(n.value)
                elif isinstance(n, yaml.SequenceNode):
                    todo.extend(n.value)
                else:
                    todo.extend(x for pair in n.value for x in pair)
            return _key(loader.construct_object(node, deep=True))
        return _key(read(tag, node))

    def value_of(tag: str, e: Any) -> Any:
        return _scalar(read(tag, e))

    return _Builder(loader, _STR_TAG, key_of, value_of, yaml11=True)


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"


class _Unusual(Exception):
    """What the packed reading (:func:`_packed11`) leaves to :class:`_Builder`."""


# A plain scalar's reading depends on its text alone (SafeLoader has no path resolvers): the
# value, or as a mapping key the key, of the plain scalars met before, one object each (keys,
# enums, images repeat from file to file: held once), bounded as every memo (_remember).
_PLAIN11: dict[str, Any] = {}
_KEYS11: dict[str, str] = {}

_Read = tuple[int, Any, bool, Mapping[FieldPath, tuple[int, int]], int]


@functools.lru_cache(maxsize=1)
def _packed_setup() -> tuple[Any, ...]:
    """What :func:`_packed11` uses: libyaml's bare parser (the loader where libyaml is
    missing), the event classes, the errors it tells apart, and readers of the plain scalars
    the memos have not seen (a loader's resolver and constructor, which read a scalar from its
    text alone)."""
    import yaml
    from yaml import events as ev

    loader_cls = _fast_loader()
    parser_cls: Any = getattr(getattr(yaml, "_yaml", None), "CParser", loader_cls)
    reader = loader_cls("")
    builder = _builder11(reader)
    kind = yaml.ScalarNode
    resolve, bools = reader.resolve, reader.bool_values
    key_of, value_of = builder.key_of, builder.value_of

    def plain_value(e: Any) -> Any:
        text = e.value
        tag = resolve(kind, text, e.implicit)
        if tag == _STR_TAG:
            value = text
        elif tag == _INT_TAG and len(text) <= 20 and _DECIMAL.fullmatch(text) and (
                INT_MIN <= int(text) <= INT_MAX):
            value = int(text)  # as PyYAML's constructor reads a decimal integer
        elif tag == _BOOL_TAG:
            value = bools[text.lower()]
        elif tag == _NULL_TAG:
            value = None
        else:  # the constructor (a float, a timestamp...); a refusal is the builder's to say
            value = value_of(tag, e)
        _remember(_PLAIN11, text, value, text)
        return value

    def plain_key(e: Any) -> str:
        text = e.value
        tag = resolve(kind, text, e.implicit)
        if tag == _STR_TAG:
            key = _intern(text)
        elif tag == _MERGE_TAG:
            raise _Unusual
        else:
            key = key_of(tag, e)  # `8000:`, `true:` are read as their text
        _remember(_KEYS11, text, key, text)
        return key

    return (parser_cls, ev.ScalarEvent, ev.MappingStartEvent, ev.MappingEndEvent,
            ev.SequenceStartEvent, ev.SequenceEndEvent, ev.DocumentStartEvent,
            ev.StreamEndEvent, yaml.YAMLError, _built_errors(), plain_value, plain_key)


def _packed11(text: str) -> list[_Read] | None:
    """The documents of a stream as :meth:`_Builder.documents` (:func:`_builder11`) reads them,
    with the positions packed (:class:`PackedPositions`); None where the stream has anything
    but plain data: an anchor, an alias, a tag, a merge key, a key that is not a scalar, a
    scalar the builder refuses, a duplicate key, nesting over the limit (the builder then reads
    it again and says so, in its words). A syntax error is raised as it comes, as the builder
    would meet it there too.

    It exists for the checker's bulk reading: the builder records a position per field as a
    path tuple in a dict, and reads every scalar by a call; here a plain scalar's value comes
    from a memo of its text, a quoted one is its text, and a position is two words."""
    (parser_cls, scalar_event, mapping_start, mapping_end, sequence_start, sequence_end,
     document_start, stream_end, yaml_error, built_errors, plain_value, plain_key,
     ) = _packed_setup()
    values, keys = _PLAIN11, _KEYS11
    max_depth = _limits.max_depth
    parser = parser_cls(text)
    get = parser.get_event
    words = array("I")
    push = words.append

    # ``depth``: the length of the paths of the collection's fields; a collection nested deeper
    # than the limit is the builder's to refuse. The two functions call each other through
    # ``nested``, emptied at the end: a function that reached itself through its closure would
    # be a reference cycle, keeping the parser and its buffers until the collector runs (it is
    # paused while the checker reads).
    nested: dict[type, Callable[[int], Any]] = {}

    def mapping(depth: int) -> dict[str, Any]:
        if depth > max_depth:
            raise _Unusual
        out: dict[str, Any] = {}
        k = get()
        while type(k) is not mapping_end:
            if type(k) is not scalar_event or k.tag is not None or k.anchor is not None:
                raise _Unusual
            if k.implicit[0]:
                try:
                    key = keys[k.value]
                except KeyError:
                    key = plain_key(k)
            else:
                key = k.value
            if key in out:
                raise _Unusual
            mark = k.start_mark
            push(mark.line)
            push(mark.column)
            v = get()
            t = type(v)
            if t is scalar_event and v.tag is None and v.anchor is None:
                if v.implicit[0]:
                    try:
                        out[key] = values[v.value]
                    except KeyError:
                        out[key] = plain_value(v)
                else:
                    out[key] = v.value
            elif (t is mapping_start or t is sequence_start) and v.anchor is None and \
                    v.tag is None:
                out[key] = nested[t](depth + 1)
            else:
                raise _Unusual  # an alias, a tag, an anchor
            k = get()
        return out

    def sequence(depth: int) -> list[Any]:
        if depth > max_depth:
            raise _Unusual
        items: list[Any] = []
        add = items.append
        item = get()
        t = type(item)
        while t is not sequence_end:
            mark = item.start_mark
            push(mark.line)
            push(mark.column)
            if t is scalar_event and item.tag is None and item.anchor is None:
                if item.implicit[0]:
                    try:
                        add(values[item.value])
                    except KeyError:
                        add(plain_value(item))
                else:
                    add(item.value)
            elif (t is mapping_start or t is sequence_start) and item.anchor is None and \
                    item.tag is None:
                add(nested[t](depth + 1))
            else:
                raise _Unusual
            item = get()
            t = type(item)
        return items

    nested[mapping_start] = mapping
    nested[sequence_start] = sequence
    out: list[_Read] = []
    try:
        e = get()
        while e is not None and type(e) is not stream_end:
            if type(e) is document_start:
                words = array("I")  # the closures above push to the document's own
                push = words.append
                root = get()
                t = type(root)
                line = root.start_mark.line + 1
                if root.anchor is not None or root.tag is not None:
                    raise _Unusual  # an alias too
                if t is mapping_start or t is sequence_start:
                    data = mapping(1) if t is mapping_start else sequence(1)
                    out.append((len(out), data, False, PackedPositions(data, words), line))
                else:
                    value = plain_value(root) if root.implicit[0] else root.value
                    out.append((len(out), value, True, {}, line))
                get()  # DocumentEndEvent
            e = get()
    except yaml_error as exc:
        if isinstance(exc, built_errors):
            return None
        raise  # the parser's: a syntax error
    except Exception:  # noqa: BLE001 - anything else is the builder's to read, or to refuse
        return None
    finally:
        parser.dispose()
        nested.clear()
    return out


# --------------------------------------------------------------------------- dumping


def _ordered(obj: Mapping[str, Any]) -> dict[str, Any]:
    head = {k: obj[k] for k in TOP_LEVEL_ORDER if k in obj}
    tail = {k: v for k, v in obj.items() if k not in head}
    return {**head, **tail}


@functools.lru_cache(maxsize=1)
def _dumper() -> Any:
    # One configured instance per process: ruamel.yaml sets up a fresh serializer and emitter
    # for every dump() call, so the instance (and its representer class) can be reused.
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=2, offset=0)
    yaml.explicit_start = False

    class _Representer(RoundTripRepresenter):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    def _str(representer: Any, data: str) -> Any:
        if "\n" in data:
            return representer.represent_scalar("tag:yaml.org,2002:str", data, style="|")
        return representer.represent_str(data)

    _Representer.add_representer(str, _str)
    yaml.Representer = _Representer
    return yaml


class _NoKey(Exception):
    pass


def _content(value: Any) -> Hashable:
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return (t, value)
    if t is float:
        return (t, repr(value))  # 0.0 == -0.0 and nan != nan, but they dump differently
    if t is dict:
        return (t, tuple((k if type(k) is str else _no_key(), _content(v))
                         for k, v in value.items()))
    if t is list:
        return (t, tuple(_content(v) for v in value))
    raise _NoKey


def _no_key() -> Any:
    raise _NoKey


def content_key(value: Any) -> Hashable | None:
    """A hashable value equal for two plain data trees exactly when they are the same tree:
    the same types (``1``, ``1.0``, ``True`` and ``"1"`` differ), the same key order, the same
    float spelling. None for trees holding anything else (those are never memoised)."""
    try:
        return _content(value)
    except (_NoKey, RecursionError):
        return None


# A render writes every state in its own directory, and most objects are the same in several
# states (the baseline, rollback and most steps share all but a few): each distinct object is
# dumped once and its text reused (docs/performance.md). Bounded, so a long-lived process
# cannot grow it without limit.
_DUMPED: dict[Hashable, str] = {}
_DUMPED_MAX = 4096


def dump(obj: Any) -> str:
    """One YAML document, deterministically: the same object always gives the same bytes."""
    key = content_key(obj)
    if key is not None:
        text = _DUMPED.get(key)
        if text is not None:
            return text
    buf = io.StringIO()
    _dumper().dump(_ordered(obj) if isinstance(obj, Mapping) else obj, buf)
    text = buf.getvalue()
    if key is not None:
        if len(_DUMPED) >= _DUMPED_MAX:
            _DUMPED.clear()
        _DUMPED[key] = text
    return text


def dump_all(objs: Sequence[Any]) -> str:
    return "---\n".join(dump(o) for o in objs)


def iter_paths(data: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any]]:
    """Every (path, value) pair of a plain data tree, depth first."""
    yield path, data
    if isinstance(data, dict):
        for k, v in data.items():
            yield from iter_paths(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from iter_paths(v, path + (i,))
