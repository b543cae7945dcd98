"""The one module that owns YAML: loading with positions, and deterministic dumping.

Loading keeps the 1-based line and column of every mapping key and sequence item, so any later
stage can point at ``file:line:column`` for a field path. Two loaders share that contract:

* :func:`load_documents` uses ruamel.yaml's round-trip loader, which builds only plain YAML
  types (no arbitrary object construction: safe) and records positions. Used for rollout specs
  and the DGDs the generator reads.
* :func:`load_documents_fast` composes with libyaml (PyYAML's C loader) when it is available and
  walks the node graph itself; it exists for the checker, which must read thousands of files at
  close to the C parser's speed.

Dumping always goes through ruamel.yaml with a fixed configuration: top-level keys in the
Kubernetes order (apiVersion, kind, metadata, spec, ...), other keys in insertion order, no
aliases, a fixed line width, multi-line strings as literal blocks.
"""

from __future__ import annotations

import datetime as _dt
import functools
import io
import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dgdgen.errors import InputError, Location

FieldPath = tuple[str | int, ...]

TOP_LEVEL_ORDER = ("apiVersion", "kind", "metadata", "spec", "data", "stringData", "status")


@dataclass
class Document:
    """One YAML document as plain Python data, with the position of every field."""

    data: Any
    file: str
    index: int = 0  # position of the document within a multi-document stream
    positions: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)
    start_line: int = 1

    def location(self, path: Sequence[str | int] = ()) -> Location:
        """The closest known location of ``path`` (falls back to its nearest parent)."""
        p: FieldPath = tuple(path)
        while p:
            if p in self.positions:
                line, col = self.positions[p]
                return Location(self.file, line, col)
            p = p[:-1]
        return Location(self.file, self.start_line, 1)


# --------------------------------------------------------------------------- ruamel loader


