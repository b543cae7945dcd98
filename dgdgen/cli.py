"""The command line: argument parsing, output streams and exit codes live here and nowhere else.

Every subcommand is a module in :mod:`dgdgen.commands` with ``HELP`` (one line), ``DESCRIPTION``
(the ``--help`` text), ``add_arguments(parser)`` and ``run(args) -> int``. Those modules import
only the standard library at import time, so ``dgdgen --help`` stays fast; the work (and the
heavy libraries) is imported inside ``run``.

Exit codes: 0 clean, 1 findings at or above the failing severity (or a failed gate), 2 bad input
or usage. Commands may document further codes (``analyze`` uses 3 for Inconclusive). Anything
else that goes wrong is a defect in dgdgen: it exits 70 (EX_SOFTWARE) with a "please report"
line, never 1, which CI would read as findings.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

from dgdgen import __version__

# name -> module; the order is the order of `dgdgen --help`.
COMMANDS: dict[str, str] = {
    "validate": "dgdgen.commands.validate",
    "plan": "dgdgen.commands.plan",
    "render": "dgdgen.commands.render",
    "verify": "dgdgen.commands.verify",
    "schema": "dgdgen.commands.schema",
    "check": "dgdgen.commands.check",
    "diff": "dgdgen.commands.diff",
    "rules": "dgdgen.commands.rules",
    "traffic": "dgdgen.commands.traffic",
    "analyze": "dgdgen.commands.analyze",
    "experiment": "dgdgen.commands.experiment",
    "status": "dgdgen.commands.status",
    "explain": "dgdgen.commands.explain",
    "history": "dgdgen.commands.history",
    "promote": "dgdgen.commands.promote",
    "gate": "dgdgen.commands.gate",
    "rollback": "dgdgen.commands.rollback",
    "cleanup": "dgdgen.commands.cleanup",
    "pause": "dgdgen.commands.pause",
    "resume": "dgdgen.commands.resume",
    "argo": "dgdgen.commands.argo",
    "policy": "dgdgen.commands.policy",
    "rehearse": "dgdgen.commands.rehearse",
}

EPILOG = """\
exit codes: 0 clean, 1 findings at or above --fail-on (or a failed gate), 2 bad input or usage,
3 an inconclusive gate (`dgdgen analyze`) or a rehearsal that could not run (`dgdgen rehearse`),
4 a rollout held by `dgdgen pause` (`promote`, `cleanup`), 70 an internal error (please report it).
Run `dgdgen COMMAND --help` for the options of one command.
"""


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, its width found as ``shutil.get_terminal_size`` finds it, without
    importing shutil: argparse builds a formatter for every argument it is given (to check its
    metavar), and shutil imports bz2 and lzma, about 4 ms of every start (docs/performance.md).
    The width only matters when help is printed."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size`` gives it: ``$COLUMNS``, else that of
    the terminal standard output is, else 80."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0 and sys.__stdout__ is not None:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors exit 2, as argparse does, but tidily
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, just that one command (a run parses one command's
    words: building every subcommand's parser, with argparse's help formatter and message
    catalogue lookups, cost about 15 ms of each start; docs/performance.md)."""
    parser = _Parser(
        prog="dgdgen",
        description=(
            "Progressive, GitOps rollouts for NVIDIA Dynamo DynamoGraphDeployments: expand a "
            "rollout spec into the manifests of every step, and check DGD changes for rollout "
            "hazards."
        ),
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"dgdgen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(module_name)
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            formatter_class=_Formatter,
        )
        module.add_arguments(p)
        # Only where they act: `schema` reads nothing, `verify` reads YAML but no spec's `dgd:`.
        common = getattr(module, "COMMON_OPTIONS", ("--max-input-size", "--allow-outside-paths"))
        if "--max-input-size" in common:
            p.add_argument(
                "--max-input-size", metavar="SIZE", default=None,
                help="largest YAML file read, e.g. 8M, 64M (default 8M): larger files are "
                     "refused, not read",
            )
        if "--allow-outside-paths" in common:
            p.add_argument(
                "--allow-outside-paths", action="store_true",
                help="let a spec's `dgd:` name a file outside the spec's Git repository (or, "
                     "outside one, the spec's folder)",
            )
        p.set_defaults(_module=module, _parser=p)
        for action in p._actions:  # `traffic show`, `rules list` ...: errors name the action too
            if isinstance(action, argparse._SubParsersAction):
                for sp in action.choices.values():
                    sp.set_defaults(_parser=sp)
    return parser


