"""The one rendered-flag → mocker-flag mapping (dgdgen/runtime/mocker.py), for what the checker's
runtime tests rely on: TRT-LLM's card block size is the engine's tokens_per_block (not the
--kv-block-size fallback), worker router flags are carried with their boolean spelling."""

from __future__ import annotations

from pathlib import Path

from dgdgen.check.facts import dgd_facts
from dgdgen.dgd import parse
from dgdgen.runtime.mocker import mocker_invocation
from dgdgen.yamlio import load_documents_fast


def invocation(backend: str, args: str) -> tuple[list[str], dict[str, str]]:
    text = f"""\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {{name: q}}
spec:
  components:
    - name: worker
      type: worker
      podTemplate:
        spec:
          containers:
            - name: main
              image: img:1
              command: [/bin/sh, -c]
              args: ["python3 -m dynamo.{backend} --model Q {args}"]
"""
    doc = load_documents_fast(text, "w.yaml")[0]
    comp = dgd_facts(parse(doc.data, source=doc)).components["worker"]
    inv = mocker_invocation(comp, model_dir=Path("/models/tiny"))
    return list(inv.args), dict(inv.dropped)


def value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_trtllm_block_size_comes_from_the_engine() -> None:
    args, dropped = invocation("trtllm", "--kv-block-size 64")
    assert value(args, "--block-size") == "32"  # TRT-LLM's own default, not the fallback flag
    assert "#12023" in dropped["--kv-block-size"]
    args, _ = invocation(
        "trtllm", """--override-engine-args '{\\"kv_cache_config\\": {\\"tokens_per_block\\": 64}}'""")
    assert value(args, "--block-size") == "64"


def test_trtllm_sequence_length_is_the_effective_engine_value() -> None:
    args, _ = invocation("trtllm", "--max-seq-len 2048")
    assert value(args, "--max-model-len") == "2048"


def test_router_flags_are_carried_with_their_boolean_spelling() -> None:
    args, _ = invocation("vllm", "--router-mode kv --no-kv-events --router-temperature 0.5")
    assert value(args, "--router-mode") == "kv"
    assert "--no-router-kv-events" in args
    assert value(args, "--router-temperature") == "0.5"
