"""Base → head classification of a DGD change: which components change what, whether the change
demands namespace isolation, and how risky it is.

:func:`verdict` is the public entry point; the generator calls it for ``isolation: auto``.
It is pure: DGDs in, a :class:`Verdict` out, no I/O.

Categories (docs/checker.md, "What is compared"):

* ``mdc-checksum`` — an input of the ModelDeploymentCard checksum changes: new workers publish a
  different card, which the frontend skips, rejects or tears the model down over, depending on
  the release (docs/checker.md, "What applying in place does").
* ``kv-transfer`` — in a disaggregated DGD, the KV connector / transfer backend or the KV layout
  changes: old decode workers cannot take KV blocks from new prefill workers.
* ``runtime-version`` — a worker or frontend image changes: the frontend↔worker protocol may
  change.
* ``safe`` — anything else (replicas, resources, capacity-only flags, unrelated env).

Why one module: the per-category comparisons are one table-driven pass over the components'
facts, and the verdict, its risk grade and the recommendation are read off that one result;
the facts it compares come from :mod:`dgdgen.check.facts`, the flag tables from
:mod:`dgdgen.check.flags`.
"""

from __future__ import annotations

import enum
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dgdgen.check.cmdline import Setting, env_flag
from dgdgen.check.facts import ComponentFacts, DgdFacts, dgd_facts
from dgdgen.check.flags import (
    PARSER_DEFAULTS,
    TRTLLM_CLI_ENGINE_KEYS,
    UNKNOWN_ENGINE_FILE_MDC,
    Category,
    Input,
    inputs_for,
    normalize_release,
)
from dgdgen.check.inplace import FRONTEND, WORKERS
from dgdgen.check.modelconfig import ModelConfig, settle, settled_by, unsettled_reason
from dgdgen.model.dgd import Backend, Dgd, Role
from dgdgen.model.generation import ANN_BASE_NAME, ANN_REVISION
from dgdgen.yamlio import FieldPath

__all__ = [
    "Category",
    "Change",
    "Recommendation",
    "RiskGrade",
    "Verdict",
    "classify",
    "pair_dgds",
    "recommend",
    "verdict",
]


class RiskGrade(str, enum.Enum):
    """How far the head generation is from the base, in terms of the model served."""

    CONFIG_ONLY = "config-only"  # same model, same weights: configuration / runtime only
    SAME_MODEL_NEW_REVISION = "same-model-new-revision"  # same model, new weights or revision
    SAME_FAMILY = "same-family"  # another model of the same family
    NEW_FAMILY = "new-family"  # a model of another family

    @property
    def rank(self) -> int:
        return list(RiskGrade).index(self)


@dataclass(frozen=True)
class Change:
    """One difference of one component, and what it breaks when applied in place."""

    component: str
    category: Category
    field: str  # canonical flag, `engine:<key>`, `env:<NAME>`, `image`, `replicas`, ...
    old: str | None
    new: str | None
    reason: str
    path: FieldPath = ()  # where the new value is written in the head DGD (or base, if removed)
    offset: int | None = None  # inside a shell-string element
    side: str = "head"  # which document `path` refers to
    cite: str = ""
    # Set when the checker cannot tell whether the input really changes — a value set on one
    # side only, whose default the engine derives from the model's files (config.json) — and
    # so assumes it does (fail safe: isolation required, assumed). Says what would settle it.
    assumed: str = ""

    @property
    def demands_isolation(self) -> bool:
        """Known to demand isolation (an assumed change is counted apart)."""
        return self.category.demands_isolation and not self.assumed

    @property
    def key(self) -> str:
        """What the change is about, stable across line moves: findings' fingerprint key, and
        how a suppressed DGD205 finding names the assumption it settles."""
        return f"{self.field}\x1f{self.old}\x1f{self.new}"


def assumed_categories(changes: Sequence[Change], known: Sequence[str]) -> tuple[str, ...]:
    """The categories of the assumed ``changes`` that ``known`` does not already hold."""
    return tuple(sorted({c.category.value for c in changes
                         if c.assumed and c.category.value not in known}))


