"""Facts of DGD components: argument parsing in every spelling, both CRD versions, env, engine
arguments."""

from __future__ import annotations

import pytest

from dgdgen.check.cmdline import env_flag, join_continuations, split_shell
from dgdgen.check.facts import dgd_facts, line_of
from dgdgen.check.podenv import configmaps_of
from dgdgen.model.dgd import Backend, Role, read_dgds
from dgdgen.yamlio import load_documents_fast


def facts(text: str):  # type: ignore[no-untyped-def]
    docs = load_documents_fast(text, "t.yaml")
    [dgd] = read_dgds(docs)
    return dgd, dgd_facts(dgd, configmaps_of(d.data for d in docs))


V1ALPHA1_LIST = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: d}
spec:
  services:
    W:
      componentType: worker
      subComponentType: prefill
      extraPodSpec:
        mainContainer:
          image: vllm-runtime:1
          command: [python3, -m, dynamo.vllm]
          args:
            - --model
            - Qwen/Qwen3-0.6B
            - --block_size=16
            - -tp
            - "2"
            - --enforce-eager
            - --kv-transfer-config
            - '{"kv_connector":"NixlConnector"}'
"""


def test_list_args_flag_value_and_equals_and_aliases() -> None:
    _, f = facts(V1ALPHA1_LIST)
    w = f.components["W"]
    assert w.backend is Backend.VLLM and w.role is Role.PREFILL and w.program == "dynamo.vllm"
    got = {k: s.value for k, s in w.flags.items()}
    assert got == {"--model": "Qwen/Qwen3-0.6B", "--block-size": "16",
                   "--tensor-parallel-size": "2", "--enforce-eager": "true",
                   "--kv-transfer-config": '{"kv_connector":"NixlConnector"}'}
    assert w.flags["--block-size"].path == ("spec", "services", "W", "extraPodSpec",
                                             "mainContainer", "args", 2)


V1BETA1_SH = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: d}
spec:
  env:
    - {name: DYN_ROUTER_MODE, value: kv}
  components:
    - name: decode
      type: decode
      multinode: {nodeCount: 2}
      replicas: 3
      podTemplate:
        spec:
          containers:
            - name: main
              image: sglang-runtime:1
              command: [/bin/bash, -c]
              args:
                - |
                  set -e
                  nvidia-smi && DYN_SGLANG_FOO=1 exec python3 -m dynamo.sglang \\
                    --model-path "Qwen/Qwen3 0.6B" \\
                    --page-size 32 --tp 4 \\
                    --disaggregation-mode decode  # comment --ignored
              env:
                - {name: DYN_CUSTOM_JINJA_TEMPLATE, value: /t.jinja}
                - {name: HF_HOME, value: /models}
"""


def test_shell_string_with_continuations_env_and_v1beta1() -> None:
    dgd, f = facts(V1BETA1_SH)
    d = f.components["decode"]
    assert d.backend is Backend.SGLANG and d.role is Role.DECODE
    assert d.multinode and d.replicas == 3 and d.node_count == 2
    got = {k: s.value for k, s in d.flags.items()}
    assert got["--model-path"] == "Qwen/Qwen3 0.6B"
    assert got["--page-size"] == "32" and got["--tp-size"] == "4"
    assert got["--disaggregation-mode"] == "decode"
    assert "--ignored" not in got
    # env: DYN_* are flags too (each flag's env_var, ai-dynamo 1.6.1
    # dynamo/common/configuration/groups/runtime_args.py); DGD-wide env reaches the component
    assert got["--custom-jinja-template"] == "/t.jinja"
    assert got["--router-mode"] == "kv"
    assert d.env["HF_HOME"].value == "/models"
    assert d.env["DYN_SGLANG_FOO"].value == "1"  # an assignment before the program
    # the page size sits on the 4th line of the block scalar
    line, _ = line_of(dgd, d.flags["--page-size"].path, d.flags["--page-size"].offset)
    assert line == V1BETA1_SH.splitlines().index(
        "                    --page-size 32 --tp 4 \\") + 1


