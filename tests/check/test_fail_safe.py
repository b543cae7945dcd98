"""Fail safe: a value set on one side only, whose default the engine derives from the model's
files (the context length, the dtype), is "isolation required (assumed)" — `isolation_required`
true, the category under `assumed`, DGD205 an error — until the model's files
(`--model-config DIR`) or a suppression with a reason settle it. A change between two explicit
values stays a real change."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from gen_support import REPO
from worker_support import worker_dgd_text

from dgdgen.check.classify import recommend, verdict
from dgdgen.check.modelconfig import load, settle
from dgdgen.cli import main
from dgdgen.model.dgd import Backend, Dgd, read_dgds
from dgdgen.yamlio import load_documents_fast

MODULES = {"vllm": ("dynamo.vllm", "--model"), "sglang": ("dynamo.sglang", "--model-path"),
           "trtllm": ("dynamo.trtllm", "--model")}


def dgd_text(backend: str, extra: tuple[str, ...] = (), annotations: str = "") -> str:
    module, model_flag = MODULES[backend]
    args = ", ".join(json.dumps(a) for a in (model_flag, "Qwen/Qwen3-0.6B", *extra))
    text = worker_dgd_text(f"command: [python3, -m, {module}]", f"args: [{args}]")
    if annotations:
        text = text.replace("metadata: {name: q}",
                            f"metadata:\n  name: q\n  annotations: {annotations}")
    return text


def dgd(backend: str, *extra: str) -> Dgd:
    return read_dgds(load_documents_fast(dgd_text(backend, extra), "x.yaml"))[0]


LENGTH = {"vllm": "--max-model-len", "sglang": "--context-length", "trtllm": "--max-seq-len"}


@pytest.mark.parametrize("backend", sorted(LENGTH))
@pytest.mark.parametrize("direction", ["added", "removed"])
def test_context_length_set_on_one_side_is_assumed_to_change(backend: str,
                                                             direction: str) -> None:
    unset, setv = dgd(backend), dgd(backend, LENGTH[backend], "8192")
    base, head = (unset, setv) if direction == "added" else (setv, unset)
    v = verdict(base, head)
    assert not v.isolation_required  # not known ...
    assert v.categories == ()
    assert v.assumed == ("mdc-checksum",)  # ... but assumed
    assert v.isolation_verdict is True
    assert not any("safe to roll in place" in r for r in v.reasons)
    assert any("config.json" in r and "assumed" in r for r in v.reasons)
    assert recommend(v).isolation == "isolated"


@pytest.mark.parametrize("backend", sorted(LENGTH))
def test_context_length_between_two_values_is_a_checksum_change(backend: str) -> None:
    v = verdict(dgd(backend, LENGTH[backend], "8192"), dgd(backend, LENGTH[backend], "4096"))
    assert v.isolation_required and v.categories == ("mdc-checksum",)
    assert v.assumed == () and v.isolation_verdict is True


def test_a_real_change_beside_it_decides_the_verdict() -> None:
    v = verdict(dgd("vllm", "--block-size", "16"),
                dgd("vllm", "--block-size", "32", "--max-model-len", "8192"))
    assert v.isolation_verdict is True and v.categories == ("mdc-checksum",)
    assert v.assumed == ()  # already established by the block size


def test_trtllm_served_name_equal_to_the_model_path_is_safe() -> None:
    v = verdict(dgd("trtllm"), dgd("trtllm", "--served-model-name", "Qwen/Qwen3-0.6B"))
    assert v.isolation_verdict is False, v.reasons
    v = verdict(dgd("trtllm"), dgd("trtllm", "--served-model-name", "qwen"))
    assert v.isolation_required and v.categories == ("mdc-checksum",)


# --------------------------------------------------------------------------- the command line


def model_dir(tmp_path: Path, name: str = "model", **config: Any) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3", **config}))
    return d


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def diff(tmp_path: Path, old: str, new: str, *extra: str, fmt: str = "json"
         ) -> tuple[int, Any]:
    (tmp_path / "old.yaml").write_text(old)
    (tmp_path / "new.yaml").write_text(new)
    code, out, err = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"),
                         "--format", fmt, *extra)
    assert not err or code == 2, err
    return code, (json.loads(out) if fmt in ("json", "sarif") else out)


ADDED = (dgd_text("vllm"), dgd_text("vllm", ("--max-model-len", "16384")))


def test_the_bundled_example_is_the_case_tested() -> None:
    """docs/checker.md runs `dgdgen diff` on docs/examples/fail-safe/: the pair below, and a
    model whose config.json says 16384 (the value the new revision sets)."""
    bundled = REPO / "docs" / "examples" / "fail-safe"
    assert ((bundled / "old.yaml").read_text(), (bundled / "new.yaml").read_text()) == ADDED
    config = json.loads((bundled / "models" / "qwen" / "config.json").read_text())
    assert config == {"model_type": "qwen3", "max_position_embeddings": 16384}


def test_adding_a_context_length_fails_with_isolation_assumed(tmp_path: Path) -> None:
    code, report = diff(tmp_path, *ADDED)
    assert code == 1
    assert report["isolation_required"] is True
    assert report["categories"] == [] and report["assumed"] == ["mdc-checksum"]
    [f] = [f for f in report["findings"] if f["code"] == "DGD205"]
    assert f["severity"] == "error" and not f["suppressed"]
    # the category of the input it could not resolve, the headline short, the whole in details
    assert f["category"] == "mdc-checksum"
    assert f["message"] == ("worker --max-model-len (unset)→16384: unset, the model's files "
                            "decide: mdc-checksum change assumed")
    assert "--model-config DIR" in f["details"] and "max_position_embeddings" in f["details"]
    assert "dgdgen.dev/ignore-DGD205" in f["details"]
    assert "--model-config DIR" in f["help"]
    assert not any(f["code"] == "DGD201" for f in report["findings"])
    [v] = report["verdicts"]
    assert v["isolation_required"] is True and v["assumed"] == ["mdc-checksum"]
    assert [c["assumed"] for c in v["changes"]] == [True]
    code, text = diff(tmp_path, *ADDED, fmt="text")
    assert code == 1
    assert "isolation required (assumed: mdc-checksum)" in text
    assert "error DGD205 worker --max-model-len (unset)→16384" in text
    assert "help: give `--model-config DIR`" in text
    code, sarif = diff(tmp_path, *ADDED, fmt="sarif")
    props = sarif["runs"][0]["properties"]
    assert props["isolationRequired"] is True and props["assumed"] == ["mdc-checksum"]


def test_the_model_config_settles_it_exactly(tmp_path: Path) -> None:
    same = model_dir(tmp_path, "same", max_position_embeddings=16384)
    code, report = diff(tmp_path, *ADDED, "--model-config", str(same))
    assert code == 0, report["findings"]
    assert report["isolation_required"] is False
    assert report["categories"] == [] and report["assumed"] == []
    assert report["findings"] == []
    [change] = report["verdicts"][0]["changes"]
    assert change["category"] == "safe", change
    assert "vllm derives when it is unset (16384, the max_position_embeddings" in change["reason"]
    other = model_dir(tmp_path, "other", max_position_embeddings=40960)
    code, report = diff(tmp_path, *ADDED, "--model-config", str(other))
    assert code == 1
    assert report["isolation_required"] is True and report["categories"] == ["mdc-checksum"]
    assert report["assumed"] == []
    assert [f["code"] for f in report["findings"]] == ["DGD201"]
    assert "unset, vllm derives 40960 (the max_position_embeddings of" in \
        report["findings"][0]["details"]


def test_the_tokenizer_caps_vllm_s_derived_length(tmp_path: Path) -> None:
    d = model_dir(tmp_path, max_position_embeddings=40960)
    (d / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 16384}))
    code, report = diff(tmp_path, *ADDED, "--model-config", str(d))
    assert code == 0 and report["isolation_required"] is False, report


def test_a_suppression_with_a_reason_settles_it(tmp_path: Path) -> None:
    ann = '{dgdgen.dev/ignore-DGD205: "config.json max_position_embeddings is 16384"}'
    new = dgd_text("vllm", ("--max-model-len", "16384"), annotations=ann)
    code, report = diff(tmp_path, ADDED[0], new)
    assert code == 0
    assert report["isolation_required"] is False and report["assumed"] == []
    [f] = report["findings"]
    assert f["code"] == "DGD205" and f["suppressed"]
    assert f["suppression_reason"] == ("config.json max_position_embeddings is 16384 "
                                       "(annotation)")
    assert report["verdicts"][0]["isolation_required"] is False
    # without a reason nothing is settled (DGD001 says why)
    new = dgd_text("vllm", ("--max-model-len", "16384"),
                   annotations='{dgdgen.dev/ignore: "DGD205"}')
    code, report = diff(tmp_path, ADDED[0], new)
    assert code == 1 and report["isolation_required"] is True
    assert {f["code"] for f in report["findings"]} == {"DGD001", "DGD205"}


def test_an_ignored_rule_does_not_settle_it(tmp_path: Path) -> None:
    # --ignore hides the finding, not the assumption: the verdict stays fail safe
    code, report = diff(tmp_path, *ADDED, "--ignore", "DGD205")
    assert code == 0 and report["findings"] == []
    assert report["isolation_required"] is True and report["assumed"] == ["mdc-checksum"]


def test_sglang_context_length_settles_by_the_card_maximum(tmp_path: Path) -> None:
    d = model_dir(tmp_path, max_position_embeddings=8192)
    old, new = dgd_text("sglang"), dgd_text("sglang", ("--context-length", "8192"))
    code, report = diff(tmp_path, old, new, "--model-config", str(d))
    assert code == 0 and report["isolation_required"] is False, report


def test_trtllm_context_length_is_not_settled_by_the_files(tmp_path: Path) -> None:
    d = model_dir(tmp_path, max_position_embeddings=8192)
    old, new = dgd_text("trtllm"), dgd_text("trtllm", ("--max-seq-len", "8192"))
    code, report = diff(tmp_path, old, new, "--model-config", str(d))
    assert code == 1 and report["assumed"] == ["mdc-checksum"]
    [f] = report["findings"]
    assert "BuildConfig.max_seq_len" in f["details"]
    assert "set it on both revisions" in f["details"] and "--model-config" not in f["details"]


@pytest.mark.parametrize(("config", "why"), [
    ({"max_position_embeddings": 16384, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}},
     "rope_scaling yarn factor 4.0"),
    ({"max_position_embeddings": 16384, "sliding_window": 4096}, "sliding_window 4096"),
    ({"max_position_embeddings": 16384, "model_max_length": 8192}, "model_max_length 8192"),
    ({"text_config": {"max_position_embeddings": 16384}}, "nests a text_config"),
    ({}, "none of vLLM's length keys"),
])
def test_what_vllm_derives_in_more_ways_stays_assumed(tmp_path: Path, config: dict[str, Any],
                                                      why: str) -> None:
    code, report = diff(tmp_path, *ADDED, "--model-config", str(model_dir(tmp_path, **config)))
    assert code == 1 and report["assumed"] == ["mdc-checksum"]
    assert why in report["findings"][0]["details"]


def test_llama3_rope_and_an_unlimited_tokenizer_leave_the_length(tmp_path: Path) -> None:
    d = model_dir(tmp_path, max_position_embeddings=16384, sliding_window=[4096, None],
                  use_sliding_window=False,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0})
    (d / "tokenizer_config.json").write_text('{"model_max_length": 1000000000000000019884624838656}')
    code, report = diff(tmp_path, *ADDED, "--model-config", str(d))
    assert code == 0 and report["isolation_required"] is False, report


def test_vllm_length_is_the_smallest_key(tmp_path: Path) -> None:
    cfg = load(str(model_dir(tmp_path, max_position_embeddings=32768, seq_length=16384)))
    st = settle("--max-model-len", Backend.VLLM, "16384", cfg)
    assert st.same is True and st.derived == "16384" and st.text.startswith("seq_length of")
    assert settle("--max-model-len", Backend.VLLM, "32768", cfg).same is False
    assert settle("--max-model-len", Backend.VLLM, "16k", cfg).same is None


def test_a_model_config_for_one_of_several_models_does_not_apply(tmp_path: Path) -> None:
    d = model_dir(tmp_path, max_position_embeddings=16384)
    two = DISAGG_VLLM.replace("Qwen/Qwen3-0.6B, --disaggregation-mode", "Qwen/Qwen3-8B, "
                              "--disaggregation-mode")
    code, report = diff(tmp_path, two.format(decode="", prefill=""),
                        two.format(decode=", --max-model-len, '16384'", prefill=""),
                        "--model-config", str(d))
    assert code == 1 and report["assumed"] == ["mdc-checksum"]
    [f] = [f for f in report["findings"] if f["code"] == "DGD205"]
    assert "gives one model's files, but the workers serve" in f["details"]


@pytest.mark.parametrize(("setup", "message"), [
    (lambda d: None, "not found: --model-config names the model's directory"),
    (lambda d: d.mkdir(), "no config.json in the --model-config directory"),
    (lambda d: (d.mkdir(), (d / "config.json").write_text('{"a": 1,\n "b": }')),
     "config.json:2:7: not valid JSON"),
    (lambda d: (d.mkdir(), (d / "config.json").write_text("[1]")),
     "expected a JSON object, got list"),
    (lambda d: (d.mkdir(), (d / "config.json").write_text('{"max_position_embeddings": "x"}')),
     "max_position_embeddings: expected a positive integer, got 'x'"),
    (lambda d: (d.mkdir(), (d / "config.json").write_text("{}"),
                (d / "tokenizer_config.json").write_text('{"model_max_length": -1}')),
     "tokenizer_config.json: model_max_length: expected a positive integer"),
])
def test_a_bad_model_config_is_a_clear_error(tmp_path: Path, setup: Any, message: str) -> None:
    d = tmp_path / "m"
    setup(d)
    (tmp_path / "a.yaml").write_text(ADDED[0])
    code, out, err = run("diff", str(tmp_path / "a.yaml"), str(tmp_path / "a.yaml"),
                         "--model-config", str(d))
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err, err


# --------------------------------------------------------------------------- dtype, KV transfer

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


def _disagg(tmp_path: Path, old: str, new: str, *extra: str) -> tuple[int, Any]:
    return diff(tmp_path, DISAGG_VLLM.format(decode=old, prefill=old),
                DISAGG_VLLM.format(decode=new, prefill=new), *extra)


@pytest.mark.parametrize("direction", ["added", "removed"])
def test_dtype_set_on_one_side_of_a_disaggregated_graph_is_assumed(
        tmp_path: Path, direction: str) -> None:
    # unset, vLLM takes the model's torch_dtype (`auto`), and the KV cache follows it: setting
    # it on one side may or may not change the KV layout the prefill workers hand over
    setv = ", --dtype, bfloat16"
    old, new = ("", setv) if direction == "added" else (setv, "")
    code, data = _disagg(tmp_path, old, new)
    assert data["assumed"] == ["kv-transfer"] and data["categories"] == [], data
    assert data["isolation_required"] is True
    codes = [f["code"] for f in data["findings"]]
    assert codes.count("DGD205") == 2 and "DGD202" not in codes, data["findings"]
    # the input it could not resolve is a KV-transfer one, on both roles
    assert {(f["component"], f["category"]) for f in data["findings"]} == {
        ("VllmDecodeWorker", "kv-transfer"), ("VllmPrefillWorker", "kv-transfer")}
    assert code == 1


@pytest.mark.parametrize(("torch_dtype", "flag", "code", "categories", "assumed"), [
    ("bfloat16", "bfloat16", 0, [], []),
    ("float16", "half", 0, [], []),
    ("bfloat16", "float16", 1, ["kv-transfer"], []),
    ("float32", "bfloat16", 1, [], ["kv-transfer"]),  # vLLM casts it per platform
])
def test_the_model_config_settles_the_dtype(tmp_path: Path, torch_dtype: str, flag: str,
                                            code: int, categories: list[str],
                                            assumed: list[str]) -> None:
    d = model_dir(tmp_path, torch_dtype=torch_dtype, max_position_embeddings=40960)
    got, data = _disagg(tmp_path, "", f", --dtype, {flag}", "--model-config", str(d))
    assert (got, data["categories"], data["assumed"]) == (code, categories, assumed), data


def test_dtype_between_two_values_is_a_kv_transfer_change(tmp_path: Path) -> None:
    code, data = _disagg(tmp_path, ", --dtype, bfloat16", ", --dtype, float16")
    assert data["categories"] == ["kv-transfer"] and data["isolation_required"] is True, data
    assert [f["code"] for f in data["findings"]].count("DGD202") == 2, data["findings"]
    assert code == 1


def test_the_config_file_names_the_model_and_settles_by_suppression(tmp_path: Path,
                                                                    monkeypatch: Any) -> None:
    model_dir(tmp_path, "qwen", max_position_embeddings=16384)
    (tmp_path / ".dgdgen.yaml").write_text("check:\n  model-config: qwen\n")
    monkeypatch.chdir(tmp_path)
    code, report = diff(tmp_path, *ADDED)
    assert code == 0 and report["isolation_required"] is False, report
    # a config-file suppression with a reason settles it too
    (tmp_path / ".dgdgen.yaml").write_text(
        "check:\n  suppress:\n    - rule: derived-default-in-place\n"
        "      reason: the model's maximum is 16384\n")
    code, report = diff(tmp_path, *ADDED)
    assert code == 0 and report["isolation_required"] is False
    [f] = report["findings"]
    assert f["suppressed"] and f["suppression_reason"] == "the model's maximum is 16384 (config)"
    (tmp_path / ".dgdgen.yaml").write_text("check:\n  model-config: [qwen]\n")
    code, _, err = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"))
    assert code == 2 and ".dgdgen.yaml:2:" in err and "check.model-config" in err, err


# --------------------------------------------------------------------------- categories

# A fail-safe finding carries the category of the input it could not resolve, so a consumer of
# the report tells an unresolved card input from an unresolved KV-transfer one. Expected by
# hand from the flag tables' sources (dgdgen/check/flags.py): the context length feeds the card
# on every backend (mdc-checksum); the model dtype (vLLM, SGLang) feeds the KV cache a
# disaggregated graph hands over (kv-transfer) and nothing an aggregated one compares.
FAIL_SAFE = {
    ("vllm", "--max-model-len"): ("mdc-checksum", "mdc-checksum"),
    ("vllm", "--dtype"): (None, "kv-transfer"),
    ("sglang", "--context-length"): ("mdc-checksum", "mdc-checksum"),
    ("sglang", "--dtype"): (None, "kv-transfer"),
    ("trtllm", "--max-seq-len"): ("mdc-checksum", "mdc-checksum"),
}


def _fail_safe_cases(backend: str) -> list[Any]:
    from single_flag_edits import cases

    return [c for c in cases() if (c.base.backend, c.flag) in FAIL_SAFE
            and c.base.backend == backend]


@pytest.mark.parametrize("backend", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("shell", [False, True], ids=["arg-list", "sh-c-chain"])
def test_fail_safe_findings_carry_the_category_they_could_not_resolve(
        tmp_path: Path, backend: str, shell: bool) -> None:
    """On the bundled examples' DGDs (aggregated and disaggregated, v1alpha1 and v1beta1),
    with the flag in an argument list or inside an `sh -c` chain: every DGD205 finding has the
    expected category, and every worker the edit touched has one (category F1 = 1)."""
    from single_flag_edits import as_shell

    found = expected = hits = 0
    for case in _fail_safe_cases(backend):
        old, new = (as_shell(case.old), as_shell(case.new)) if shell else (case.old, case.new)
        _, report = diff(tmp_path, old, new)
        got = {(f["component"], f["category"]) for f in report["findings"]
               if f["code"] == "DGD205"}
        category = FAIL_SAFE[(backend, case.flag)][case.base.disaggregated]
        # the flag, or the engine key a TRT-LLM flag lands in (--max-seq-len: max_seq_len)
        fields = {case.flag, "engine:" + case.flag.lstrip("-").replace("-", "_")}
        workers = {ch["component"] for v in report["verdicts"] for ch in v["changes"]
                   if ch["field"] in fields}
        want = {(w, category) for w in workers} if category else set()
        assert workers, case.id  # the edit was read (from the list or the shell string)
        assert got == want, case.id
        assert report["assumed"] == ([category] if category else []), case.id
        found, expected, hits = found + len(got), expected + len(want), hits + len(got & want)
    assert expected and hits == found == expected  # precision = recall = F1 = 1