def _no_plugin_loader() -> None:
    """With every pydantic plugin disabled, stand in for ``pydantic.plugin._loader``.

    pydantic's loader answers ``get_plugins() == ()`` when ``PYDANTIC_DISABLE_PLUGINS`` is
    ``__all__``, ``1`` or ``true``, but importing it imports ``importlib.metadata`` (and with it
    ``email``, ``zipfile``, ``csv``...) first: about 10 ms of every spec command. This module
    answers the same without that import (tests/test_startup.py compares the two). Any other
    setting, e.g. a list of plugin names, leaves pydantic's own loader in place."""
    import os

    if (os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in ("__all__", "1", "true")
            or "pydantic.plugin._loader" in sys.modules):
        return
    import types

    loader = types.ModuleType("pydantic.plugin._loader", _no_plugin_loader.__doc__)
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules["pydantic.plugin._loader"] = loader


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), None)
    if command in COMMANDS and not {"-h", "--help"} & set(words[:words.index(command)]):
        parser = build_parser(command)
    else:  # no command, an unknown one, or `dgdgen --help ...`: the whole command line
        parser = build_parser()
    args, extra = parser.parse_known_args(words)
    if extra:  # reported by the subcommand, with its usage and its name
        getattr(args, "_parser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    import os
    import warnings

    # dgdgen's models use no pydantic plugin, and looking for plugins reads the entry points of
    # every installed distribution (10-20 ms of each run; docs/performance.md). An explicit
    # setting is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    _no_plugin_loader()

    from dgdgen.errors import InputWarning

    previous = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *a: object, **k: object) -> None:
        if issubclass(category, InputWarning):
            sys.stderr.write(f"{args._parser.prog}: warning: {message}\n")
        else:
            previous(message, category, *a, **k)  # type: ignore[arg-type]

    with warnings.catch_warnings():  # filters and the handler are restored after the run
        warnings.simplefilter("always", InputWarning)
        warnings.showwarning = show
        return _run(args, parser)


def console() -> NoReturn:
    """The ``dgdgen`` command (the console script, ``python -m dgdgen``): :func:`main`, with two
    costs of a short run taken away that are not dgdgen's work (docs/performance.md):

    * the cyclic garbage collector, which otherwise runs every 700 allocations while modules and
      models are built, although nothing built then is garbage: its youngest generation is
      collected every 100,000 allocations instead;
    * the interpreter's teardown, which frees every object one by one just before the process
      ends (about 5 % of a ``dgdgen validate``): once :func:`main` has returned, the exit handlers
      run, the output streams are flushed and the process ends. With a thread still running, the
      normal exit (which waits for it) is kept.
    """
    import gc
    import os

    gc.set_threshold(100_000, *gc.get_threshold()[1:])
    code = main()
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        raise SystemExit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader went away (as `main` treats it), or
            pass  # the stream was closed: not an error
        except OSError as exc:  # e.g. a full disk behind a redirect
            if stream is sys.stdout:
                sys.stderr.write(f"dgdgen: error: writing the output: {exc}\n")
                code = code or 2
    os._exit(code)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from dgdgen.commands._common import report_error
    from dgdgen.errors import DgdgenError

    try:
        from dgdgen.plan.load import allow_outside_paths

        _set_limits(getattr(args, "max_input_size", None), parser)  # every run starts from the
        allow_outside_paths(bool(getattr(args, "allow_outside_paths", False)))  # defaults
        return int(args._module.run(args))
    except DgdgenError as exc:
        report_error(args._parser.prog.removeprefix("dgdgen "), exc)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the file system said no (read-only, full, /proc, a loop): exit 2
        where = f"{exc.filename}: " if exc.filename else ""
        report_error(args._parser.prog.removeprefix("dgdgen "),
                     Exception(f"{where}{exc.strerror or exc}"))
        return 2
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a defect, not "findings"
        sys.stderr.write(
            f"{args._parser.prog}: internal error: {_where(exc)}\n"
            "this is a defect in dgdgen, not in your input's findings; please report it with the "
            "command line and the input files\n"
        )
        return EX_SOFTWARE


EX_SOFTWARE = 70  # sysexits.h: internal software error


def _where(exc: BaseException) -> str:
    """``ValueError: message (dgdgen/x.py:12)``: one line for the report, no traceback."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "dgdgen" in f.filename] or frames
    text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
    if ours:
        f = ours[-1]
        text += f" (at {f.filename.rsplit('dgdgen', 1)[-1].lstrip('/')}:{f.lineno})"
    return text


def _set_limits(size: str | None, parser: argparse.ArgumentParser) -> None:
    from dgdgen.yamlio import limits as yamllimits

    if size is None:
        yamllimits.set_limits(yamllimits.Limits())
        return
    try:
        limit = yamllimits.parse_size(size)
    except ValueError as exc:
        parser.error(f"--max-input-size: {exc}")
    yamllimits.set_limits(dataclasses.replace(yamllimits.get_limits(), max_bytes=limit))