def test_join_continuations_and_split() -> None:
    assert join_continuations("a \\\n b") == "a   b"
    assert [w for w, _ in split_shell("x --a='1 2' && y;z")] == ["x", "--a=1 2", "&&", "y", ";",
                                                                 "z"]


@pytest.mark.parametrize("name,backend,flag", [
    ("DYN_TRTLLM_MAX_SEQ_LEN", Backend.TRTLLM, "--max-seq-len"),
    ("DYN_TRTLLM_MODEL", Backend.TRTLLM, "--model"),
    ("DYN_CUSTOM_JINJA_TEMPLATE", Backend.VLLM, "--custom-jinja-template"),
    ("DYN_VLLM_DISAGGREGATION_MODE", Backend.VLLM, "--disaggregation-mode"),
    ("DYN_TRTLLM_MAX_SEQ_LEN", Backend.VLLM, None),  # another backend's variable
    ("HF_HOME", Backend.VLLM, None),
])
def test_env_flag(name: str, backend: Backend, flag: str | None) -> None:
    assert env_flag(name, backend) == flag


TRT = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data:
  prefill.yaml: |
    tensor_parallel_size: 8
    kv_cache_config:
      tokens_per_block: 32
    cache_transceiver_config:
      backend: DEFAULT
---
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: t}
spec:
  backendFramework: trtllm
  services:
    prefill:
      componentType: worker
      extraPodSpec:
        volumes:
          - name: c
            configMap: {name: cfg}
        mainContainer:
          volumeMounts:
            - {name: c, mountPath: /workspace/}
          command: [python3, -m, dynamo.trtllm]
          args:
            - --model-path
            - Qwen/Qwen3-0.6B
            - --tensor-parallel-size
            - "4"
            - --extra-engine-args
            - /workspace/prefill.yaml
            - --trtllm.cache_transceiver_config.backend
            - UCX
"""


def test_trtllm_engine_args_precedence() -> None:
    _, f = facts(TRT)
    p = f.components["prefill"]
    assert p.engine_file_resolved
    eng = {k: s.value for k, s in p.engine.items()}
    # YAML beats the CLI flag; --trtllm.<path> beats the YAML (ai-dynamo 1.6.1
    # dynamo/trtllm/workers/llm_worker.py init_llm_worker)
    assert eng["engine:tensor_parallel_size"] == "8"
    assert eng["engine:cache_transceiver_config.backend"] == "UCX"
    assert eng["engine:kv_cache_config.tokens_per_block"] == "32"
    assert p.flags["--model"].value == "Qwen/Qwen3-0.6B"  # --model-path is an alias


def test_configmap_and_secret_references_resolve_across_checked_files() -> None:
    """A ConfigMap in another checked file (the same folder) resolves a `valueFrom`; a change to
    it is a checksum change; a Secret is seen by key names only, never its value; a reference
    to an object outside the checked files is DGD109, not silence."""
    from dgdgen.check.context import FileInput
    from dgdgen.check.engine import Options, run
    from dgdgen.yamlio import load_documents_fast

    dgd = """apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: agg}
spec:
  components:
    - name: worker
      type: worker
      podTemplate:
        spec:
          containers:
            - name: main
              command: [python3, -m, dynamo.vllm]
              args: [--model, m]
              env:
                - name: DYN_CUSTOM_JINJA_TEMPLATE
                  valueFrom: {configMapKeyRef: {name: chat, key: path}}
              envFrom:
                - secretRef: {name: tokens}
