"""DGD101 dynamo-namespace-prefix."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import KIND, Dgd, dynamo_namespace

RULE = RuleMeta(
    code="DGD101",
    slug="dynamo-namespace-prefix",
    severity=Severity.ERROR,
    summary="Two DGDs in one Kubernetes namespace where one Dynamo namespace is a prefix of the "
            "other: the frontends cross-talk.",
    rationale=(
        "The operator derives the Dynamo namespace as {k8s-namespace}-{dgd-name} (PR #4126) and "
        "a frontend discovers every namespace that string-starts-with its own "
        "(lib/llm/src/namespace.rs NamespaceFilter::Prefix). The frontend "
        "of `qwen` therefore also routes to the workers of `qwen-canary` (or `qwen2`) in the "
        "same Kubernetes namespace: a canary gets production traffic, or the model is split "
        "between two cards. Observed on Dynamo 1.6.1: a frontend selecting `inference-foo` by "
        "prefix split one model's requests 11/19 across `inference-foo` and `inference-foo-bar` "
        "although their checksums differed (runtime-verified by "
        "tests/check/test_runtime_truth.py)."
    ),
    remediation=(
        "Rename one DGD so neither name is a prefix of the other (e.g. `qwen-stable` and "
        "`qwen-canary`), or put them in different Kubernetes namespaces. `dgdgen render` "
        "generates non-overlapping generation names."
    ),
    help="rename one DGD so neither name is a prefix of the other",
)


# A namespace that only a scalar containing its text can be read as: a DNS label with a letter.
# (A sibling's `namespace: 0x1f`, `yes` or `-.inf` is read as 31, True or -inf, none of them in
# its text; with a namespace like that, every DGD sibling is parsed.)
_LITERAL_NAMESPACE = re.compile(r"^(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check(ctx: Context) -> Iterator[Finding]:
    # DGDs of the checked files, plus those rendered next to them (a pre-commit run sees only
    # the changed files; the other half of a conflicting pair usually sits in the same folder).
    # (file, the checked DGD or None for a sibling, object); a line is looked up for a finding
    entries: dict[tuple[str | None, str], tuple[str, Dgd | None, str]] = {}
    for pair in ctx.dgds:
        h = pair.head
        entries.setdefault((h.namespace, h.name), (h.file, h.dgd, h.object))
    # Only siblings that can be a DGD in the namespace of a checked one (no namespace being a
    # group of its own) can conflict: the others are not parsed (a textual pre-filter,
    # sources.could_contain, and the namespace a file's head declares, siblings.head_namespace).
    require = [["DynamoGraphDeployment"]]
    namespaces = frozenset(pair.head.namespace for pair in ctx.dgds)
    if all(ns is not None and _LITERAL_NAMESPACE.match(ns) for ns in namespaces):
        require.append(sorted(ns for ns in namespaces if ns is not None))
    # Sibling DGDs come as facts (name, namespace), those that do not parse left out: a broken
    # neighbour is not this check's business. The siblings of a file are those of its folder:
    # asked for once per folder (each question costs as much as the namespaces asked about,
    # and a folder of 5,000 DGDs in as many namespaces asked 5,000 times: 0.9 s).
    folders: set[str] = set()
    for pair in ctx.dgds:
        folder = os.path.dirname(pair.head.file)
        if folder in folders:
            continue
        folders.add(folder)
        for sib in ctx.siblings(pair.head.file, require, namespaces):
            if sib.kind == KIND:
                entries.setdefault((sib.namespace, sib.name),
                                   (sib.file, None, f"{KIND}/{sib.name}"))
    by_ns: dict[str | None, list[str]] = {}
    for ns, name in entries:
        by_ns.setdefault(ns, []).append(name)
    for ns, names in sorted(by_ns.items(), key=lambda kv: kv[0] or ""):
        dyn = {n: dynamo_namespace(ns or "<namespace>", n) for n in names}
        # In sorted order every string that starts with `a` directly follows `a`, so each scan
        # stops at the first non-match: O(n log n) for thousands of DGDs (by index: a slice of
        # the rest for each name would copy O(n²) entries).
        ordered = sorted(names, key=lambda n: (dyn[n], n))
        for i, short in enumerate(ordered):
            for j in range(i + 1, len(ordered)):
                long = ordered[j]
                if not dyn[long].startswith(dyn[short]):
                    break
                if dyn[long] == dyn[short]:
                    continue
                # Report on the checked one of the pair (the longer name when both are checked).
                for name, other in ((long, short), (short, long)):
                    file, dgd, obj = entries[(ns, name)]
                    if dgd is not None:
                        loc = dgd.location(("metadata", "name"))
                        yield RULE.finding(
                            file=file, line=loc.line, column=loc.column,
                            message=(f"Dynamo namespace of DGD {short!r} ({dyn[short]}) is a "
                                     f"prefix of that of {long!r} ({dyn[long]}): the frontend "
                                     f"of {short!r} also discovers the workers of {long!r}"),
                            object=obj, key=other,
                        )
                        break
