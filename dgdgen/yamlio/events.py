"""Plain data built from a libyaml parser's events (:class:`Builder`), for both libyaml readers:
dgdgen.yamlio.yaml12 (YAML 1.2 as ruamel.yaml reads it, or give up) and dgdgen.yamlio.yaml11 (YAML 1.1 as
PyYAML's SafeLoader reads it, for the checker), with what the two share: the tags they name,
:class:`GiveUp`, a loader without path resolvers and the errors a builder raises.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.yamlio.doc import FieldPath, Positions
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
            return self.key_of(None, self._compose(e, len(path))), at
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
                        merged = self.node(get(), path, positions)[0]
                        for m in merged if isinstance(merged, list) else [merged]:
                            if isinstance(m, dict):
                                for mk, mv in m.items():
                                    out.setdefault(mk, mv)
                        k = get()
                        continue
                    key = k.value if tag == text_tag else \
                        self.plain_scalar(k, True, path, positions, tag)
                else:
                    key, kat = self.node(k, path, positions, as_key=True)
                if key in out:
                    raise InputError(f"duplicate key {key!r}", location=Location("", *kat))
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