@dataclass(frozen=True)
class Verdict:
    isolation_required: bool
    changes: tuple[Change, ...]
    risk: RiskGrade
    reasons: tuple[str, ...]
    dynamo_version: str
    renamed_from: str | None = None
    # Set when head is a new generation deployed beside base as its own DGD (dgdgen's
    # separate-dgd isolation): nothing changes in place, the change is isolated.
    beside: str | None = None

    @property
    def in_place(self) -> bool:
        return self.beside is None

    @property
    def categories(self) -> tuple[str, ...]:
        """The categories known to demand isolation, sorted (empty: safe, unless
        :attr:`assumed` names some)."""
        return tuple(sorted({c.category.value for c in self.changes if c.demands_isolation}))

    @property
    def assumed(self) -> tuple[str, ...]:
        """The categories assumed to change because the checker cannot decide them (and no
        other change already establishes them), sorted."""
        return assumed_categories(self.changes, self.categories)

    @property
    def isolation_verdict(self) -> bool:
        """``isolation_required`` as reports give it: fail safe, a change the checker cannot
        decide counts as one that demands isolation (assumed)."""
        return self.isolation_required or bool(self.assumed)

    def to_dict(self) -> dict[str, object]:
        return {
            "isolation_required": self.isolation_verdict,
            "categories": list(self.categories),
            "assumed": list(self.assumed),
            "risk": self.risk.value,
            "dynamo_version": self.dynamo_version,
            "isolated_beside": self.beside,
            "reasons": list(self.reasons),
            "changes": [
                {"component": c.component, "category": c.category.value, "field": c.field,
                 "old": c.old, "new": c.new, "reason": c.reason,
                 "assumed": bool(c.assumed)}
                for c in self.changes
            ],
        }


@dataclass(frozen=True)
class Recommendation:
    """What ``isolation: auto`` / default steps become for a verdict."""

    isolation: str  # "in-place" or "isolated" (the spec's configured isolating mode)
    steps: tuple[int, ...]  # traffic weights of the candidate, in %, ending at 100
    hold: str  # bake time per step
    reason: str


# --------------------------------------------------------------------------- public API


def verdict(
    base: Dgd,
    head: Dgd,
    *,
    dynamo_version: str | None = None,
    base_configmaps: Mapping[str, Mapping[str, str]] | None = None,
    head_configmaps: Mapping[str, Mapping[str, str]] | None = None,
    model_config: ModelConfig | None = None,
) -> Verdict:
    """Classify the change from ``base`` to ``head`` (the same DGD, two revisions).

    ``dynamo_version`` picks the release the flag tables describe (default: the newest the facts
    cover); an unknown one raises :class:`~dgdgen.errors.InputError`. ConfigMaps (name → data)
    let TRT-LLM ``--extra-engine-args`` files mounted from them be compared key by key.
    ``model_config`` (the served model's files, :func:`dgdgen.check.modelconfig.load`) settles
    the defaults engines derive from them.
    """
    release = normalize_release(dynamo_version)
    return classify(dgd_facts(base, base_configmaps), dgd_facts(head, head_configmaps), release,
                    model_config)


def recommend(v: Verdict) -> Recommendation:
    """The isolation mode and step schedule the risk grade calls for."""
    if v.risk is RiskGrade.NEW_FAMILY:
        return Recommendation("isolated", (2, 5, 10, 25, 50, 100), "30m",
                              "a new model family: smallest first steps, long holds")
    if v.risk is RiskGrade.SAME_FAMILY:
        return Recommendation("isolated", (5, 10, 25, 50, 100), "15m",
                              "another model of the same family")
    if v.risk is RiskGrade.SAME_MODEL_NEW_REVISION:
        return Recommendation("isolated", (10, 25, 50, 100), "10m",
                              "the same model with new weights or a new revision")
    if v.isolation_required:
        return Recommendation("isolated", (10, 50, 100), "5m",
                              "configuration only, but it demands isolation: "
                              + ", ".join(v.categories))
    if v.assumed:
        # Not known to demand isolation, assumed to (fail safe): a gated rollout is never wrong.
        return Recommendation("isolated", (10, 50, 100), "5m",
                              "configuration only, but isolation is assumed where the checker "
                              "cannot tell whether it changes: " + ", ".join(v.assumed))
    return Recommendation("in-place", (100,), "0s",
                          "configuration only and safe to roll in place")


