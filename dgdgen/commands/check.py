"""`dgdgen check`: rollout-safety rules over DGD manifests and their change since a base."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

HELP = "check DGD manifests (and their change since a Git base) for rollout hazards"
DESCRIPTION = """\
Check DynamoGraphDeployments, routes and analysis templates for rollout hazards.

Each file is compared with its version at a base revision, so changes that demand namespace
isolation (ModelDeploymentCard inputs, KV transfer, runtime image) are caught when they are
applied in place. Without PATHS and without --base it checks the staged YAML files against
HEAD (pre-commit mode); with PATHS and no --base it compares them with HEAD; with --base REV it
compares the working tree with REV. New files and files outside Git get the single-file rules.

Suppress a finding with a reason on the object: `dgdgen.dev/ignore: "DGD105: why"`, or in the
`check.suppress` list of .dgdgen.yaml. Suppressed findings are reported, but do not fail.

Fail safe: a context length or dtype set on one revision only, whose default the engine derives
from the model's files, is assumed to change (DGD205, an error; `isolation_required: true`, the
category under `assumed`) until `--model-config DIR` (the model's config.json) or a suppression
with a reason settles it.

exit codes: 0 clean, 1 findings at or above --fail-on, 2 bad input or usage.
"""

FORMATS = ("text", "json", "sarif", "github", "junit")
SEVERITIES = ("info", "warning", "error", "never")
# dgdgen.check.inplace.RunBy, spelled out so that building the parser imports nothing
# (tests/check/test_inplace_model.py keeps the two equal).
RUN_BY = ("deployment", "grove", "lws", "unmanaged")
# dgdgen.check.inplace.GroveStrategy, likewise (the operator's exact spelling).
GROVE_STRATEGIES = ("RollingRecreate", "OnDelete", "Coherent")


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", "-f", action="append", choices=FORMATS, dest="formats",
                        metavar="FORMAT",
                        help="text (default), json, sarif, github, junit; repeat for several")
    parser.add_argument("--output", "-o", action="append", dest="outputs", metavar="FILE",
                        help="write the matching --format (by position) to FILE; "
                             "formats without one go to stdout")
    parser.add_argument("--fail-on", choices=SEVERITIES, default=None,
                        help="lowest severity that fails the run (default: error)")
    parser.add_argument("--select", action="append", default=[], metavar="RULE",
                        help="only these rules: code, slug or prefix (DGD2); comma-separated "
                             "or repeated")
    parser.add_argument("--ignore", action="append", default=[], metavar="RULE",
                        help="skip these rules: code, slug or prefix")
    parser.add_argument("--dynamo-version", metavar="X.Y", default=None,
                        help="Dynamo release the flag tables describe: 1.3 to 1.7 (X.Y.Z "
                             "selects X.Y; default 1.6, the newest release whose runtime "
                             "dgdgen has run — 1.7's facts are from its source and release "
                             "notes, not run; see `dgdgen rules explain DGD201`)")
    parser.add_argument("--workers-run-by", metavar="BACKING", default=None,
                        choices=RUN_BY,
                        help="how the operator runs the DGD's worker pods: deployment "
                             "(default: Kubernetes Deployments, the managed rolling update "
                             "with hash-suffixed worker namespaces on every release), grove or "
                             "lws (hash-suffixed from 1.5, one shared namespace before), "
                             "unmanaged (old and new workers share one Dynamo namespace); with "
                             "--dynamo-version it decides what an in-place roll does")
    parser.add_argument("--grove-update-strategy", metavar="STRATEGY", default=None,
                        choices=GROVE_STRATEGIES,
                        help="with --workers-run-by grove: the update strategy of DGDs without "
                             "an nvidia.com/grove-update-strategy annotation (the annotation "
                             "wins): RollingRecreate (one pod at a time per component), "
                             "OnDelete (nothing rolls until pods are deleted) or Coherent "
                             "(prefill and decode replaced together, no surge; 1.6+); default: "
                             "the release's — Coherent for a graph with prefill and decode "
                             "workers on 1.6, RollingRecreate otherwise and on 1.7 (from its "
                             "DGD reference, not run)")
    parser.add_argument("--model-config", metavar="DIR", default=None,
                        help="the served model's files (a directory with its config.json, and "
                             "tokenizer_config.json if it has one): settles a context length or "
                             "dtype set on one revision only, which is otherwise assumed to "
                             "change (DGD205)")
    parser.add_argument("--config", metavar="FILE",
                        help="config file (default: .dgdgen.yaml in the current directory or "
                             "the repository root)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour in text output (default: auto, on a TTY)")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="text output: each finding whole — what the operator would do "
                             "with the change on your release and worker backing, why, the "
                             "sources, the full fix (default: one headline and one help line; "
                             "the JSON and SARIF reports always hold the whole text)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="files or directories (default: the staged YAML files)")
    parser.add_argument("--base", metavar="REV",
                        help="compare with this Git revision (default: HEAD)")
    add_output_arguments(parser)


def _split(values: list[str]) -> tuple[str, ...]:
    return tuple(v.strip() for item in values for v in item.split(",") if v.strip())


def options(args: argparse.Namespace, git_top: str | None) -> tuple[Any, Any]:
    """(engine Options, fail-on Severity or None) from the command line and the config file."""
    from dgdgen.check import config
    from dgdgen.check.engine import Options
    from dgdgen.check.findings import Severity
    from dgdgen.check.flags import normalize_release
    from dgdgen.errors import InputError

    path = config.find(args.config, git_top)
    cfg = config.load(path) if path else config.CheckConfig()
    release = normalize_release(args.dynamo_version or cfg.dynamo_version)
    from dgdgen.check.inplace import parse_run_by

    run_by = parse_run_by(args.workers_run_by or cfg.workers_run_by)
    grove_strategy = _grove_strategy(args.grove_update_strategy, cfg, release)
    fail_on_text = args.fail_on or cfg.fail_on or "error"
    if fail_on_text not in SEVERITIES:
        raise InputError(f"unknown fail-on severity {fail_on_text!r}",
                         hint=f"choose from {', '.join(SEVERITIES)}")
    fail_on = None if fail_on_text == "never" else Severity.parse(fail_on_text)
    opts = Options(
        release=release,
        run_by=run_by,
        grove_strategy=grove_strategy,
        select=_split(args.select) or cfg.select,
        ignore=_split(args.ignore) + cfg.ignore,
        suppressions=cfg.suppressions,
        model_config=_model_config(args.model_config or cfg.model_config),
    )
    return opts, fail_on


def _grove_strategy(option: str | None, cfg: Any, release: str) -> Any:
    """``--grove-update-strategy``, else the config file's ``check.grove-update-strategy`` (a
    value the release's operator does not accept: exit 2, at the config file's line)."""
    from dgdgen.check.inplace import parse_grove_strategy
    from dgdgen.errors import InputError

    if option is not None:
        try:
            return parse_grove_strategy(option, release)
        except InputError as exc:
            raise InputError(exc.message, field=("--grove-update-strategy",),
                             hint=exc.hint) from None
    if cfg.grove_strategy is None:
        return None
    try:
        return parse_grove_strategy(cfg.grove_strategy, release)
    except InputError as exc:
        field = ("check", "grove-update-strategy")
        raise InputError(exc.message, location=cfg.grove_strategy_location, field=field,
                         hint=exc.hint) from None


def _model_config(directory: str | None) -> Any:
    if directory is None:
        return None
    from dgdgen.check import modelconfig

    return modelconfig.load(directory)


def emit(report: Any, args: argparse.Namespace) -> None:
    from dgdgen.check.reporters import render
    from dgdgen.errors import InputError

    formats = args.formats or ["text"]
    outputs = args.outputs or []
    if len(outputs) > len(formats):
        raise InputError("more --output than --format options (pair each output with a format)")
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                       and "NO_COLOR" not in os.environ)
    rendered = []
    for i, fmt in enumerate(formats):
        target = outputs[i] if i < len(outputs) else None
        text = render(fmt, report, color=color and target is None and fmt == "text",
                      verbose=args.verbose)
        rendered.append((target, text))
    for target, text in rendered:  # write only after every format rendered
        if target is None or target == "-":
            sys.stdout.write(text)
        else:
            _write_report(target, text)


def _write_report(target: str, text: str) -> None:
    from dgdgen.write import write_file

    write_file(target, text.encode("utf-8"), what="report")


def run(args: argparse.Namespace) -> int:
    import gc

    from dgdgen.check import engine, sources
    from dgdgen.commands._common import keep_until_exit

    git = sources.git_top()
    opts, fail_on = options(args, git.top if git else None)
    # The cyclic collector stays paused for the whole check: the documents, facts and findings
    # live until the report is written, and each collection would walk all of them again
    # (about 10 % of a check of 20,000 files; docs/performance.md). They are frozen before it
    # runs again: they live until the process exits (keep_until_exit), and the first
    # collection after it is enabled would walk every object built since the documents were
    # frozen (0.36 s of CPU after a check of 20,000 files).
    enabled = gc.isenabled()
    gc.disable()
    try:
        files = sources.collect(list(args.paths), args.base)
        report = engine.run(files, opts, sources.sibling_loader(f.file for f in files))
        emit(report, args)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
    keep_until_exit(files, report)
    return 1 if report.failing(fail_on) else 0
