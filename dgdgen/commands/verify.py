"""``dgdgen verify``: validate manifests as the Kubernetes API server would, without a cluster."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import TextIO

COMMON_OPTIONS = ("--max-input-size",)  # reads YAML files, never a spec's `dgd:`
HELP = "validate manifests against the upstream CRD schemas and their CEL rules"

DESCRIPTION = """\
Validate every document of every YAML file (directories are searched recursively for *.yaml and
*.yml, in sorted order) the way the Kubernetes API server would:

  * DynamoGraphDeployment, HTTPRoute, InferencePool, Argo Rollouts AnalysisTemplate /
    ClusterAnalysisTemplate / AnalysisRun, Argo CD Application / ApplicationSet / AppProject and
    Argo Workflows WorkflowTemplate against the upstream CRDs shipped with dgdgen: types,
    required fields, enums, limits, patterns, and their CEL x-kubernetes-validations rules.
    Fields the API server would silently drop (not declared in the schema) are errors.
    The DynamoGraphDeployment CRD is Dynamo main of 2026-08-20 (commit df7deed0d), NOT a
    release's: the file at Dynamo's release tags could not be obtained when it was vendored
    (schemas/crds/PROVENANCE.md). The summary line says so whenever a DGD was validated.
  * core kinds (Service, Deployment, ConfigMap, RBAC, PodDisruptionBudget, Job ...) against the
    strict Kubernetes v1.37 JSON Schemas shipped with dgdgen.

Each problem is printed as

  FILE:LINE:COLUMN: KIND/NAME: FIELD.PATH: MESSAGE

Documents of other kinds are reported with a "warning:" line and do not fail the run
(--skip-unknown-kinds leaves them out).

A directory that dgdgen rendered (`render -o`: state folders step-00 … cleanup; `render --into`:
one state) is also checked as a cluster would run it: the invariants (docs/invariants.md) over
every state and every sync-wave moment of every transition between them — every client path
reaches only frontends with a complete set of workers, and the rest. Each finding is printed as

  FILE:LINE:COLUMN: KIND/NAME: CODE slug: MESSAGE

(--skip-invariants leaves them out).

exit codes: 0 every document is valid and no invariant broken, 1 violations or broken
invariants found, 2 bad input (a missing or unreadable
file, malformed YAML), usage, or nothing validated (no document of a kind dgdgen has a schema
for: a job pointed at the wrong path must not pass).

examples:
  dgdgen verify out/
  dgdgen verify --overlay dgd-proposed-rollout-fields \\
    out/step-02/dynamographdeployment-sglang-disagg.yaml
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths", nargs="+", metavar="FILE_OR_DIR", help="YAML files, or directories to search"
    )
    parser.add_argument(
        "--overlay",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept the fields declared by this schema overlay (repeatable), e.g. "
        "dgd-proposed-rollout-fields for the worker-group / partition rollout modes",
    )
    parser.add_argument(
        "--skip-invariants", action="store_true",
        help="do not check the invariants of rendered trees (schemas and CEL rules only)",
    )
    parser.add_argument(
        "--skip-unknown-kinds",
        action="store_true",
        help="say nothing about documents whose kind dgdgen has no schema for",
    )