def pair_dgds(base: Sequence[Dgd], head: Sequence[Dgd]) -> list[tuple[Dgd | None, Dgd]]:
    """Match head DGDs with their base by (namespace, name); if exactly one DGD on each side is
    left unmatched, they are the same DGD renamed (a rename must not hide a change)."""
    by_key = {(d.namespace, d.name): d for d in base}
    pairs: list[tuple[Dgd | None, Dgd]] = []
    used: set[tuple[str | None, str]] = set()
    unmatched: list[int] = []
    for h in head:
        key = (h.namespace, h.name)
        b = by_key.get(key)
        if b is not None and key not in used:
            used.add(key)
            pairs.append((b, h))
        else:
            unmatched.append(len(pairs))
            pairs.append((None, h))
    left = [d for k, d in by_key.items() if k not in used]
    if len(unmatched) == 1 and len(left) == 1:
        pairs[unmatched[0]] = (left[0], pairs[unmatched[0]][1])
    return pairs


# --------------------------------------------------------------------------- classification


def classify(base: DgdFacts, head: DgdFacts, release: str,
             model_config: ModelConfig | None = None) -> Verdict:
    disagg = base.disaggregated or head.disaggregated
    files = _model_files(base, head, model_config)
    changes: list[Change] = []
    for b, h in _pair_components(base, head):
        if b is None and h is not None:
            changes.append(Change(h.name, Category.SAFE, "component", None, h.role.value,
                                  f"component {h.name} added", h.path))
        elif h is None and b is not None:
            changes.append(Change(b.name, Category.SAFE, "component", b.role.value, None,
                                  f"component {b.name} removed", b.path, side="base"))
        elif b is not None and h is not None:
            changes.extend(_component_changes(b, h, release, disagg, files))
    changes.extend(_models_removed(base, head))
    changes.sort(key=lambda c: (c.component, _CATEGORY_ORDER[c.category], c.field))
    isolation = any(c.demands_isolation for c in changes)
    risk, risk_reasons = _risk(base, head)
    reasons = [f"{c.component}: {c.reason}" for c in changes
               if c.demands_isolation or c.assumed]
    reasons += risk_reasons
    if not isolation and any(c.assumed for c in changes):
        reasons.append("no change is known to demand isolation, but some cannot be decided "
                       "from the manifests: isolation required (assumed)")
    elif not isolation:
        reasons.append("no change demands isolation: safe to roll in place")
    renamed = base.name if base.name != head.name else None
    beside = renamed if renamed is not None and _generation_beside(base, head) else None
    if beside is not None:
        renamed = None
    return Verdict(isolation, tuple(changes), risk, tuple(reasons), release, renamed, beside)


RUNTIME_FIELDS = frozenset({"image", "runtimeVersionOverride"})


def runtime_replaced(changes: Sequence[Change], head: DgdFacts) -> frozenset[str]:
    """Whose runtime the runtime-version ``changes`` replace: :data:`FRONTEND`, :data:`WORKERS`
    or both (empty when none)."""
    out: set[str] = set()
    for c in changes:
        if c.category is not Category.RUNTIME or c.field not in RUNTIME_FIELDS:
            continue
        comp = head.components.get(c.component)
        out.add(FRONTEND if comp is not None and comp.role is Role.FRONTEND else WORKERS)
    return frozenset(out)


MODEL_REMOVED_FIELD = "served-model"


