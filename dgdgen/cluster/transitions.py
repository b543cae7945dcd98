"""The states of a rendered tree and the moments a cluster passes through between them.

A tree written by ``dgdgen render -o DIR`` holds one folder per state (``step-00`` … ``step-NN``,
``rollback-NN``, ``rollback``, ``cleanup``); the transitions between them follow from the names
alone: forward step by step, the way back from every step (through the ``rollback-NN`` states
below it, then ``rollback``), and ``cleanup`` after the last step. A folder that holds one state
(``render --into``, ``render --step``) is one state with no transition.

Between two states Argo CD applies the new objects wave by wave
(``argocd.argoproj.io/sync-wave``, lowest first), waits until each wave is Healthy — for a DGD,
until its new replicas run (``argo/dgd-health.lua``) — and prunes what the new state no longer
holds after the last wave (``PruneLast=true``; Argo CD v3.5.1 docs/user-guide/sync-waves.md and sync-options.md). The moments checked
are, for every wave: each object of the wave applied alone while the rest of the wave is still
old, the wave applied before its DGDs have converged (new frontends up, new workers not yet
ready: a frontend is Ready in about a second, a worker only once its engine loaded), and the wave
converged; then the end, after the prune.
"""

from __future__ import annotations

import copy
import itertools
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dgdgen import yamlio
from dgdgen.cluster.model import Key, dgd_of, key_of
from dgdgen.model.dgd import parse

ANN_WAVE = "argocd.argoproj.io/sync-wave"
ANN_HOOK = "argocd.argoproj.io/hook"
STATE = re.compile(r"^(step|rollback)-(\d{2,})$|^(rollback|cleanup)$")


@dataclass(frozen=True)
class State:
    label: str
    objects: dict[Key, dict[str, Any]]
    documents: dict[Key, yamlio.Document]
    hooks: dict[Key, dict[str, Any]] = field(default_factory=dict)  # drain Jobs, PostSync runs
    hook_documents: dict[Key, yamlio.Document] = field(default_factory=dict)  # their file:line


@dataclass(frozen=True)
class Moment:
    """What the cluster runs at one instant of a transition (or of a state at rest)."""

    label: str  # e.g. "step-02 → step-03, wave 1: HTTPRoute/qwen-router applied alone"
    objects: dict[Key, dict[str, Any]]
    frm: State | None
    to: State


def wave_of(doc: Mapping[str, Any]) -> int:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    raw = ann.get(ANN_WAVE) if isinstance(ann, dict) else None
    try:
        return int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0


def is_hook(doc: Mapping[str, Any]) -> bool:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    ann = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(ann, dict) and ANN_HOOK in ann


def read_state(label: str, files: list[tuple[str, str]]) -> State:
    """A state from its files: (path shown in findings, YAML text). Hooks (drain Jobs, PostSync
    AnalysisRuns) serve nothing and are left out."""
    objects: dict[Key, dict[str, Any]] = {}
    documents: dict[Key, yamlio.Document] = {}
    hooks: dict[Key, dict[str, Any]] = {}
    hook_documents: dict[Key, yamlio.Document] = {}
    for path, text in files:
        for doc in yamlio.load_documents(text, path):
            if not isinstance(doc.data, dict) or not doc.data.get("kind"):
                continue
            k = key_of(doc.data)
            if is_hook(doc.data):
                hooks[k] = doc.data
                hook_documents[k] = doc
            else:
                objects[k] = doc.data
                documents[k] = doc
    return State(label, objects, documents, hooks, hook_documents)


def _yaml_files(folder: str) -> list[tuple[str, str]]:
    names = sorted(n for n in os.listdir(folder)
                   if n.endswith((".yaml", ".yml")) and os.path.isfile(os.path.join(folder, n)))
    return [(os.path.join(folder, n), yamlio.read_text(os.path.join(folder, n))) for n in names]


def read_tree(root: str) -> list[State]:
    """The states of a rendered tree on disk, in plan order; a folder without state folders is
    one state named after itself."""
    subdirs = sorted(d for d in os.listdir(root) if STATE.match(d)
                     and os.path.isdir(os.path.join(root, d)))
    if not subdirs:
        return [read_state(os.path.basename(os.path.normpath(root)), _yaml_files(root))]
    return [read_state(d, _yaml_files(os.path.join(root, d))) for d in sorted(subdirs, key=_order)]


