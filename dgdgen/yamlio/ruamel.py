"""dgdgen's complete YAML 1.2 reader: ruamel.yaml's round-trip loader, which builds only plain
YAML types (no arbitrary object construction: safe) and records positions, turned into plain
Python data with the position of every field (:func:`ruamel_documents`).

:func:`dgdgen.yamlio.load_documents` leaves it only the streams that libyaml cannot read the
way ruamel.yaml does (dgdgen.yamlio.yaml12), and at most
:attr:`~dgdgen.yamlio.limits.Limits.max_ruamel_bytes` of them: its pure-Python parser costs up
to 25 s and 600 MB per MB of text. :func:`key_text` and :func:`plain_scalar`, the plain value of a
constructed key or scalar within the bounds, serve the YAML 1.1 reader (dgdgen.yamlio.yaml11) too.
"""

from __future__ import annotations

import datetime as _dt
import functools
import warnings
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.yamlio.doc import Document, FieldPath, Positions
from dgdgen.yamlio.errors import from_yaml_error, in_file, version_error
from dgdgen.yamlio.limits import (
    PLAIN_TAGS,
    BadScalar,
    bounded_int,
    int_range_error,
    int_text_fits,
    mark_position,
    not_text,
)


def _ruamel_loader() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    yaml.Constructor = _bounded_constructor()
    return yaml


class _WideInt:
    """An integer scalar whose text is too long to hold 64 bits, kept unread (:func:`plain_scalar`
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
            if isinstance(node.value, str) and not int_text_fits(node.value):
                return _WideInt(node.value)
            return super().construct_yaml_int(node)

    Constructor.add_constructor("tag:yaml.org,2002:int", Constructor.construct_yaml_int)
    return Constructor


def _plain(node: Any, path: FieldPath, positions: Positions) -> Any:
    """Convert ruamel round-trip containers/scalars to plain Python, recording positions."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key in node:
            try:
                text = key_text(key)
            except BadScalar as exc:
                where: Positions = {}
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
        return plain_scalar(node)
    except BadScalar as exc:
        raise InputError(str(exc), location=Location("", *positions.get(path, (None, None))),
                         field=path) from None


def _ruamel_position(positions: Positions, child: FieldPath, node: Any, kind: str,
                     key: Any) -> None:
    """Record where ruamel.yaml saw a mapping's ``key`` or a list's ``item`` (0-based), if it
    did."""
    try:
        line, col = getattr(node.lc, kind)(key)
    except (KeyError, TypeError, AttributeError):
        return
    positions[child] = (line + 1, col + 1)


def key_text(key: Any) -> str:
    # Kubernetes keys are strings; a YAML key such as `8000:` or `true:` is read as its text.
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, _WideInt):
        raise int_range_error(key.text)
    if isinstance(key, int):
        bounded_int(int(key))
    if isinstance(key, str):
        bad = not_text(key)
        if bad is not None:
            raise bad
    return str(key)


def plain_scalar(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return bounded_int(int(value))
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        bad = not_text(value)
        if bad is not None:
            raise bad
        return str(value)
    if isinstance(value, _WideInt):
        raise int_range_error(value.text)
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    tag = getattr(getattr(value, "tag", None), "value", None)
    if isinstance(tag, str) and tag in PLAIN_TAGS:
        # ruamel keeps an explicitly tagged scalar (`!!str 5`) as a TaggedScalar; the event pass
        # has already checked that its text fits the tag, so PyYAML's constructor builds it.
        import yaml

        text = str(value.value)
        if PLAIN_TAGS[tag] == "int" and not int_text_fits(text):
            raise int_range_error(text)
        node = yaml.ScalarNode(tag, text)
        return plain_scalar(yaml.SafeLoader("").construct_object(node))
    return value


def ruamel_documents(text: str, file: str) -> list[Document]:
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
                positions: Positions = {}
                data = _plain(raw, (), positions)
                start = 1
                lc = getattr(raw, "lc", None)
                if lc is not None and getattr(lc, "line", None) is not None:
                    start = lc.line + 1
                docs.append(Document(data, file, i, positions, start))
    except YAMLError as exc:
        raise from_yaml_error(exc, file, text) from None
    except InputError as exc:  # raised by _plain, which knows the line but not the file
        raise in_file(exc, file) from None
    except Exception as exc:  # ruamel raises a few non-YAMLError types for odd input
        if exc.__class__.__module__.startswith("ruamel"):
            raise from_yaml_error(exc, file, text) from None
        if isinstance(exc, TypeError) and "unhashable" in str(exc):
            raise _collection_key_error(text, file) from None
        if isinstance(exc, (AssertionError, ValueError)) and _raised_in_ruamel(exc):
            # `%YAML 1.0` fails an assertion, `"\U00110000"` a chr(): bad input all the same
            raise version_error(text, file) or InputError(
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
        return from_yaml_error(exc, file, text)
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
                        location=Location(file, *mark_position(key.start_mark)),
                        hint="Kubernetes keys are strings")
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            continue
        todo.extend(reversed(children))
    return InputError("unsupported mapping key: a mapping or a list holding another one",
                      location=Location(file), hint="Kubernetes keys are strings")