def _models_removed(base: DgdFacts, head: DgdFacts) -> list[Change]:
    """A served model that no head worker serves any more: a removed worker component whose name
    no remaining worker serves. Its clients get 404 when the last old worker goes, on every
    release (a renamed --served-model-name is reported as its own change)."""
    head_names = {w.served_model_name for w in head.workers()}
    out = []
    for b in base.workers():
        if b.name in head.components or b.served_model_name is None:
            continue
        if b.served_model_name in head_names:
            continue
        if any(h.name not in base.components and h.role is b.role for h in head.workers()):
            continue  # paired by role with a renamed component: its own changes say it
        out.append(Change(b.name, Category.MDC, MODEL_REMOVED_FIELD, b.served_model_name, None,
                          f"component {b.name} removed: no worker serves model "
                          f"{b.served_model_name} any more", b.path, side="base"))
    return out


def _generation_beside(base: DgdFacts, head: DgdFacts) -> bool:
    """head is another generation of the same DGD, rendered as its own DGD (its own Dynamo
    namespace) to run beside base: same base name, a different revision."""
    head_base = head.annotations.get(ANN_BASE_NAME)
    if head_base is None:
        return False
    base_base = base.annotations.get(ANN_BASE_NAME, base.name)
    return head_base == base_base and (
        head.annotations.get(ANN_REVISION) != base.annotations.get(ANN_REVISION)
    )


_CATEGORY_ORDER = {Category.MDC: 0, Category.KV: 1, Category.RUNTIME: 2, Category.SAFE: 3}


def _pair_components(base: DgdFacts, head: DgdFacts
                     ) -> list[tuple[ComponentFacts | None, ComponentFacts | None]]:
    pairs: list[tuple[ComponentFacts | None, ComponentFacts | None]] = []
    b_left = {n: c for n, c in base.components.items() if n not in head.components}
    h_left = {n: c for n, c in head.components.items() if n not in base.components}
    for name, h in head.components.items():
        if name in base.components:
            pairs.append((base.components[name], h))
    # Renamed components (e.g. across the v1alpha1 → v1beta1 conversion): pair by role when the
    # role is unambiguous on both sides.
    for role in Role:
        bs = [c for c in b_left.values() if c.role is role]
        hs = [c for c in h_left.values() if c.role is role]
        if len(bs) == 1 and len(hs) == 1:
            pairs.append((bs[0], hs[0]))
            del b_left[bs[0].name], h_left[hs[0].name]
    pairs += [(None, h) for h in h_left.values()]
    pairs += [(b, None) for b in b_left.values()]
    return pairs


def _norm(value: str | None) -> str | None:
    """Compare values by meaning: JSON by structure, numbers by value, booleans by truth."""
    if value is None:
        return None
    text = value.strip()
    if text[:1] in "{[":
        try:
            return json.dumps(json.loads(text), sort_keys=True)
        except ValueError:
            pass
    low = text.lower()
    if low in ("true", "false"):
        return low
    try:
        num = float(text)
        return repr(int(num)) if num.is_integer() else repr(num)
    except ValueError:
        return text


# Without --served-model-name the worker registers its model path as the served name (the
# card's display_name), so setting the flag to exactly that path changes nothing. vLLM and SGLang
# set the name in their argument parsing; TRT-LLM leaves it None (ai-dynamo 1.6.1
# dynamo/trtllm/backend_args.py: `if not self.served_model_name: self.served_model_name = None`)
# and passes it with `config.model` to register_model (dynamo/trtllm/workers/llm_worker.py),
# whose card builder names the model after its source path when no name is given
# (ai-dynamo/dynamo@2a6da14c8 lib/llm/src/local_model.rs LocalModelBuilder::build: "The served
# model name defaults to the full model path. This matches what vllm and sglang do.").
_MDCSUM = "ai-dynamo/dynamo@2a6da14c8 lib/llm/src/model_card.rs mdcsum()"

SERVED_NAME_DEFAULT_CITE: dict[Backend, str] = {
    Backend.VLLM: "ai-dynamo 1.6.1 dynamo/vllm/args.py (served_model_name = [model])",
    Backend.SGLANG: "ai-dynamo 1.6.1 dynamo/sglang/args.py (served_model_name = model_path)",
    Backend.TRTLLM: "ai-dynamo 1.6.1 dynamo/trtllm/backend_args.py (served_model_name None), "
                    "lib/llm/src/local_model.rs (the name defaults to the model path)",
}