def states_of(files: Mapping[str, str], root: str) -> list[State]:
    """The states of a rendered tree in memory (relative path → text, as ``render`` builds it
    before writing), shown under ``root``."""
    by: dict[str, list[tuple[str, str]]] = {}
    single: list[tuple[str, str]] = []
    for rel, text in sorted(files.items()):
        if not rel.endswith((".yaml", ".yml")):
            continue
        head, _, _name = rel.partition("/")
        if _name and STATE.match(head):
            by.setdefault(head, []).append((os.path.join(root, rel), text))
        elif not _name:
            single.append((os.path.join(root, rel), text))
    if not by:
        return [read_state(os.path.basename(os.path.normpath(root)) or "state", single)]
    return [read_state(label, by[label]) for label in sorted(by, key=_order)]


def _order(label: str) -> tuple[int, int]:
    m = STATE.match(label)
    assert m is not None
    if m.group(1) == "step":
        return (0, int(m.group(2)))
    if m.group(1) == "rollback":
        return (1, -int(m.group(2)))
    return (2, 0) if label == "rollback" else (3, 0)


def transitions(states: list[State]) -> list[tuple[State, State]]:
    """Forward step by step; from every step ≥ 1 the way back (each ``rollback-NN`` below it,
    highest first, then ``rollback``); ``cleanup`` from the last step."""
    named = [s for s in states if STATE.match(s.label)]  # a lone state may be named anyhow
    by = {s.label: s for s in named}
    steps = sorted((s for s in named if s.label.startswith("step-")),
                   key=lambda s: _order(s.label))
    backs = sorted((s for s in named if s.label.startswith("rollback-")),
                   key=lambda s: _order(s.label))
    out = list(itertools.pairwise(steps))
    seen: set[tuple[str, str]] = {(a.label, b.label) for a, b in out}
    for start in steps[1:]:
        n = _order(start.label)[1]
        path = [b for b in backs if int(b.label.split("-")[1]) < n]
        if "rollback" in by:
            path.append(by["rollback"])
        frm = start
        for to in path:
            if (frm.label, to.label) not in seen:
                out.append((frm, to))
                seen.add((frm.label, to.label))
            frm = to
    if "cleanup" in by and steps:
        out.append((steps[-1], by["cleanup"]))
    return out


def _unconverged(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """A DGD applied but not converged: frontends at the new count, workers no higher than they
    were (new workers are not ready yet). Other objects take effect as applied."""
    if dgd_of(new) is None:
        return dict(new)
    was = dgd_of(old) if old is not None else None
    before = {n: c.replicas for n, c in was.components.items()} if was is not None else {}
    doc = copy.deepcopy(dict(new))
    dgd = parse(doc)  # a copy of one that parsed (not cached: it lives for one moment)
    for name, comp in dgd.components.items():
        if comp.role.is_worker and comp.replicas > before.get(name, 0):
            dgd.component_doc(name)["replicas"] = before.get(name, 0)
    return dgd.doc


def moments(frm: State | None, to: State) -> Iterator[Moment]:
    if frm is None:
        yield Moment(f"{to.label} at rest", dict(to.objects), None, to)
        return
    name = f"{frm.label} → {to.label}"
    waves = sorted({wave_of(d) for d in to.objects.values()})
    current: dict[Key, dict[str, Any]] = dict(frm.objects)
    for w in waves:
        wave = sorted(k for k, d in to.objects.items() if wave_of(d) == w)
        for k in wave:
            alone = dict(current)
            alone[k] = _unconverged(to.objects[k], frm.objects.get(k))
            yield Moment(f"{name}, wave {w}: {k[0]}/{k[2]} applied alone", alone, frm, to)
        applied = dict(current)
        for k in wave:
            applied[k] = _unconverged(to.objects[k], frm.objects.get(k))
        yield Moment(f"{name}, wave {w} applied, its DGDs not yet converged", applied, frm, to)
        for k in wave:
            current[k] = to.objects[k]
        yield Moment(f"{name}, after wave {w}", dict(current), frm, to)
    yield Moment(f"{name}, after the prune", dict(to.objects), frm, to)
