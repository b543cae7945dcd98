"""Issue 13 items 1 and 3: the 1.6 releases are known (and the default), DGD201/202 say what an
in-place change does on the targeted release (message, SARIF help), and multi-valued flags and
alias spellings are read as the ai-dynamo 1.6.1 parsers read them."""

from __future__ import annotations

import json
import os
import re

import pytest
from gen_support import run_cli
from worker_support import shell_worker, worker_component

from dgdgen import runtime
from dgdgen.check.flags import ALIASES_KEY, NEWEST, RELEASES, normalize_release
from dgdgen.check.inplace import HASHED_MDC, HASHED_MDC_SHORT, SHARED_MDC, SHARED_MDC_SHORT
from dgdgen.check.releases import (
    DEFAULT,
    RELEASE_FACTS,
    VERIFIED,
    engine_pins,
    facts,
    source_note,
)

CORPUS = os.path.join(os.path.dirname(__file__), "corpus", "vllm-block-size-disagg-v1alpha1")


def diff(*extra: str, fmt: str = "json") -> str:
    proc = run_cli("diff", os.path.join(CORPUS, "old.yaml"), os.path.join(CORPUS, "new.yaml"),
                   "--format", fmt, "--fail-on", "never", *extra)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_default_is_the_newest_release_whose_runtime_dgdgen_has_run() -> None:
    # 1.7 is known (from source) but not run: the default stays with the runtime the project
    # measured (dgdgen.check.releases, docs/checker.md "Which release by default").
    assert NEWEST == max(RELEASES, key=lambda r: tuple(int(p) for p in r.split(".")))
    assert NEWEST == "1.7" and DEFAULT == "1.6" == VERIFIED[-1]
    assert runtime.DYNAMO_VERSION.rsplit(".", 1)[0] == DEFAULT
    assert normalize_release(None) == DEFAULT
    assert json.loads(diff())["dynamo_version"] == DEFAULT


def test_every_command_assumes_the_same_default() -> None:
    from dgdgen.check.engine import Options
    from dgdgen.spec import DynamoTarget

    assert Options().release == DEFAULT
    assert DynamoTarget().version == DEFAULT
    # the spec sits below the checker and spells the list out: the same list
    described = DynamoTarget.model_fields["version"].description or ""
    assert all(r in described for r in RELEASES) and f"Default {DEFAULT}" in described
    for cmd in (["check", "--help"], ["diff", "--help"], ["policy", "render", "--help"]):
        done = run_cli(*cmd)
        assert done.returncode == 0, done.stderr
        out = done.stdout
        flat = " ".join(out.split())
        # the default, why, and that 1.7's facts are from source
        assert "default 1.6" in flat and re.search(r"1\.7\S* (facts are )?from (its )?source",
                                                   flat), (cmd, flat)


@pytest.mark.parametrize(("spelling", "release"), [
    ("1.6.1", "1.6"), ("1.6.0", "1.6"), ("v1.6.1", "1.6"), ("1.6", "1.6"),
    ("1.7", "1.7"), ("1.7.0", "1.7"), ("v1.7.0", "1.7")])
def test_patch_releases_are_known(spelling: str, release: str) -> None:
    assert normalize_release(spelling) == release
    assert json.loads(diff("--dynamo-version", spelling))["dynamo_version"] == release


def test_an_unknown_release_says_which_are_known_and_why_the_default() -> None:
    proc = run_cli("diff", os.path.join(CORPUS, "old.yaml"), os.path.join(CORPUS, "new.yaml"),
                   "--dynamo-version", "1.8")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "unknown Dynamo version '1.8'" in proc.stderr
    assert "1.3, 1.4, 1.5, 1.6, 1.7" in proc.stderr and "has run" in proc.stderr


def test_release_facts_cover_every_release_and_say_what_is_from_source() -> None:
    assert set(RELEASE_FACTS) == set(RELEASES)
    assert facts("1.7").from_source and not facts("1.6").from_source
    assert engine_pins("1.7") == "vLLM 0.33.0, SGLang 0.5.23, TRT-LLM 1.4.0rc2"
    assert "source, not run" in facts("1.7").health and "?instances=true" in facts("1.7").health
    # the per-model gate dgdgen renders on candidate frontends is each release's
    from dgdgen.render import frontends

    for r in RELEASES:
        assert facts(r).model_ready_path.format(model="m") == frontends.path("m")
        assert facts(r).health_ready_without_workers  # why CLU101 needs the ready path
    assert source_note("1.6") == "" and "not run" in source_note("1.7")


# What each (release, worker backing) does with an in-place checksum change: the operator's
# hash-suffixed worker namespaces (Deployment-backed on every release, Grove / LWS from 1.5,
# Dynamo #12769), else one shared namespace and the frontend's per-release reaction.
EXPECTED = {
    (r, rb): (HASHED_MDC if rb == "deployment" or (rb in ("grove", "lws") and r >= "1.5")
              else SHARED_MDC[r])
    for r in RELEASES for rb in ("deployment", "grove", "lws", "unmanaged")
}


