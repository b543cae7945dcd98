"""Generations: the stable DGD as it runs today, and the candidate built from it by applying the
spec's small set of changes. Everything the spec does not change is kept exactly, including
fields dgdgen does not model (the candidate is a deep copy of the stable document, edited in
place)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dgdgen.errors import InputError, did_you_mean
from dgdgen.model import dgd as dgdmod

ANN_REVISION = "dgdgen.dev/revision"
ANN_BASE_NAME = "dgdgen.dev/base-name"
LABEL_ROLLOUT = "dgdgen.dev/rollout"
LABEL_GENERATION = "dgdgen.dev/generation"
LABEL_ROLE = "dgdgen.dev/role"

# Metadata the API server owns; copying it into a new object would be wrong.
_SERVER_METADATA = ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields",
                    "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")
# Operator bookkeeping of a running DGD (ai-dynamo/dynamo deploy/operator/internal/dynamo/hash.go):
# a new DGD must start without it, or the operator would take the copied worker hash as its own
# history.
_OPERATOR_ANNOTATIONS = (dgdmod.ANN_WORKER_HASH_V1, dgdmod.ANN_WORKER_HASH_V2)

_SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/sh"}


@dataclass(frozen=True)
class Generation:
    revision: str
    dgd: dgdmod.Dgd
    target_replicas: Mapping[str, int]  # replicas of each component at 100 % of traffic


def content_revision(doc: Mapping[str, Any]) -> str:
    """A short, stable revision id: ``r`` + 7 hex of SHA-256 over the canonical JSON."""
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "r" + hashlib.sha256(canonical.encode()).hexdigest()[:7]


def _identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a DGD that defines a generation (no metadata noise, no status)."""
    return {"spec": doc.get("spec")}


def stable_generation(stable: dgdmod.Dgd, revision: str | None) -> Generation:
    ann = (stable.doc.get("metadata") or {}).get("annotations") or {}
    rev = revision or ann.get(ANN_REVISION) or content_revision(_identity(stable.doc))
    return Generation(str(rev), stable, {n: c.replicas for n, c in stable.components.items()})


def base_name(stable: dgdmod.Dgd, stable_revision: str) -> str:
    """The rollout's base DGD name: the stable name without a leading ``{revision}-``."""
    ann = (stable.doc.get("metadata") or {}).get("annotations") or {}
    if isinstance(ann.get(ANN_BASE_NAME), str) and ann[ANN_BASE_NAME]:
        return str(ann[ANN_BASE_NAME])
    prefix = f"{stable_revision}-"
    if stable.name.startswith(prefix) and len(stable.name) > len(prefix):
        return stable.name[len(prefix) :]
    return stable.name


def candidate_generation(
    stable: Generation,
    candidate: Any,  # dgdgen.spec.Candidate
    locate: Any,  # callable(path) -> Location, for errors that point into the spec
) -> Generation:
    """Apply the candidate's changes to a copy of the stable DGD."""
    cand = stable.dgd.copy()
    doc = cand.doc
    target = dict(stable.target_replicas)

    names = list(cand.components)
    for comp_name in candidate.components:
        if comp_name not in cand.components:
            guess = did_you_mean(comp_name, names)
            field = ("spec", "candidate", "components", comp_name)
            raise InputError(
                f"the stable DGD {stable.dgd.name!r} has no component {comp_name!r}",
                location=locate(field),
                field=field,
                hint=f"did you mean {guess!r}?" if guess else f"it has: {', '.join(names)}",
            )

    if candidate.image:
        for comp_name in cand.components:
            mc = cand.main_container(comp_name)
            if mc is not None and "image" in mc:
                mc["image"] = candidate.image

    for comp_name, change in candidate.components.items():
        field = ("spec", "candidate", "components", comp_name)
        if change.image is not None:
            mc = cand.main_container(comp_name, create=True)
            assert mc is not None
            mc["image"] = change.image
        if change.args is not None:
            mc = cand.main_container(comp_name, create=True)
            assert mc is not None
            _apply_args(mc, change.args, locate, field + ("args",))
        if change.env is not None:
            _apply_env(cand, comp_name, change.env)
        if change.replicas is not None:
            cand.component_doc(comp_name)["replicas"] = change.replicas
            target[comp_name] = change.replicas
        if change.gpus is not None:
            _apply_gpus(cand, comp_name, change.gpus)

    meta = doc.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    doc.pop("status", None)
    anns = meta.get("annotations")
    if isinstance(anns, dict):
        for key in _OPERATOR_ANNOTATIONS:
            anns.pop(key, None)
        if not anns:
            meta.pop("annotations", None)
    cand.refresh()

    if _identity(doc) == _identity(stable.dgd.doc):
        raise InputError(
            "the candidate changes nothing in the stable DGD's spec: nothing to roll out",
            location=locate(("spec", "candidate")),
            field=("spec", "candidate"),
        )
    revision = candidate.revision or content_revision(_identity(doc))
    if revision == stable.revision:
        raise InputError(
            f"the candidate revision {revision!r} equals the stable revision",
            location=locate(("spec", "candidate", "revision")),
            field=("spec", "candidate", "revision"),
        )
    return Generation(revision, cand, target)


