"""YAML 1.2 streams read by libyaml, for :func:`dgdgen.yamlio.load_documents`: about 20 times
faster than ruamel.yaml's pure-Python parser (dgdgen.yamlio.ruamel), whose reading it must equal.

libyaml's events (the C parser, the same YAML syntax) are built into the plain data that
ruamel.yaml's round-trip loader + ``_plain`` give, for the streams where that is certain;
anything else raises :class:`GiveUp` and ruamel.yaml reads the stream:

* plain scalars are typed by ruamel.yaml's own YAML 1.2 resolver; accepted are strings,
  true/false, null and the spellings of numbers that read the same everywhere (decimal
  integers without leading zeros, d.d floats); octal, hex, exponents, .inf, timestamps,
  merge keys and the rest give up;
* quoted and block scalars are strings; any explicit tag gives up;
* keys must be strings, each at most once (the walk shared with the bulk loader refuses a
  duplicate, and any error gives up); an alias (a node met twice) gives up;
* no character the two read differently (:data:`_READ_OTHERWISE`), no directives (%YAML 1.1
  changes the typing), and any error gives up (ruamel.yaml then reports it in its words).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from dgdgen.errors import InputError
from dgdgen.yamlio.doc import Document
from dgdgen.yamlio.errors import from_yaml_error, in_file, syntax_error
from dgdgen.yamlio.events import (
    DECIMAL,
    MAP_TAG,
    SEQ_TAG,
    STR_TAG,
    Builder,
    GiveUp,
    NoPathResolvers,
    parser_errors,
)
from dgdgen.yamlio.limits import INT_MAX, INT_MIN, int_range_error, remember, shown_tag

_PLAIN_TAG = "dgdgen:plain"
_QUOTED_TAG = "dgdgen:quoted"  # quoted and block scalars without a tag: strings
_ODD_TAG = "dgdgen:odd"


_SIMPLE_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]+")


_OUT_OF_RANGE = object()  # a decimal integer wider than 64 bits (its text is the node's)


@functools.lru_cache(maxsize=1)
def _yaml12_loader() -> Any:
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeLoader", None)
    if base is None:  # no libyaml: ruamel.yaml reads everything
        return None

    class Loader(NoPathResolvers, base):  # type: ignore[misc, valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is ScalarNode:
                if implicit[0]:
                    return _PLAIN_TAG
                return _QUOTED_TAG if implicit[1] else _ODD_TAG
            return MAP_TAG if kind is not yaml.SequenceNode else SEQ_TAG

    return Loader


_PLAIN12: dict[str, tuple[bool, Any]] = {}


def _plain12(value: str) -> tuple[bool, Any]:
    """(known, value) of a plain scalar as ruamel.yaml's YAML 1.2 round-trip loader reads it."""
    found = _PLAIN12.get(value)
    if found is not None:
        return found
    tag = _resolve12(value)
    result: tuple[bool, Any] = (False, None)
    if tag == STR_TAG:
        result = (True, value)
    elif tag == "tag:yaml.org,2002:bool":
        result = (True, value.lower() == "true")
    elif tag == "tag:yaml.org,2002:null":
        result = (True, None)
    elif tag == "tag:yaml.org,2002:int" and DECIMAL.fullmatch(value):
        # at most 19 digits can fit (and int() reads at most 4,300)
        wide = len(value.lstrip("+-")) > 19 or not INT_MIN <= int(value) <= INT_MAX
        result = (True, _OUT_OF_RANGE if wide else int(value))
    elif tag == "tag:yaml.org,2002:float" and _SIMPLE_FLOAT.fullmatch(value):
        result = (True, float(value))
    remember(_PLAIN12, value, result, value)
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
    return STR_TAG


def _scalar12(tag: str, node: Any) -> Any:
    """The value of a scalar (an event, tagged ``tag``) as ruamel.yaml reads it (gives up on any
    other tag)."""
    if tag == _QUOTED_TAG:
        return node.value
    if tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if value is _OUT_OF_RANGE:
            raise int_range_error(node.value)
        if known:
            return value
        raise GiveUp(f"the scalar {node.value[:40]!r}, which YAML 1.1 reads otherwise",
                      node.start_mark)
    if tag == _ODD_TAG:
        raise GiveUp("the non-specific tag !", node.start_mark)
    raise GiveUp(f"the tag {shown_tag(tag)}", node.start_mark)