SHORT = {HASHED_MDC: HASHED_MDC_SHORT, **{SHARED_MDC[r]: SHARED_MDC_SHORT[r] for r in RELEASES}}


def test_every_release_has_a_short_consequence() -> None:
    """A release added to the tables needs its headline words too (else the generic one)."""
    assert set(SHARED_MDC) == set(SHARED_MDC_SHORT) == set(RELEASES)


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("run_by", ["deployment", "grove", "lws", "unmanaged"])
def test_dgd201_message_says_the_consequence_of_the_targeted_release(release: str,
                                                                    run_by: str) -> None:
    report = json.loads(diff("--dynamo-version", release, "--workers-run-by", run_by))
    assert report["workers_run_by"] == run_by
    found = [f for f in report["findings"] if f["code"] == "DGD201"]
    assert found
    expected = EXPECTED[(release, run_by)]
    others = {HASHED_MDC, *SHARED_MDC.values()} - {expected}
    # the whole consequence in the details, the same in a few words in the headline
    short = SHORT[expected]
    other_short = {SHORT[t] for t in others} - {short}
    for f in found:
        assert expected in f["details"]
        assert not any(t in f["details"] for t in others)
        assert f["message"].endswith(": " + short), f["message"]
        assert not any(t in f["message"] for t in other_short)


@pytest.mark.parametrize(("release", "run_by"), [("1.5", "deployment"), ("1.6", "deployment"),
                                                 ("1.4", "grove"), ("1.6", "unmanaged")])
def test_sarif_help_says_the_consequence_of_the_targeted_release(release: str,
                                                                 run_by: str) -> None:
    sarif = json.loads(diff("--dynamo-version", release, "--workers-run-by", run_by,
                            fmt="sarif"))
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    expected = EXPECTED[(release, run_by)]
    assert expected in rules["DGD201"]["help"]["text"]
    for other in {HASHED_MDC, *SHARED_MDC.values()} - {expected}:
        assert other not in rules["DGD201"]["help"]["text"]


def worker(args: str, backend: str = "vllm") -> dict[str, str]:
    comp = shell_worker(f"python3 -m dynamo.{backend} {args}")
    return {k: s.value for k, s in comp.flags.items()}


def test_served_model_name_takes_several_values_in_vllm() -> None:
    flags = worker("--served-model-name qwen qwen-chat qwen-2 --block-size 16 --model Q")
    assert flags["--served-model-name"] == "qwen"
    assert flags[ALIASES_KEY] == "qwen-chat qwen-2"
    assert flags["--block-size"] == "16"
    assert flags["--model"] == "Q"


def test_packed_served_names_split_on_commas_and_spaces() -> None:
    assert worker("--served-model-name 'a,b c' --model Q", "sglang")[ALIASES_KEY] == "b c"
    assert worker("--served-model-name=a,b --model Q")[ALIASES_KEY] == "b"


def test_trtllm_served_model_name_is_one_value() -> None:
    flags = worker("--served-model-name a,b --model Q", "trtllm")
    assert flags["--served-model-name"] == "a,b"
    assert ALIASES_KEY not in flags


def test_zero_or_more_values_and_alias_spellings() -> None:
    flags = worker("--connector --no-kv-events --track-active-blocks --model Q", "trtllm")
    assert flags["--connector"] == ""
    assert flags["--router-kv-events"] == "false"
    assert flags["--router-track-active-blocks"] == "true"
    assert worker("--connector kvbm nixl --model Q", "trtllm")["--connector"] == "kvbm nixl"


def worker_env(name: str, value: str, backend: str) -> dict[str, str]:
    comp = worker_component(f"command: [python3, -m, dynamo.{backend}, --model, Q]",
                            f'env: [{{name: {name}, value: "{value}"}}]')
    return {k: s.value for k, s in comp.flags.items()}


@pytest.mark.parametrize(("var", "flag"), [
    ("DYN_ROUTER_USE_KV_EVENTS", "--router-kv-events"),
    ("DYN_OVERLAP_SCORE_WEIGHT", "--router-kv-overlap-score-weight"),
    ("DYN_ROUTER_LOAD_AWARE", "--load-aware"),
    ("DYN_ROUTER_MODE", "--router-mode"),
])
def test_environment_variables_named_unlike_their_flag(var: str, flag: str) -> None:
    assert worker_env(var, "x", "vllm")[flag] == "x"


def test_sglang_reads_dyn_sgl_variables_and_vllm_does_not() -> None:
    assert worker_env("DYN_SGL_ENABLE_MULTIMODAL", "true", "sglang")["--enable-multimodal"] == "true"
    assert "--enable-multimodal" not in worker_env("DYN_SGL_ENABLE_MULTIMODAL", "true", "vllm")
    assert "--sgl-enable-multimodal" not in worker_env("DYN_SGL_ENABLE_MULTIMODAL", "true", "vllm")
