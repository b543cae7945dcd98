"""dgdgen render SPEC... -o DIR: write the manifests of a rollout."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from dgdgen.commands import _gitops
from dgdgen.commands._common import state_selector

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

HELP = "write the manifests of every step (or one step) of a rollout"
DESCRIPTION = """\
Render the manifests of a rollout, one file per object, byte-identical on every run. By default
every state is written in its own directory:

  DIR/step-00/       baseline: the stable generation as before the rollout
  DIR/step-NN/       each step of the plan
  DIR/rollback-NN/   the way back, where the surge budget forbids a direct return (the plan
                     lists these states and says why)
  DIR/rollback/      all traffic back on the stable generation (step-00's files, plus the drain
                     hook of the candidate it removes, planned from the last step)
  DIR/cleanup/       the candidate alone, the stable generation removed
  DIR/plan.json      the plan as data

With --step, only that state is written, directly into DIR. Every object is validated against the
upstream CRD schemas (strict) and their CEL rules before anything is written; the tree is
replaced atomically, so a failed or interrupted render leaves the previous one intact. The
objects are also checked against each other as a cluster would run them, state by state and at
every sync-wave moment of every transition (docs/invariants.md): a tree that would break an
invariant is not written, exit 1, each finding at its file and line. DIR is
replaced only when it holds nothing but what an earlier dgdgen write listed there: a file put
into it since (a picture, another command's output) is refused, exit 2, as is a DIR inside an
earlier output (--force replaces anyway). With several specs, each is written to
DIR/<rollout name>/.

Into a Git work tree (the rendered-manifests pattern, docs/gitops.md): --into PATH writes ONE
state — the one recorded in PATH/.dgdgen-index, the baseline at first, or --step N (which then
becomes the recorded state) — as the files Argo CD syncs, with sync waves for the transition. It
removes files it wrote before that are no longer part of the output and never touches files it
does not own. --commit commits exactly that directory; --init creates a repository at PATH
first (and refuses a PATH inside another work tree, such as a dgdgen checkout).
--check writes nothing and exits 1 with a unified diff when PATH is stale or was edited by hand
(for CI). --stdout prints one state as a YAML stream (what the Argo CD plugin runs).

examples:
  dgdgen render examples/vllm-disagg-block-size/rollout.yaml -o out/all/
  dgdgen render rollout.yaml -o deploy/ --step 2
  dgdgen render rollout.yaml -o deploy/ --step rollback
  dgdgen render rollout.yaml --into deploy/qwen --init
  dgdgen render rollout.yaml --into deploy/qwen --check
  dgdgen render rollout.yaml --stdout --state deploy/qwen
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs", nargs="+", metavar="SPEC", help="rollout spec file(s)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="DIR", help="directory to write (replaced)")
    where.add_argument(
        "--into", metavar="PATH", help="directory in a Git work tree: write one state there, "
        "keeping files dgdgen does not own (one SPEC only)"
    )
    where.add_argument(
        "--stdout", action="store_true", help="print one state as a YAML stream (one SPEC only)"
    )
    p.add_argument(
        "--check", action="store_true",
        help="with --into: write nothing; exit 1 with a diff when PATH is stale or hand-edited",
    )
    p.add_argument("--commit", action="store_true", help="with --into: commit PATH")
    p.add_argument(
        "--init", action="store_true",
        help="with --into: create a Git repository at PATH (implies --commit); refused when "
        "PATH is inside a work tree that is not its own",
    )
    p.add_argument(
        "--state", metavar="DIR", help="with --stdout: print the state recorded in DIR's index"
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--step", type=state_selector, metavar="N",
        help="render one state: a step number, baseline, rollback-NN, rollback or cleanup"
    )
    which.add_argument(
        "--all-steps", action="store_true", help="render every state (the default)"
    )
    p.add_argument(
        "--no-validate", action="store_true",
        help="skip validating the output against the CRD schemas (not recommended)",
    )
    p.add_argument(
        "--force", action="store_true",
        help="replace DIR even if it holds files no dgdgen write put there, or lies inside "
        "an earlier output",
    )


def run(args: argparse.Namespace) -> int:
    # --into: the premise before the imports (see _gitops.premise)
    early = _gitops.premise(args.into) if args.into else None
    from dgdgen.commands._common import progress
    from dgdgen.errors import InputError
    from dgdgen.pipeline.files import all_files, state_files
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render.manifest import file_component
    from dgdgen.write import write_tree

    specs = list(args.specs)
    gitops_flags = [f for f in ("check", "commit", "init") if getattr(args, f)]
    if gitops_flags and not args.into:
        raise InputError(f"--{gitops_flags[0]} needs --into PATH")
    if args.state and not args.stdout:
        raise InputError("--state needs --stdout")
    if (args.into or args.stdout) and len(specs) != 1:
        raise InputError("--into and --stdout take exactly one SPEC")
    if args.into:
        return _into(args, specs[0], early)
    if args.stdout:
        return _stdout(args, specs[0])
    plans = [prepare(path) for path in progress(specs, "planning")]
    names = [p.plan.rollout for p in plans]
    if len(set(names)) != len(names):
        raise InputError("two specs share a rollout name; each needs its own output directory")
    files: dict[str, str] = {}
    for prepared in progress(plans, "rendering", ""):
        prefix = f"{file_component(prepared.plan.rollout)}/" if len(plans) > 1 else ""
        if args.step is None:
            rendered = all_files(prepared, validate=not args.no_validate)
        else:
            state = prepared.state(args.step)
            rendered = state_files(prepared, state, validate=not args.no_validate)
        _invariants(rendered, os.path.join(args.output, prefix))
        files.update({prefix + k: v for k, v in rendered.items()})
    write_tree(args.output, files, force=args.force)
    for prepared in plans:
        _warn_images(prepared)
    sys.stderr.write(f"wrote {len(files)} file(s) to {os.path.relpath(args.output)}\n")
    return 0


