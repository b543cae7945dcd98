"""Plain data built from a libyaml parser's events (:class:`Builder`), for both libyaml readers:
dgdgen.yamlio.yaml12 (YAML 1.2 as ruamel.yaml reads it, or give up) and dgdgen.yamlio.yaml11 (YAML 1.1 as
PyYAML's SafeLoader reads it, for the checker), with what the two share: the tags they name,
:class:`GiveUp`, a loader without path resolvers and the errors a builder raises.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.yamlio.doc import FieldPath, PackedPositions, Positions
from dgdgen.yamlio.limits import BadScalar, get_limits, mark_position, too_deep

MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
MERGE_TAG = "tag:yaml.org,2002:merge"
DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")


STR_TAG = "tag:yaml.org,2002:str"


class GiveUp(Exception):
    """What libyaml cannot read the way ruamel.yaml does (``reason``), and where."""

    def __init__(self, reason: str, mark: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.where: tuple[int, int] | None = mark_position(mark) if mark is not None else None


class NoPathResolvers:
    """PyYAML pushes and pops its path resolvers at every node; dgdgen's loaders use none (a
    measurable share of a libyaml parse): mixed in before the loader class, these do nothing."""

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


@functools.lru_cache(maxsize=1)
def parser_errors() -> tuple[type[Exception], ...]:
    """The errors the builders raise (an undefined alias, a scalar no constructor reads), as
    opposed to the parser's syntax errors."""
    from yaml.composer import ComposerError
    from yaml.constructor import ConstructorError

    return ComposerError, ConstructorError