def _served_name_is_default(b: ComponentFacts, h: ComponentFacts, bs: Setting | None,
                            hs: Setting | None, backend: Backend) -> bool:
    """One side sets a single --served-model-name equal to the model path, the other leaves it
    unset, and the model path is the same on both sides."""
    if backend not in SERVED_NAME_DEFAULT_CITE or (bs is None) == (hs is None):
        return False
    s = hs or bs
    assert s is not None
    names = s.value.split()
    return (len(names) == 1 and b.model is not None and b.model == h.model
            and names[0] == b.model)


def _component_changes(b: ComponentFacts, h: ComponentFacts, release: str, disagg: bool,
                       files: ModelFiles) -> list[Change]:
    out: list[Change] = []
    serving = h.is_worker or h.role is Role.FRONTEND or b.is_worker or b.role is Role.FRONTEND
    name = h.name

    if b.image != h.image:
        cat = Category.RUNTIME if serving else Category.SAFE
        out.append(Change(name, cat, "image", b.image, h.image,
                          f"image {b.image} → {h.image}"
                          + (": the frontend↔worker protocol may change" if serving else ""),
                          _image_path(h), cite="docs/checker.md, What is compared"))
    if b.runtime_version_override != h.runtime_version_override:
        cat = Category.RUNTIME if serving else Category.SAFE
        out.append(Change(name, cat, "runtimeVersionOverride", b.runtime_version_override,
                          h.runtime_version_override,
                          "declared runtime version changes", h.path + ("runtimeVersionOverride",),
                          cite="ai-dynamo/dynamo deploy/operator/api (DGD spec)"))
    if b.replicas != h.replicas:
        out.append(Change(name, Category.SAFE, "replicas", str(b.replicas), str(h.replicas),
                          "replica count changes", h.path + ("replicas",)))
    if b.node_count != h.node_count:
        out.append(Change(name, Category.SAFE, "multinode.nodeCount", str(b.node_count),
                          str(h.node_count), "node count changes", h.path + ("multinode",)))

    worker = b.is_worker or h.is_worker
    if b.role is not h.role:
        cats = [Category.MDC] + ([Category.KV] if disagg and worker else [])
        for cat in cats:
            out.append(Change(name, cat, "role", b.role.value, h.role.value,
                              f"role {b.role.value} → {h.role.value} changes worker_type",
                              h.path, cite=_MDCSUM))
    backend = h.backend if h.backend is not Backend.UNKNOWN else b.backend
    if (worker and b.backend is not h.backend
            and Backend.UNKNOWN not in (b.backend, h.backend)):
        for cat in [Category.MDC] + ([Category.KV] if disagg else []):
            out.append(Change(name, cat, "backend", b.backend.value, h.backend.value,
                              f"backend {b.backend.value} → {h.backend.value}", h.path))

    # Flags (effective: CLI over env). For TRT-LLM the flags that land in the engine are compared
    # as engine keys below, so the YAML / override precedence is respected (ai-dynamo 1.6.1
    # dynamo/trtllm/workers/llm_worker.py `init_llm_worker`).
    skip = set()
    if backend is Backend.TRTLLM:
        skip = set(TRTLLM_CLI_ENGINE_KEYS) | {"--override-engine-args"}
    keys = sorted((set(b.flags) | set(h.flags)) - skip)
    for key in keys:
        if key.startswith("--trtllm."):
            continue
        bs, hs = b.flags.get(key), h.flags.get(key)
        if key == "--extra-engine-args" and backend is Backend.TRTLLM:
            out.extend(_engine_file_change(name, b, h, bs, hs, release, disagg))
            continue
        if _norm(bs.value if bs else None) == _norm(hs.value if hs else None):
            continue
        if key == "--served-model-name" and _served_name_is_default(b, h, bs, hs, backend):
            s = hs or bs
            assert s is not None
            out.append(Change(name, Category.SAFE, key, bs.value if bs else None,
                              hs.value if hs else None,
                              f"--served-model-name {_describe(bs.value if bs else None)} → "
                              f"{_describe(hs.value if hs else None)} equals the name the "
                              f"{backend.value} worker derives from the model path (card "
                              "unchanged)", s.path, s.offset, "head" if hs else "base",
                              SERVED_NAME_DEFAULT_CITE[backend]))
            continue
        out.extend(_classified(name, key, bs, hs, backend, release, disagg, worker,
                               _either(b, h), files))

    # Environment variables that are not flags (flag-like DYN_* ones were compared above).
    for var in sorted(set(b.env) | set(h.env)):
        if env_flag(var, backend) is not None:
            continue
        bs, hs = b.env.get(var), h.env.get(var)
        if (bs.value if bs else None) != (hs.value if hs else None):
            s = hs or bs
            assert s is not None
            out.append(Change(name, Category.SAFE, f"env:{var}", bs.value if bs else None,
                              hs.value if hs else None, f"environment {var} changes", s.path,
                              s.offset, "head" if hs else "base"))

    if backend is Backend.TRTLLM:
        for key in sorted(set(b.engine) | set(h.engine)):
            bs, hs = b.engine.get(key), h.engine.get(key)
            if _norm(bs.value if bs else None) == _norm(hs.value if hs else None):
                continue
            out.extend(_classified(name, key, bs, hs, backend, release, disagg, worker,
                                   _either(b, h), files))
    return out


