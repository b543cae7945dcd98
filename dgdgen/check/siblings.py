"""What the cross-file rules read from the files next to a checked file, and the cache that keeps
it between runs.

DGD101 needs every sibling DGD's name and namespace; RTE302 the Services and InferencePools
rendered next to a route, and the Service the operator creates for every DGD frontend
component. Nothing else of a sibling is ever read, so that is all a :class:`SiblingObject`
holds: per document, its kind, name and namespace, and a DGD's frontend component names.

Reading those facts means parsing the sibling (libyaml plus :func:`dgdgen.dgd.parse` for a DGD:
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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dgdgen.dgd import KIND, Role, is_dgd, parse
from dgdgen.yamlio import Document

# Kinds the cross-file rules look up among the siblings (a document of any other kind is
# never read). A file whose text cannot spell one of them holds no sibling object.
SIBLING_KINDS = ("Service", "InferencePool", KIND)

# One fact per document: (kind, name, namespace, frontend component names).
Fact = tuple[str, str, str | None, tuple[str, ...]]

CACHE_FILE = "sibling-facts.json"
# Bump when what a fact holds, or how it is read from a document, changes.
CACHE_FORMAT = 1
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


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _stamp() -> dict[str, Any]:
    """What the cached facts depend on besides a file's bytes: the cache format, dgdgen (how a
    DGD is parsed), PyYAML (how YAML is read) and the YAML limits other than the file size."""
    import yaml

    from dgdgen import __version__
    from dgdgen.yamlio import get_limits

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


class FactsCache:
    """The facts of sibling files by the SHA-256 of their bytes, kept in ``path`` between runs.

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
        self._dirty = False
        if path is not None:
            self._old = self._read(path)

    @classmethod
    def default(cls) -> FactsCache:
        """The cache in :func:`dgdgen.cache.cache_dir` (a cache that keeps nothing when
        caching is disabled)."""
        from dgdgen.cache import cache_dir

        root = cache_dir()
        return cls(os.path.join(root, CACHE_FILE) if root is not None else None)

    def _read(self, path: str) -> dict[str, list[Fact]]:
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read())
            if not isinstance(data, dict) or data.get("stamp") != self._stamp:
                raise ValueError("another stamp")
            entries = data["entries"]
            if not isinstance(entries, dict):
                raise TypeError("entries")
            out: dict[str, list[Fact]] = {}
            for key, facts in entries.items():
                if not isinstance(facts, list):
                    raise TypeError(key)
                out[key] = [_fact(f) for f in facts]
            return out
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            self._dirty = True  # unusable: replaced at the next save
            return {}

    def get(self, key: str) -> list[Fact] | None:
        facts = self._used.get(key)
        if facts is None:
            facts = self._old.get(key)
            if facts is not None:
                self._used[key] = facts
        return facts

    def put(self, key: str, facts: list[Fact]) -> None:
        self._used[key] = facts
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
        text = json.dumps({"stamp": self._stamp, "entries": entries}, sort_keys=False,
                          separators=(",", ":"))
        if replace_file(self.path, text.encode("utf-8")):
            self._dirty = False
