"""The checker's bulk reader, :func:`load_documents_fast`: YAML 1.1 as PyYAML's SafeLoader
resolves it, built from libyaml's events at close to the C parser's speed (a check reads
thousands of files). Plain data (no anchor, alias, tag or merge key: most files) is read by
:func:`_packed11`, which keeps the positions packed (:class:`~dgdgen.yamlio.doc.PackedPositions`);
anything else by the builder both libyaml readers share (dgdgen.yamlio.events).
"""

from __future__ import annotations

import functools
import gc
from sys import intern as _intern
from typing import Any

from dgdgen.errors import InputError
from dgdgen.yamlio.doc import Document
from dgdgen.yamlio.errors import from_yaml_error, in_file, syntax_error
from dgdgen.yamlio.events import (
    DECIMAL,
    MERGE_TAG,
    STR_TAG,
    Builder,
    DocumentRead,
    NoPathResolvers,
    Unusual,
    packed_read,
    parser_errors,
)
from dgdgen.yamlio.limits import (
    INT_MAX,
    INT_MIN,
    PLAIN_TAGS,
    UNREADABLE_SCALAR,
    check_limits,
    int_range_error,
    int_text_fits,
    remember,
    unreadable_scalar,
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
        node = yaml.ScalarNode(tag, e.value, e.start_mark, e.end_mark, style=e.style)
        if tag not in PLAIN_TAGS:  # `=`, `!!merge` as a value...: PyYAML's own refusal
            return construct(loader, node)
        try:
            return construct(loader, node)
        except UNREADABLE_SCALAR as exc:  # `2024-13-45`, `0b_`: refused at the field
            raise unreadable_scalar(tag, e.value, exc, tagged=e.tag not in (None, "!")) from None

    def key_of(tag: str | None, node: Any) -> str:
        if tag is None:  # a collection (`? [a, b]`): PyYAML builds it
            todo = [node]
            while todo:
                n = todo.pop()
                if isinstance(n, yaml.ScalarNode):
                    if n.tag == _INT_TAG and not int_text_fits(n.value):
                        raise int_range_error(n.value)
                    if n.tag in PLAIN_TAGS:  # refused as a key's scalar is (read)
                        try:
                            (constructors.get(n.tag) or constructors[None])(loader, n)
                        except UNREADABLE_SCALAR as exc:
                            raise unreadable_scalar(n.tag, n.value, exc, tagged=False) from None
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


# A plain scalar's reading depends on its text alone (SafeLoader has no path resolvers): the
# value, or as a mapping key the key, of the plain scalars met before, one object each (keys,
# enums, images repeat from file to file: held once), bounded as every memo (remember).
_PLAIN11: dict[str, Any] = {}
_KEYS11: dict[str, str] = {}

@functools.lru_cache(maxsize=1)
def _packed_setup() -> tuple[Any, ...]:
    """What :func:`_packed11` uses: libyaml's bare parser (the loader where libyaml is
    missing), the event classes, the errors it tells apart, and readers of the plain scalars
    the memos have not seen (a loader's resolver and constructor, which read a scalar from its
    text alone)."""
    import yaml

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
            raise Unusual
        else:
            key = key_of(tag, e)  # `8000:`, `true:` are read as their text
        remember(_KEYS11, text, key, text)
        return key

    return parser_cls, yaml.YAMLError, parser_errors(), plain_value, plain_key


def _packed11(text: str) -> list[DocumentRead] | None:
    """The documents of a stream as :meth:`Builder.documents` (:func:`_builder11`) reads them,
    with the positions packed (:class:`PackedPositions`); None where the stream has anything
    but plain data: an anchor, an alias, a tag, a merge key, a key that is not a scalar, a
    scalar the builder refuses, a duplicate key, nesting over the limit (the builder then reads
    it again and says so, in its words). A syntax error is raised as it comes, as the builder
    would meet it there too.

    It exists for the checker's bulk reading: the builder records a position per field as a
    path tuple in a dict, and reads every scalar by a call; here a plain scalar's value comes
    from a memo of its text, a quoted one is its text, and a position is two words
    (:func:`~dgdgen.yamlio.events.packed_read`)."""
    (parser_cls, yaml_error, built_errors, plain_value, plain_key) = _packed_setup()
    try:
        return packed_read(text, parser_cls, _PLAIN11, _KEYS11, plain_value, plain_key)
    except yaml_error as exc:
        if isinstance(exc, built_errors):
            return None
        raise  # the parser's: a syntax error
    except Exception:  # noqa: BLE001 - anything else is the builder's to read, or to refuse
        return None
