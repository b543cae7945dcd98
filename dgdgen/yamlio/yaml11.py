"""The checker's bulk reader, :func:`load_documents_fast`: YAML 1.1 as PyYAML's SafeLoader
resolves it, built from libyaml's events at close to the C parser's speed (a check reads
thousands of files). Plain data (no anchor, alias, tag or merge key: most files) is read by
:func:`_packed11`, which keeps the positions packed (:class:`~dgdgen.yamlio.doc.PackedPositions`);
anything else by the builder both libyaml readers share (dgdgen.yamlio.events).
"""

from __future__ import annotations

import functools
import gc
from array import array
from collections.abc import Callable, Mapping
from sys import intern as _intern
from typing import Any

from dgdgen.errors import InputError
from dgdgen.yamlio.doc import Document, FieldPath, PackedPositions
from dgdgen.yamlio.errors import from_yaml_error, in_file, syntax_error
from dgdgen.yamlio.events import (
    DECIMAL,
    MERGE_TAG,
    STR_TAG,
    Builder,
    NoPathResolvers,
    parser_errors,
)
from dgdgen.yamlio.limits import (
    INT_MAX,
    INT_MIN,
    check_limits,
    get_limits,
    int_range_error,
    int_text_fits,
    remember,
)
from dgdgen.yamlio.ruamel import key_text, plain_scalar


def load_documents_fast(text: str, file: str) -> list[Document]:
    """Like :func:`dgdgen.yamlio.load_documents`, but parsed by libyaml (YAML 1.1 scalars, as
    PyYAML's SafeLoader resolves them), for bulk checking."""
    import yaml

    check_limits(text, file, always=False)
    docs: list[Document] = []
    # the collector paused while the data is built, as dgdgen.yamlio._collector_paused does
    # (spelt out: the context manager costs a few percent of a small file's load)
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
        if not isinstance(exc, parser_errors()):  # the parser's own: a syntax error
            raise from_yaml_error(exc, file, text) from None
        raise (syntax_error(text, file) or from_yaml_error(exc, file, text)) from None
    except InputError as exc:  # raised by the builder, which knows the line but not the file
        # built from the events as they come, but a syntax error further on is the first to say
        raise (syntax_error(text, file) or in_file(exc, file)) from None
    finally:
        if enabled:
            gc.enable()
    return docs


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

    class Loader(NoPathResolvers, base):  # type: ignore[misc, valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode and implicit[0] and not implicit[1]:
                tag = plain.get(value)
                if tag is None:
                    tag = resolve(self, kind, value, implicit)
                    remember(plain, value, tag, value)
                return tag
            # a quoted scalar, or a mapping or sequence (their tag depends on the kind only)
            key = (value, implicit) if kind is ScalarNode else (kind, implicit)
            tag = cache.get(key)
            if tag is None:
                tag = resolve(self, kind, value, implicit)
                remember(cache, key, tag, value if kind is ScalarNode else "")
            return tag

    return Loader


def _builder11(loader: Any) -> Builder:
    """The :class:`Builder` for YAML 1.1 as PyYAML's SafeLoader reads it: a scalar that is not a
    string is built by the loader's constructor (``!!str 5``, numbers, booleans, timestamps),
    aliases are expanded and ``<<`` merges."""
    import yaml

    constructors = type(loader).yaml_constructors

    def read(tag: str, e: Any) -> Any:
        if tag == _INT_TAG and not int_text_fits(e.value):
            raise int_range_error(e.value)  # before int() reads it
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
                    if n.tag == _INT_TAG and not int_text_fits(n.value):
                        raise int_range_error(n.value)
                elif isinstance(n, yaml.SequenceNode):
                    todo.extend(n.value)
                else:
                    todo.extend(x for pair in n.value for x in pair)
            return key_text(loader.construct_object(node, deep=True))
        return key_text(read(tag, node))

    def value_of(tag: str, e: Any) -> Any:
        return plain_scalar(read(tag, e))

    return Builder(loader, STR_TAG, key_of, value_of, yaml11=True)


_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"


class _Unusual(Exception):
    """What the packed reading (:func:`_packed11`) leaves to :class:`Builder`."""


# A plain scalar's reading depends on its text alone (SafeLoader has no path resolvers): the
# value, or as a mapping key the key, of the plain scalars met before, one object each (keys,
# enums, images repeat from file to file: held once), bounded as every memo (remember).
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
        if tag == STR_TAG:
            value = text
        elif tag == _INT_TAG and len(text) <= 20 and DECIMAL.fullmatch(text) and (
                INT_MIN <= int(text) <= INT_MAX):
            value = int(text)  # as PyYAML's constructor reads a decimal integer
        elif tag == _BOOL_TAG:
            value = bools[text.lower()]
        elif tag == _NULL_TAG:
            value = None
        else:  # the constructor (a float, a timestamp...); a refusal is the builder's to say
            value = value_of(tag, e)
        remember(_PLAIN11, text, value, text)
        return value

    def plain_key(e: Any) -> str:
        text = e.value
        tag = resolve(kind, text, e.implicit)
        if tag == STR_TAG:
            key = _intern(text)
        elif tag == MERGE_TAG:
            raise _Unusual
        else:
            key = key_of(tag, e)  # `8000:`, `true:` are read as their text
        remember(_KEYS11, text, key, text)
        return key

    return (parser_cls, ev.ScalarEvent, ev.MappingStartEvent, ev.MappingEndEvent,
            ev.SequenceStartEvent, ev.SequenceEndEvent, ev.DocumentStartEvent,
            ev.StreamEndEvent, yaml.YAMLError, parser_errors(), plain_value, plain_key)


def _packed11(text: str) -> list[_Read] | None:
    """The documents of a stream as :meth:`Builder.documents` (:func:`_builder11`) reads them,
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
    max_depth = get_limits().max_depth
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
