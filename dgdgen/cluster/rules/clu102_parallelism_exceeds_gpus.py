"""CLU102 parallelism-exceeds-gpus."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.facts import dgd_facts
from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.model import dgd_of
from dgdgen.cluster.rules import InvariantMeta, Tree, object_name
from dgdgen.model.parallelism import needed

RULE = InvariantMeta(
    code="CLU102",
    slug="parallelism-exceeds-gpus",
    severity=Severity.ERROR,
    summary="A worker's engine parallelism needs more GPUs than its pods ask for.",
    rationale=(
        "An engine with tensor parallelism TP and pipeline parallelism PP needs TP × PP GPUs per "
        "replica (× the data-parallel ranks it runs itself: vLLM's `--data-parallel-size`, "
        "SGLang's `--dp-size` without DP attention, which shares the TP GPUs instead). A pod "
        "that asks for fewer never starts its engine: it never becomes Ready, the operator "
        "keeps the old pods and the sync never finishes — or, in a separate generation, the "
        "generation never gets workers. A change of `--tensor-parallel-size` carried by the "
        "candidate's args alone leaves the GPUs its pods ask for as they were."
    ),
    remediation=(
        "Give the component the GPUs its parallelism needs with the change "
        "(`spec.candidate.components.<name>.gpus`), or keep the parallelism."
    ),
    help="give the component the GPUs its parallelism needs",
    finding_of="the fourth review, finding 2: `isolation: auto` called a vLLM "
               "--tensor-parallel-size 1 → 2 change safe to roll in place while the new pods "
               "asked for 1 GPU",
)


def check(tree: Tree) -> Iterator[Finding]:
    seen: set[tuple[str, str, str, int, int]] = set()
    for state in tree.states:
        for key, doc in sorted(state.objects.items()):
            dgd = dgd_of(doc)
            if dgd is None:
                continue
            facts = dgd_facts(dgd)
            for comp in facts.workers():
                have = dgd.components[comp.name].gpus_per_replica
                need = needed(dgd.components[comp.name].backend,
                              {k: v.value or "" for k, v in comp.flags.items()})
                if not have or need is None or need <= have:
                    continue
                if (key[1], key[2], comp.name, need, have) in seen:
                    continue
                seen.add((key[1], key[2], comp.name, need, have))
                loc = state.documents[key].location(dgd.components[comp.name].path)
                yield RULE.finding(
                    file=loc.file, line=loc.line, column=loc.column, object=object_name(key),
                    key=f"{comp.name}|{need}|{have}",
                    message=f"{state.label}: {comp.name}'s engine needs {need} GPU(s) per "
                            f"replica by its parallelism, its pods ask for {have}: they never "
                            "become Ready",
                )