def _either(b: ComponentFacts, h: ComponentFacts) -> frozenset[str]:
    """Flags set (to anything but false) on the base or the head side of a component, each as
    ``flag`` and as ``flag=value`` (for flags.Input.requires)."""
    out = set()
    for c in (b, h):
        for k, s in c.flags.items():
            if s.value != "false":
                out.add(k)
                out.add(f"{k}={_norm(s.value)}")
    return frozenset(out)


def _image_path(c: ComponentFacts) -> FieldPath:
    return (c.container_path + ("image",)) if c.container_path is not None else c.path


def _describe(value: str | None) -> str:
    return "(unset)" if value is None else value


def _classified(component: str, key: str, bs: Setting | None, hs: Setting | None,
                backend: Backend, release: str, disagg: bool, worker: bool,
                present: frozenset[str] = frozenset(),
                files: ModelFiles | None = None) -> list[Change]:
    s = hs or bs
    assert s is not None
    old, new = (bs.value if bs else None), (hs.value if hs else None)
    side = "head" if hs else "base"
    label = key.removeprefix("engine:")
    what = f"{label} {_describe(old)} → {_describe(new)}"
    entries: tuple[Input, ...] = inputs_for(key, backend, release, disagg) if worker else ()
    unmet = [e for e in entries if e.requires is not None and e.requires not in present]
    entries = tuple(e for e in entries if e.requires is None or e.requires in present)
    valued = next((e for e in unmet if "=" in (e.requires or "")), None)
    if not entries and valued is not None and valued.requires is not None:
        # A flag that reaches the card only with one value of another (the KV router flags
        # with a worker --router-mode kv, flags.KV_ROUTER_MODE).
        needed = valued.requires.replace("=", " ", 1)
        return [Change(component, Category.SAFE, key, old, new,
                       f"{what} (a card input only with a worker {needed}, set on neither side)",
                       s.path, s.offset, side, valued.cite)]
    if not entries:
        return [Change(component, Category.SAFE, key, old, new, f"{what} (not a card or KV input)",
                       s.path, s.offset, side)]
    # A flag set on one side only to the value its engine uses when it is unset changes nothing
    # (flags.Input.defaults: the parsers of the pinned engine releases).
    if (bs is None) != (hs is None):
        defaults = {e.default_of(key) for e in entries}
        if len(defaults) == 1 and _norm(s.value) == _norm(next(iter(defaults))):
            return [Change(component, Category.SAFE, key, old, new,
                           f"{what} is the {backend.value} default (unset means the same)",
                           s.path, s.offset, side, PARSER_DEFAULTS)]
    out = []
    for e in entries:
        if e.derived_from is not None and (bs is None or hs is None):
            # One side leaves it to the engine, which derives it from the model's files: the
            # effective value may be the same (flags.Input.derived_from). Settled by those
            # files where given and decisive, else assumed to change (fail safe).
            out.append(_derived_change(component, e, key, old, new, what, s, side, backend,
                                       files or ModelFiles(None, "")))
        else:
            out.append(Change(component, e.category, key, old, new, f"{what} changes {e.what}",
                              s.path, s.offset, side, e.cite))
    return out


