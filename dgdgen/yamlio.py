"""The one module that owns YAML: loading with positions, and deterministic dumping.

Loading keeps the 1-based line and column of every mapping key and sequence item, so any later
stage can point at ``file:line:column`` for a field path. Two loaders share that contract:

* :func:`load_documents` uses ruamel.yaml's round-trip loader, which builds only plain YAML
  types (no arbitrary object construction: safe) and records positions. Used for rollout specs
  and the DGDs the generator reads.
* :func:`load_documents_fast` composes with libyaml (PyYAML's C loader) when it is available and
  walks the node graph itself; it exists for the checker, which must read thousands of files at
  close to the C parser's speed.

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

import datetime as _dt
import errno
import functools
import io
import os
import re
import stat
import warnings
from array import array
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
    """The positions of a document's fields as :func:`load_documents_fast` keeps them: one
    64-bit word per mapping key and sequence item (0-based line << 32 | column), in an array,
    instead of a dict of field-path tuples to (line, column) tuples. A check of 20,000 files
    held 240 MB of those until its report was written, more than the documents themselves.

    The words of one mapping or list lie side by side, in the order of its keys or items, and
    the collections take their places in the order the walk met them (depth first, in the
    order of the text), so a path is found by following it through the data. Where each
    collection's words start is worked out on the first lookup (most documents have no
    finding, and are never asked). It holds as long as the data is not changed: the checker,
    the only user, never changes a document."""

    __slots__ = ("_data", "_starts", "_words")

    def __init__(self, data: Any, words: array[int]) -> None:
        self._data = data
        self._words = words
        self._starts: dict[int, int] | None = None

    def _word(self, path: FieldPath) -> int | None:
        """Where the position of ``path`` is kept, or None when the data has no such field."""
        starts = self._starts
        if starts is None:
            starts = self._starts = _collection_starts(self._data)
        node = self._data
        word = None
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
            word = starts[id(node)] + ordinal
            node = node[part]
        return word

    def get(self, path: FieldPath, default: Any = None) -> Any:
        word = self._word(path)
        if word is None:
            return default
        packed = self._words[word]
        return (packed >> 32) + 1, (packed & 0xFFFFFFFF) + 1

    def __getitem__(self, path: FieldPath) -> tuple[int, int]:
        found: tuple[int, int] | None = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def __contains__(self, path: object) -> bool:
        return isinstance(path, tuple) and self._word(path) is not None

    def __iter__(self) -> Iterator[FieldPath]:
        """Every field's path, in the order of the text (as the walk met them)."""
        return (p for p, _ in iter_paths(self._data) if p)

    def __len__(self) -> int:
        return len(self._words)


def _collection_starts(data: Any) -> dict[int, int]:
    """id of each mapping and list of ``data`` → index of its first word in the
    :class:`PackedPositions` array, found by taking the collections in the walk's order."""
    starts: dict[int, int] = {}
    if type(data) is dict or type(data) is list:
        _count_words(data, 0, starts)
    return starts


def _count_words(node: dict[str, Any] | list[Any], word: int, starts: dict[int, int]) -> int:
    starts[id(node)] = word
    word += len(node)
    for child in node.values() if type(node) is dict else node:
        if type(child) is dict or type(child) is list:
            word = _count_words(child, word, starts)
    return word


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Limits:
    """What one YAML input may cost. The defaults are far above any real DGD or rollout spec
    (the largest upstream DGD is a few kB, nested about 12 levels, with no aliases)."""

    max_bytes: int = 8 * 1024 * 1024
    max_depth: int = 64
    max_aliases: int = 1000
    max_alias_nodes: int = 100_000  # nodes alias expansion may add to one document


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
# (measured: 20,000 compose, 50,000 segfault). Below this bound it is safe to compose first and
# check the depth while walking (:class:`_Walker`).
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
    if "&" in text and _tag_after_anchor(text):
        return True
    # every nesting level needs a line or a flow bracket of its own, or a `- `/`? `/`: ` on one
    # line: a count of them bounds the depth. Each of those indicators ends in a space of its
    # own, so the spaces bound them too: one count of a character instead of three of a pair
    # is enough for most files (a few kB).
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
    return yaml


