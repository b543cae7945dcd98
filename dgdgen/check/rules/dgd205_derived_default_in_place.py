"""DGD205 derived-default-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.rules import RuleMeta

RULE = RuleMeta(
    code="DGD205",
    slug="derived-default-in-place",
    severity=Severity.WARNING,
    summary="A worker setting moves between an explicit value and the default the engine "
            "derives from the model's files, in place: the checker cannot tell whether it "
            "changes.",
    rationale=(
        "Some ModelDeploymentCard inputs have no fixed default: left unset, the engine derives "
        "them from the model's own files, which the checker does not read. The context length "
        "is one: vLLM's `--max-model-len`, SGLang's `--context-length` and TRT-LLM's "
        "`--max-seq-len` / `max_seq_len` default to the maximum the model's config.json "
        "declares, and the card takes the engine's value (ai-dynamo 1.6.1 "
        "dynamo/vllm/handlers.py `context_length = self.model_max_len`, "
        "dynamo/sglang/register.py, dynamo/trtllm/backend_args.py \"If unspecified, the value "
        "is deduced from the model config\"; lib/llm/src/model_card.rs "
        "`effective_context_length()`). The model dtype is another: vLLM's and SGLang's "
        "`--dtype` default to `auto`, the `torch_dtype` of the model's config.json, and the KV "
        "cache follows it (a KV-transfer input of a disaggregated graph). Adding such a flag, "
        "or removing it, changes the card or the KV layout only when the value differs from the derived one, so the change is reported as "
        "undecided: neither as a checksum change (DGD201) nor as safe. The JSON report's "
        "`isolation_required` is then null and the category is listed under `cannot_tell`. A "
        "change between two explicit values is a real change and DGD201's."
    ),
    remediation=(
        "Look up the value the engine derives (the model's config.json: "
        "`max_position_embeddings` for the context length, `torch_dtype` for the dtype; or "
        "the worker's log line): if it differs, treat the change "
        "as a checksum change and roll it out with dgdgen (`plan` / `render`); if it is the "
        "same, suppress this finding with that reason. Setting the flag on both revisions "
        "makes the comparison exact."
    ),
    needs_base=True,
)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        if pair.verdict is None or pair.base is None or not pair.verdict.in_place:
            continue
        for change in pair.verdict.changes:
            if not change.cannot_tell:
                continue
            line, col = ctx.location_of_change(pair, change)
            yield RULE.finding(
                file=pair.head.file, line=line, column=col,
                message=f"{change.component}: {change.reason}: a {change.category.value} "
                        "change only if the value differs from the derived one",
                object=pair.head.object, component=change.component,
                key=f"{change.field}\x1f{change.old}\x1f{change.new}",
            )