def _apply_gpus(cand: dgdmod.Dgd, comp_name: str, gpus: int) -> None:
    """Set the GPUs each pod of the component asks for where the DGD keeps them: v1alpha1 the
    component's ``resources`` (``gpu``), unless only its main container names
    ``nvidia.com/gpu``; v1beta1 the main container's ``nvidia.com/gpu``. Limits always, requests
    where they name GPUs already."""
    node = cand.component_doc(comp_name)
    mc = cand.main_container(comp_name, create=True)
    assert mc is not None
    container_res = mc.get("resources") if isinstance(mc.get("resources"), dict) else None
    own = node.get("resources") if isinstance(node.get("resources"), dict) else None
    if cand.version == "v1alpha1" and not (
            own is None and container_res is not None
            and "nvidia.com/gpu" in (container_res.get("limits") or {})):
        res, key, value = node.setdefault("resources", {}), "gpu", str(gpus)
    else:
        res, key, value = mc.setdefault("resources", {}), "nvidia.com/gpu", str(gpus)
    res.setdefault("limits", {})[key] = value
    if isinstance(res.get("requests"), dict) and key in res["requests"]:
        res["requests"][key] = value


# --------------------------------------------------------------------------- arguments


def _is_shell(command: list[Any]) -> bool:
    return len(command) >= 2 and str(command[0]) in _SHELLS and str(command[-1]) == "-c"


def _apply_args(mc: dict[str, Any], changes: Any, locate: Any, field: tuple[str | int, ...]) -> None:
    command = mc.get("command") or []
    args = mc.get("args")
    if _is_shell(command) and isinstance(args, list) and len(args) == 1:
        # One `sh -c` string: edit its words and write it back as one string. Backslash-newline
        # continuations are joined first, as the shell would (POSIX sh, 2.2.1).
        script = re.sub(r"\\\n\s*", " ", str(args[0]))
        try:
            words = shlex.split(script)
        except ValueError as exc:
            raise InputError(
                f"cannot edit the `sh -c` command string: {exc}", location=locate(field), field=field
            ) from None
        mc["args"] = [shlex.join(edit_args(words, changes.set, changes.remove))]
        return
    if args is None:
        args = []
    if not isinstance(args, list):
        raise InputError(
            "the component's args are not a list; cannot apply argument changes",
            location=locate(field),
            field=field,
        )
    mc["args"] = edit_args([str(a) for a in args], changes.set, changes.remove)


def _flag_of(token: str) -> str | None:
    if not token.startswith("-") or _looks_numeric(token):
        return None
    return token.split("=", 1)[0]


def _looks_numeric(token: str) -> bool:
    return bool(re.fullmatch(r"-?\d+(\.\d+)?([eE]-?\d+)?", token))


def edit_args(
    words: list[str], set_: Mapping[str, Any], remove: list[str]
) -> list[str]:
    """Set / remove ``--flag value``, ``--flag=value`` and presence flags in an argument list.

    A flag's value is the next word when that word is not itself a flag. Setting a flag that is
    present rewrites it in place (keeping its ``=`` form); otherwise it is appended. ``None`` or
    ``True`` means a flag without a value; ``False`` removes the flag.
    """
    out = list(words)
    for flag in list(remove) + [f for f, v in set_.items() if v is False]:
        out = _remove(out, flag)
    for flag, value in set_.items():
        if value is False:
            continue
        text = None if value is None or value is True else _text(value)
        out = _set(out, flag, text)
    return out


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _value_follows(words: list[str], i: int) -> bool:
    return i + 1 < len(words) and _flag_of(words[i + 1]) is None


def _remove(words: list[str], flag: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w == flag:
            i += 2 if _value_follows(words, i) else 1
            continue
        if w.startswith(flag + "="):
            i += 1
            continue
        out.append(w)
        i += 1
    return out


def _set(words: list[str], flag: str, value: str | None) -> list[str]:
    for i, w in enumerate(words):
        if w.startswith(flag + "="):
            return words[:i] + ([f"{flag}={value}"] if value is not None else [flag]) + words[i + 1 :]
        if w == flag:
            if value is None:
                if _value_follows(words, i):
                    return words[: i + 1] + words[i + 2 :]
                return words
            if _value_follows(words, i):
                return words[: i + 1] + [value] + words[i + 2 :]
            return words[: i + 1] + [value] + words[i + 1 :]
    return words + ([flag] if value is None else [flag, value])


# --------------------------------------------------------------------------- environment


def _apply_env(cand: dgdmod.Dgd, comp_name: str, changes: Any) -> None:
    comp = cand.component_doc(comp_name)
    mc = cand.main_container(comp_name, create=bool(changes.set))
    lists: list[list[Any]] = []
    if cand.version == "v1alpha1" and isinstance(comp.get("envs"), list):
        lists.append(comp["envs"])
    if mc is not None and isinstance(mc.get("env"), list):
        lists.append(mc["env"])
    for name in changes.remove:
        for lst in lists:
            lst[:] = [e for e in lst if not (isinstance(e, dict) and e.get("name") == name)]
    for name, value in changes.set.items():
        done = False
        for lst in lists:
            for e in lst:
                if isinstance(e, dict) and e.get("name") == name:
                    e.pop("valueFrom", None)
                    e["value"] = value
                    done = True
        if not done:
            assert mc is not None
            mc.setdefault("env", []).append({"name": name, "value": value})
    if mc is not None and mc.get("env") == []:
        mc.pop("env")
    if cand.version == "v1alpha1" and comp.get("envs") == []:
        comp.pop("envs")