def _plain(node: Any, path: FieldPath, positions: _Positions) -> Any:
    """Convert ruamel round-trip containers/scalars to plain Python, recording positions."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key in node:
            text = _key(key)
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
    return _scalar(node)


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
    return str(key)


def _scalar(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    tag = getattr(getattr(value, "tag", None), "value", None)
    if isinstance(tag, str) and tag in _PLAIN_TAGS:
        # ruamel keeps an explicitly tagged scalar (`!!str 5`) as a TaggedScalar; the event pass
        # has already checked that its text fits the tag, so PyYAML's constructor builds it.
        import yaml

        node = yaml.ScalarNode(tag, str(value.value))
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
    if type(exc).__name__ == "DuplicateKeyError":
        # ruamel's words for what the libyaml walk says (_Walker): one message from both loaders
        dup = re.match(r'found duplicate key "(.*)" with value', problem, re.DOTALL)
        if dup:
            return InputError(f"duplicate key {dup[1]!r}", location=location)
    return InputError(message, location=location)


def load_documents(text: str, file: str) -> list[Document]:
    """Parse every document of a YAML stream (safe: plain YAML types only), keeping positions.

    ruamel.yaml (YAML 1.2) decides what a stream means. Most streams are read by libyaml
    instead (:func:`_load_yaml12_fast`, about 20 times faster), which gives up, leaving the
    stream to ruamel.yaml, wherever the two could differ."""
    # The limits first: libyaml's composer must never see an alias bomb or a nesting deep enough
    # to crash it; the event pass runs where a cheap scan cannot rule those out.
    full = check_limits(text, file, always=False)
    fast = _load_yaml12_fast(text, file)
    if fast is not None:
        return fast
    from ruamel.yaml.error import YAMLError

    if not full:  # ruamel.yaml recurses: every limit is checked before it builds anything
        check_limits(text, file)
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
    except Exception as exc:  # ruamel raises a few non-YAMLError types for odd input
        if exc.__class__.__module__.startswith("ruamel"):
            raise _yaml_error(exc, file, text) from None
        if isinstance(exc, TypeError) and "unhashable" in str(exc):
            raise _collection_key_error(text, file) from None
        raise
    return docs


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
    pass


def _roots(loader: Any) -> Iterator[tuple[int, Any]]:
    """(index, root node) of every document a PyYAML loader composes, in order (the caller
    disposes of the loader)."""
    i = 0
    while loader.check_node():
        yield i, loader.get_node()
        i += 1


class _NoPathResolvers:
    """PyYAML pushes and pops its path resolvers at every node; dgdgen's loaders use none (a
    measurable share of a libyaml parse): mixed in before the loader class, these do nothing.
    They are builtins that take the same arguments and have no effect, not methods: libyaml's
    composer calls both for every node, and a builtin is called without a Python frame (a
    check of 20,000 files: 0.04 s). A class attribute that is a builtin method or a class is
    not bound to the instance: ``self.descend_resolver(node, index)`` looks ``node`` up in an
    empty dict (a node hashes by identity), ``self.ascend_resolver()`` returns the empty
    tuple."""

    descend_resolver: Callable[[Any, Any], Any] = {}.get
    ascend_resolver: Callable[[], Any] = tuple


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
        result = (True, int(value))
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


def _scalar12(node: Any) -> Any:
    """A scalar node's value as ruamel.yaml reads it (gives up on any other tag)."""
    tag = node.tag
    if tag == _QUOTED_TAG:
        return node.value
    if tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if known:
            return value
    raise _GiveUp


def _key12(node: Any) -> str:
    """A mapping key that is not quoted: a plain scalar ruamel.yaml reads as a string, or give
    up (``true:``, ``8000:``, ``~:``, a collection or an explicitly tagged key)."""
    if node.tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if known and type(value) is str:
            return value
    raise _GiveUp


# ------------------------------------------------------------- libyaml's node graph, walked