def _files(paths: list[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found.extend(
                    os.path.join(root, n) for n in names if n.endswith((".yaml", ".yml"))
                )
            out.extend(sorted(found))
        else:
            out.append(path)  # missing files are reported by the loader, with exit code 2
    return out


def _label(data: object) -> str:
    if not isinstance(data, dict):
        return "<not an object>"
    kind = data.get("kind") or "<no kind>"
    meta = data.get("metadata")
    name = (meta.get("name") or meta.get("generateName")) if isinstance(meta, dict) else None
    return f"{kind}/{name or '<no name>'}"


def run(args: argparse.Namespace) -> int:
    from dgdgen import crd, yamlio
    from dgdgen.crd import overlays
    from dgdgen.errors import MAX_PER_FIELD, field_group, format_path, more_than_shown

    for name in args.overlay:
        overlays.load(name)  # unknown names fail now, as usage errors (exit 2)
    files = _files(args.paths)
    # Read everything first: bad input stops the run before anything is reported. The documents
    # are acyclic and live to the end: the cyclic collector is paused while they are built and
    # they are frozen afterwards (docs/performance.md; reference counting still frees them).
    enabled = gc.isenabled()
    gc.disable()
    try:
        documents = [doc for path in files for doc in yamlio.load_file(path, packed=True)]
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    found: list[tuple[yamlio.Document, crd.Violation]] = crd.validate_documents(
        documents, overlays=args.overlay
    )
    unvalidated = sum(v.rule == crd.UNKNOWN_KIND for _, v in found)
    if args.skip_unknown_kinds:
        found = [(doc, v) for doc, v in found if v.rule != crd.UNKNOWN_KIND]
    # Within a document, report in source order (documents keep their file order).
    order = {id(doc): i for i, doc in enumerate(documents)}
    located = sorted(
        ((doc, v, doc.location(v.path)) for doc, v in found),
        key=lambda t: (order[id(t[0])], t[2].line or 0, t[2].column or 0),
    )
    failures = 0
    out = sys.stdout
    # at most MAX_PER_FIELD lines per field of a document; the rest counted where they begin
    per_field: dict[tuple[int, tuple[str | int, ...]], int] = {}
    for doc, violation, _ in located:
        if violation.rule != crd.UNKNOWN_KIND:
            key = (id(doc), field_group(violation.path))
            per_field[key] = per_field.get(key, 0) + 1
    printed: dict[tuple[int, tuple[str | int, ...]], int] = {}
    for doc, violation, where in located:
        field = format_path(violation.path)
        prefix = f"{where}: {_label(doc.data)}: "
        if violation.rule == crd.UNKNOWN_KIND:
            out.write(f"{prefix}warning: {violation.message}\n")
            continue
        failures += 1
        key = (id(doc), field_group(violation.path))
        n = printed.get(key, 0)
        printed[key] = n + 1
        if n < MAX_PER_FIELD:
            out.write(f"{prefix}{field + ': ' if field else ''}{violation.message}\n")
        elif n == MAX_PER_FIELD:
            group = format_path(key[1])
            out.write(f"{prefix}{group + ': ' if group else ''}"
                      f"{more_than_shown(per_field[key] - MAX_PER_FIELD)}\n")
    broken = 0
    if not args.skip_invariants:
        broken = _invariants(args.paths, out)
    failures += broken
    checked = len(documents)
    summary = f"{checked} document(s) in {len(files)} file(s): "
    if checked == unvalidated:
        # Nothing was validated: "all valid" would be a claim about nothing.
        sys.stderr.write(summary + "none validated (no document of a kind dgdgen has a "
                         "schema for)\n")
        return 2
    summary += f"{failures} violation(s)" if failures else "all valid"
    if broken:
        summary += f", of which {broken} broken invariant(s)"
    if unvalidated:
        summary += f" ({unvalidated} not validated)"
    if any(isinstance(d.data, dict) and d.data.get("kind") == "DynamoGraphDeployment"
           for d in documents):
        from dgdgen.crd.catalog import DGD_CRD

        summary += f"; DGD CRD of {DGD_CRD}"
    sys.stderr.write(summary + "\n")
    return 1 if failures else 0


def rendered_trees(paths: list[str]) -> list[str]:
    """The directories among ``paths`` that dgdgen rendered: a tree of state folders, or one
    state (`render --into`, `render --step`), recognised by the files dgdgen keeps there."""
    from dgdgen.cluster.transitions import STATE

    out = []
    for path in paths:
        if not os.path.isdir(path):
            continue
        names = os.listdir(path)
        if any(STATE.match(n) and os.path.isdir(os.path.join(path, n)) for n in names) or \
                ".dgdgen-render" in names or ".dgdgen-index" in names:
            out.append(path)
    return out


def _invariants(paths: list[str], out: TextIO) -> int:
    """Print the invariants' findings on the rendered trees among ``paths``; the number of
    errors."""
    from dgdgen.check.findings import Severity
    from dgdgen.check.reporters.text import fit, help_line
    from dgdgen.cluster.check import check_tree

    errors = 0
    helped: set[str] = set()  # each invariant's help once per run
    for root in rendered_trees(paths):
        for f in check_tree(root):
            label = f"{f.severity.value}: " if f.severity is not Severity.ERROR else ""
            out.writelines(f"{part}\n" for part in fit(
                f"{f.file}:{f.line}:{f.column}: {f.object}: {label}{f.code} {f.slug}: "
                f"{f.message}"))
            if f.help and f.code not in helped:
                helped.add(f.code)
                out.write(help_line(f) + "\n")
            errors += f.severity is Severity.ERROR
    return errors
