"""A value set on one side only, whose default the engine derives from the model's files (the
context length), is "cannot tell": neither a checksum change nor safe (issue 24 item 2). A change
between two explicit values stays a checksum change."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from dgdgen.check.classify import recommend, verdict
from dgdgen.cli import main
from dgdgen.dgd import Dgd, read_dgds
from dgdgen.yamlio import load_documents_fast
from worker_support import worker_dgd_text

MODULES = {"vllm": ("dynamo.vllm", "--model"), "sglang": ("dynamo.sglang", "--model-path"),
           "trtllm": ("dynamo.trtllm", "--model")}


def dgd_text(backend: str, extra: tuple[str, ...] = ()) -> str:
    module, model_flag = MODULES[backend]
    args = ", ".join(json.dumps(a) for a in (model_flag, "Qwen/Qwen3-0.6B", *extra))
    return worker_dgd_text(f"command: [python3, -m, {module}]", f"args: [{args}]")


def dgd(backend: str, *extra: str) -> Dgd:
    return read_dgds(load_documents_fast(dgd_text(backend, extra), "x.yaml"))[0]


LENGTH = {"vllm": "--max-model-len", "sglang": "--context-length", "trtllm": "--max-seq-len"}


@pytest.mark.parametrize("backend", sorted(LENGTH))
@pytest.mark.parametrize("direction", ["added", "removed"])
def test_context_length_set_on_one_side_cannot_be_told(backend: str, direction: str) -> None:
    unset, setv = dgd(backend), dgd(backend, LENGTH[backend], "8192")
    base, head = (unset, setv) if direction == "added" else (setv, unset)
    v = verdict(base, head)
    assert not v.isolation_required
    assert v.categories == ()
    assert v.cannot_tell == ("mdc-checksum",)
    assert v.isolation_verdict is None
    assert not any("safe to roll in place" in r for r in v.reasons)
    assert any("config.json" in r for r in v.reasons)
    # The generator isolates what it cannot decide: a gated rollout is never wrong.
    assert recommend(v).isolation == "isolated"


@pytest.mark.parametrize("backend", sorted(LENGTH))
def test_context_length_between_two_values_is_a_checksum_change(backend: str) -> None:
    v = verdict(dgd(backend, LENGTH[backend], "8192"), dgd(backend, LENGTH[backend], "4096"))
    assert v.isolation_required and v.categories == ("mdc-checksum",)
    assert v.cannot_tell == () and v.isolation_verdict is True


def test_a_real_change_beside_it_decides_the_verdict() -> None:
    v = verdict(dgd("vllm", "--block-size", "16"),
                dgd("vllm", "--block-size", "32", "--max-model-len", "8192"))
    assert v.isolation_verdict is True and v.categories == ("mdc-checksum",)
    assert v.cannot_tell == ()  # already established by the block size


def test_trtllm_served_name_equal_to_the_model_path_is_safe() -> None:
    v = verdict(dgd("trtllm"), dgd("trtllm", "--served-model-name", "Qwen/Qwen3-0.6B"))
    assert v.isolation_verdict is False, v.reasons
    v = verdict(dgd("trtllm"), dgd("trtllm", "--served-model-name", "qwen"))
    assert v.isolation_required and v.categories == ("mdc-checksum",)


def _diff(tmp_path: Path, fmt: str) -> tuple[int, str]:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(dgd_text("vllm"))
    new.write_text(dgd_text("vllm", ("--max-model-len", "8192")))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["diff", str(old), str(new), "--format", fmt])
    return code, buf.getvalue()


def test_reports_say_cannot_tell_at_warning_severity(tmp_path: Path) -> None:
    code, out = _diff(tmp_path, "json")
    report = json.loads(out)
    assert report["isolation_required"] is None
    assert report["categories"] == [] and report["cannot_tell"] == ["mdc-checksum"]
    codes = {(f["code"], f["severity"], f["category"]) for f in report["findings"]}
    assert ("DGD205", "warning", None) in codes
    assert not any(f["code"] == "DGD201" for f in report["findings"])
    assert code == 0  # a warning: below the default --fail-on error, above silence
    code, out = _diff(tmp_path, "text")
    assert "cannot tell (mdc-checksum)" in out and "safe in place" not in out
    assert "warning DGD205 derived-default-in-place" in out


DISAGG_VLLM = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {{name: g}}
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      envs: [{{name: DYN_MIGRATION_LIMIT, value: "3"}}]
    VllmDecodeWorker:
      componentType: worker
      subComponentType: decode
      replicas: 1
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B{decode}]
    VllmPrefillWorker:
      componentType: worker
      subComponentType: prefill
      replicas: 1
      extraPodSpec:
        mainContainer:
          command: [python3, -m, dynamo.vllm]
          args: [--model, Qwen/Qwen3-0.6B, --disaggregation-mode, prefill{prefill}]
"""


def _diff_json(tmp_path: Path, old: str, new: str) -> tuple[int, dict]:
    (tmp_path / "old.yaml").write_text(DISAGG_VLLM.format(decode=old, prefill=old))
    (tmp_path / "new.yaml").write_text(DISAGG_VLLM.format(decode=new, prefill=new))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"),
                     "--format", "json"])
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("direction", ["added", "removed"])
def test_dtype_set_on_one_side_of_a_disaggregated_graph_cannot_be_told(
        tmp_path: Path, direction: str) -> None:
    # unset, vLLM takes the model's torch_dtype (`auto`), and the KV cache follows it: setting
    # it on one side may or may not change the KV layout the prefill workers hand over
    setv = ", --dtype, bfloat16"
    old, new = ("", setv) if direction == "added" else (setv, "")
    code, data = _diff_json(tmp_path, old, new)
    assert data["cannot_tell"] == ["kv-transfer"] and data["categories"] == [], data
    assert data["isolation_required"] is None
    codes = [f["code"] for f in data["findings"]]
    assert codes.count("DGD205") == 2 and "DGD202" not in codes, data["findings"]
    assert code == 0  # a warning: below the default --fail-on error, above silence


def test_dtype_between_two_values_is_a_kv_transfer_change(tmp_path: Path) -> None:
    code, data = _diff_json(tmp_path, ", --dtype, bfloat16", ", --dtype, float16")
    assert data["categories"] == ["kv-transfer"] and data["isolation_required"] is True, data
    assert [f["code"] for f in data["findings"]].count("DGD202") == 2, data["findings"]
    assert code == 1