class _Walker:
    """The walk of a composed libyaml node graph into plain data, one for both libyaml loaders:
    it records the position of every mapping key and sequence item, refuses nesting deeper than
    the limit (the event pass may have been skipped) and duplicate keys, with the line (the file
    is the caller's). The loaders differ only in how they read a scalar: one tagged
    ``text_tag`` is its own text (most scalars: no call); any other is read by ``value_of``, or
    by ``key_of`` as a mapping key (which must give a string). ``merges``: whether ``<<`` keys
    merge mappings (YAML 1.1). ``seen``: the ids of the nodes met so far, to give up on aliases
    (libyaml returns the anchored node again); None where aliases are expanded, or where the text
    has no ``&`` or no ``*`` (an anchor and an alias are both needed to meet a node twice; a
    licence header's "NVIDIA CORPORATION & AFFILIATES" alone made every upstream-derived DGD pay
    for the set). A class, not a closure: a recursive closure is a reference cycle, and it would
    keep the loader alive until the garbage collector runs (the checker pauses it)."""

    __slots__ = ("key_of", "max_depth", "merges", "seen", "text_tag", "value_of")

    def __init__(self, text_tag: str, key_of: Callable[[Any], str],
                 value_of: Callable[[Any], Any], *, merges: bool, seen: set[int] | None) -> None:
        self.text_tag = text_tag
        self.key_of = key_of
        self.value_of = value_of
        self.merges = merges
        self.seen = seen
        self.max_depth = _limits.max_depth

    def walk(self, node: Any, path: FieldPath, positions: _Positions) -> Any:
        seen = self.seen
        if seen is not None:
            if id(node) in seen:
                raise _GiveUp  # an alias
            seen.add(id(node))
        tag = node.tag
        if tag == _MAP_TAG:
            if len(path) >= self.max_depth:
                raise _too_deep(Location("", *_at(node.start_mark)))
            text_tag = self.text_tag
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if self.merges and key_node.tag == _MERGE_TAG:
                    merged = self.walk(value_node, path, positions)
                    for m in merged if isinstance(merged, list) else [merged]:
                        if isinstance(m, dict):
                            for k, v in m.items():
                                out.setdefault(k, v)
                    continue
                if seen is not None:
                    if id(key_node) in seen:
                        raise _GiveUp  # an alias
                    seen.add(id(key_node))
                key = key_node.value if key_node.tag == text_tag else self.key_of(key_node)
                mark = key_node.start_mark
                if key in out:
                    raise InputError(f"duplicate key {key!r}", location=Location("", *_at(mark)))
                child = path + (key,)
                positions[child] = (mark.line + 1, mark.column + 1)  # _at, inlined: every key
                out[key] = self.walk(value_node, child, positions)
            return out
        if tag == _SEQ_TAG:
            if len(path) >= self.max_depth:
                raise _too_deep(Location("", *_at(node.start_mark)))
            items = []
            for i, item in enumerate(node.value):
                child = path + (i,)
                mark = item.start_mark
                positions[child] = (mark.line + 1, mark.column + 1)
                items.append(self.walk(item, child, positions))
            return items
        return node.value if tag == self.text_tag else self.value_of(node)

    def pack(self, node: Any, depth: int, words: list[int]) -> Any:
        """:meth:`walk`, keeping the positions in ``words`` as :class:`PackedPositions` reads
        them: each collection first sets aside one word per key or item, then fills them in as
        it goes. No aliases are checked (``seen``), and a merge key raises :class:`_Merged`
        (the merged keys' positions are not in the text of the mapping that holds them). A
        string value is taken where it stands, without a call (most values are strings). Keys
        are interned: the same few dozen names come back in every file, held once (54 MB less
        for 20,000 files)."""
        tag = node.tag
        text_tag = self.text_tag
        if tag == _MAP_TAG:
            if depth >= self.max_depth:
                raise _too_deep(Location("", *_at(node.start_mark)))
            pairs = node.value
            word = len(words)
            words += _ZEROS[:len(pairs)] if len(pairs) <= len(_ZEROS) else [0] * len(pairs)
            depth += 1
            out: dict[str, Any] = {}
            for key_node, value_node in pairs:
                key_tag = key_node.tag
                if key_tag == text_tag:
                    key = _intern(key_node.value)
                elif key_tag == _MERGE_TAG and self.merges:
                    raise _Merged
                else:
                    key = self.key_of(key_node)
                mark = key_node.start_mark
                if key in out:
                    raise InputError(f"duplicate key {key!r}", location=Location("", *_at(mark)))
                words[word] = mark.line << 32 | mark.column
                word += 1
                out[key] = (value_node.value if value_node.tag == text_tag
                            else self.pack(value_node, depth, words))
            return out
        if tag == _SEQ_TAG:
            if depth >= self.max_depth:
                raise _too_deep(Location("", *_at(node.start_mark)))
            items = node.value
            word = len(words)
            words += _ZEROS[:len(items)] if len(items) <= len(_ZEROS) else [0] * len(items)
            depth += 1
            out_items = []
            for item in items:
                mark = item.start_mark
                words[word] = mark.line << 32 | mark.column
                word += 1
                out_items.append(item.value if item.tag == text_tag
                                 else self.pack(item, depth, words))
            return out_items
        return node.value if tag == text_tag else self.value_of(node)


_ZEROS = [0] * 64  # the words a collection sets aside (:meth:`_Walker.pack`), most at once


class _Merged(Exception):
    """A document with a merge key: its positions are kept the way :meth:`_Walker.walk` keeps
    them."""


def _same_text_in_both(text: str) -> bool:
    """Whether YAML 1.1 (libyaml) and 1.2 (ruamel.yaml) read every character of ``text`` alike.
    NEL, LINE and PARAGRAPH SEPARATOR are line breaks in 1.1 only; a byte-order mark inside the
    text, and anything outside the printable set both share (C1 controls, surrogates,
    U+FFFE/FFFF), may be taken by one and refused by the other. Any other character (é, →,
    emoji) is text to both, and both count columns in characters."""
    if text.isascii():
        return True
    for c in set(text):
        o = ord(c)
        if o > 0x7F and not (0xA0 <= o <= 0xD7FF and o not in (0x2028, 0x2029)
                             or 0xE000 <= o <= 0xFFFD and o != 0xFEFF or o >= 0x10000):
            return False
    return True