@dataclass(frozen=True)
class ModelFiles:
    """The model's files for one DGD pair: the config, or why it does not apply."""

    config: ModelConfig | None
    why_not: str  # set when a config was given but does not apply to this DGD


def _model_files(base: DgdFacts, head: DgdFacts, cfg: ModelConfig | None) -> ModelFiles:
    """``--model-config`` names one model's files: it settles the workers of a DGD only when
    they all serve that one model on both revisions."""
    if cfg is None:
        return ModelFiles(None, "")
    models = sorted({c.model or "(no model flag)" for d in (base, head) for c in d.workers()})
    if len(models) > 1:
        return ModelFiles(None, f"--model-config {cfg.source} gives one model's files, but the "
                                f"workers serve {', '.join(models)}")
    return ModelFiles(cfg, "")


# DGD205 names these ways to settle an assumed change (docs/checker.md, "Fail safe").
SUPPRESS_HINT = ("or suppress it with the reason (`dgdgen.dev/ignore-DGD205: \"<why it is the "
                 "same>\"` on the DGD)")


def _derived_change(component: str, e: Input, key: str, old: str | None, new: str | None,
                    what: str, s: Setting, side: str, backend: Backend,
                    files: ModelFiles) -> Change:
    field = settled_by(key, backend)
    cfg = files.config
    if cfg is not None and field is not None:
        st = settle(key, backend, s.value, cfg)
        if st.same is True:
            return Change(component, Category.SAFE, key, old, new,
                          f"{what} equals what {backend.value} derives when it is unset "
                          f"({st.derived}, the {st.text}): {e.what} unchanged", s.path,
                          s.offset, side, st.cite)
        if st.same is False:
            return Change(component, e.category, key, old, new,
                          f"{what} changes {e.what}: unset, {backend.value} derives "
                          f"{st.derived} (the {st.text})", s.path, s.offset, side, st.cite)
        why = st.text
        settle_by = f"set it on both revisions, {SUPPRESS_HINT}"
    elif field is None:
        why = unsettled_reason(key, backend)
        settle_by = f"set it on both revisions, {SUPPRESS_HINT}"
    else:
        why = files.why_not or "the model's files were not given"
        settle_by = (f"settle it with `--model-config DIR` (the model's config.json: {field}), "
                     f"{SUPPRESS_HINT}")
    return Change(component, e.category, key, old, new,
                  f"{what}: assumed to change {e.what}: unset, the engine derives it from "
                  f"{e.derived_from}, and {why}", s.path, s.offset, side, e.cite,
                  assumed=settle_by)


def _engine_file_change(component: str, b: ComponentFacts, h: ComponentFacts,
                        bs: Setting | None, hs: Setting | None, release: str, disagg: bool
                        ) -> list[Change]:
    old, new = (bs.value if bs else None), (hs.value if hs else None)
    if old == new:
        return []  # same path: contents compared key by key when readable
    s = hs or bs
    assert s is not None
    side = "head" if hs else "base"
    if b.engine_file_resolved and h.engine_file_resolved:
        return [Change(component, Category.SAFE, "--extra-engine-args", old, new,
                       "engine arguments file moves (contents compared key by key)", s.path,
                       s.offset, side)]
    what = f"--extra-engine-args {_describe(old)} → {_describe(new)}"
    entries: list[Input] = [UNKNOWN_ENGINE_FILE_MDC]
    entries += [e for e in inputs_for("--extra-engine-args", Backend.TRTLLM, release, disagg)
                if e.category is Category.KV]
    return [Change(component, e.category, "--extra-engine-args", old, new,
                   f"{what} changes the {e.what}", s.path, s.offset, side, e.cite)
            for e in entries]


# --------------------------------------------------------------------------- risk grade