"""
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: chat}\ndata: {path: /t/%s.jinja}\n"
    secret = ("apiVersion: v1\nkind: Secret\nmetadata: {name: tokens}\n"
              "stringData: {HF_TOKEN: s3cr3t-value}\n")

    def files(version: str, with_secret: bool = True) -> list[FileInput]:
        out = [FileInput("dgd.yaml", load_documents_fast(dgd, "dgd.yaml"),
                         load_documents_fast(dgd, "dgd.yaml")),
               FileInput("cm.yaml", load_documents_fast(cm % version, "cm.yaml"),
                         load_documents_fast(cm % "a", "cm.yaml"))]
        if with_secret:
            out.append(FileInput("secret.yaml", load_documents_fast(secret, "secret.yaml"),
                                 load_documents_fast(secret, "secret.yaml")))
        return out

    same = run(files("a"), Options())
    assert not same.isolation_required and not same.findings
    worker = same.pairs[0].head.components["worker"]
    assert worker.flags["--custom-jinja-template"].value == "/t/a.jinja"
    assert "s3cr3t-value" not in repr(worker)
    assert worker.env["HF_TOKEN"].value == "secret:tokens (present)"
    changed = run(files("b"), Options())
    assert changed.categories == ["mdc-checksum"]
    # the ConfigMap and the Secret not among the checked files: seen as unseeable
    alone = run(files("a")[:1], Options())
    hits = sorted(f.message for f in alone.findings if f.code == "DGD109")
    assert len(hits) == 1, hits  # a Secret brought in whole is credentials: not reported
    assert "ConfigMap 'chat'" in hits[0] and "--custom-jinja-template" in hits[0]
    assert "mdc-checksum input" in hits[0]


def test_a_files_own_configmaps_and_secrets_come_before_the_folders() -> None:
    """A DGD resolves a name against its own file's ConfigMaps and Secrets first; a DGD in a
    file without one gets the last of that name in the checked files; on both sides."""
    from dgdgen.check.context import FileInput, build
    from dgdgen.yamlio import load_documents_fast

    dgd = """apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: %s}
spec:
  components:
    - name: worker
      type: worker
      podTemplate:
        spec:
          containers:
            - name: main
              command: [python3, -m, dynamo.vllm]
              args: [--model, m]
              env:
                - name: DYN_CUSTOM_JINJA_TEMPLATE
                  valueFrom: {configMapKeyRef: {name: chat, key: path}}
                - name: DYN_SECRET_KEY
                  valueFrom: {secretKeyRef: {name: tokens, key: mine}}
"""
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: chat}\ndata: {path: /t/%s.jinja}\n"
    secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: tokens}\nstringData: {%s: x}\n"

    def file(name: str, text: str) -> FileInput:
        return FileInput(name, load_documents_fast(text, name), load_documents_fast(text, name))

    own = file("own.yaml", dgd % "own" + "---\n" + cm % "own" + "---\n" + secret % "mine")
    other = file("other.yaml", cm % "other" + "---\n" + cm % "last" + "---\n" + secret % "theirs")
    bare = file("bare.yaml", dgd % "bare")

    def seen(files: list[FileInput]) -> dict[str, tuple[str, ...]]:
        out = {}
        for pair in build(files, "1.6").dgds:
            assert pair.base is not None
            for side in (pair.head, pair.base):
                env = side.components["worker"].env
                out[f"{side.name}:{side is pair.head}"] = (
                    env["DYN_CUSTOM_JINJA_TEMPLATE"].value, env["DYN_SECRET_KEY"].value)
        return out

    mine = ("/t/own.jinja", "secretKeyRef:tokens/mine (present)")
    theirs = ("/t/last.jinja", "secretKeyRef:tokens/mine (absent)")
    # another file's ConfigMap and Secret of the same names come later: the own ones still win
    assert seen([own, other, bare]) == {"own:True": mine, "own:False": mine,
                                        "bare:True": theirs, "bare:False": theirs}
    # the own ones come last: the file without any gets them too
    assert seen([other, bare, own]) == {"bare:True": mine, "bare:False": mine,
                                        "own:True": mine, "own:False": mine}


def test_the_whitespace_test_of_a_word_is_that_of_the_pattern() -> None:
    """`_has_space` (a printable word without a space has none) agrees with `\\s` on every
    character, alone and inside a word."""
    import re

    from dgdgen.check.cmdline import _has_space

    for i in range(0x110000):
        c = chr(i)
        want = re.search(r"\s", c) is not None
        assert _has_space(c) is want, hex(i)
        assert _has_space(f"--a{c}b") is want, hex(i)
