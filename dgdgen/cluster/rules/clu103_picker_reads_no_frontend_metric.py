"""CLU103 picker-reads-no-frontend-metric."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dgdgen import yamlio
from dgdgen.check.findings import Finding, Severity
from dgdgen.cluster.rules import InvariantMeta, Tree, list_of, mapping_at, object_name
from dgdgen.errors import DgdgenError

RULE = InvariantMeta(
    code="CLU103",
    slug="picker-reads-no-frontend-metric",
    severity=Severity.ERROR,
    summary="An InferencePool's endpoint picker scores Dynamo frontends by a metric they do not "
            "export.",
    rationale=(
        "The Gateway API Inference Extension's endpoint picker scores each endpoint from the "
        "metrics its `core-metrics-extractor` reads: by default vLLM's engine metrics "
        "(`vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`, ...; GAIE v1.5.0 "
        "`pkg/epp/framework/plugins/datalayer/extractor/metrics/extractor.go`, vendored under "
        "third_party/gaie-epp-v1.5.0/). The endpoints of a dgdgen InferencePool are Dynamo "
        "frontends, which export `dynamo_frontend_queued_requests`, "
        "`dynamo_frontend_inflight_requests` and `dynamo_frontend_active_requests` and no engine "
        "or KV-cache metric (observed on the Dynamo 1.6.1 frontend, "
        "tests/rehearse/test_epp_frontend_metrics.py). A scorer whose metric is absent scores "
        "every frontend the same: the picker spreads requests about evenly while its resources "
        "and its name promise load-aware picking."
    ),
    remediation=(
        "Score with `queue-scorer` / `running-requests-size-scorer` and map them to the frontend's "
        "gauges in the `core-metrics-extractor`'s `engineConfigs` (`queuedRequestsSpec: "
        "dynamo_frontend_queued_requests`, `runningRequestsSpec: "
        "dynamo_frontend_inflight_requests`), as dgdgen renders (docs/traffic.md); drop the "
        "KV-cache and LoRA scorers."
    ),
    help="score with queue / running-requests scorers on the frontend's gauges",
    finding_of="the fourth review, finding 7: the InferencePool's picker was GAIE's stock one, "
               "with scorers reading model-server metrics Dynamo frontends do not export",
)

# What a Dynamo 1.6.1 frontend's /metrics has that a scorer can read (label `model` only).
FRONTEND_GAUGES = frozenset({"dynamo_frontend_queued_requests",
                             "dynamo_frontend_inflight_requests",
                             "dynamo_frontend_active_requests"})
# scorer type → the extractor's engine-config field of the metric it reads (GAIE v1.5.0)
SCORER_METRIC = {"queue-scorer": "queuedRequestsSpec",
                 "running-requests-size-scorer": "runningRequestsSpec",
                 "kv-cache-utilization-scorer": "kvUsageSpec",
                 "lora-affinity-scorer": "loraSpec"}
# the extractor's default mapping when no engine config names the metric (extractor.go)
VLLM_DEFAULTS = {"queuedRequestsSpec": "vllm:num_requests_waiting",
                 "runningRequestsSpec": "vllm:num_requests_running",
                 "kvUsageSpec": "vllm:kv_cache_usage_perc",
                 "loraSpec": "vllm:lora_requests_info"}



def _config(text: str, where: str) -> Mapping[str, Any] | None:
    if "EndpointPickerConfig" not in text:
        return None
    try:  # with the caps of every YAML dgdgen reads: the tree is untrusted input
        docs = yamlio.load_documents(text, where)
    except DgdgenError:
        return None  # not a config the picker would load either
    doc = docs[0].data if len(docs) == 1 else None
    return doc if isinstance(doc, Mapping) and doc.get("kind") == "EndpointPickerConfig" else None


def unread(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(scorer, metric) of each scorer in a scheduling profile whose metric is not a frontend
    gauge."""
    plugins = {str(p.get("name") or p.get("type")): p for p in list_of(config.get("plugins"))
               if isinstance(p, Mapping)}
    extractor = next((p for p in plugins.values() if p.get("type") == "core-metrics-extractor"),
                     None)
    params = mapping_at(extractor, "parameters")
    engine = str(params.get("defaultEngine") or "vllm")
    chosen = next((e for e in list_of(params.get("engineConfigs"))
                   if isinstance(e, Mapping) and e.get("name") == engine), {})
    out: list[tuple[str, str]] = []
    for profile in list_of(config.get("schedulingProfiles")):
        for ref in list_of(mapping_at(profile).get("plugins")):
            plugin = plugins.get(str(mapping_at(ref).get("pluginRef")))
            kind = str(mapping_at(plugin).get("type"))
            field = SCORER_METRIC.get(kind)
            if field is None:
                continue
            # an engine config that leaves the field out extracts nothing for it: no metric
            metric = str(chosen.get(field) or ("" if chosen else VLLM_DEFAULTS[field])) or \
                "nothing (its engine config names no metric)"
            if metric.split("{", 1)[0] not in FRONTEND_GAUGES and (kind, metric) not in out:
                out.append((kind, metric))
    return out


def check(tree: Tree) -> Iterator[Finding]:
    seen: set[tuple[str, str, str]] = set()
    for state in tree.states:
        for key, doc in sorted(state.objects.items()):
            if key[0] != "ConfigMap" or key in seen:
                continue
            for field, text in sorted(mapping_at(doc, "data").items()):
                config = _config(text, f"{object_name(key)} data.{field}") \
                    if isinstance(text, str) else None
                if config is None or not (missing := unread(config)):
                    continue
                seen.add(key)
                loc = state.documents[key].location(("data", field))
                yield RULE.finding(
                    file=loc.file, line=loc.line, column=loc.column, object=object_name(key),
                    key=key[2], message=(
                        "the endpoint picker scores "
                        + ", ".join(f"{s} by {m}" for s, m in missing)
                        + ", which a Dynamo frontend does not export: every frontend scores the "
                        "same"))
