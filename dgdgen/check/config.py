"""The checker's section of the project config file (``.dgdgen.yaml``, key ``check``)::

    check:
      dynamo-version: "1.5"
      workers-run-by: grove   # deployment (default) | grove | lws | unmanaged
      grove-update-strategy: RollingRecreate   # | OnDelete | Coherent (default: the release's)
      fail-on: error          # info | warning | error | never
      model-config: models/qwen3   # the served model's files (relative to this file)
      select: [DGD, RTE]      # codes, slugs or code prefixes
      ignore: [DGD103]
      suppress:               # suppressions with a reason, reported as suppressed
        - rule: DGD105
          object: "DynamoGraphDeployment/dev-*"   # optional fnmatch pattern
          file: "clusters/dev/*.yaml"             # optional fnmatch pattern
          reason: "dev cluster: a capacity gap during rollouts is acceptable"

Command-line options win over the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dgdgen.check.suppress import Suppression
from dgdgen.errors import InputError, Location
from dgdgen.yamlio import Document, load_documents_fast, read_text

FILENAME = ".dgdgen.yaml"
_KEYS = {"dynamo-version", "workers-run-by", "grove-update-strategy", "fail-on", "select",
         "ignore", "suppress", "model-config"}
_SUPPRESS_KEYS = {"rule", "object", "file", "reason"}


@dataclass(frozen=True)
class CheckConfig:
    dynamo_version: str | None = None
    workers_run_by: str | None = None
    fail_on: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    suppressions: tuple[Suppression, ...] = ()
    model_config: str | None = None  # a directory, resolved against the config file's
    # Checked against the release (which the command line may name) by the caller, who reports
    # a bad value at this location.
    grove_strategy: str | None = None
    grove_strategy_location: Location | None = None


def find(explicit: str | None, git_top: str | None) -> str | None:
    if explicit:
        return explicit
    for d in (os.getcwd(), git_top):
        if d and os.path.isfile(os.path.join(d, FILENAME)):
            return os.path.join(d, FILENAME)
    return None


def _strings(doc: Document, path: tuple[str | int, ...], value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InputError("expected a list of strings", location=doc.location(path), field=path)


def load(path: str) -> CheckConfig:
    docs = load_documents_fast(read_text(path), path)
    if not docs:
        return CheckConfig()
    doc = docs[0]
    if not isinstance(doc.data, dict):
        raise InputError("expected a mapping", location=doc.location())
    section = doc.data.get("check")
    if section is None:
        return CheckConfig()
    if not isinstance(section, dict):
        raise InputError("expected a mapping", location=doc.location(("check",)),
                         field=("check",))
    for key in section:
        if key not in _KEYS:
            raise InputError(f"unknown key {key!r}", location=doc.location(("check", key)),
                             field=("check", key), hint=f"known: {', '.join(sorted(_KEYS))}")
    sups = []
    for i, entry in enumerate(section.get("suppress") or []):
        p: tuple[str | int, ...] = ("check", "suppress", i)
        if not isinstance(entry, dict):
            raise InputError("expected a mapping", location=doc.location(p), field=p)
        for key in entry:
            if key not in _SUPPRESS_KEYS:
                raise InputError(f"unknown key {key!r}", location=doc.location(p + (key,)),
                                 field=p + (key,))
        if not isinstance(entry.get("rule"), str):
            raise InputError("a suppression needs `rule`", location=doc.location(p), field=p)
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise InputError("a suppression needs a `reason`", location=doc.location(p),
                             field=p + ("reason",))
        sups.append(Suppression(entry["rule"], reason.strip(), "config",
                                entry.get("object"), entry.get("file")))
    dv = section.get("dynamo-version")
    fo = section.get("fail-on")
    rb = section.get("workers-run-by")
    if rb is not None:
        from dgdgen.check.inplace import RunBy

        if str(rb) not in {r.value for r in RunBy}:
            raise InputError(f"unknown worker backing {rb!r}",
                             location=doc.location(("check", "workers-run-by")),
                             field=("check", "workers-run-by"),
                             hint=f"choose from {', '.join(r.value for r in RunBy)}")
    gs = section.get("grove-update-strategy")
    gs_path = ("check", "grove-update-strategy")
    if gs is not None and not isinstance(gs, str):
        raise InputError("expected RollingRecreate, OnDelete or Coherent",
                         location=doc.location(gs_path), field=gs_path)
    mc = section.get("model-config")
    if mc is not None and (not isinstance(mc, str) or not mc.strip()):
        raise InputError("expected a directory (the served model's files)",
                         location=doc.location(("check", "model-config")),
                         field=("check", "model-config"))
    return CheckConfig(
        model_config=os.path.join(os.path.dirname(path), mc) if mc else None,
        dynamo_version=str(dv) if dv is not None else None,
        workers_run_by=str(rb) if rb is not None else None,
        grove_strategy=gs,
        grove_strategy_location=doc.location(gs_path) if gs is not None else None,
        fail_on=str(fo) if fo is not None else None,
        select=_strings(doc, ("check", "select"), section.get("select") or []),
        ignore=_strings(doc, ("check", "ignore"), section.get("ignore") or []),
        suppressions=tuple(sups),
    )
