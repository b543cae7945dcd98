"""Figures of `dgdgen policy`: the policy's size per Dynamo release (bytes of the YAML, number
of CEL expressions, their total length), the static cost estimate (dgdgen/policy/cost.py) at a
few list / string bounds, and the time one UPDATE takes to evaluate with cel-python and with
cel-cpp (median over the corpus pairs).

    python benchmarks/bench_policy.py

Prints Markdown; docs/policy.md quotes it.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dgdgen.check.classify import pair_dgds
from dgdgen.check.flags import RELEASES
from dgdgen.model.dgd import read_dgds
from dgdgen.policy import Options, build
from dgdgen.policy.cost import PER_CALL_LIMIT, RUNTIME_BUDGET, estimate
from dgdgen.policy.evaluate import evaluate
from dgdgen.policy.schema import expressions
from dgdgen.yamlio import dump_all, load_file

CORPUS = REPO / "tests" / "check" / "corpus"


def main() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print()
    print("| release | YAML bytes (policy + binding) | CEL expressions | variables | CEL characters |")
    print("| --- | --- | --- | --- | --- |")
    for rel in RELEASES:
        docs = build(Options(dynamo_version=rel))
        exprs = list(expressions(docs[0]))
        print(f"| {rel} | {len(dump_all(docs).encode())} | {len(exprs)} | "
              f"{len(docs[0]['spec']['variables'])} | {sum(len(s) for _, s in exprs)} |")
    print()
    policy = build(Options())[0]
    print(f"| components | argument words | env entries | string length | total cost (budget "
          f"{RUNTIME_BUDGET:,}) | dearest expression (limit {PER_CALL_LIMIT:,}) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for comps, args, env, length in ((4, 16, 8, 128), (8, 32, 16, 256), (8, 48, 16, 256),
                                     (16, 64, 32, 256)):
        est = estimate(policy, n=comps, length=length, components=comps, args=args,
                       env=env)
        top = max(est, key=lambda e: e.cost)
        print(f"| {comps} | {args} | {env} | {length} | {sum(e.cost for e in est):,} | "
              f"{top.cost:,} ({top.path}) |")
    print()
    pairs = []
    for case in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        old = read_dgds(load_file(str(case / "old.yaml")))
        new = read_dgds(load_file(str(case / "new.yaml")))
        pairs += [(b.doc, h.doc) for b, h in pair_dgds(old, new) if b is not None]
    evaluate(policy, *pairs[0])  # compile once
    py = []
    for old, new in pairs:
        t = time.perf_counter()
        evaluate(policy, old, new)
        py.append(time.perf_counter() - t)
    line = f"one UPDATE, median over {len(pairs)} corpus pairs: cel-python {statistics.median(py) * 1000:.0f} ms"
    try:
        from dgdgen.policy import typecheck

        typecheck.evaluate(policy, *pairs[0])
        cpp = []
        for old, new in pairs:
            t = time.perf_counter()
            typecheck.evaluate(policy, old, new)
            cpp.append(time.perf_counter() - t)
        line += f", cel-cpp {statistics.median(cpp) * 1000:.1f} ms"
    except ImportError:
        pass
    print(line)


if __name__ == "__main__":
    main()
