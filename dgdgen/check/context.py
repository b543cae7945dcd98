"""What the rules see: the checked files (head documents, and base documents when there is a
base), the DGDs in them with their facts, and each DGD's base → head verdict."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

from dgdgen.check.classify import Change, Verdict, classify, pair_dgds
from dgdgen.check.facts import DgdFacts, dgd_facts, line_of
from dgdgen.check.inplace import (
    DEFAULT_RUN_BY,
    GroveStrategy,
    Roll,
    RunBy,
    Target,
    parse_grove_strategy,
    roll_of,
)
from dgdgen.check.modelconfig import ModelConfig
from dgdgen.check.podenv import Objects, configmaps_of, secrets_of
from dgdgen.check.siblings import SiblingObject
from dgdgen.errors import InputError
from dgdgen.model.dgd import ANN_GROVE_STRATEGY, Dgd, Role, is_dgd, parse
from dgdgen.yamlio import Document, FieldPath


class SiblingLoader(Protocol):
    """The objects the cross-file rules read (:class:`SiblingObject`) in the files next to
    ``file`` that are not checked themselves; ``require`` may leave out the files whose text
    cannot hold, for every group, one of its strings, and ``namespaces`` the files whose
    objects are all in another namespace (:func:`dgdgen.check.sources.sibling_loader`)."""

    def __call__(self, file: str, require: Sequence[Sequence[str]] = (),
                 namespaces: Collection[str | None] | None = None) -> list[SiblingObject]: ...


@dataclass(frozen=True)
class FileInput:
    """One checked file: its documents now (head) and at the base revision (None: no base —
    a new file, or a check without Git)."""

    file: str
    head: list[Document]
    base: list[Document] | None = None


@dataclass
class DgdPair:
    head: DgdFacts
    base: DgdFacts | None
    verdict: Verdict | None
    document: Document


@dataclass
class Context:
    release: str
    files: list[FileInput]
    dgds: list[DgdPair] = field(default_factory=list)
    # Loads the documents of files next to a checked file (for references to objects that are
    # rendered but not among the checked files, e.g. a route's backend Service).
    sibling_loader: SiblingLoader | None = None
    run_by: RunBy = DEFAULT_RUN_BY
    grove_strategy: GroveStrategy | None = None  # --grove-update-strategy
    _documents: dict[tuple[str, ...], list[Document]] = field(default_factory=dict, init=False,
                                                              repr=False)

    @property
    def target(self) -> Target:
        return Target(self.release, self.run_by, self.grove_strategy)

    def roll(self, pair: DgdPair) -> Roll:
        """What the operator does with an in-place edit of this DGD's workers."""
        return roll_of_dgd(self.target, pair.head)

    def documents(self, *kinds: str) -> Iterator[Document]:
        # Several rules ask for the same kinds: the documents are sorted out once per kinds.
        found = self._documents.get(kinds)
        if found is None:
            found = self._documents[kinds] = [
                d for f in self.files for d in f.head
                if isinstance(d.data, dict) and (not kinds or d.data.get("kind") in kinds)]
        return iter(found)

    def siblings(self, file: str, require: Sequence[Sequence[str]] = (),
                 namespaces: Collection[str | None] | None = None) -> list[SiblingObject]:
        """The Services, InferencePools and DGDs (:class:`SiblingObject`) of the files next to
        ``file`` that are not checked themselves (the loader reads each directory once).
        ``require`` is a textual pre-filter that never drops an object the caller looks for:
        a file not known from an earlier run is parsed only when its text contains, for every
        group, one of its strings (ignoring case), e.g. ``[["DynamoGraphDeployment"]]``.
        ``namespaces`` (None standing for "no namespace") says where the caller looks: a file
        whose head proves its only document is in another namespace is not parsed. Objects of
        other files, or in other namespaces, may come back too."""
        if self.sibling_loader is None:
            return []
        return self.sibling_loader(file, require, namespaces)

    def location_of_change(self, pair: DgdPair, change: Change) -> tuple[int, int]:
        head = pair.head
        path: FieldPath = change.path
        dgd: Dgd = head.dgd
        if change.side == "base" or not path:
            comp = head.components.get(change.component)
            if comp is not None:
                path = (comp.container_path + ("args",)) if comp.container_path else comp.path
            else:
                path = ("spec",)
            line, col = line_of(dgd, path, None)
        else:
            line, col = line_of(dgd, path, change.offset)
        return line or 1, col or 1


def roll_of_dgd(target: Target, dgd: DgdFacts) -> Roll:
    workers = [(c.name, c.multinode, dict(c.annotations),
                s.value if (s := c.flags.get("--endpoint")) is not None else None)
               for c in dgd.workers()]
    roles = {c.role for c in dgd.workers()}
    # The operator's "disaggregated": both prefill and decode components (platform chart README,
    # v1.6.0 "Coherent updates for disaggregated Grove deployments").
    return roll_of(target, workers,
                   disaggregated=Role.PREFILL in roles and Role.DECODE in roles,
                   annotated=grove_strategy_annotation(dgd.dgd, target.release),
                   single_replicas=all(c.replicas <= 1 for c in dgd.workers()))


