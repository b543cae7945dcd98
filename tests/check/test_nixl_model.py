"""vLLM's NIXL connector refuses a peer whose compatibility hash differs from its own, and the
hash covers ``model_config.model`` — the ``--model`` string (vllm-project/vllm 0.31.0
vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py
compute_nixl_compatibility_hash). So in a disaggregated graph a vLLM ``--model`` change is a
KV-transfer change as well as a card change; aggregated, or on another backend, it is not."""

from __future__ import annotations

import pytest

from dgdgen.check.classify import verdict
from dgdgen.model.dgd import Dgd, read_dgds
from dgdgen.yamlio import load_documents_fast

GRAPH = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {{name: g}}
spec:
  components:
{workers}
"""
WORKER = """\
    - name: {role}
      type: worker
      podTemplate:
        spec:
          containers:
            - name: main
              command: [python3, -m, dynamo.{backend}]
              args: [{flag}, {model}{mode}]
"""
FLAG = {"vllm": "--model", "sglang": "--model-path"}


def graph(backend: str, model: str, disagg: bool) -> Dgd:
    roles = ("prefill", "decode") if disagg else ("worker",)
    workers = "".join(WORKER.format(
        role=r, backend=backend, flag=FLAG[backend], model=model,
        mode=f", --disaggregation-mode, {r}" if disagg else "") for r in roles)
    return read_dgds(load_documents_fast(GRAPH.format(workers=workers), "g.yaml"))[0]


@pytest.mark.parametrize(("backend", "disagg", "categories"), [
    ("vllm", True, ("kv-transfer", "mdc-checksum")),
    ("vllm", False, ("mdc-checksum",)),
    ("sglang", True, ("mdc-checksum",)),
])
def test_a_vllm_model_change_in_a_disaggregated_graph_is_kv_transfer(
        backend: str, disagg: bool, categories: tuple[str, ...]) -> None:
    v = verdict(graph(backend, "Qwen/Qwen3-0.6B", disagg),
                graph(backend, "/models/Qwen3-0.6B", disagg))
    assert v.categories == categories, v.reasons
    if "kv-transfer" in categories:
        assert any("NIXL compatibility hash" in r for r in v.reasons), v.reasons
