"""`dgdgen rules list|explain`: the rule catalogue."""

from __future__ import annotations

import argparse
import sys

HELP = "list the checker's rules, or explain one"
DESCRIPTION = """\
`dgdgen rules list` prints every rule: code, slug, severity, whether it needs a base revision,
and its summary. `dgdgen rules explain CODE` prints one rule's documentation (what, why with
the upstream citation, a failing and a passing example, the fix). CODE may be a slug, or an
invariant of the rendered objects that `verify` and `render` report (CLU101 ...).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = sub.add_parser(
        "list", help="list the rules",
        description="Print every rule of the checker: its code, slug, severity, whether it "
        "needs a base revision (a diff), and its one-line summary.",
    )
    lst.add_argument("--format", choices=("text", "json"), default="text",
                     help="text: one aligned line per rule; json: the catalogue as data "
                     "(default: text)")
    exp = sub.add_parser(
        "explain", help="explain one rule",
        description="Print one rule's documentation: what it flags, why (with the upstream "
        "citation), a failing and a passing example, and the fix.",
    )
    exp.add_argument("code", metavar="CODE", help="rule code or slug, e.g. DGD201")


def run(args: argparse.Namespace) -> int:
    from dgdgen.check import docs

    if args.action == "list":
        sys.stdout.write(docs.listing(json_format=args.format == "json"))
        return 0
    invariant = _invariant(args.code)
    sys.stdout.write(invariant if invariant is not None else docs.explain(args.code))
    return 0


def _invariant(code_or_slug: str) -> str | None:
    """The page of the invariant ``code_or_slug`` (CLU rules, which `dgdgen verify` and
    `render` report), or None when it names none."""
    from dgdgen.cluster.docs import page
    from dgdgen.cluster.rules.registry import RULES

    for module in RULES.values():
        meta = module.RULE
        if code_or_slug.upper() == meta.code or code_or_slug.lower() == meta.slug:
            return page(meta)
    return None