def grove_strategy_annotation(dgd: Dgd, release: str) -> GroveStrategy | None:
    """The DGD's ``nvidia.com/grove-update-strategy``: the operator's admission rejects any
    other value, so a bad one is bad input here (exit 2 at its line)."""
    meta = dgd.doc.get("metadata")
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(ann, dict) or ANN_GROVE_STRATEGY not in ann:
        return None
    path = ("metadata", "annotations", ANN_GROVE_STRATEGY)
    try:
        return parse_grove_strategy(str(ann[ANN_GROVE_STRATEGY]), release)
    except InputError as exc:
        raise InputError(exc.message, location=dgd.location(path), field=path,
                         hint=exc.hint) from None


def build(files: list[FileInput], release: str,
          sibling_loader: SiblingLoader | None = None,
          run_by: RunBy = DEFAULT_RUN_BY,
          model_config: ModelConfig | None = None,
          grove_strategy: GroveStrategy | None = None) -> Context:
    ctx = Context(release=release, files=files, sibling_loader=sibling_loader, run_by=run_by,
                  grove_strategy=grove_strategy)
    # ConfigMaps and Secrets of every checked file (the same file or folder): a DGD's env
    # references and mounted files resolve against them, the file's own objects first. Each
    # file's objects are collected once, and the folder's from them once per side: rescanning
    # every document for every file made a folder check quadratic in its files.
    own_heads = [_own(f.head) for f in files]
    own_bases = [_own(f.base) if f.base is not None else None for f in files]
    every_head = _folder(own_heads)
    every_base = _folder(o for o in own_bases if o is not None)
    # A file unchanged since the base has the same documents on both sides (sources.collect);
    # their DGDs are read once, and their facts built once when they resolve against the same
    # ConfigMaps and Secrets on both sides.
    same_objects = every_head == every_base
    for f, own_head, own_base in zip(files, own_heads, own_bases):
        head_objs = _first(own_head, every_head)
        heads = [parse(d.data, source=d) for d in f.head if is_dgd(d.data)]
        bases: list[Dgd] = []
        base_objs = Objects()
        shared = False
        if f.base is not None and own_base is not None:
            base_objs = _first(own_base, every_base)
            shared = f.base is f.head
            bases = heads if shared else [parse(d.data, source=d) for d in f.base
                                          if is_dgd(d.data)]
        for b, h in pair_dgds(bases, heads):
            hf = dgd_facts(h, objects=head_objs)
            bf = (hf if b is h and shared and same_objects else
                  dgd_facts(b, objects=base_objs) if b is not None else None)
            v = classify(bf, hf, release, model_config) if bf is not None else None
            assert h.source is not None
            grove_strategy_annotation(h, release)  # a bad value: exit 2, whatever changed
            ctx.dgds.append(DgdPair(hf, bf, v, h.source))
    return ctx


class _Found(NamedTuple):
    """ConfigMaps (name → data) and Secrets (name → key names) found in checked files."""

    configmaps: dict[str, dict[str, str]]
    secrets: dict[str, frozenset[str]]


def _own(documents: list[Document]) -> _Found:
    """The ConfigMaps and Secrets of one file (a later one of the same name wins)."""
    data = [d.data for d in documents]
    return _Found(configmaps_of(data), secrets_of(data))


def _folder(owns: Iterable[_Found]) -> _Found:
    """The ConfigMaps and Secrets of every file, in file order (a later one of the same name
    wins, and a name keeps the place it was first seen in, as one scan of every document)."""
    every = _Found({}, {})
    for own in owns:
        every.configmaps.update(own.configmaps)
        every.secrets.update(own.secrets)
    return every


def _first(own: _Found, every: _Found) -> Objects:
    """``every`` with the file's ``own`` objects taking precedence."""
    configmaps = _over(own.configmaps, every.configmaps)
    return Objects(configmaps, _over(own.secrets, every.secrets))


V = TypeVar("V")


def _over(own: dict[str, V], every: dict[str, V]) -> Mapping[str, V]:
    # Usually the folder's entry of each name is the file's own already (no later file has one
    # of that name), so the folder's map serves as it is; otherwise the file's own are looked up
    # first, without copying the folder's map for every file.
    if all(every.get(name) is value for name, value in own.items()):
        return every
    return ChainMap(own, every)


def annotations_of(doc: Any) -> dict[str, str]:
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(ann, dict):
        return {}
    return {str(k): str(v) for k, v in ann.items()}


def object_id(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "<document>"
    meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    ns = meta.get("namespace")
    name = meta.get("name", "<unnamed>")
    return f"{doc.get('kind', '<kind>')}/{ns + '/' if ns else ''}{name}"

