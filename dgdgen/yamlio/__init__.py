"""The one place that owns YAML: loading with positions, and deterministic dumping.

Loading keeps the 1-based line and column of every mapping key and sequence item, so any later
stage can point at ``file:line:column`` for a field path (:class:`Document`). Two loaders share
that contract:

* :func:`load_documents` reads rollout specs and the DGDs the generator reads: as ruamel.yaml's
  round-trip loader (YAML 1.2, plain YAML types only: safe) reads them, but through libyaml
  (PyYAML's C parser) wherever the two certainly agree (dgdgen.yamlio.yaml12), and through
  ruamel.yaml itself only where they might not (dgdgen.yamlio.ruamel).
* :func:`load_documents_fast` (dgdgen.yamlio.yaml11) builds the data from libyaml's events, with YAML
  1.1 scalars as PyYAML's SafeLoader reads them; it exists for the checker, which must read
  thousands of files at close to the C parser's speed.

Both loaders sit behind the same limits (dgdgen.yamlio.limits, set once by the CLI): only regular
files are read, and only up to a size cap; before either parser builds anything, one linear pass
over the parser's events refuses nesting deeper than a bound, more aliases than a bound, aliases
whose expansion would add more than a bound of nodes (alias bombs), recursive aliases, and tags
other than the plain YAML types (``!!binary``, ``!!python/...``, custom ``!tags``). So every load
takes time and memory linear in the file's size, whoever wrote the file (docs/robustness.md).
A parser's refusal reads the same whichever parser met it (dgdgen.yamlio.errors).

Dumping always goes through ruamel.yaml with a fixed configuration: top-level keys in the
Kubernetes order (apiVersion, kind, metadata, spec, ...), other keys in insertion order, no
aliases, a fixed line width, multi-line strings as literal blocks.

The rest of dgdgen imports from here; :class:`Document`, ``FieldPath`` (dgdgen.yamlio.doc) and
:func:`load_documents_fast` (dgdgen.yamlio.yaml11), which most stages name, are re-exported
(``__all__``). The limits are configured and read through dgdgen.yamlio.limits.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import io
import os
import re
import stat
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.yamlio import ruamel as yamlruamel
from dgdgen.yamlio.doc import Document, FieldPath
from dgdgen.yamlio.events import GiveUp
from dgdgen.yamlio.limits import check_limits, get_limits, size_error
from dgdgen.yamlio.yaml11 import load_documents_fast
from dgdgen.yamlio.yaml12 import packed12, read12

__all__ = [
    "TOP_LEVEL_ORDER",
    "Document",
    "FieldPath",
    "content_key",
    "dump",
    "dump_all",
    "load_documents",
    "load_documents_fast",
    "load_file",
    "read_bytes",
    "read_text",
]

TOP_LEVEL_ORDER = ("apiVersion", "kind", "metadata", "spec", "data", "stringData", "status")


def load_documents(text: str, file: str, *, packed: bool = False) -> list[Document]:
    """Parse every document of a YAML stream (safe: plain YAML types only), keeping positions.

    ruamel.yaml (YAML 1.2) decides what a stream means, but it reads only what libyaml cannot
    read its way: libyaml (:func:`dgdgen.yamlio.yaml12.read12`, about 20 times faster) reads the
    stream, reports its syntax errors, and gives up, leaving the stream to ruamel.yaml,
    wherever the two could differ (an alias, a scalar such as ``0x1F`` that YAML 1.1 types
    otherwise, a ``%YAML 1.1`` directive...). ruamel.yaml's pure-Python parser costs up to 25 s
    and 600 MB per MB of text, so it reads at most
    :attr:`~dgdgen.yamlio.limits.Limits.max_ruamel_bytes`: a larger stream that needs it is
    refused, naming what needs it and where.

    ``packed``: for a caller that reads many files and never changes what it read (``dgdgen
    verify``): a stream of plain data keeps its positions packed
    (:class:`~dgdgen.yamlio.doc.PackedPositions`), read by
    :func:`dgdgen.yamlio.yaml12.packed12`; the same documents, data and positions otherwise."""
    # The limits first: no alias bomb is ever expanded, no tag outside the plain types read; the
    # event pass runs where a cheap scan cannot rule those out (the readers check the depth).
    full = check_limits(text, file, always=False)
    with _collector_paused():
        if packed:
            docs = packed12(text, file)
            if docs is not None:
                return docs
        try:
            return read12(text, file)
        except GiveUp as exc:
            why = exc
        cap = get_limits().max_ruamel_bytes
        if why.reason and len(text) > cap:
            raise InputError(
                f"{why.reason} is read only by dgdgen's complete YAML 1.2 reader, which takes "
                f"files of at most {cap:,} bytes; this one is "
                f"{len(text):,}", location=Location(file, *(why.where or (None, None))),
                hint="write that part of the YAML another way (a quoted string, no alias), or "
                     "split the file")
        if not full:  # ruamel.yaml recurses: every limit is checked before it builds anything
            check_limits(text, file)
        # looked up on its module, where a test stands in for it (malformed text never reaches it)
        return yamlruamel.ruamel_documents(text, file)


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


def read_text(path: str, *, display: str | None = None) -> str:
    """Read a regular file as UTF-8, at most :attr:`~dgdgen.yamlio.limits.Limits.max_bytes`, with
    one clear error when it is missing, a directory, a FIFO or device (never read: ``/dev/zero``
    would not end, a FIFO would block), too large, a symlink loop, unreadable or not UTF-8."""
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
        limit = get_limits().max_bytes
        if st.st_size > limit:
            raise size_error(st.st_size, shown)
        chunks = []
        total = 0
        while True:  # the file may grow while it is read: never read past the limit
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise size_error(total, shown)
        raw = b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", location=where) from None
    finally:
        os.close(fd)
    return raw


def load_file(path: str, *, display: str | None = None, packed: bool = False
              ) -> list[Document]:
    return load_documents(read_text(path, display=display), display or path, packed=packed)


# --------------------------------------------------------------------------- dumping


def _ordered(obj: Mapping[str, Any]) -> dict[str, Any]:
    head = {k: obj[k] for k in TOP_LEVEL_ORDER if k in obj}
    tail = {k: v for k, v in obj.items() if k not in head}
    return {**head, **tail}


# The YAML 1.1 booleans and null (yaml.org/type/bool.html, yaml.org/type/null.html) that YAML
# 1.2 reads as strings, so ruamel.yaml writes them unquoted: `value: on` is the string "on" in
# 1.2 and `true` in 1.1.
_YAML11_NOT_STR = re.compile(
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|~)$")


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
        if _YAML11_NOT_STR.match(data):
            # a YAML 1.2 string that a YAML 1.1 reader (the Kubernetes tool chain's
            # sigs.k8s.io/yaml, PyYAML) reads as a boolean or null: quoted, so it stays a string
            return representer.represent_scalar("tag:yaml.org,2002:str", data, style="'")
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
