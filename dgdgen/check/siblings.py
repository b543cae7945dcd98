"""What the cross-file rules read from the files next to a checked file, and the cache that keeps
it between runs.

DGD101 needs every sibling DGD's name and namespace; RTE302 the Services and InferencePools
rendered next to a route, and the Service the operator creates for every DGD frontend
component. Nothing else of a sibling is ever read, so that is all a :class:`SiblingObject`
holds: per document, its kind, name and namespace, and a DGD's frontend component names.

Reading those facts means parsing the sibling (libyaml plus :func:`dgdgen.model.dgd.parse` for a DGD:
about half a millisecond per DGD file), which a pre-commit run in a folder of a hundred rendered
DGDs would pay on every commit. The facts depend on nothing but the file's bytes, so they are kept in one
small JSON file between runs (:class:`FactsCache`), keyed by the SHA-256 of the bytes: a sibling
that changed has another key and is parsed again; an unchanged one is read and hashed but not
parsed (docs/checker.md, docs/performance.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from dgdgen.model.dgd import KIND, Role, is_dgd, parse
from dgdgen.yamlio import Document

# Kinds the cross-file rules look up among the siblings (a document of any other kind is
# never read). A file whose text cannot spell one of them holds no sibling object.
SIBLING_KINDS = ("Service", "InferencePool", KIND)

# One fact per document: (kind, name, namespace, frontend component names).
Fact = tuple[str, str, str | None, tuple[str, ...]]

CACHE_FILE = "sibling-facts.json"
# Bump when what a fact holds, or how it is read from a document, changes.
CACHE_FORMAT = 2
# Entries kept at most: those of the files seen in the run that writes the file come first.
MAX_ENTRIES = 4096


@dataclass(frozen=True)
class SiblingObject:
    """One document of a sibling file that a cross-file rule may look up.

    ``kind`` is one of :data:`SIBLING_KINDS`; a DGD appears only when it parses as one (a broken
    neighbour is the DGD rules' business when it is checked itself), with its frontend
    component names in ``frontends``."""

    file: str
    kind: str
    name: str
    namespace: str | None
    frontends: tuple[str, ...] = ()


def facts_of(docs: Iterable[Document]) -> list[Fact]:
    """The facts of one file's documents, in document order."""
    out: list[Fact] = []
    for doc in docs:
        data = doc.data
        if not isinstance(data, dict):
            continue
        kind = data.get("kind")
        if kind == KIND:
            if not is_dgd(data):
                continue
            try:
                dgd = parse(data, source=doc)
            except Exception:  # noqa: BLE001, S112 - a broken neighbour is skipped
                continue
            out.append((KIND, dgd.name, dgd.namespace,
                        tuple(c.name for c in dgd.components.values()
                              if c.role is Role.FRONTEND)))
        elif kind in SIBLING_KINDS:
            meta = data.get("metadata")
            if not isinstance(meta, dict):
                continue
            name, ns = meta.get("name"), meta.get("namespace")
            if isinstance(name, str):
                out.append((str(kind), name, ns if isinstance(ns, str) else None, ()))
    return out


# A line break (as libyaml reads them) followed by a document marker: the text may hold several
# documents (or end one early), so its head says nothing about the rest.
_MARKER = re.compile(r"[\r\n\x85\u2028\u2029](?:---|\.\.\.)")
_STR = "tag:yaml.org,2002:str"


def head_namespace(text: str) -> str | None:
    """The namespace that the only document of ``text`` declares in ``metadata.namespace``,
    read from the head of the text without parsing the rest; None when reading the head cannot
    prove it (then the file is parsed whole).

    Sound for the sibling facts: when this returns ``ns``, every fact :func:`facts_of` gives for
    the text (parsed by :func:`dgdgen.yamlio.load_documents_fast`, the same libyaml parser and
    scalar resolution) is in namespace ``ns``, or there is none. Anything that could make the
    rest of the text change that answer gives None: a document marker after the first line
    (another document), a merge key or an alias at the root or in ``metadata``, a tag, a
    non-string namespace or a second one. A duplicate ``metadata`` key further down makes the
    whole file unreadable, hence factless. tests/check/test_siblings.py compares this with the
    full parse over every YAML file of the repository and their variants."""
    if _MARKER.search(text):
        return None
    import yaml
    from yaml import events

    from dgdgen.yamlio.yaml11 import _fast_loader

    loader = _fast_loader()(text)
    get = loader.get_event

    def key() -> str | None:
        """The next key of a mapping: its text; None at the mapping's end; raises _Unknown
        for anything but a plain or quoted untagged scalar, and for a merge key."""
        event = get()
        if isinstance(event, events.MappingEndEvent):
            return None
        if not isinstance(event, events.ScalarEvent) or event.tag is not None:
            raise _Unknown
        if event.implicit[0] and event.value == "<<":
            raise _Unknown  # a merge key may bring in anything
        return str(event.value)

    def skip() -> None:
        """Consume one node (an alias outside ``metadata`` changes nothing in it)."""
        depth = 0
        while True:
            event = get()
            if isinstance(event, (events.MappingStartEvent, events.SequenceStartEvent)):
                depth += 1
            elif isinstance(event, (events.MappingEndEvent, events.SequenceEndEvent)):
                depth -= 1
            if depth == 0:
                return

    try:
        if not isinstance(get(), events.StreamStartEvent) or not isinstance(
                get(), events.DocumentStartEvent):
            return None
        root = get()
        if not isinstance(root, events.MappingStartEvent) or root.tag is not None:
            return None
        while (name := key()) is not None:
            if name != "metadata":
                skip()
                continue
            meta = get()
            if not isinstance(meta, events.MappingStartEvent) or meta.tag is not None:
                return None
            found: str | None = None
            while (field := key()) is not None:
                if field != "namespace":
                    skip()
                    continue
                value = get()
                if (found is not None or not isinstance(value, events.ScalarEvent)
                        or value.tag is not None):
                    return None
                if value.implicit[0] and loader.resolve(yaml.ScalarNode, value.value,
                                                        (True, False)) != _STR:
                    return None
                found = str(value.value)
            return found
        return None
    except (_Unknown, yaml.YAMLError):
        return None
    finally:
        loader.dispose()


class _Unknown(Exception):
    pass


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _stamp() -> dict[str, Any]:
    """What the cached facts depend on besides a file's bytes: the cache format, dgdgen (how a
    DGD is parsed), PyYAML (how YAML is read) and the YAML limits other than the file size."""
    import yaml

    from dgdgen import __version__
    from dgdgen.yamlio.limits import get_limits

    lim = get_limits()
    return {"format": CACHE_FORMAT, "dgdgen": __version__, "pyyaml": yaml.__version__,
            "libyaml": hasattr(yaml, "CSafeLoader"),
            "limits": [lim.max_depth, lim.max_aliases, lim.max_alias_nodes]}


def _fact(item: Any) -> Fact:
    """One fact read back from JSON; ValueError for anything that is not one."""
    if not (isinstance(item, list) and len(item) == 4):
        raise ValueError(item)
    kind, name, ns, frontends = item
    if not (kind in SIBLING_KINDS and isinstance(name, str)
            and (ns is None or isinstance(ns, str)) and isinstance(frontends, list)
            and all(isinstance(f, str) for f in frontends)):
        raise ValueError(item)
    return (kind, name, ns, tuple(frontends))


_T = TypeVar("_T")


def _used_entry(used: dict[str, _T], old: dict[str, _T], key: str) -> _T | None:
    """The entry of ``key``, from this run's entries or else from the file's; one from the file
    joins this run's (saved first)."""
    found = used.get(key)
    if found is None:
        found = old.get(key)
        if found is not None:
            used[key] = found
    return found


class FactsCache:
    """The facts of sibling files by the SHA-256 of their bytes, kept in ``path`` between runs,
    and, for the files that were not parsed because their head proved them to be in another
    namespace, that namespace (:func:`head_namespace`).

    A file that cannot be read, is not valid JSON, or was written under another stamp
    (:func:`_stamp`) is ignored as a whole, and replaced by the next :meth:`save`. Saving writes
    a temporary file and renames it over the cache (:func:`dgdgen.cache.replace_file`): a
    concurrent run reads the old file or the new one, never a mix. At most
    :data:`MAX_ENTRIES` entries are kept, those used by the saving run first."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._stamp = _stamp()
        self._old: dict[str, list[Fact]] = {}
        self._used: dict[str, list[Fact]] = {}
        self._old_heads: dict[str, str] = {}
        self._heads: dict[str, str] = {}
        self._dirty = False
        if path is not None:
            self._old, self._old_heads = self._read(path)

    @classmethod
    def default(cls) -> FactsCache:
        """The cache in :func:`dgdgen.cache.cache_dir` (a cache that keeps nothing when
        caching is disabled)."""
        from dgdgen.cache import cache_dir

        root = cache_dir()
        return cls(os.path.join(root, CACHE_FILE) if root is not None else None)

    def _read(self, path: str) -> tuple[dict[str, list[Fact]], dict[str, str]]:
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read())
            if not isinstance(data, dict) or data.get("stamp") != self._stamp:
                raise ValueError("another stamp")
            entries, heads = data["entries"], data["heads"]
            if not isinstance(entries, dict) or not isinstance(heads, dict):
                raise TypeError("entries")
            out: dict[str, list[Fact]] = {}
            for key, facts in entries.items():
                if not isinstance(facts, list):
                    raise TypeError(key)
                out[key] = [_fact(f) for f in facts]
            if not all(isinstance(ns, str) for ns in heads.values()):
                raise TypeError("heads")
            return out, heads
        except FileNotFoundError:
            return {}, {}
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self._dirty = True  # unusable: replaced at the next save
            return {}, {}

    def get(self, key: str) -> list[Fact] | None:
        return _used_entry(self._used, self._old, key)

    def put(self, key: str, facts: list[Fact]) -> None:
        self._used[key] = facts
        self._dirty = True

    def head(self, key: str) -> str | None:
        """The namespace :func:`head_namespace` found for these bytes in an earlier run."""
        return _used_entry(self._heads, self._old_heads, key)

    def put_head(self, key: str, namespace: str) -> None:
        self._heads[key] = namespace
        self._dirty = True

    def save(self) -> None:
        """Write the cache when this run added to it (or found it unusable)."""
        if self.path is None or not self._dirty:
            return
        from dgdgen.cache import replace_file

        entries: dict[str, list[Fact]] = dict(list(self._used.items())[:MAX_ENTRIES])
        for key, facts in self._old.items():
            if len(entries) >= MAX_ENTRIES:
                break
            entries.setdefault(key, facts)
        heads: dict[str, str] = {}
        for key, ns in [*self._heads.items(), *self._old_heads.items()]:
            if len(entries) + len(heads) >= MAX_ENTRIES:
                break
            if key not in entries:
                heads.setdefault(key, ns)
        text = json.dumps({"stamp": self._stamp, "entries": entries, "heads": heads},
                          sort_keys=False, separators=(",", ":"))
        if replace_file(self.path, text.encode("utf-8")):
            self._dirty = False