def _ruamel_loader() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def _plain(node: Any, path: FieldPath, positions: dict[FieldPath, tuple[int, int]]) -> Any:
    """Convert ruamel round-trip containers/scalars to plain Python, recording positions."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key in node:
            child = path + (str(key),)
            try:
                line, col = node.lc.key(key)
                positions[child] = (line + 1, col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            out[str(key) if not isinstance(key, (int, float, bool)) else _key(key)] = _plain(
                node[key], child, positions
            )
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, item in enumerate(node):
            child = path + (i,)
            try:
                line, col = node.lc.item(i)
                positions[child] = (line + 1, col + 1)
            except (KeyError, TypeError, AttributeError):
                pass
            items.append(_plain(item, child, positions))
        return items
    return _scalar(node)


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
    return value


def _yaml_error(exc: Exception, file: str) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    message = f"malformed YAML: {problem}"
    if context:
        message += f" ({context})"
    if mark is not None:
        return InputError(message, location=Location(file, mark.line + 1, mark.column + 1))
    return InputError(message, location=Location(file))


def load_documents(text: str, file: str) -> list[Document]:
    """Parse every document of a YAML stream (safe: plain YAML types only), keeping positions.

    ruamel.yaml (YAML 1.2) decides what a stream means. Most streams are read by libyaml
    instead (:func:`_load_yaml12_fast`, about 20 times faster), which gives up, leaving the
    stream to ruamel.yaml, wherever the two could differ."""
    fast = _load_yaml12_fast(text, file)
    if fast is not None:
        return fast
    from ruamel.yaml.error import YAMLError

    yaml = _ruamel_loader()
    docs: list[Document] = []
    try:
        for i, raw in enumerate(yaml.load_all(text)):
            if raw is None:
                continue
            positions: dict[FieldPath, tuple[int, int]] = {}
            data = _plain(raw, (), positions)
            start = 1
            lc = getattr(raw, "lc", None)
            if lc is not None and getattr(lc, "line", None) is not None:
                start = lc.line + 1
            docs.append(Document(data, file, i, positions, start))
    except YAMLError as exc:
        raise _yaml_error(exc, file) from None
    except Exception as exc:  # ruamel raises a few non-YAMLError types for odd input
        if exc.__class__.__module__.startswith("ruamel"):
            raise _yaml_error(exc, file) from None
        raise
    return docs


# ----------------------------------------------------------- YAML 1.2 streams read by libyaml

# The composed node graph of libyaml (the C parser, the same YAML syntax) is converted to the
# plain data that ruamel.yaml's round-trip loader + _plain give, for the streams where that is
# certain; anything else raises _GiveUp and ruamel.yaml reads the stream:
# * plain scalars are typed by ruamel.yaml's own YAML 1.2 resolver; accepted are strings,
#   true/false, null and the spellings of numbers that read the same everywhere (decimal
#   integers without leading zeros, d.d floats); octal, hex, exponents, .inf, timestamps,
#   merge keys and the rest give up;
# * quoted and block scalars are strings; any explicit tag gives up;
# * keys must be strings, each at most once; an alias (a node met twice) gives up;
# * only ASCII text (columns are then the same in both), no directives (%YAML 1.1 changes the
#   typing), and any error gives up (ruamel.yaml then reports it in its words).
_PLAIN_TAG = "dgdgen:plain"
_QUOTED_TAG = "dgdgen:quoted"  # quoted and block scalars without a tag: strings
_ODD_TAG = "dgdgen:odd"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_SIMPLE_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]+")


class _GiveUp(Exception):
    pass


@functools.lru_cache(maxsize=1)
def _yaml12_loader() -> Any:
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeLoader", None)
    if base is None:  # no libyaml: ruamel.yaml reads everything
        return None

    class Loader(base):  # type: ignore[misc, valid-type]
        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

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
    from ruamel.yaml.nodes import ScalarNode

    tag = _yaml12_resolver().resolve(ScalarNode, value, (True, False))
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
    if len(value) <= 256:
        if len(_PLAIN12) >= 65536:
            _PLAIN12.clear()
        _PLAIN12[value] = result
    return result


@functools.lru_cache(maxsize=1)
def _yaml12_resolver() -> Any:
    from ruamel.yaml.resolver import VersionedResolver

    return VersionedResolver()  # the resolver of YAML(typ="rt"), YAML 1.2


def _scalar12(node: Any) -> Any:
    tag = node.tag
    if tag == _QUOTED_TAG:
        return node.value
    if tag == _PLAIN_TAG:
        known, value = _PLAIN12.get(node.value) or _plain12(node.value)
        if known:
            return value
    raise _GiveUp


def _walk12(node: Any, path: FieldPath, positions: dict[FieldPath, tuple[int, int]],
            seen: set[int]) -> Any:
    if id(node) in seen:
        raise _GiveUp  # an alias
    seen.add(id(node))
    tag = node.tag
    if tag == _MAP_TAG:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag != _PLAIN_TAG and key_node.tag != _QUOTED_TAG or id(key_node) in seen:
                raise _GiveUp  # a key that is not a scalar string, or an alias
            seen.add(id(key_node))
            key = _scalar12(key_node)
            if type(key) is not str or key in out:
                raise _GiveUp
            child = path + (key,)
            mark = key_node.start_mark
            positions[child] = (mark.line + 1, mark.column + 1)
            out[key] = _walk12(value_node, child, positions, seen)
        return out
    if tag == _SEQ_TAG:
        items = []
        for i, item in enumerate(node.value):
            child = path + (i,)
            mark = item.start_mark
            positions[child] = (mark.line + 1, mark.column + 1)
            items.append(_walk12(item, child, positions, seen))
        return items
    return _scalar12(node)  # gives up on any other tag


def _load_yaml12_fast(text: str, file: str) -> list[Document] | None:
    """:func:`load_documents`' result read with libyaml, or None where it might differ."""
    if not text.isascii() or text.startswith("%") or "\n%" in text or "\r%" in text:
        return None  # a %YAML 1.1 directive changes how ruamel.yaml types scalars
    loader_cls = _yaml12_loader()
    if loader_cls is None:
        return None
    import yaml

    docs: list[Document] = []
    try:
        loader = loader_cls(text)
        try:
            i = 0
            while loader.check_node():
                node = loader.get_node()
                if isinstance(node, yaml.ScalarNode):
                    if _scalar12(node) is not None:
                        raise _GiveUp  # a document that is a single scalar
                else:
                    positions: dict[FieldPath, tuple[int, int]] = {}
                    data = _walk12(node, (), positions, set())
                    docs.append(Document(data, file, i, positions, node.start_mark.line + 1))
                i += 1
        finally:
            loader.dispose()
    except Exception:  # noqa: BLE001 - every doubt (syntax errors too) goes to ruamel.yaml
        return None
    return docs


