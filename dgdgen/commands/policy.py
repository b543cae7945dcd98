"""`dgdgen policy render|test`: the in-place rules as a ValidatingAdmissionPolicy."""

from __future__ import annotations

import argparse
import sys

HELP = "emit the in-place rules (DGD201-203) as a Kubernetes ValidatingAdmissionPolicy"
DESCRIPTION = """\
`dgdgen policy render` prints a ValidatingAdmissionPolicy and its binding
(admissionregistration.k8s.io/v1, Kubernetes >= 1.30) that make the API server refuse an UPDATE
of a DynamoGraphDeployment (nvidia.com v1alpha1 and v1beta1) which changes, in place, a
ModelDeploymentCard checksum input of a worker (DGD201), a KV-transfer / KV-layout setting of a
disaggregated graph (DGD202) or a worker / frontend image (DGD203) - the checker's rules, built
from its flag tables for --dynamo-version. Changes made with `kubectl edit`, Helm or another
controller are caught too.

Escape hatch: an update that sets the annotation dgdgen.dev/allow-in-place-change to a reason
(new for this update) is admitted; the audit log records the reason and the changes under
`<policy>/in-place-override`. A dgdgen candidate beside its stable DGD is never denied.

`dgdgen policy test OLD NEW` evaluates the policy's CEL on the UPDATE from each DGD in OLD to the
same DGD in NEW, as the API server would, and prints the verdict.

examples:
  dgdgen policy render --dynamo-version 1.5 > dgd-in-place-policy.yaml
  dgdgen policy render --action Warn --action Audit -o policy.yaml
  dgdgen policy test live.yaml edited.yaml

exit codes: 0 written / admitted, 1 `test`: an update would be denied, 2 bad input or usage.
See docs/policy.md (what the CEL can and cannot see).
"""


def _add_policy_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dynamo-version", metavar="VERSION",
                   help="the Dynamo release whose flag tables to use (default: the newest)")
    p.add_argument("--workers-run-by", choices=("deployment", "grove", "lws", "unmanaged"),
                   default=None, metavar="BACKING",
                   help="how the operator runs the worker pods (deployment, the default: "
                        "hash-suffixed worker namespaces; grove / lws: from 1.5; unmanaged: "
                        "one shared namespace): what the denial message says an in-place "
                        "roll would do")
    p.add_argument("--action", action="append", dest="actions", metavar="ACTION",
                   choices=("Deny", "Warn", "Audit"),
                   help="validationActions of the binding, repeatable (default: Deny); Deny "
                        "and Warn cannot be combined")
    p.add_argument("--failure-policy", choices=("Fail", "Ignore"), default="Fail",
                   help="what the API server does when the CEL cannot be evaluated "
                        "(default: Fail, the update is refused)")
    p.add_argument("--name", default=None, metavar="NAME",
                   help="name of the policy and binding (default: dgdgen-dgd-in-place-changes)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    render = sub.add_parser(
        "render", help="print the policy and its binding (YAML)",
        description="Print the ValidatingAdmissionPolicy and its binding for the chosen Dynamo "
        "release and action, validated against the admissionregistration.k8s.io/v1 schema.")
    _add_policy_options(render)
    render.add_argument("--output", "-o", metavar="FILE",
                        help="write to FILE (atomically) instead of standard output")
    test = sub.add_parser(
        "test", help="evaluate the policy on the UPDATE OLD -> NEW",
        description="Evaluate the policy's CEL (as the API server would on an UPDATE) on two DGD "
        "files and print whether the change is admitted, with the messages.")
    test.add_argument("old", metavar="OLD", help="the DGD file as stored in the cluster")
    test.add_argument("new", metavar="NEW", help="the DGD file as it would be applied")
    _add_policy_options(test)


def _options(args: argparse.Namespace) -> object:
    from dgdgen.policy import DEFAULT_NAME, Options

    return Options(dynamo_version=args.dynamo_version, workers_run_by=args.workers_run_by,
                   actions=tuple(args.actions or ("Deny",)),
                   failure_policy=args.failure_policy, name=args.name or DEFAULT_NAME)


def _build(args: argparse.Namespace) -> list[dict[str, object]]:
    import re

    from dgdgen.errors import InputError
    from dgdgen.policy import Options, build, violations

    options = _options(args)
    assert isinstance(options, Options)
    if len(options.name) > 253 or not re.fullmatch(
            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", options.name):
        raise InputError(f"--name {options.name!r} is not a valid object name (a DNS-1123 "
                         "subdomain: lower-case letters, digits, '-' and '.')")
    docs = build(options)
    problems = [f"{d['kind']} {p}" for d in docs for p in violations(d)]
    if problems:  # a defect of dgdgen, never of the input: say so plainly
        raise InputError("the generated policy does not validate: " + "; ".join(problems))
    return docs


def _render(args: argparse.Namespace) -> int:
    from dgdgen.yamlio import dump_all

    text = dump_all(_build(args))
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
        return 0
    from dgdgen.write import write_file

    write_file(args.output, text.encode("utf-8"), what="policy")
    return 0


def _test(args: argparse.Namespace) -> int:
    from dgdgen.check.classify import pair_dgds
    from dgdgen.errors import InputError
    from dgdgen.model.dgd import read_dgds
    from dgdgen.policy.evaluate import evaluate
    from dgdgen.yamlio import load_file

    policy = _build(args)[0]
    old = read_dgds(load_file(args.old))
    new = read_dgds(load_file(args.new))
    if not new:
        raise InputError(f"{args.new}: no DynamoGraphDeployment in the file")
    denied = False
    for base, head in pair_dgds(old, new):
        ns = f"{head.namespace}/" if head.namespace else ""
        obj = f"DynamoGraphDeployment/{ns}{head.name}"
        if base is None:
            sys.stdout.write(f"{obj}: not in {args.old} (a CREATE: the policy matches only "
                             "UPDATE)\n")
            continue
        out = evaluate(policy, base.doc, head.doc)
        if not out.matched:
            sys.stdout.write(f"{obj}: admitted (a match condition excludes this update)\n")
            continue
        for err in out.errors:
            denied |= args.failure_policy == "Fail"
            sys.stdout.write(f"{obj}: CEL error ({args.failure_policy}): {err}\n")
        for _, message in out.denied:
            denied = True
            sys.stdout.write(f"{obj}: denied: {message}\n")
        for key, value in sorted(out.audit.items()):
            sys.stdout.write(f"{obj}: audit annotation {key}: {value}\n")
        if not out.denied and not out.errors:
            sys.stdout.write(f"{obj}: admitted\n")
    return 1 if denied else 0


def run(args: argparse.Namespace) -> int:
    if args.action == "render":
        return _render(args)
    return _test(args)