def _load_yaml12_fast(text: str, file: str) -> list[Document] | None:
    """:func:`load_documents`' result read with libyaml, or None where it might differ."""
    if not _same_text_in_both(text):
        return None
    if text.startswith("%") or "\n%" in text or "\r%" in text:
        return None  # a %YAML 1.1 directive changes how ruamel.yaml types scalars
    loader_cls = _yaml12_loader()
    if loader_cls is None:
        return None
    import yaml

    walk = _Walker(_QUOTED_TAG, _key12, _scalar12, merges=False,
                   seen=set() if "&" in text and "*" in text else None).walk
    docs: list[Document] = []
    try:
        loader = loader_cls(text)
        try:
            for i, node in _roots(loader):
                if isinstance(node, yaml.ScalarNode):
                    if _scalar12(node) is not None:
                        raise _GiveUp  # a document that is a single scalar
                else:
                    positions: _Positions = {}
                    data = walk(node, (), positions)
                    docs.append(Document(data, file, i, positions, node.start_mark.line + 1))
        finally:
            loader.dispose()
    except Exception:  # noqa: BLE001 - every doubt (syntax errors too) goes to ruamel.yaml
        return None
    return docs


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
    loader_cls = _fast_loader()
    docs: list[Document] = []
    try:
        loader = loader_cls(text)
        walker = _walker11(loader)
        packs = len(text) < 1 << 32  # no line or column of the text needs more than 32 bits
        try:
            for i, node in _roots(loader):
                if node is not None and not (
                    isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"
                ):
                    data, positions = _packed(walker, node, packs)
                    docs.append(Document(data, file, i, positions, node.start_mark.line + 1))
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, file, text) from None
    except InputError as exc:  # raised by the walk, which knows the line but not the file
        if exc.location is not None and not exc.location.file:
            exc.location = Location(file, exc.location.line, exc.location.column)
        raise
    return docs


def _packed(walker: _Walker, node: Any, packs: bool
            ) -> tuple[Any, Mapping[FieldPath, tuple[int, int]]]:
    """A composed document's data and the positions of its fields, packed
    (:class:`PackedPositions`) unless it holds a merge key or ``packs`` is False."""
    if packs:
        words: list[int] = []
        try:
            data = walker.pack(node, 0, words)
            return data, PackedPositions(data, array("Q", words))
        except _Merged:
            pass
    positions: _Positions = {}
    return walker.walk(node, (), positions), positions


@functools.lru_cache(maxsize=1)
def _fast_loader() -> Any:
    """libyaml's SafeLoader (PyYAML's pure-Python one where libyaml is missing), with the
    implicit-tag resolution of scalars memoised.

    libyaml parses in C but calls back into Python to resolve the tag of every node (for a
    scalar, a scan of the implicit resolvers' regular expressions) and to push and pop the path
    resolvers at every node: about a third of a DGD file's parse time. SafeLoader has no path
    resolvers, so a node's tag depends only on its kind, its text and its implicit flags: the
    result is kept per (kind, text, flags), and the path bookkeeping is skipped, with the same
    tags as before."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if base.yaml_path_resolvers:  # never for SafeLoader; if so, PyYAML's own resolution
        return base
    # A builtin memo (functools' C cache) answers the composer's call for every node without a
    # Python frame; a new (kind, text, flags) is resolved by the resolver SafeLoader is made
    # of. It keeps the last 4,096 answers, so a long-lived process holds at most that many
    # scalars' texts.
    resolved = functools.lru_cache(maxsize=4096)(yaml.resolver.Resolver().resolve)

    class Loader(_NoPathResolvers, base):  # type: ignore[misc, valid-type]
        resolve = staticmethod(resolved)

    return Loader


def _walker11(loader: Any) -> _Walker:
    """The :class:`_Walker` for YAML 1.1 as PyYAML's SafeLoader reads it: a scalar that is not a
    string is built by the loader's constructor (``!!str 5``, numbers, booleans, timestamps),
    aliases are expanded and ``<<`` merges."""
    construct = loader.construct_object
    bools = loader.bool_values

    def key_of(node: Any) -> str:
        return _key(construct(node, deep=True))

    def value_of(node: Any) -> Any:
        # A decimal integer, a boolean and null read as the constructor reads them, without it
        # (most of the scalars that are not strings: `replicas: 1`); the rest goes to it.
        tag = node.tag
        if tag == _INT_TAG:
            if _DECIMAL.fullmatch(node.value):
                return int(node.value)
        elif tag == _BOOL_TAG:
            return bools[node.value.lower()]
        elif tag == _NULL_TAG:
            return None
        return _scalar(construct(node, deep=True))

    return _Walker(_STR_TAG, key_of, value_of, merges=True, seen=None)


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"


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