def read_text(path: str, *, display: str | None = None) -> str:
    """Read a file as UTF-8 with a clear error when it is missing, a directory or unreadable."""
    shown = display or path
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except FileNotFoundError:
        raise InputError("file not found", location=Location(shown)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a YAML file", location=Location(shown)) from None
    except PermissionError:
        raise InputError("permission denied", location=Location(shown)) from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.start})", location=Location(shown)
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", location=Location(shown)) from None


def load_file(path: str, *, display: str | None = None) -> list[Document]:
    return load_documents(read_text(path, display=display), display or path)


# --------------------------------------------------------------------------- fast loader


def load_documents_fast(text: str, file: str) -> list[Document]:
    """Like :func:`load_documents`, but parsed by libyaml (YAML 1.1 scalars, as PyYAML's
    SafeLoader resolves them), for bulk checking."""
    import yaml

    loader_cls = _fast_loader()
    docs: list[Document] = []
    try:
        loader = loader_cls(text)
        try:
            i = 0
            while loader.check_node():
                node = loader.get_node()
                if node is not None and not (
                    isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"
                ):
                    positions: dict[FieldPath, tuple[int, int]] = {}
                    data = _walk_node(loader, node, (), positions)
                    docs.append(Document(data, file, i, positions, node.start_mark.line + 1))
                i += 1
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, file) from None
    return docs


@functools.lru_cache(maxsize=1)
def _fast_loader() -> Any:
    """libyaml's SafeLoader (PyYAML's pure-Python one where libyaml is missing), with the
    implicit-tag resolution of scalars memoised.

    libyaml parses in C but calls back into Python to resolve the tag of every scalar (a scan
    of the implicit resolvers' regular expressions) and to push and pop the path resolvers at
    every node: about a third of a DGD file's parse time. SafeLoader has no path resolvers, and
    a scalar's tag depends only on its text and its implicit flags, so the result is kept per
    (text, flags) and the path bookkeeping is skipped, with the same tags as before."""
    import yaml
    from yaml.nodes import ScalarNode

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if base.yaml_path_resolvers:  # never for SafeLoader; if so, PyYAML's own resolution
        return base
    cache: dict[tuple[str, tuple[bool, bool]], str] = {}
    resolve = base.resolve

    class Loader(base):  # type: ignore[misc, valid-type]
        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            if kind is not ScalarNode:
                return resolve(self, kind, value, implicit)
            key = (value, implicit)
            tag = cache.get(key)
            if tag is None:
                tag = resolve(self, kind, value, implicit)
                if len(value) <= 256:  # short scalars repeat (keys, enums); long ones rarely
                    if len(cache) >= 65536:
                        cache.clear()
                    cache[key] = tag
            return tag

    return Loader


def _walk_node(
    loader: Any, node: Any, path: FieldPath, positions: dict[FieldPath, tuple[int, int]]
) -> Any:
    import yaml

    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged = _walk_node(loader, value_node, path, positions)
                for m in merged if isinstance(merged, list) else [merged]:
                    if isinstance(m, dict):
                        for k, v in m.items():
                            out.setdefault(k, v)
                continue
            key = (key_node.value if key_node.tag == _STR_TAG
                   else _key(loader.construct_object(key_node, deep=True)))
            if key in out:
                raise InputError(
                    f"duplicate key {key!r}",
                    location=Location(
                        "", key_node.start_mark.line + 1, key_node.start_mark.column + 1
                    ),
                )
            child = path + (key,)
            positions[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _walk_node(loader, value_node, child, positions)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            child = path + (i,)
            positions[child] = (item.start_mark.line + 1, item.start_mark.column + 1)
            items.append(_walk_node(loader, item, child, positions))
        return items
    if node.tag == _STR_TAG:  # most scalars: the resolved text is the value (no constructor)
        return node.value
    return _scalar(loader.construct_object(node, deep=True))


_STR_TAG = "tag:yaml.org,2002:str"


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