_SIZE = re.compile(r"^\d+(\.\d+)?[bmkt]$|^\d+x\d+(\.\d+)?b$|^a\d+(\.\d+)?b$|^e\d+b$")
_VARIANT = frozenset({
    "instruct", "chat", "base", "it", "hf", "fp8", "fp4", "nvfp4", "int4", "int8", "awq", "gptq",
    "w4a16", "w8a8", "w4a8", "bf16", "fp16", "gguf", "dynamic", "distill", "preview", "thinking",
    "reasoning", "latest", "v1", "v2", "v3", "coder", "math", "vl", "moe", "mlx", "quantized",
})
_QUANT = frozenset({"fp8", "fp4", "nvfp4", "int4", "int8", "awq", "gptq", "w4a16", "w8a8", "w4a8",
                    "bf16", "fp16", "gguf", "dynamic", "quantized", "hf"})


def model_name(model: str) -> str:
    """``Qwen/Qwen3-0.6B`` / ``/models/Qwen3-0.6B/`` / ``s3://b/Qwen3-0.6B`` → ``qwen3-0.6b``."""
    return model.rstrip("/").rsplit("/", 1)[-1].lower()


def _words(name: str) -> list[str]:
    return [w for w in re.split(r"[-_\s]+", name) if w]


def model_family(model: str) -> str:
    """The family of a model id: its leading name words up to the size or a variant word, with
    versions cut to their major number (``Llama-3.1-8B-Instruct`` → ``llama-3``,
    ``Qwen2.5-7B`` → ``qwen2``, ``Qwen3-0.6B`` → ``qwen3``)."""
    out: list[str] = []
    for w in _words(model_name(model)):
        if _SIZE.match(w) or (out and w in _VARIANT):
            break
        out.append(w)
    if not out:
        return model_name(model)
    text = "-".join(out)
    # major version only: qwen2.5 → qwen2, llama-3.1 → llama-3
    return re.sub(r"(\d+)\.\d+", r"\1", text)


def _same_weights_family(a: str, b: str) -> bool:
    """Same model, another revision of its weights: equal names once quantization / format
    suffixes are dropped (``Qwen3-8B`` vs ``Qwen3-8B-FP8``), wherever they are stored."""
    def core(m: str) -> list[str]:
        return [w for w in _words(model_name(m)) if w not in _QUANT]
    return core(a) == core(b)


def _primary_model(facts: DgdFacts) -> str | None:
    models = [c.model for c in facts.workers() if c.model]
    if not models:
        return None
    return Counter(models).most_common(1)[0][0]


def _risk(base: DgdFacts, head: DgdFacts) -> tuple[RiskGrade, list[str]]:
    bm, hm = _primary_model(base), _primary_model(head)
    if bm is not None and hm is not None and bm != hm:
        if model_name(bm) == model_name(hm):
            return RiskGrade.SAME_MODEL_NEW_REVISION, [
                (f"risk: the same model from another location ({bm} → {hm}): "
                 "weights may differ")]
        if _same_weights_family(bm, hm):
            return RiskGrade.SAME_MODEL_NEW_REVISION, [
                f"risk: the same model with other weights ({bm} → {hm})"]
        fb, fh = model_family(bm), model_family(hm)
        if fb == fh:
            return RiskGrade.SAME_FAMILY, [
                f"risk: another model of the {fb} family ({bm} → {hm})"]
        return RiskGrade.NEW_FAMILY, [
            f"risk: a new model family ({fb} → {fh}: {bm} → {hm})"]
    for key in ("--revision", "--quantization", "--load-format"):
        for c in head.workers():
            old_c = base.components.get(c.name)
            if old_c is None:
                continue
            o, n = old_c.flags.get(key), c.flags.get(key)
            if (o.value if o else None) != (n.value if n else None):
                return RiskGrade.SAME_MODEL_NEW_REVISION, [
                    (f"risk: the same model with new weights ({key} "
                     f"{_describe(o.value if o else None)} → "
                     f"{_describe(n.value if n else None)})")]
    return RiskGrade.CONFIG_ONLY, ["risk: configuration only (the model and its weights stay)"]

