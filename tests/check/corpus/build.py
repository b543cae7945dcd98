"""Builds the classification corpus from the real upstream DGD examples.

Each case is a directory with ``old.yaml`` (an upstream example, verbatim unless the case says
otherwise), ``new.yaml`` (the same file after one realistic edit) and ``expected.json`` (the
verdict: ``isolation_required``, ``categories``, ``risk``, optionally ``dynamo_version``, and
``source``: where the expectation comes from). The expected verdicts are written here by hand, not
computed: from the upstream source (ai-dynamo/dynamo at a named commit, the engines' own KV
checks), from the installed ai-dynamo 1.6.1 argument parsers, from this repository's docs, or
from a runtime-verified probe of tests/check/test_runtime_truth.py (``runtime:<probe>``: the real
frontend and mocker showed the same verdict). test_corpus.py checks that every citation can be
opened: the probe exists, an upstream file names its commit or release, a repository file exists.

    python tests/check/corpus/build.py [UPSTREAM_EXAMPLES_DIR]

The output is committed; the inputs are the vendored copies in tests/data/upstream/.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    HERE, "..", "..", "data", "upstream", "dynamo", "examples")

MDC, KV, RT = "mdc-checksum", "kv-transfer", "runtime-version"


def up(name: str) -> str:
    with open(os.path.join(UPSTREAM, name), encoding="utf-8") as fh:
        return fh.read()


def sub(text: str, old: str, new: str, count: int = -1) -> str:
    assert old in text, (old, text[:200])
    return text.replace(old, new, count)


_MODEL_ARG = "            - Qwen/Qwen3-0.6B\n"


def with_args(text: str, *words: str, count: int = -1) -> str:
    """``text`` (a vLLM example, list args) with ``words`` added after the model argument of
    its workers (the first ``count`` of them; -1: every one)."""
    return sub(text, _MODEL_ARG, _MODEL_ARG + "".join(f"            - {w}\n" for w in words),
               count)


CASES: list[dict] = []


def case(name: str, old: str, new: str, categories: list[str], risk: str = "config-only",
         note: str = "", dynamo_version: str | None = None,
         assumed: tuple[str, ...] = ()) -> None:
    """``assumed``: categories the checker cannot decide (a value set on one side only, whose
    default the engine derives from the model's files) and so assumes to change, fail safe:
    ``isolation_required`` is then true, the categories listed under ``assumed``, not
    ``categories``."""
    assert old != new, name
    required = bool(categories or assumed)
    CASES.append({"name": name, "old": old, "new": new, "expected": {
        "isolation_required": required, "categories": sorted(categories), "risk": risk,
        **({"assumed": sorted(assumed)} if assumed else {}),
        **({"dynamo_version": dynamo_version} if dynamo_version else {}),
        "note": note}})


# Each source is "; "-separated citations a reader can open (tests/check/test_corpus.py checks
# them): a runtime probe, an upstream file at a named commit / release, a file of the installed
# ai-dynamo 1.6.1 wheel, or a file of this repository.
DYN = "ai-dynamo/dynamo 2a6da14c8"  # upstream main of 2026-08-21 (tests/data/upstream/dynamo)
CARD = f"{DYN} lib/llm/src/model_card.rs mdcsum()"
F32 = (f"{CARD}, fed by components/src/dynamo/vllm/main.py, sglang/register.py, "
       "trtllm/workers/llm_worker.py")
F4 = (f"{DYN} components/src/dynamo/vllm/args.py, sglang/args.py, trtllm/backend_args.py "
      "(KV-transfer flags); docs/checker.md (What is compared)")
W = "ai-dynamo 1.6.1 dynamo/"  # a file of the installed wheel
ENV = (f"{W}common/configuration/groups/runtime_args.py (each flag's env_var, e.g. "
       "DYN_CUSTOM_JINJA_TEMPLATE); docs/checker.md (What is compared: DYN_* variables)")
TRT_PRECEDENCE = (f"{W}trtllm/workers/llm_worker.py init_llm_worker (the engine YAML after the "
                  "CLI, --override-engine-args / --trtllm.<path> last)")
TRT_12023 = (f"{W}trtllm/workers/llm_worker.py _populate_kv_cache_capacity (since ai-dynamo/dynamo "
             "#12023 the card takes the engine's block size)")
NOT_HASHED = f"{CARD} (total_kv_blocks, replicas and the rest of runtime_config are not hashed)"
IMAGE = "docs/checker.md (What is compared: runtime-version)"
NIXL = ("vllm-project/vllm 0.31.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/"
        "metadata.py compute_nixl_compatibility_hash (the version ai-dynamo 1.6.1 pins, read in "
        "its PyPI wheel)")
NIXL_HANDSHAKE = ("vllm-project/vllm 0.31.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/"
                  "base_worker.py _validate_remote_agent_handshake (decode context parallel "
                  "sizes must divide one another)")
SGLANG_HS = ("sgl-project/sglang 0.5.21 python/sglang/srt/disaggregation/common/conn.py "
             "try_ensure_parallel_info, _resolve_rank_mapping, requires_dcp_relayout (the version "
             "ai-dynamo 1.6.1 pins, read in its PyPI wheel)")
RTP = "runtime:{}"  # a probe of tests/check/test_runtime_truth.py (Dynamo 1.6.1)


vllm_disagg = up("vllm-disagg.yaml")  # v1alpha1, list args
vllm_disagg_b = up("vllm-disagg.v1beta1.yaml")
vllm_agg = up("vllm-agg.yaml")
vllm_router = up("vllm-disagg_router.yaml")
vllm_mn = up("vllm-disagg-multinode.yaml")
sglang = up("sglang-disagg.yaml")
sglang_b = up("sglang-disagg.v1beta1.yaml")
trt = up("trtllm-disagg.yaml")
trt_b = up("trtllm-disagg.v1beta1.yaml")
trt_mn = up("trtllm-disagg-multinode.yaml")
shared = up("shared-frontend.yaml")  # v1alpha1, `/bin/sh -c` string args

# --- block / page size -----------------------------------------------------------------------
case("vllm-block-size-disagg-v1alpha1", vllm_disagg,
     sub(vllm_disagg, "            - Qwen/Qwen3-0.6B\n",
         "            - Qwen/Qwen3-0.6B\n            - --block-size\n            - \"32\"\n"),
     [MDC, KV], note="--block-size feeds kv_cache_block_size and the KV layout")
case("sglang-page-size-disagg-v1beta1", sglang_b, sub(sglang_b, '- "16"', '- "32"'), [MDC, KV],
     note="--page-size feeds kv_cache_block_size and the KV page layout")
case("sglang-page-size-disagg-v1alpha1", sglang, sub(sglang, '- "16"', '- "64"'), [MDC, KV])
# --- served model name / model ---------------------------------------------------------------
case("sglang-served-model-name-v1alpha1", sglang,
     sub(sglang, "- --served-model-name\n            - Qwen/Qwen3-0.6B",
         "- --served-model-name\n            - qwen3-small"),
     [MDC], note="display_name is hashed; not a KV input")
case("trtllm-served-model-name-equals-model-path",
     sub(trt_b, "          - --served-model-name\n          - Qwen/Qwen3-0.6B\n", ""), trt_b, [],
     note="without --served-model-name the TRT-LLM worker registers its model path")
case("trtllm-context-parallel-prefill-disagg", trt_b,
     sub(trt_b, "          - --disaggregation-mode\n          - prefill\n",
         "          - --disaggregation-mode\n          - prefill\n"
         "          - --trtllm.context_parallel_size\n          - \"2\"\n"), [KV],
     note="the cache transceiver refuses a peer with context parallelism")
case("trtllm-served-model-name-v1beta1", trt_b,
     sub(trt_b, "- --served-model-name\n          - Qwen/Qwen3-0.6B",
         "- --served-model-name\n          - qwen"), [MDC])
case("vllm-model-same-family", vllm_agg, sub(vllm_agg, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B"),
     [MDC], risk="same-family")
case("vllm-model-new-family", vllm_disagg,
     sub(vllm_disagg, "Qwen/Qwen3-0.6B", "meta-llama/Llama-3.1-8B-Instruct"), [MDC, KV],
     risk="new-family",
     note="a disaggregated graph: vLLM's NIXL compatibility hash covers model_config.model, so "
          "old decode workers refuse new prefill workers (a KV-transfer change too)")
case("vllm-model-fp8-weights", vllm_agg, sub(vllm_agg, "Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B-FP8"),
     [MDC], risk="same-model-new-revision")
# --- KV transfer -----------------------------------------------------------------------------
case("vllm-kv-connector-v1beta1", vllm_disagg_b,
     sub(vllm_disagg_b, '"kv_connector":"NixlConnector"', '"kv_connector":"LMCacheConnectorV1"'),
     [KV], note="the connector is a KV-transfer input, not a card input")
case("vllm-kv-transfer-config-whitespace-only", vllm_disagg,
     sub(vllm_disagg, '\'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\'',
         '\'{"kv_role": "kv_both", "kv_connector": "NixlConnector"}\''), [],
     note="same JSON, other spelling")
case("sglang-transfer-backend-nixl-to-mooncake-v1beta1", sglang_b,
     sub(sglang_b, "- nixl", "- mooncake"), [KV])
case("vllm-tp-size-disagg-multinode", vllm_mn,
     sub(vllm_mn, '- --tensor-parallel-size\n          - "2"', '- --tensor-parallel-size\n          - "4"'),
     [KV], note="TP size shards the KV cache; not hashed in the card")
case("vllm-tp-size-aggregated", vllm_agg,
     sub(vllm_agg, "            - Qwen/Qwen3-0.6B\n",
         "            - Qwen/Qwen3-0.6B\n            - --tensor-parallel-size\n            - \"2\"\n"),
     [], note="aggregated: no KV transfer between workers")
case("vllm-served-model-name-equals-model-path", vllm_agg,
     sub(vllm_agg, "            - Qwen/Qwen3-0.6B\n",
         "            - Qwen/Qwen3-0.6B\n            - --served-model-name\n"
         "            - Qwen/Qwen3-0.6B\n"),
     [], note="the name the worker derives from --model anyway: display_name unchanged")
case("vllm-attention-backend-disagg", vllm_disagg,
     with_args(vllm_disagg, "--attention-backend", "FLASHINFER"),
     [KV], note="the attention backend is hashed in the NIXL handshake; not a card input")
case("vllm-disable-hybrid-kv-cache-manager-disagg", vllm_disagg,
     with_args(vllm_disagg, "--disable-hybrid-kv-cache-manager", count=1),
     [KV], note="hybrid KV cache manager on/off is hashed in the NIXL handshake")
case("vllm-speculative-config-disagg", vllm_disagg,
     with_args(vllm_disagg, "--speculative-config",
               "'{\"method\":\"eagle3\",\"model\":\"AngelSlim/Qwen3-1.7B_eagle3\","
               "\"num_speculative_tokens\":2}'"),
     [KV], note="an EAGLE speculator's method and draft model are hashed in the NIXL handshake")
case("vllm-dcp-short-flag-disagg", vllm_disagg,
     with_args(vllm_disagg, "-dcp", '"2"', count=1),
     [KV], note="-dcp is --decode-context-parallel-size; the handshake checks the DCP sizes")
case("sglang-attention-cp-prefill-disagg", sglang_b,
     sub(sglang_b, "          - --disaggregation-mode\n          - prefill\n",
         "          - --disaggregation-mode\n          - prefill\n"
         "          - --attention-context-parallel-size\n          - \"2\"\n"),
     [KV], note="the prefill's attention CP size is registered with its bootstrap server and "
                "maps the decode worker's transfer; not a card input")
case("sglang-dcp-size-disagg", sglang_b,
     sub(sglang_b, '          - --page-size\n          - "16"\n',
         '          - --page-size\n          - "16"\n          - --dcp-size\n          - "2"\n'),
     [MDC, KV], note="kv_cache_block_size is page size x DCP size; the prefill refuses a decode "
                     "peer of another DCP size")
case("vllm-tp-size-default-disagg", vllm_disagg,
     with_args(vllm_disagg, "--tensor-parallel-size", '"1"'),
     [], note="TP 1 written out: the size vLLM uses when the flag is unset")
case("vllm-kv-cache-dtype-auto-disagg", vllm_disagg,
     with_args(vllm_disagg, "--kv-cache-dtype", "auto"),
     [], note="`auto` written out: vLLM's cache_dtype when unset (hashed as \"auto\" either way)")
case("vllm-attention-backend-aggregated", vllm_agg,
     with_args(vllm_agg, "--attention-backend", "FLASHINFER"),
     [], note="aggregated: no KV hand-off, and the backend is not a card input")
case("trtllm-extra-engine-args-path-v1alpha1", trt,
     sub(trt, "engine_configs/qwen3/prefill.yaml", "engine_configs/qwen3/prefill_fp8kv.yaml"),
     [MDC, KV], note="engine file contents unknown: may set max_seq_len, tokens_per_block, "
                     "cache_transceiver_config")
case("trtllm-configmap-transceiver-backend", trt_mn,
     sub(trt_mn, "backend: DEFAULT", "backend: UCX", 1), [KV],
     note="engine YAML from the ConfigMap in the same file, compared key by key")
case("trtllm-configmap-free-memory-only", trt_mn,
     sub(trt_mn, "free_gpu_memory_fraction: 0.80", "free_gpu_memory_fraction: 0.85"), [],
     note="KV memory sizing is capacity only")
case("trtllm-configmap-tokens-per-block", trt_mn,
     sub(trt_mn, "kv_cache_config:\n      free_gpu_memory_fraction: 0.80",
         "kv_cache_config:\n      free_gpu_memory_fraction: 0.80\n      tokens_per_block: 64"),
     [MDC, KV], note="since #12023 the card takes the engine's block size")
case("trtllm-override-engine-args-tp", trt_b,
     sub(trt_b, "          - --disaggregation-mode\n          - prefill\n",
         "          - --disaggregation-mode\n          - prefill\n          - --override-engine-args\n"
         "          - '{\"tensor_parallel_size\": 2}'\n"),
     [KV], note="--override-engine-args JSON overrides the engine YAML")
case("trtllm-kv-block-size-flag-1.5", trt,
     sub(trt, "            - --disaggregation-mode\n", "            - --kv-block-size\n"
         "            - \"64\"\n            - --disaggregation-mode\n"), [],
     note="since #12023 --kv-block-size is only an unused fallback", dynamo_version="1.5")
case("trtllm-kv-block-size-flag-1.3", trt,
     sub(trt, "            - --disaggregation-mode\n", "            - --kv-block-size\n"
         "            - \"64\"\n            - --disaggregation-mode\n"), [MDC, KV],
     note="before #12023 the flag sets the card's block size", dynamo_version="1.3")
# --- runtime ---------------------------------------------------------------------------------
case("vllm-image-bump-v1alpha1", vllm_agg, sub(vllm_agg, ":my-tag", ":0.7.0"), [RT])
case("sglang-image-bump-v1beta1-frontend-only", sglang_b,
     sub(sglang_b, "my-registry/sglang-runtime:my-tag\n          name: main\n    replicas: 1\n"
                   "    type: frontend",
         "my-registry/sglang-runtime:1.5.0\n          name: main\n    replicas: 1\n"
         "    type: frontend"), [RT])
case("shared-frontend-image-bump-multi-dgd", shared, sub(shared, ":0.5.0", ":0.6.0"), [RT])
# --- safe ------------------------------------------------------------------------------------
case("vllm-replicas-only", vllm_router, sub(vllm_router, "replicas: 2", "replicas: 4"), [],
     note="replicas never change a worker's card or KV contract")
case("sglang-replicas-only-v1beta1", sglang_b,
     sub(sglang_b, "    replicas: 1\n    type: decode", "    replicas: 3\n    type: decode"), [])
case("vllm-gpu-memory-utilization", vllm_agg,
     sub(vllm_agg, "            - Qwen/Qwen3-0.6B\n", "            - Qwen/Qwen3-0.6B\n"
         "            - --gpu-memory-utilization\n            - \"0.85\"\n"), [],
     note="runtime_config capacity is not hashed")
case("vllm-is-prefill-worker-respelled", sub(vllm_disagg, "            - --disaggregation-mode\n"
                                             "            - prefill\n",
                                             "            - --is-prefill-worker\n"), vllm_disagg,
     [], note="--is-prefill-worker is the old spelling of --disaggregation-mode prefill")
case("frontend-router-mode-env", vllm_router,
     sub(vllm_router, "value: kv", "value: round-robin"), [],
     note="frontend-side router mode: the frontend is updated in place, no card changes")
# --- environment -----------------------------------------------------------------------------
case("vllm-worker-env-jinja-template", vllm_disagg,
     sub(vllm_disagg, "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n",
         "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n      envs:\n"
         "        - name: DYN_CUSTOM_JINJA_TEMPLATE\n          value: /templates/chat.jinja\n"),
     [MDC], note="DYN_CUSTOM_JINJA_TEMPLATE is --custom-jinja-template")
# --- values from a ConfigMap of the same file (issue 24 item 1) -------------------------------
_CM = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chat\ndata:\n"
       "  path: /templates/chat.jinja\n  note: first\n"
       "  chat.jinja: \"{{ messages[0].content }}\"\n---\n")
_CM_ENV = sub(vllm_disagg, "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n",
              "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n      envs:\n"
              "        - name: DYN_CUSTOM_JINJA_TEMPLATE\n          valueFrom:\n"
              "            configMapKeyRef: {name: chat, key: path}\n")
_CM_ENV = _CM + _CM_ENV
case("vllm-configmap-env-jinja-template", _CM_ENV,
     sub(_CM_ENV, "path: /templates/chat.jinja", "path: /templates/chat-v2.jinja"), [MDC],
     note="DYN_CUSTOM_JINJA_TEMPLATE from a ConfigMap key of the same file: the key's value "
          "changes")
case("vllm-configmap-unrelated-key", _CM_ENV, sub(_CM_ENV, "note: first", "note: second"), [],
     note="a ConfigMap key the worker does not read")
# A flag whose value is a variable: Kubernetes expands `$(VAR)` in args from the container's
# env (here a ConfigMap key), a `sh -c` script expands `$VAR` itself.
_KNOBS = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: knobs\ndata:\n"
          "  block-size: \"16\"\n---\n")
_CM_ARG = _KNOBS + sub(
    sub(vllm_disagg, "            - decode\n",
        "            - decode\n            - --block-size\n            - $(BLOCK_SIZE)\n", 1),
    "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n",
    "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n      envs:\n"
    "        - name: BLOCK_SIZE\n          valueFrom:\n"
    "            configMapKeyRef: {name: knobs, key: block-size}\n")
case("vllm-configmap-arg-variable", _CM_ARG,
     sub(_CM_ARG, 'block-size: "16"', 'block-size: "32"'), [MDC, KV],
     note="--block-size $(BLOCK_SIZE), the variable from a ConfigMap key of the same file: the "
          "kubelet expands it, so the key's change is a block-size change")
_SH_VAR = sub(sub(shared, "python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B",
                  "python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --max-model-len $MAX_LEN", 1),
              "    VllmDecodeWorker:\n      volumeMounts:\n",
              "    VllmDecodeWorker:\n      envs:\n        - name: MAX_LEN\n"
              "          value: \"8192\"\n      volumeMounts:\n")
case("sh-c-env-variable-value", _SH_VAR, sub(_SH_VAR, 'value: "8192"', 'value: "16384"'),
     [MDC], note="a `sh -c` script passes --max-model-len $MAX_LEN: the env value changes the "
                 "context length")
_CM_FILE = _CM + sub(
    sub(vllm_disagg, "            - decode\n",
        "            - decode\n            - --custom-jinja-template\n"
        "            - /etc/tmpl/chat.jinja\n          volumeMounts:\n"
        "            - {name: tmpl, mountPath: /etc/tmpl}\n", 1),
    "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n      componentType: worker\n"
    "      subComponentType: decode\n",
    "    VllmDecodeWorker:\n      envFromSecret: hf-token-secret\n      componentType: worker\n"
    "      subComponentType: decode\n", 1)
_CM_FILE = sub(_CM_FILE, "          workingDir: /workspace/examples/backends/vllm\n"
               "          command:\n          - python3\n          - -m\n          - dynamo.vllm\n"
               "          args:\n            - --model\n            - Qwen/Qwen3-0.6B\n"
               "            - --disaggregation-mode\n            - decode\n",
               "          workingDir: /workspace/examples/backends/vllm\n"
               "          command:\n          - python3\n          - -m\n          - dynamo.vllm\n"
               "          args:\n            - --model\n            - Qwen/Qwen3-0.6B\n"
               "            - --disaggregation-mode\n            - decode\n", 1)
_CM_FILE = sub(_CM_FILE, "      extraPodSpec:\n        mainContainer:\n          image: "
               "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag\n          workingDir: /workspace/"
               "examples/backends/vllm\n          command:\n          - python3\n          - -m\n"
               "          - dynamo.vllm\n          args:\n            - --model\n"
               "            - Qwen/Qwen3-0.6B\n            - --disaggregation-mode\n"
               "            - decode\n",
               "      extraPodSpec:\n        volumes:\n          - name: tmpl\n"
               "            configMap: {name: chat}\n        mainContainer:\n          image: "
               "nvcr.io/nvidia/ai-dynamo/vllm-runtime:my-tag\n          workingDir: /workspace/"
               "examples/backends/vllm\n          command:\n          - python3\n          - -m\n"
               "          - dynamo.vllm\n          args:\n            - --model\n"
               "            - Qwen/Qwen3-0.6B\n            - --disaggregation-mode\n"
               "            - decode\n", 1)
case("vllm-configmap-mounted-template-content", _CM_FILE,
     sub(_CM_FILE, "{{ messages[0].content }}", "{{ messages[-1].content }}"), [MDC],
     note="--custom-jinja-template names a file of a mounted ConfigMap of the same file: the "
          "file's contents change, the flag does not")
case("trtllm-dgd-env-max-seq-len", trt_mn,
     sub(trt_mn, "    - name: HF_HOME\n      value: \"/models\"\n",
         "    - name: HF_HOME\n      value: \"/models\"\n    - name: DYN_TRTLLM_MAX_SEQ_LEN\n"
         "      value: \"16384\"\n"), [], assumed=(MDC,),
     note="DGD-wide spec.envs reach every worker; unset, TRT-LLM deduces the sequence length "
          "from the model config, which the checker does not read; not a KV layout change")
case("trtllm-dgd-env-unrelated", trt_mn, sub(trt_mn, 'value: "/models"', 'value: "/cache"'), [])
case("vllm-worker-router-mode-1.5", vllm_router,
     sub(vllm_router, "            - prefill\n", "            - prefill\n            - --router-mode\n"
         "            - kv\n"), [MDC], note="worker router flags feed router_config since 1.4",
     dynamo_version="1.5")
case("vllm-worker-router-mode-1.6", vllm_router,
     sub(vllm_router, "            - prefill\n", "            - prefill\n            - --router-mode\n"
         "            - kv\n"), [MDC], note="a worker --router-mode puts router_config on the card")
case("vllm-worker-kv-events-alias-without-mode-1.6", vllm_router,
     sub(vllm_router, "            - prefill\n", "            - prefill\n"
         "            - --no-kv-events\n"), [],
     note="--no-kv-events is --no-router-kv-events; without a worker --router-mode 1.6 leaves "
          "router_config off the card")
case("vllm-worker-kv-events-alias-with-mode-1.6",
     sub(vllm_router, "            - prefill\n", "            - prefill\n            - --router-mode\n"
         "            - kv\n"),
     sub(vllm_router, "            - prefill\n", "            - prefill\n            - --router-mode\n"
         "            - kv\n            - --no-kv-events\n"), [MDC],
     note="with a worker --router-mode the alias spelling changes router_config")
# --- multi-valued flags (nargs) and served-name aliases --------------------------------------
vllm_named = sub(vllm_agg, "            - Qwen/Qwen3-0.6B\n",
                 "            - Qwen/Qwen3-0.6B\n            - --served-model-name\n"
                 "            - qwen\n")
case("vllm-served-model-name-alias-added", vllm_named,
     sub(vllm_named, "            - qwen\n", "            - qwen\n            - qwen-chat\n"), [MDC],
     note="--served-model-name is nargs='+': the second value is an alias, hashed since 1.5")
case("vllm-served-model-name-alias-added-1.4", vllm_named,
     sub(vllm_named, "            - qwen\n", "            - qwen\n            - qwen-chat\n"), [],
     note="aliases entered the checksum in Aug 2026 (1.5)", dynamo_version="1.4")
case("vllm-served-model-name-alias-packed-with-comma", vllm_named,
     sub(vllm_named, "            - qwen\n", "            - qwen,qwen-chat\n"), [MDC],
     note="Dynamo splits served names on commas and spaces")
case("sglang-served-model-name-same-name-respelled", sub(
    sglang_b, "- --served-model-name\n          - Qwen/Qwen3-0.6B",
    "- --served-model-name\n          - qwen,qwen-chat"), sub(
    sglang_b, "- --served-model-name\n          - Qwen/Qwen3-0.6B",
    "- --served-model-name\n          - qwen qwen-chat"), [],
     note="the same names packed with a comma or a space")
case("vllm-disagg-max-model-len", vllm_disagg,
     sub(vllm_disagg, "            - Qwen/Qwen3-0.6B\n",
         "            - Qwen/Qwen3-0.6B\n            - --max-model-len\n            - \"8192\"\n"),
     [], assumed=(MDC,),
     note="unset, vLLM derives the context length from the model's config.json, which the "
          "checker does not read: 8192 may or may not be that value; not a KV layout input")
vllm_len = sub(vllm_disagg, "            - Qwen/Qwen3-0.6B\n",
               "            - Qwen/Qwen3-0.6B\n            - --max-model-len\n"
               "            - \"8192\"\n")
case("vllm-disagg-max-model-len-value-changes", vllm_len, sub(vllm_len, '"8192"', '"4096"'),
     [MDC], note="set on both sides to different values: the card's context_length changes")
case("vllm-worker-router-mode-1.3", vllm_router,
     sub(vllm_router, "            - prefill\n", "            - prefill\n            - --router-mode\n"
         "            - kv\n"), [], dynamo_version="1.3")
# --- release spelling and prefix selection --------------------------------------------------
case("vllm-block-size-disagg-1.6.1", vllm_disagg,
     sub(vllm_disagg, "            - Qwen/Qwen3-0.6B\n",
         "            - Qwen/Qwen3-0.6B\n            - --block-size\n            - \"32\"\n"),
     [MDC, KV], note="a patch release selects its minor release's tables", dynamo_version="1.6.1")
case("frontend-namespace-prefix-added", vllm_agg,
     sub(vllm_agg, "    Frontend:\n      envFromSecret: hf-token-secret\n",
         "    Frontend:\n      envFromSecret: hf-token-secret\n      envs:\n"
         "        - name: DYN_NAMESPACE_PREFIX\n          value: default-vllm\n"), [],
     note="no card or KV change (the frontend carries no card); DGD107 reports the prefix")
# --- `sh -c` command strings and --flag=value ------------------------------------------------
case("sh-c-max-model-len", shared,
     sub(shared, "python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B",
         "python3 -m dynamo.vllm --model Qwen/Qwen3-0.6B --max-model-len 8192"), [],
     assumed=(MDC,))
sh_block = sub(vllm_agg, """          command:
            - python3
            - -m
            - dynamo.vllm
          args:
            - --model
            - Qwen/Qwen3-0.6B
""", """          command:
            - /bin/bash
            - -c
          args:
            - |
              exec python3 -m dynamo.vllm \\
                --model Qwen/Qwen3-0.6B \\
                --block-size=16 \\
                --gpu-memory-utilization 0.9
""")
case("bash-c-continuation-block-size", sh_block, sub(sh_block, "--block-size=16", "--block-size=32"),
     [MDC], note="backslash-newline continuations are joined; aggregated: no KV category")
case("bash-c-continuation-safe-flag", sh_block, sub(sh_block, "utilization 0.9", "utilization 0.8"),
     [])
case("flag-equals-served-model-name", vllm_agg,
     sub(vllm_agg, "            - --model\n            - Qwen/Qwen3-0.6B\n",
         "            - --model=Qwen/Qwen3-0.6B\n            - --served-model-name=qwen\n"),
     [MDC], note="--flag=value spelling; the model itself is unchanged")
# --- CRD version conversion (real upstream change, #12375) -----------------------------------
case("vllm-disagg-v1alpha1-to-v1beta1", vllm_disagg, vllm_disagg_b, [KV],
     note="upstream #12375 also gave the decode worker an explicit --kv-transfer-config")
case("sglang-disagg-v1alpha1-to-v1beta1", sglang, sglang_b, [],
     note="a pure CRD conversion: same facts")


SOURCES: dict[str, str] = {
    "vllm-block-size-disagg-v1alpha1": f"{RTP.format('block-size')}; {F4}",
    "sglang-page-size-disagg-v1beta1": f"{RTP.format('sglang-page-size')}; {F4}",
    "sglang-page-size-disagg-v1alpha1": f"{RTP.format('sglang-page-size')}; {F4}",
    "sglang-served-model-name-v1alpha1": f"{RTP.format('served-model-name')}; {F32}",
    "trtllm-served-model-name-v1beta1": f"{RTP.format('served-model-name')}; {F32}",
    "trtllm-context-parallel-prefill-disagg": (
        "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/batch_manager/cacheFormatter.cpp "
        "CacheFormatter::inquireSupport (tensorrt-llm 1.3.0rc29 pinned by ai-dynamo 1.6.1, read "
        "at an untagged snapshot); docs/checker.md (SGLang's and TRT-LLM's own KV-compatibility "
        "checks)"),
    "vllm-model-same-family": f"{RTP.format('model-dir')}; {F32}",
    "vllm-model-new-family": f"{RTP.format('model-dir')}; {F32}; vllm-project/vllm 0.31.0 "
                             "vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
                             "compute_nixl_compatibility_hash (model_config.model)",
    "vllm-model-fp8-weights": f"{RTP.format('model-dir')}; {F32}",
    "vllm-kv-connector-v1beta1": F4,
    "vllm-kv-transfer-config-whitespace-only": F4,
    "sglang-transfer-backend-nixl-to-mooncake-v1beta1": F4,
    "vllm-tp-size-disagg-multinode": F4,
    "vllm-tp-size-aggregated": f"{F4}, aggregated: no KV hand-off",
    "vllm-served-model-name-equals-model-path": f"{W}vllm/args.py (served_model_name defaults "
                                                "to [model])",
    "vllm-attention-backend-disagg": NIXL,
    "vllm-disable-hybrid-kv-cache-manager-disagg": NIXL,
    "vllm-configmap-arg-variable": ("https://kubernetes.io/docs/tasks/inject-data-application/"
                                    "define-interdependent-environment-variables/; "
                                    f"{RTP.format('block-size')}; {F4}"),
    "sh-c-env-variable-value": f"{RTP.format('max-model-len')}; {F32}",
    "vllm-tp-size-default-disagg": ("vllm-project/vllm 0.31.0 vllm/config/parallel.py "
                                    "(tensor_parallel_size default 1)"),
    "vllm-kv-cache-dtype-auto-disagg": (f"vllm-project/vllm 0.31.0 vllm/config/cache.py "
                                        f"(cache_dtype default \"auto\"); {NIXL}"),
    "vllm-speculative-config-disagg": (f"{NIXL}; vllm-project/vllm 0.31.0 vllm/distributed/"
                                       "kv_transfer/kv_connector/v1/nixl/metadata.py "
                                       "_get_speculative_compatibility_factors"),
    "vllm-dcp-short-flag-disagg": (f"{NIXL_HANDSHAKE}; vllm-project/vllm 0.31.0 "
                                   "vllm/engine/arg_utils.py (-dcp)"),
    "sglang-attention-cp-prefill-disagg": (f"{SGLANG_HS}; sgl-project/sglang 0.5.21 python/sglang/"
                                           "srt/arg_groups/fields/parallel.py (the alias)"),
    "sglang-dcp-size-disagg": f"{SGLANG_HS}; {F32}",
    "vllm-attention-backend-aggregated": f"{NIXL}, aggregated: no KV hand-off; {F32}",
    "trtllm-extra-engine-args-path-v1alpha1": f"{TRT_PRECEDENCE}; {F4}",
    "trtllm-configmap-transceiver-backend": F4,
    "trtllm-configmap-free-memory-only": NOT_HASHED,
    "trtllm-configmap-tokens-per-block": f"{RTP.format('trtllm-tokens-per-block')}; {TRT_12023}",
    "trtllm-override-engine-args-tp": f"{TRT_PRECEDENCE}; {F4}",
    "trtllm-kv-block-size-flag-1.5": TRT_12023,
    "trtllm-kv-block-size-flag-1.3": TRT_12023,
    "vllm-image-bump-v1alpha1": IMAGE,
    "sglang-image-bump-v1beta1-frontend-only": IMAGE,
    "shared-frontend-image-bump-multi-dgd": IMAGE,
    "vllm-replicas-only": NOT_HASHED,
    "sglang-replicas-only-v1beta1": NOT_HASHED,
    "vllm-gpu-memory-utilization": f"{RTP.format('num-gpu-blocks-override')}; {NOT_HASHED}",
    "vllm-is-prefill-worker-respelled": "ai-dynamo/dynamo #6483 (--is-prefill-worker deprecated "
                                        "for --disaggregation-mode prefill), #12089 (removed)",
    "frontend-router-mode-env": f"{DYN} lib/bindings/python/rust/lib.rs register_model (workers "
                                "register the card, the frontend has none)",
    "vllm-worker-env-jinja-template": f"{RTP.format('chat-template')}; {ENV}",
    "trtllm-dgd-env-max-seq-len": f"{W}trtllm/backend_args.py (--max-seq-len, env_var "
                                  "DYN_TRTLLM_MAX_SEQ_LEN: deduced from the model config when "
                                  f"unspecified); {ENV}",
    "trtllm-dgd-env-unrelated": ENV,
    "vllm-configmap-env-jinja-template": f"{RTP.format('chat-template')}; {ENV}",
    "vllm-configmap-unrelated-key": ENV,
    "vllm-configmap-mounted-template-content": f"{RTP.format('chat-template')}; {F32}",
    "vllm-worker-router-mode-1.5": F32,
    "vllm-worker-router-mode-1.3": f"{CARD}, its history: router_config hashed from July 2026",
    "vllm-worker-router-mode-1.6": RTP.format("router-mode-kv"),
    "vllm-worker-kv-events-alias-without-mode-1.6": (
        f"{RTP.format('kv-events-alias-without-mode')}; "
        f"{W}common/configuration/groups/router_args.py build_router_config"),
    "vllm-worker-kv-events-alias-with-mode-1.6": (
        f"{RTP.format('kv-events-alias-with-mode')}; "
        f"{W}common/configuration/groups/kv_router_args.py (--kv-events aliases)"),
    "vllm-served-model-name-alias-added": f"{W}common/configuration/utils.py "
                                          f"split_served_model_names; {CARD} (aliases)",
    "vllm-served-model-name-alias-added-1.4": f"{CARD}, its history: aliases hashed from August "
                                              "2026, after the 1.4 branch cut (#13137)",
    "vllm-served-model-name-alias-packed-with-comma": f"{W}common/configuration/utils.py "
                                                      "split_served_model_names",
    "sglang-served-model-name-same-name-respelled": f"{W}common/configuration/utils.py "
                                                    "split_served_model_names",
    "vllm-disagg-max-model-len": f"{W}vllm/handlers.py (context_length = the engine's "
                                 "max_model_len, from config.json when unset)",
    "vllm-disagg-max-model-len-value-changes": f"{RTP.format('max-model-len')}; docs/checker.md "
                                               "(What is compared: context length)",
    "trtllm-served-model-name-equals-model-path": (
        f"{W}trtllm/backend_args.py (served_model_name None); {DYN} lib/llm/src/local_model.rs "
        "(the name defaults to the model path)"),
    "vllm-block-size-disagg-1.6.1": f"{RTP.format('block-size')}; {F4}",
    "frontend-namespace-prefix-added": f"docs/checker.md (Prefix selection); {W}frontend/"
                                       "frontend_args.py (--namespace-prefix)",
    "sh-c-max-model-len": f"{W}vllm/handlers.py (context_length from config.json when "
                          "--max-model-len is unset)",
    "bash-c-continuation-block-size": f"{RTP.format('block-size')}; docs/checker.md "
                                      "(What is compared: sh -c strings)",
    "bash-c-continuation-safe-flag": f"{RTP.format('num-gpu-blocks-override')}; {NOT_HASHED}",
    "flag-equals-served-model-name": f"{RTP.format('served-model-name')}; {F32}",
    "vllm-disagg-v1alpha1-to-v1beta1": f"{F4}; {DYN} examples/backends/vllm/deploy/disagg.yaml "
                                       "(#12375)",
    "sglang-disagg-v1alpha1-to-v1beta1": f"{DYN} deploy/operator/api/v1alpha1/"
                                         "shared_spec_conversion.go (a pure CRD conversion)",
}


def main() -> None:
    for c in CASES:
        c["expected"]["source"] = SOURCES[c["name"]]
    for entry in os.listdir(HERE):
        if os.path.isdir(os.path.join(HERE, entry)) and not entry.startswith("_"):
            shutil.rmtree(os.path.join(HERE, entry))
    for c in CASES:
        d = os.path.join(HERE, c["name"])
        os.makedirs(d)
        for fname in ("old", "new"):
            with open(os.path.join(d, f"{fname}.yaml"), "w", encoding="utf-8") as fh:
                fh.write(c[fname])
        with open(os.path.join(d, "expected.json"), "w", encoding="utf-8") as fh:
            json.dump(c["expected"], fh, indent=2, sort_keys=True)
            fh.write("\n")
    print(f"{len(CASES)} cases")


if __name__ == "__main__":
    main()