class Builder:
    """Plain data built from a libyaml parser's events, for both libyaml loaders, without the
    node graph PyYAML's composer would build first (for a dense stream of small mappings, the
    graph takes twice the memory of the data: 740 MB for 8 MB of ``- {a: 1}``).

    It records the position of every mapping key and sequence item, refuses nesting deeper than
    the limit (the event pass may have been skipped) and duplicate keys, with the line (the file
    is the caller's). The loaders differ only in how they read a scalar: one tagged ``text_tag``
    is its own text (most scalars: no call); any other is read by ``value_of``, or by ``key_of``
    as a mapping key (which must give a string). ``yaml11``: as PyYAML's SafeLoader, aliases are
    expanded (a copy of the anchored data, at the anchor's positions) and ``<<`` merges
    mappings; else an alias or a re-used anchor gives up (:class:`GiveUp`)."""

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
        self.max_depth = get_limits().max_depth
        # anchor -> (the anchored scalar's event, or its data and the positions under it
        # relative to it), the anchor's own position
        self.anchors: dict[str, tuple[Any, list[tuple[FieldPath, tuple[int, int]]] | None,
                                      tuple[int, int]]] = {}
        self.logs: list[list[tuple[FieldPath, tuple[int, int]]]] = []  # of open anchored nodes

    def documents(self) -> Iterator[tuple[int, Any, bool, Positions, int]]:
        """(index, data, whether the root is a scalar, positions, first line) per document."""
        from yaml import events as ev

        get = self.get
        index = 0
        e = get()
        while e is not None and type(e) is not ev.StreamEndEvent:
            if type(e) is ev.DocumentStartEvent:
                self.anchors.clear()
                root = get()
                positions: Positions = {}
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

    def plain_scalar(self, e: Any, as_key: bool, path: FieldPath, positions: Positions,
                tag: str | None = None) -> Any:
        if tag is None:
            tag = self._tag(e)
        if tag == self.text_tag:
            return e.value
        if as_key:
            try:
                return self.key_of(tag, e)
            except BadScalar as exc:
                raise InputError(str(exc), location=Location("", *mark_position(e.start_mark)),
                                 field=path) from None
        try:
            return self.value_of(tag, e)
        except BadScalar as exc:
            where = positions.get(path) or mark_position(e.start_mark)
            raise InputError(str(exc), location=Location("", *where), field=path) from None

    def _anchored(self, e: Any) -> None:
        """Refuse a re-used anchor (as PyYAML's composer does; YAML 1.2 allows it)."""
        if e.anchor in self.anchors:
            if not self.yaml11:
                raise GiveUp("a re-used anchor", e.start_mark)
            from yaml.composer import ComposerError

            raise ComposerError(f"found duplicate anchor {e.anchor!r}; first occurrence", None,
                                "second occurrence", e.start_mark)

    def _alias(self, e: Any, as_key: bool, path: FieldPath, positions: Positions
               ) -> tuple[Any, tuple[int, int]]:
        if not self.yaml11:
            raise GiveUp("an alias", e.start_mark)
        found = self.anchors.get(e.anchor)
        if found is None:
            from yaml.composer import ComposerError

            raise ComposerError(None, None, f"found undefined alias {e.anchor!r}", e.start_mark)
        event_or_data, under, at = found
        if under is None:  # a scalar: read again, as a key or a value
            return self.plain_scalar(event_or_data, as_key, path, positions), at
        if as_key:
            raise InputError("unsupported mapping key: an alias of a mapping or a list",
                             location=Location("", *mark_position(e.start_mark)), field=path,
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
                             location=Location("", *mark_position(e.start_mark)),
                             hint="Kubernetes keys are strings")
        if depth >= self.max_depth:
            raise too_deep(Location("", *mark_position(e.start_mark)))
        value: list[Any] = []
        x = self.get()
        if t is ev.SequenceStartEvent:
            while type(x) is not ev.SequenceEndEvent:
                value.append(self._compose(x, depth + 1))
                x = self.get()
            return yaml.SequenceNode(SEQ_TAG, value, e.start_mark, None)
        while type(x) is not ev.MappingEndEvent:
            value.append((self._compose(x, depth + 1), self._compose(self.get(), depth + 1)))
            x = self.get()
        return yaml.MappingNode(MAP_TAG, value, e.start_mark, None)

    def _merge(self, out: dict[str, Any], merged_keys: set[str], path: FieldPath,
               positions: Positions) -> None:
        """Read the value of a ``<<`` key (the next node) and merge it into ``out``, the mapping
        at ``path``, as PyYAML's SafeLoader does: a mapping, or a list of them (the first to
        name a key wins; anything else merges nothing), under the keys ``out`` has not set; the
        keys taken are added to ``merged_keys`` (a key of the mapping's own met later replaces
        its value) with the positions of their fields where the merged mappings have them."""
        scratch: Positions = {}
        logs, self.logs = self.logs, []  # the merged nodes' positions are placed below
        try:
            merged = self.node(self.get(), path, scratch)[0]
        finally:
            self.logs = logs
        n = len(path) + isinstance(merged, list)  # a list's item i is at path + (i,)
        under: dict[FieldPath, list[tuple[FieldPath, tuple[int, int]]]] = {}
        for p, at in scratch.items():
            if len(p) > n:
                under.setdefault(p[:n + 1], []).append((p, at))
        sources = [(merged, path)] if not isinstance(merged, list) else \
            [(m, path + (i,)) for i, m in enumerate(merged)]
        for m, base in sources:
            if not isinstance(m, dict):
                continue
            for mk, mv in m.items():
                if mk not in out:
                    out[mk] = mv
                    merged_keys.add(mk)
                    for p, at in under.get(base + (mk,), ()):
                        self._place(positions, path + p[n:], at)

    def _forget(self, positions: Positions, field: FieldPath) -> None:
        """Drop the positions recorded at and under ``field`` (a merged value replaced)."""
        n = len(field)
        for p in [p for p in positions if p[:n] == field]:
            del positions[p]
        for log in self.logs:
            log[:] = [(p, at) for p, at in log if p[:n] != field]

    def _place(self, positions: Positions, path: FieldPath, at: tuple[int, int]) -> None:
        """Record a position, also in the log of every anchored node being built."""
        positions[path] = at
        for log in self.logs:
            log.append((path, at))

    def node(self, e: Any, path: FieldPath, positions: Positions, as_key: bool = False
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
            return self.plain_scalar(e, as_key, path, positions), at
        if as_key:
            if not self.yaml11:
                raise GiveUp("a mapping key that is not a string", e.start_mark)
            # PyYAML builds the key (`? [a, b]`), and it is read as its text, as a scalar key is
            try:
                return self.key_of(None, self._compose(e, len(path))), at
            except BadScalar as exc:  # a scalar inside it refused (`? [2024-13-45]`)
                raise InputError(str(exc), location=Location("", *at), field=path) from None
        if len(path) >= self.max_depth:
            raise too_deep(Location("", *at))
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
            merged_keys: set[str] = set()  # a key of the mapping's own overrides a merged one
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
                    if tag == MERGE_TAG and self.yaml11:
                        self._merge(out, merged_keys, path, positions)
                        k = get()
                        continue
                    key = k.value if tag == text_tag else \
                        self.plain_scalar(k, True, path, positions, tag)
                else:
                    key, kat = self.node(k, path, positions, as_key=True)
                if key in out:
                    if key not in merged_keys:
                        raise InputError(f"duplicate key {key!r}", location=Location("", *kat))
                    merged_keys.discard(key)  # as PyYAML: the mapping's own key wins, in place
                    self._forget(positions, path + (key,))
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
                        self.plain_scalar(v, False, child, positions, tag)
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
                            self.plain_scalar(item, False, child, positions, tag)
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


class Unusual(Exception):
    """What a packed reading (:func:`packed_read`) leaves to :class:`Builder`."""


# (index, data, whether the root is a scalar, positions, first line) of a document
DocumentRead = tuple[int, Any, bool, Mapping[FieldPath, tuple[int, int]], int]


@functools.lru_cache(maxsize=1)
def event_types() -> tuple[Any, ...]:
    from yaml import events as ev

    return (ev.ScalarEvent, ev.MappingStartEvent, ev.MappingEndEvent, ev.SequenceStartEvent,
            ev.SequenceEndEvent, ev.DocumentStartEvent, ev.StreamEndEvent)


def packed_read(text: str, parser_cls: Any, values: dict[str, Any], keys: dict[str, str],
                 plain_value: Callable[[Any], Any], plain_key: Callable[[Any], str]
                 ) -> list[DocumentRead]:
    """The documents of a stream of plain data, built from the events of ``parser_cls`` (libyaml's
    bare parser) with the positions packed (:class:`PackedPositions`), for both libyaml readers'
    bulk reading (dgdgen.yamlio.yaml11, dgdgen.yamlio.yaml12). Raises :class:`Unusual` where the stream
    has anything but plain data: an anchor, an alias, a tag, a key that is not a scalar, a
    duplicate key, nesting over the limit (the reader's builder then reads it again, and says
    so in its words); a syntax error as it comes.

    The builder records a position per field as a path tuple in a dict, and reads every scalar
    by a call; here a plain scalar's value comes from ``values``, a memo of its text
    (``plain_value`` reads one it has not seen, or raises), a plain key's from ``keys``
    (``plain_key``), a quoted one is its text, and a position is two words."""
    (scalar_event, mapping_start, mapping_end, sequence_start, sequence_end, document_start,
     stream_end) = event_types()
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
            raise Unusual
        out: dict[str, Any] = {}
        k = get()
        while type(k) is not mapping_end:
            if type(k) is not scalar_event or k.tag is not None or k.anchor is not None:
                raise Unusual
            if k.implicit[0]:
                try:
                    key = keys[k.value]
                except KeyError:
                    key = plain_key(k)
            else:
                key = k.value
            if key in out:
                raise Unusual
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
                raise Unusual  # an alias, a tag, an anchor
            k = get()
        return out

    def sequence(depth: int) -> list[Any]:
        if depth > max_depth:
            raise Unusual
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
                raise Unusual
            item = get()
            t = type(item)
        return items

    nested[mapping_start] = mapping
    nested[sequence_start] = sequence
    out: list[DocumentRead] = []
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
                    raise Unusual  # an alias too
                if t is mapping_start or t is sequence_start:
                    data = mapping(1) if t is mapping_start else sequence(1)
                    out.append((len(out), data, False, PackedPositions(data, words), line))
                else:
                    value = plain_value(root) if root.implicit[0] else root.value
                    out.append((len(out), value, True, {}, line))
                get()  # DocumentEndEvent
            e = get()
    finally:
        parser.dispose()
        nested.clear()
    return out
