"""DGD205 derived-default-in-place."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.headline import what_changed
from dgdgen.check.rules import RuleMeta

RULE = RuleMeta(
    code="DGD205",
    slug="derived-default-in-place",
    severity=Severity.ERROR,
    summary="A worker setting moves between an explicit value and the default the engine "
            "derives from the model's files, in place: the checker cannot tell whether it "
            "changes, so isolation is required (assumed) until the model's files or a reason "
            "settle it.",
    rationale=(
        "Some ModelDeploymentCard and KV-transfer inputs have no fixed default: left unset, the "
        "engine derives them from the model's own files. The context length is one: vLLM's "
        "`--max-model-len`, SGLang's `--context-length` and TRT-LLM's `--max-seq-len` / "
        "`max_seq_len` default to a maximum the model's config.json declares, and the card "
        "takes the engine's value (ai-dynamo 1.6.1 dynamo/vllm/main.py `context_length = "
        "model_config.max_model_len`, dynamo/sglang/register.py `context_length = "
        "server_args.context_length`, dynamo/trtllm/backend_args.py \"If unspecified, the value "
        "is deduced from the model config\"; lib/llm/src/model_card.rs "
        "`effective_context_length()`). The model dtype is another: vLLM's and SGLang's "
        "`--dtype` default to `auto`, the `torch_dtype` of the model's config.json, and the KV "
        "cache follows it (a KV-transfer input of a disaggregated graph). Adding such a flag, "
        "or removing it, changes the card or the KV layout only when the value differs from "
        "the derived one — and it usually does: lowering the context length is the common "
        "reason to set the flag. A safety gate that cannot tell must not pass, so the change "
        "is assumed to demand isolation: the JSON report's `isolation_required` is true and "
        "the category is listed under `assumed` (not `categories`, which holds what is known). "
        "`--model-config DIR` settles it exactly where the files decide it (vLLM's context "
        "length and dtype, SGLang's context length): the same value is then safe, another a "
        "real change (DGD201 / DGD202). A change between two explicit values is always a real "
        "change."
    ),
    remediation=(
        "Give the checker the model's files: `--model-config DIR` (a directory with the "
        "model's config.json, and its tokenizer_config.json if it has one, e.g. the Hugging "
        "Face snapshot) settles it. Or set the flag on both revisions, so the comparison is "
        "exact. Or, when you know the derived value equals the new one, suppress this finding "
        "with that reason (`dgdgen.dev/ignore-DGD205: \"config.json max_position_embeddings "
        "is 16384\"` on the DGD): a suppression with a reason settles the assumption and "
        "stays in every report. Otherwise roll the change out with dgdgen (`plan` / `render`)."
    ),
    help="give `--model-config DIR`, or set the flag on both revisions",
    needs_base=True,
)


def check(ctx: Context) -> Iterator[Finding]:
    for pair in ctx.dgds:
        if pair.verdict is None or pair.base is None or not pair.verdict.in_place:
            continue
        for change in pair.verdict.changes:
            if not change.assumed:
                continue
            line, col = ctx.location_of_change(pair, change)
            # The finding carries the category of the input it could not resolve, so a
            # consumer of the report tells an unresolved card input from a KV-transfer one.
            category = change.category.value
            yield RULE.finding(
                file=pair.head.file, line=line, column=col,
                message=f"{what_changed(change)}: unset, the model's files decide: "
                        f"{category} change assumed",
                details=f"{change.component}: {change.reason}. Isolation required (assumed "
                        f"{category}): {change.assumed}",
                object=pair.head.object, component=change.component, key=change.key,
                category=category,
            )