def _into(args: argparse.Namespace, spec: str, early: _gitops.Premise | None) -> int:
    from dgdgen.gitops import actions, status
    from dgdgen.gitops.target import open_target

    target = open_target(spec, args.into, early=early)
    if args.init and target.top is not None \
            and os.path.realpath(target.top) != os.path.realpath(target.into):
        from dgdgen.errors import InputError, Location

        # Committing into someone else's work tree (the dgdgen checkout the README is read in,
        # an application repository) would put the rollout's commits on their branch.
        raise InputError(
            f"--init creates a repository for the rollout, but this directory is inside the Git "
            f"work tree {target.top}", location=Location(target.rel),
            hint="--into a directory outside any work tree (e.g. ../deploy), or commit into this "
            "one on purpose with --commit instead of --init",
        )
    if args.check:
        if args.step is not None:
            from dgdgen.errors import InputError

            raise InputError("--check compares with the recorded step; drop --step")
        diffs = status.check(target)
        if diffs:
            sys.stdout.write("".join(diffs))
            sys.stderr.write(
                f"{target.rel}: {len(diffs)} file(s) differ from a fresh render of the recorded "
                f"step; run `dgdgen render {spec} --into {target.rel}` and commit\n"
            )
            return 1
        sys.stderr.write(f"{target.rel}: up to date\n")
        return 0
    out = actions.render_into(
        target, args.step, force=args.force, commit=args.commit or args.init, init=args.init,
        validate=not args.no_validate,
    )
    for note in out.notes:
        sys.stderr.write(note + "\n")
    _warn_images(target.prepared)
    if target.top is None and not (args.commit or args.init):
        # Said every time: promote, rollback and the Argo CD Application all work on commits.
        sys.stderr.write(
            f"{os.path.relpath(target.into)}: not inside a Git work tree: files written, nothing "
            "committed; promote and rollback need a repository (--init creates one there)\n"
        )
    c = out.change
    sys.stderr.write(
        f"{os.path.relpath(target.into)}: {out.state.label}: {len(c.written)} written, "
        f"{len(c.removed)} removed, {len(c.unchanged)} unchanged"
        + (f"; committed {out.commit[:12]}" if out.commit else "") + "\n"
    )
    return 0


def _stdout(args: argparse.Namespace, spec: str) -> int:
    from dgdgen.errors import InputError
    from dgdgen.gitops import target as gitops_target
    from dgdgen.gitops import tree
    from dgdgen.pipeline.prepare import prepare

    prepared = prepare(spec)
    previous = None
    if args.state:
        if args.step is not None:
            raise InputError("give --step or --state, not both")
        target = gitops_target.Target(prepared, os.path.abspath(args.state), None)
        idx = tree.read_index(target.into)
        if idx is None:
            state = prepared.plan.steps[0]
        else:
            _idx, state, previous = gitops_target.current(target)
    else:
        state = prepared.state(0 if args.step is None else args.step)
        from dgdgen.render.waves import plan_previous

        previous = plan_previous(prepared.plan, state)
    files = gitops_target.state_files(prepared, state, previous,
                                      validate=not args.no_validate)
    sys.stdout.write("".join(
        ("---\n" if i else "") + text for i, (_name, text) in enumerate(sorted(files.items()))
    ))
    return 0


def _invariants(files: dict[str, str], root: str) -> None:
    """Refuse (exit 1, nothing written) a tree that would break an invariant on a cluster
    (docs/invariants.md); print its warnings."""
    from dgdgen.cluster.check import check_files, require

    for f in require(check_files(files, os.path.normpath(root))):
        sys.stderr.write(f"{f.file}:{f.line}:{f.column}: warning: {f.code} {f.slug}: "
                         f"{f.message}\n")


def _warn_images(prepared: Prepared) -> None:
    """Once per spec, once the files are written, whichever states they are: the rollout
    reaches the others later."""
    import warnings

    from dgdgen.errors import InputWarning
    from dgdgen.render import images

    text = images.warning(prepared)
    if text is not None:  # printed by the CLI as `dgdgen render: warning: ...`
        warnings.warn(text, InputWarning, stacklevel=2)