def _key12(tag: str, node: Any) -> str:
    """A mapping key that is not quoted: a plain scalar ruamel.yaml reads as a string, or give
    up (``true:``, ``8000:``, ``~:``, a collection or an explicitly tagged key)."""
    if tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if known and type(value) is str:
            return value
    raise GiveUp("a mapping key that is not a string", node.start_mark)


# Characters YAML 1.1 (libyaml) and 1.2 (ruamel.yaml) read differently: NEL, LINE and PARAGRAPH
# SEPARATOR are line breaks in 1.1 only, and a byte-order mark inside the text is taken by one and
# refused by the other. Anything else outside the printable set (C0/C1 controls, U+FFFE/FFFF) is
# not YAML 1.2 either, and libyaml refuses it with its position; any other character (é, →,
# emoji) is text to both, and both count columns in characters.
_READ_OTHERWISE = re.compile("[\u0085\u2028\u2029\ufeff]")


def read12(text: str, file: str) -> list[Document]:
    """:func:`dgdgen.yamlio.load_documents`' result read with libyaml; :class:`GiveUp` where
    ruamel.yaml might read it otherwise, an :class:`InputError` for what both refuse (a syntax
    error, a duplicate key, a 64-bit overflow)."""
    odd = None if text.isascii() else _READ_OTHERWISE.search(
        text, 1 if text.startswith("\ufeff") else 0)
    if odd is not None:
        why = GiveUp(f"the character U+{ord(odd[0]):04X}")
        why.where = _line_column(text, odd.start())
        raise why
    loader_cls = _yaml12_loader()
    if loader_cls is None:
        raise GiveUp("")  # no libyaml: ruamel.yaml reads everything
    if text.startswith("%") or "\n%" in text or "\r%" in text:
        _directives(text, file)  # a %YAML 1.1 or %TAG directive gives up
    import yaml

    docs: list[Document] = []
    try:
        loader = loader_cls(text)
        try:
            built = Builder(loader, _QUOTED_TAG, _key12, _scalar12, yaml11=False)
            for i, data, scalar, positions, line in built.documents():
                if not scalar:
                    docs.append(Document(data, file, i, positions, line))
                elif data is not None:
                    raise GiveUp("a document that is a single scalar")
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        if isinstance(exc, parser_errors()):
            _syntax_check(text, file)  # a syntax error further on is the first to say
        raise _libyaml_refusal(exc, text, file) from None
    except (InputError, GiveUp) as exc:
        # Built from the events as they come, but a syntax error further on is the first thing
        # to say (and ruamel.yaml would take 20 s per MB to say the same): a linear pass.
        _syntax_check(text, file)
        if isinstance(exc, InputError):  # raised by the builder, which knows no file
            raise in_file(exc, file) from None
        raise
    return docs


def _line_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of the character at ``index``."""
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _load_yaml12_fast(text: str, file: str) -> list[Document] | None:
    """:func:`dgdgen.yamlio.load_documents`' result read with libyaml, or None where it might
    differ."""
    try:
        return read12(text, file)
    except GiveUp:
        return None


# libyaml's refusals of what YAML 1.2 allows: an anchor or alias named with characters beyond
# [A-Za-z0-9_-] (`&a.b`), and a document after `...` without `---`. Left to ruamel.yaml.
_STRICTER_IN_LIBYAML = ("did not find expected alphabetic or numeric character",
                        "did not find expected <document start>")


def _libyaml_refusal(exc: Exception, text: str, file: str) -> Exception:
    """A libyaml syntax error as the error of the file, or :class:`GiveUp` where YAML 1.2 may
    allow what libyaml refuses."""
    problem = str(getattr(exc, "problem", "") or "")
    if problem in _STRICTER_IN_LIBYAML:
        return GiveUp(f"YAML that libyaml refuses ({problem})",
                       getattr(exc, "problem_mark", None))
    return from_yaml_error(exc, file, text)


def _syntax_check(text: str, file: str) -> None:
    """Raise libyaml's syntax error of ``text`` if it has one, unless YAML 1.2 may allow it."""
    import yaml

    exc = syntax_error(text, file)
    if exc is not None and isinstance(exc.__cause__, yaml.YAMLError):
        refusal = _libyaml_refusal(exc.__cause__, text, file)
        if isinstance(refusal, InputError):
            raise refusal from None


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
                raise GiveUp("a %YAML 1.1 or %TAG directive", e.start_mark)
    except yaml.YAMLError as exc:
        raise _libyaml_refusal(exc, text, file) from None
    finally:
        loader.dispose()
