"""spec file → validated :class:`RolloutSpec` + the stable :class:`Dgd` (the I/O edge of the
generator). Every problem becomes an :class:`InputError` with file, line and field path."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any

from dgdgen import yamlio
from dgdgen.errors import (
    MAX_PER_FIELD,
    InputError,
    InputErrors,
    Location,
    did_you_mean,
    field_group,
    format_path,
    more_than_shown,
)
from dgdgen.model import dgd as dgdmod


@dataclass(frozen=True)
class LoadedSpec:
    spec: Any  # dgdgen.spec.RolloutSpec (typed loosely to keep pydantic out of import time)
    document: yamlio.Document
    stable: dgdmod.Dgd
    path: str

    def location(self, field: tuple[str | int, ...]) -> Location:
        return self.document.location(field)


def _model_at(model: Any, loc: tuple[str | int, ...]) -> Any:
    """The pydantic model class found by following ``loc`` (aliases) from ``model``."""
    import typing

    from pydantic import BaseModel

    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        found = None
        for name, info in current.model_fields.items():
            if part in (name, info.alias):
                found = info.annotation
                break
        if found is None:
            return None
        # unwrap Optional / list / dict to the model inside, if any
        stack = [found]
        current = None
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                current = t
                break
            stack.extend(typing.get_args(t))
    return current


def _pydantic_errors(exc: Any, doc: yamlio.Document, root_model: Any) -> InputErrors:
    errors = []
    seen: set[str] = set()
    per_field: dict[tuple[str | int, ...], int] = {}
    first_hidden: dict[tuple[str | int, ...], Location] = {}
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        # pydantic reports union members as extra loc parts like 'int' / 'str'
        clean: list[str | int] = []
        data: Any = doc.data
        for part in loc:
            present = (isinstance(data, dict) and isinstance(part, str) and part in data) or (
                isinstance(data, list) and isinstance(part, int) and part < len(data))
            if present:
                clean.append(part)
                data = data[part]
            elif err["type"] in ("missing", "extra_forbidden") and part == loc[-1]:
                clean.append(part)
        path = tuple(clean)
        # one message per field path, and at most MAX_PER_FIELD per field: the rest are only
        # counted, not formatted (200,000 wrong items of one list made 200,000 messages first)
        shown = format_path(path)
        if shown in seen:
            continue
        seen.add(shown)
        group = field_group(path)
        count = per_field[group] = per_field.get(group, 0) + 1
        if count > MAX_PER_FIELD:
            if count == MAX_PER_FIELD + 1:
                first_hidden[group] = doc.location(path)
            continue
        etype = err["type"]
        hint = None
        if etype == "extra_forbidden":
            model = _model_at(root_model, path[:-1])
            known = []
            if model is not None:
                known = [info.alias or name for name, info in model.model_fields.items()]
            guess = did_you_mean(str(path[-1]), known) if path else None
            message = "unknown field"
            if guess:
                hint = f"did you mean {guess!r}?"
            elif known:
                hint = f"expected one of: {', '.join(sorted(known))}"
        elif etype == "missing":
            message = "required field is missing"
        else:
            msg = err["msg"]
            msg = msg.removeprefix("Value error, ")
            message = msg[:1].lower() + msg[1:]
            if etype in ("literal_error", "enum") and "expected" in err.get("ctx", {}):
                message = f"expected {err['ctx']['expected']}, got {err.get('input')!r}"
            elif etype == "too_long" and "max_length" in err.get("ctx", {}):
                # pydantic's "List should have at most 1000 items after validation, not 200000"
                ctx = err["ctx"]
                count = ctx.get("actual_length")
                message = (f"{count:,} items" if isinstance(count, int) else "too many items"
                           ) + f", more than the maximum of {ctx['max_length']:,}"
        errors.append(InputError(message, location=doc.location(path), field=path, hint=hint))
    errors += [InputError(more_than_shown(per_field[group] - MAX_PER_FIELD), location=where,
                          field=group) for group, where in first_hidden.items()]
    ordered = sorted(  # in file order
        errors,
        key=lambda e: (e.location.line or 0, e.location.column or 0) if e.location else (0, 0),
    )
    return InputErrors(ordered)


def _refuse_long_collections(doc: yamlio.Document, limit: int) -> None:
    """Refuse the first list or mapping (in file order) with more than ``limit`` entries.
    ``spec.steps`` has a maximum of its own, which the model checks before its items."""
    todo: list[tuple[tuple[str | int, ...], Any]] = [((), doc.data)]
    found = []
    while todo:
        path, node = todo.pop()
        if isinstance(node, (dict, list)):
            if len(node) > limit and path != ("spec", "steps"):
                found.append(path)
                continue
            items = node.items() if isinstance(node, dict) else enumerate(node)
            todo.extend((path + (k,), v) for k, v in items)
    if found:
        where = min(found, key=lambda p: (doc.location(p).line or 0, doc.location(p).column or 0))
        node = doc.data
        for part in where:
            node = node[part]
        raise InputError(f"{len(node):,} entries, more than the {limit:,} a rollout spec's lists "
                         "and mappings may hold", location=doc.location(where), field=where)


def load_spec(path: str) -> LoadedSpec:
    """Read, validate and resolve one rollout spec file."""
    from pydantic import ValidationError

    from dgdgen.spec import API_VERSION, KIND, MAX_ENTRIES, RolloutSpec

    docs = yamlio.load_file(path)
    if not docs:
        raise InputError("empty file, expected a DGDRollout document", location=Location(path))
    if len(docs) > 1:
        raise InputError(
            "expected one DGDRollout document, found "
            f"{len(docs)} (one spec per file)",
            location=docs[1].location(()),
        )
    doc = docs[0]
    data = doc.data
    if not isinstance(data, dict):
        raise InputError("expected a DGDRollout mapping", location=doc.location(()))
    if data.get("kind") != KIND or data.get("apiVersion") != API_VERSION:
        where = ("kind",) if data.get("kind") != KIND else ("apiVersion",)
        raise InputError(
            f"not a rollout spec: expected apiVersion {API_VERSION} and kind {KIND}, got "
            f"{data.get('apiVersion')!r} / {data.get('kind')!r}",
            location=doc.location(where),
            field=where,
        )
    _refuse_long_collections(doc, MAX_ENTRIES)
    try:
        spec = RolloutSpec.model_validate(data)
    except ValidationError as exc:
        raise _pydantic_errors(exc, doc, RolloutSpec) from None
    stable = _load_stable(spec, doc, path)
    return LoadedSpec(spec=spec, document=doc, stable=stable, path=path)


_allow_outside = False


def allow_outside_paths(allow: bool) -> None:
    """Let a spec's ``dgd:`` name a file outside its repository (the CLI's --allow-outside-paths).
    Off by default: a spec in a reviewed pull request must not make CI read ``/etc/passwd``."""
    global _allow_outside
    _allow_outside = allow


def _confinement_root(folder: str) -> str:
    """The Git work tree around ``folder`` (found by its `.git`), else ``folder`` itself."""
    d = os.path.realpath(folder)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return os.path.realpath(folder)
        d = parent


def _load_stable(spec: Any, doc: yamlio.Document, spec_path: str) -> dgdmod.Dgd:
    st = spec.spec.stable
    if st.manifest is not None:
        field = ("spec", "stable", "manifest")
        sub_positions = {
            k[len(field) :]: v for k, v in doc.positions.items() if k[: len(field)] == field
        }
        sub = yamlio.Document(st.manifest, doc.file, 0, sub_positions, doc.location(field).line or 1)
        return dgdmod.parse(copy.deepcopy(st.manifest), source=sub)
    field = ("spec", "stable", "dgd")
    base = os.path.dirname(os.path.abspath(spec_path))
    target = st.dgd if os.path.isabs(st.dgd) else os.path.join(base, st.dgd)
    shown = os.path.relpath(target)
    if os.path.isabs(st.dgd) or shown.startswith(".."):
        shown = target
    if not os.path.lexists(target):
        raise InputError(
            f"stable DGD file {st.dgd!r} not found (resolved to {shown})",
            location=doc.location(field),
            field=field,
        )
    root = _confinement_root(base)
    real = os.path.realpath(target)
    if not _allow_outside and os.path.commonpath([real, root]) != root:
        raise InputError(
            f"stable DGD file {st.dgd!r} is outside "
            f"{'the repository' if os.path.isdir(os.path.join(root, '.git')) else 'the spec folder'}"
            f" ({root}); refusing to read it",
            location=doc.location(field),
            field=field,
            hint="pass --allow-outside-paths if that file is really meant",
        )
    try:
        docs = yamlio.load_file(target, display=shown)
    except InputError as exc:
        raise InputError(
            f"cannot read the stable DGD: {exc}", location=doc.location(field), field=field
        ) from None
    dgds = [d for d in docs if dgdmod.is_dgd(d.data)]
    if not dgds:
        kinds = sorted({str(d.data.get("kind")) for d in docs if isinstance(d.data, dict)})
        raise InputError(
            f"{shown} holds no DynamoGraphDeployment (found: {', '.join(kinds) or 'nothing'})",
            location=doc.location(field),
            field=field,
        )
    if st.name is not None:
        chosen = [d for d in dgds if (d.data.get("metadata") or {}).get("name") == st.name]
        if not chosen:
            names = [str((d.data.get("metadata") or {}).get("name")) for d in dgds]
            guess = did_you_mean(st.name, names)
            raise InputError(
                f"{shown} has no DGD named {st.name!r}",
                location=doc.location(("spec", "stable", "name")),
                field=("spec", "stable", "name"),
                hint=f"did you mean {guess!r}?" if guess else f"found: {', '.join(names)}",
            )
        dgds = chosen
    if len(dgds) > 1:
        names = [str((d.data.get("metadata") or {}).get("name")) for d in dgds]
        raise InputError(
            f"{shown} holds several DGDs ({', '.join(names)}); say which with spec.stable.name",
            location=doc.location(field),
            field=field,
        )
    _check_schema(dgds[0])
    stable = dgdmod.parse(dgds[0].data, source=dgds[0])
    idle = [c for c in stable.components.values()
            if (c.is_worker or c.role is dgdmod.Role.FRONTEND) and c.replicas == 0]
    if idle:  # else the plan would blame a step weight or the traffic provider for it
        raise InputErrors([
            InputError(f"{c.name} has 0 replicas: the stable generation must be serving to be "
                       "rolled out from", location=stable.location(c.path + ("replicas",)),
                       field=c.path + ("replicas",))
            for c in idle
        ])
    return stable


def _check_schema(doc: yamlio.Document) -> None:
    """The stable DGD against the same CRD schema and CEL rules `dgdgen verify` uses, before
    anything plans with it: `replicas: two`, `replicas: -2` or a 21-digit count are refused at
    the DGD file's own line, not found later as a puzzling plan. The proposed-fields overlay is
    allowed (a stable generation may come from a worker-group or partition rollout)."""
    from dgdgen import crd

    found = [v for v in crd.validate(doc.data, overlays=("dgd-proposed-rollout-fields",))
             if v.rule != crd.UNKNOWN_KIND]
    real = [v for v in found if v.path] or found  # drop "CEL was skipped" when a field is named
    if real:
        raise InputErrors([
            InputError(v.message if v.rule == crd.TOO_LARGE
                       else f"{v.message} (the DynamoGraphDeployment CRD schema)",
                       location=doc.location(v.path), field=v.path)
            for v in sorted(real)
        ])
