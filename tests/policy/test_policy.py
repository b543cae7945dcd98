"""The emitted policy: valid against the upstream schema, type-checked by cel-cpp, generated
from the checker's tables, with a working escape hatch and bookkeeping exemptions."""

from __future__ import annotations

import copy
import itertools
import os
from typing import Any

import pytest
import yaml

from dgdgen.check import flags as check_flags
from dgdgen.check.flags import Category, Input
from dgdgen.model.generation import ANN_BASE_NAME, ANN_REVISION
from dgdgen.policy import ESCAPE_ANNOTATION, Options, build, violations
from dgdgen.policy.cost import PER_CALL_LIMIT, RUNTIME_BUDGET, estimate
from dgdgen.policy.evaluate import evaluate
from dgdgen.policy.schema import expressions
from dgdgen.policy.tables import keys

CORPUS = os.path.join(os.path.dirname(__file__), "..", "check", "corpus")


def _pair(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    def load(f: str) -> dict[str, Any]:
        with open(os.path.join(CORPUS, name, f), encoding="utf-8") as fh:
            return next(d for d in yaml.safe_load_all(fh) if d)
    return load("old.yaml"), load("new.yaml")


def _policy(**kw: Any) -> dict[str, Any]:
    return build(Options(**kw))[0]


ACTION_SETS = [("Deny",), ("Warn",), ("Audit",), ("Deny", "Audit"), ("Warn", "Audit")]


@pytest.mark.parametrize(("release", "actions", "failure"), list(itertools.product(
    check_flags.RELEASES, ACTION_SETS, ("Fail", "Ignore"))))
def test_every_variant_validates_against_the_upstream_schema(
        release: str, actions: tuple[str, ...], failure: str) -> None:
    docs = build(Options(dynamo_version=release, actions=actions, failure_policy=failure))
    assert [d["kind"] for d in docs] == ["ValidatingAdmissionPolicy",
                                         "ValidatingAdmissionPolicyBinding"]
    for d in docs:
        assert violations(d) == []
    assert docs[1]["spec"]["validationActions"] == list(actions)
    assert docs[0]["spec"]["failurePolicy"] == failure


def test_the_schema_check_rejects_what_the_api_server_would() -> None:
    policy, binding = build(Options())
    bad = copy.deepcopy(policy)
    bad["spec"]["validations"][0]["messageExpresion"] = "typo"
    bad["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = "UPDATE"
    problems = violations(bad)
    assert any("messageExpresion" in p for p in problems)
    assert any("operations" in p for p in problems)
    bad_binding = copy.deepcopy(binding)
    bad_binding["spec"]["validationActions"] = ["Deny", "Warn"]
    assert violations(bad_binding) == ["spec.validationActions: Deny and Warn cannot be combined"]
    bad = copy.deepcopy(policy)
    bad["spec"]["variables"][0]["name"] = "not-an-identifier"
    assert violations(bad) == ["spec.variables[0].name: not a unique CEL identifier: "
                               "'not-an-identifier'"]


def test_deny_and_warn_together_is_a_usage_error() -> None:
    from dgdgen.errors import InputError

    with pytest.raises(InputError, match="Deny and Warn"):
        build(Options(actions=("Deny", "Warn")))


@pytest.mark.parametrize("release", check_flags.RELEASES)
def test_every_expression_type_checks(release: str) -> None:
    pytest.importorskip("cel_expr_python", reason="cel-expr-python (cel-cpp) not installed")
    from dgdgen.policy.typecheck import check

    policy = _policy(dynamo_version=release)
    assert check(policy) == []
    assert len(list(expressions(policy))) > 30


def test_the_type_check_catches_type_errors() -> None:
    pytest.importorskip("cel_expr_python", reason="cel-expr-python (cel-cpp) not installed")
    from dgdgen.policy.typecheck import check

    policy = _policy()
    policy["spec"]["validations"][0]["messageExpression"] = "size(variables.mdcChanges)"
    policy["spec"]["validations"][1]["expression"] = "1 + \"a\" == 2"
    problems = check(policy)
    assert problems[0].startswith("spec.validations[0].messageExpression: has type INT")
    assert problems[1].startswith("spec.validations[1].expression: INVALID_ARGUMENT")


def test_cost_estimate_within_the_api_server_limits_for_ordinary_dgds() -> None:
    # docs/policy.md: up to 8 components, 32 argument words, 16 env entries, 256 characters.
    est = estimate(_policy(), n=8, length=256, components=8, args=32, env=16)
    assert max(e.cost for e in est) <= PER_CALL_LIMIT
    assert sum(e.cost for e in est) <= RUNTIME_BUDGET
    # and the estimate grows with the bounds (it is not a constant)
    big = estimate(_policy(), n=16, length=256, components=16, args=64, env=32)
    assert sum(e.cost for e in big) > RUNTIME_BUDGET


# --------------------------------------------------------------------------- one source of truth


def test_every_table_key_of_the_release_is_in_the_policy() -> None:
    for release in check_flags.RELEASES:
        text = " ".join(src for _, src in expressions(_policy(dynamo_version=release)))
        for key in keys(release):
            assert f"{key.label} changes {key.what}" in text, (release, key.label)


def test_a_new_table_entry_reaches_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = _pair("vllm-gpu-memory-utilization")  # safe: capacity only
    assert evaluate(_policy(), old, new).codes == ()
    entry = Input(("--gpu-memory-utilization",), Category.MDC, "a card field in a future release",
                  check_flags.VLLM, "test")
    monkeypatch.setattr(check_flags, "MDC_INPUTS", check_flags.MDC_INPUTS + (entry,))
    out = evaluate(_policy(), old, new)
    assert out.codes == ("DGD201",)
    assert "--gpu-memory-utilization changes a card field in a future release" in out.denied[0][1]


def test_release_specific_entries_follow_dynamo_version() -> None:
    old, new = _pair("trtllm-kv-block-size-flag-1.3")
    assert evaluate(_policy(dynamo_version="1.3"), old, new).codes == ("DGD201", "DGD202")
    assert evaluate(_policy(dynamo_version="1.5"), old, new).codes == ()


# --------------------------------------------------------------------------- messages


def test_message_names_rule_component_and_flag() -> None:
    old, new = _pair("sglang-page-size-disagg-v1beta1")
    out = evaluate(_policy(), old, new)
    messages = dict(out.denied)
    assert messages["DGD201"].startswith("DGD201 mdc-change-in-place: ")
    assert "--page-size changes" in messages["DGD201"]
    assert messages["DGD202"].startswith("DGD202 kv-transfer-change-in-place: ")
    component = next(c["name"] for c in new["spec"]["components"] if c["type"] == "decode")
    assert f"{component}: --page-size" in messages["DGD202"]
    assert ESCAPE_ANNOTATION in messages["DGD201"]


# --------------------------------------------------------------------------- escape hatch


def _annotate(doc: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"].setdefault("annotations", {})[key] = value
    return out


def test_escape_hatch_admits_and_audits_the_reason() -> None:
    old, new = _pair("vllm-image-bump-v1alpha1")
    assert evaluate(_policy(), old, new).codes == ("DGD203",)
    reason = "CVE fix, frontend and workers restarted together in a maintenance window"
    out = evaluate(_policy(), old, _annotate(new, ESCAPE_ANNOTATION, reason))
    assert out.denied == () and out.errors == ()
    audit = out.audit["in-place-override"]
    assert reason in audit and "image" in audit


def test_escape_hatch_needs_a_reason_and_a_new_one_each_time() -> None:
    old, new = _pair("vllm-image-bump-v1alpha1")
    blank = evaluate(_policy(), old, _annotate(new, ESCAPE_ANNOTATION, "  "))
    assert blank.codes == ("DGD203",)
    # the stored object already carries the same reason: it does not cover a further change
    stale_old = _annotate(old, ESCAPE_ANNOTATION, "an earlier change")
    stale_new = _annotate(new, ESCAPE_ANNOTATION, "an earlier change")
    assert evaluate(_policy(), stale_old, stale_new).codes == ("DGD203",)
    assert evaluate(_policy(), old, new).audit == {}


# --------------------------------------------------------------------------- bookkeeping


def test_a_dgdgen_generation_beside_its_stable_is_not_matched() -> None:
    old, new = _pair("vllm-image-bump-v1alpha1")
    old = _annotate(_annotate(old, ANN_BASE_NAME, old["metadata"]["name"]), ANN_REVISION, "r1")
    new = _annotate(_annotate(new, ANN_BASE_NAME, old["metadata"]["name"]), ANN_REVISION, "r2")
    assert evaluate(_policy(), old, new).matched is False
    # the same revision on both sides is an in-place edit of that generation: denied
    same = _annotate(new, ANN_REVISION, "r1")
    assert evaluate(_policy(), old, same).codes == ("DGD203",)


def test_metadata_only_updates_and_deletions_are_not_matched() -> None:
    old, _ = _pair("vllm-image-bump-v1alpha1")
    touched = _annotate(old, "nvidia.com/current-worker-hash", "abc")
    assert evaluate(_policy(), old, touched).matched is False
    _, new = _pair("vllm-image-bump-v1alpha1")
    deleting = copy.deepcopy(new)
    deleting["metadata"]["deletionTimestamp"] = "2026-11-23T00:00:00Z"
    assert evaluate(_policy(), old, deleting).matched is False


def test_policy_matches_both_served_versions_on_update_only() -> None:
    rules = _policy()["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [{"apiGroups": ["nvidia.com"], "apiVersions": ["v1alpha1", "v1beta1"],
                      "operations": ["UPDATE"], "resources": ["dynamographdeployments"],
                      "scope": "Namespaced"}]


def test_numbers_compare_by_value_as_the_checker_compares_them() -> None:
    from dgdgen.check.classify import verdict
    from dgdgen.model.dgd import parse

    _, old = _pair("vllm-block-size-disagg-v1alpha1")  # --block-size "32"
    same = copy.deepcopy(old)
    args = same["spec"]["services"]["VllmDecodeWorker"]["extraPodSpec"]["mainContainer"]["args"]
    args[args.index("32")] = "32.0"
    other = copy.deepcopy(same)
    other["spec"]["services"]["VllmDecodeWorker"]["extraPodSpec"]["mainContainer"]["args"][
        args.index("32.0")] = "64"
    assert not verdict(parse(old), parse(same)).isolation_required
    assert evaluate(_policy(), old, same).codes == ()
    assert verdict(parse(old), parse(other)).isolation_required
    assert evaluate(_policy(), old, other).codes == ("DGD201", "DGD202")


def test_env_value_from_references_are_compared() -> None:
    from dgdgen.check.classify import verdict
    from dgdgen.model.dgd import parse

    old, _ = _pair("vllm-worker-env-jinja-template")

    def with_template(doc: dict[str, Any], config_map: str) -> dict[str, Any]:
        out = copy.deepcopy(doc)
        worker = out["spec"]["services"]["VllmDecodeWorker"]
        worker["envs"] = [{"name": "DYN_CUSTOM_JINJA_TEMPLATE", "valueFrom": {
            "configMapKeyRef": {"name": config_map, "key": "template.jinja"}}}]
        return out

    base = with_template(old, "templates-v1")
    for target, codes in ((with_template(old, "templates-v1"), ()),
                          (with_template(old, "templates-v2"), ("DGD201",))):
        assert verdict(parse(base), parse(target)).isolation_required == bool(codes)
        assert evaluate(_policy(), base, target).codes == codes


def test_a_renamed_component_is_paired_by_its_role() -> None:
    from dgdgen.check.classify import verdict
    from dgdgen.model.dgd import parse

    old, new = _pair("vllm-kv-connector-v1beta1")

    def renamed(doc: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(doc)
        for c in out["spec"]["components"]:
            if c["name"] == "VllmDecodeWorker":
                c["name"] = "decode-workers"
        return out

    # a rename alone changes nothing in place; a rename with a new connector does
    assert not verdict(parse(old), parse(renamed(old))).isolation_required
    assert evaluate(_policy(), old, renamed(old)).codes == ()
    out = evaluate(_policy(), old, renamed(new))
    assert out.codes == ("DGD202",)
    assert "decode-workers: --kv-transfer-config" in out.denied[0][1]


# --------------------------------------------------------------------------- 1.6 flag forms

_CODES = {"mdc-checksum": "DGD201", "kv-transfer": "DGD202", "runtime-version": "DGD203"}


def _checker_codes(old: dict[str, Any], new: dict[str, Any], release: str) -> tuple[str, ...]:
    from dgdgen.check.classify import verdict
    from dgdgen.model.dgd import parse

    v = verdict(parse(old), parse(new), dynamo_version=release)
    return tuple(sorted(_CODES[c] for c in v.categories))


def _with_worker_env(doc: dict[str, Any], service: str, env: dict[str, str]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["spec"]["services"][service]["envs"] = [{"name": k, "value": v} for k, v in env.items()]
    return out


def _with_worker_args(doc: dict[str, Any], service: str, extra: list[str]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    main = out["spec"]["services"][service]["extraPodSpec"]["mainContainer"]
    main["args"] = list(main["args"]) + extra
    return out


@pytest.mark.parametrize("release", ["1.5", "1.6"])
def test_env_variables_named_unlike_their_flags_and_backend_prefixes(release: str) -> None:
    """cmdline.py ``env_flag``: DYN_ROUTER_USE_KV_EVENTS is --router-kv-events (a router_config
    input with a worker --router-mode), an SGLang worker reads DYN_SGL_* and DYN_SGLANG_*, and
    a vLLM worker ignores them. The policy decides each variant as the checker does."""
    old, _ = _pair("vllm-worker-kv-events-alias-with-mode-1.6")  # prefill has --router-mode kv
    sg_old, _ = _pair("sglang-page-size-disagg-v1alpha1")
    sg_worker = next(n for n, s in sg_old["spec"]["services"].items()
                     if s.get("subComponentType") == "decode"
                     or "decode" in " ".join(s.get("extraPodSpec", {}).get("mainContainer", {})
                                             .get("args", [])))
    variants = [
        (old, "VllmPrefillWorker", "DYN_ROUTER_USE_KV_EVENTS", "true", "false"),
        (old, "VllmDecodeWorker", "DYN_ROUTER_USE_KV_EVENTS", "true", "false"),  # no mode
        (old, "VllmPrefillWorker", "DYN_SGL_PAGE_SIZE", "16", "32"),  # another backend's
        (old, "VllmPrefillWorker", "DYN_VLLM_BLOCK_SIZE", "16", "32"),
        (sg_old, sg_worker, "DYN_SGL_PAGE_SIZE", "16", "32"),  # the command line sets it
        (sg_old, sg_worker, "DYN_SGL_KV_CACHE_DTYPE", "auto", "fp8_e5m2"),
        (sg_old, sg_worker, "DYN_SGLANG_KV_CACHE_DTYPE", "auto", "fp8_e5m2"),
        (sg_old, sg_worker, "DYN_VLLM_KV_CACHE_DTYPE", "auto", "fp8_e5m2"),  # another backend's
    ]
    seen = set()
    for doc, service, var, a, b in variants:
        before = _with_worker_env(doc, service, {var: a})
        after = _with_worker_env(doc, service, {var: b})
        want = _checker_codes(before, after, release)
        assert evaluate(_policy(dynamo_version=release), before, after).codes == want, (
            release, service, var)
        seen.add((var, service, want))
    assert {w for *_, w in seen} >= {(), ("DGD201",), ("DGD202",)}  # not vacuous


def test_multi_valued_served_names_and_their_aliases() -> None:
    """vLLM's --served-model-name takes several words (the extras are the card's aliases, an
    input since 1.5); the words after them are not positional to another flag."""
    old, _ = _pair("vllm-worker-router-mode-1.6")
    base = _with_worker_args(old, "VllmDecodeWorker", ["--served-model-name", "qwen", "q1"])
    variants = {
        "alias changes": ["--served-model-name", "qwen", "q2"],
        "alias dropped": ["--served-model-name", "qwen"],
        "packed": ["--served-model-name", "qwen,q1"],
        "same, respelled": ["--served_model_name", "qwen", "q1"],
        "display name": ["--served-model-name", "other", "q1"],
    }
    outcomes: dict[tuple[str, str], tuple[str, ...]] = {}
    for release in ("1.4", "1.6"):
        for label, args in variants.items():
            new = _with_worker_args(old, "VllmDecodeWorker", args)
            want = _checker_codes(base, new, release)
            got = evaluate(_policy(dynamo_version=release), base, new)
            assert got.codes == want, (release, label)
            outcomes[release, label] = want
    # the alias is an input only from 1.5 (not vacuous: the releases differ)
    assert outcomes["1.6", "alias changes"] != outcomes["1.4", "alias changes"]
    assert outcomes["1.6", "same, respelled"] == () == outcomes["1.6", "packed"]


# --------------------------------------------------------------------------- defaults (issue 24)


def _worker(module: str, args: list[str], env: list[dict[str, str]] | None = None
            ) -> dict[str, Any]:
    main: dict[str, Any] = {"name": "main", "command": ["python3", "-m", module], "args": args}
    if env:
        main["env"] = env
    return {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
            "metadata": {"name": "qwen", "namespace": "ns"},
            "spec": {"components": [{"name": "worker", "type": "worker",
                                     "podTemplate": {"spec": {"containers": [main]}}}]}}


M = ["--model", "Qwen/Qwen3-0.6B"]


@pytest.mark.parametrize(("module", "old", "new", "env_old", "env_new", "denied"), [
    # a context length set on one side only: "cannot tell" (DGD205), admitted like `diff`
    ("dynamo.vllm", M, M + ["--max-model-len", "8192"], None, None, False),
    ("dynamo.sglang", ["--model-path", "Qwen/Qwen3-0.6B", "--context-length", "8192"],
     ["--model-path", "Qwen/Qwen3-0.6B"], None, None, False),
    ("dynamo.trtllm", M, M, None, [{"name": "DYN_TRTLLM_MAX_SEQ_LEN", "value": "8192"}], False),
    ("dynamo.trtllm", M, M + ["--trtllm.max_seq_len", "8192"], None, None, False),
    # set on both sides to different values, in any spelling: a checksum change
    ("dynamo.vllm", M + ["--max-model-len", "4096"], M + ["--max-model-len=8192"], None, None,
     True),
    ("dynamo.trtllm", M + ["--max-seq-len", "4096"], M + ["--trtllm.max_seq_len", "8192"],
     None, None, True),
    ("dynamo.trtllm", M, M, [{"name": "DYN_TRTLLM_MAX_SEQ_LEN", "value": "4096"}],
     [{"name": "DYN_TRTLLM_MAX_SEQ_LEN", "value": "8192"}], True),
    # the served name every backend derives from its model path, set to exactly that
    ("dynamo.trtllm", M, M + ["--served-model-name", "Qwen/Qwen3-0.6B"], None, None, False),
    ("dynamo.sglang", ["--model-path", "Qwen/Qwen3-0.6B"],
     ["--model-path", "Qwen/Qwen3-0.6B", "--served-model-name", "Qwen/Qwen3-0.6B"], None, None,
     False),
    # ... but not when the model changes with it, nor another name
    ("dynamo.trtllm", M, ["--model", "Qwen/Qwen3-8B", "--served-model-name", "Qwen/Qwen3-8B"],
     None, None, True),
    ("dynamo.vllm", M, M + ["--served-model-name", "qwen"], None, None, True),
])
def test_policy_follows_the_checker_on_derived_defaults(
        module: str, old: list[str], new: list[str], env_old: list[dict[str, str]] | None,
        env_new: list[dict[str, str]] | None, denied: bool) -> None:
    from dgdgen.check.classify import verdict
    from dgdgen.model.dgd import read_dgds
    from dgdgen.yamlio import load_documents_fast

    a, b = _worker(module, old, env_old), _worker(module, new, env_new)
    out = evaluate(_policy(), a, b)
    assert not out.errors
    assert ("DGD201" in out.codes) is denied, out.codes
    # the checker on the same pair (one source of truth: the same tables)
    da, db = (read_dgds(load_documents_fast(yaml.safe_dump(d), "x.yaml"))[0] for d in (a, b))
    assert verdict(da, db).isolation_required is denied


def _disagg(module: str, extra: list[str]) -> dict[str, Any]:
    model = ["--model-path" if module == "dynamo.sglang" else "--model", "Qwen/Qwen3-0.6B"]
    comps = [{"name": role, "type": role, "podTemplate": {"spec": {"containers": [{
        "name": "main", "command": ["python3", "-m", module],
        "args": model + ["--disaggregation-mode", role] + extra}]}}}
        for role in ("prefill", "decode")]
    return {"apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
            "metadata": {"name": "qwen", "namespace": "ns"}, "spec": {"components": comps}}


@pytest.mark.parametrize(("module", "extra", "denied"), [
    # set to the value the engine's parser uses when the flag is unset: nothing changes
    ("dynamo.vllm", ["--tensor-parallel-size", "1"], False),
    ("dynamo.vllm", ["--kv-cache-dtype", "auto"], False),
    ("dynamo.vllm", ["--decode-context-parallel-size", "1"], False),
    ("dynamo.sglang", ["--tp-size", "1"], False),
    ("dynamo.sglang", ["--dcp-size", "1"], False),
    ("dynamo.sglang", ["--disaggregation-transfer-backend", "mooncake"], False),
    # another value is a KV-transfer change
    ("dynamo.vllm", ["--tensor-parallel-size", "2"], True),
    ("dynamo.vllm", ["--kv-cache-dtype", "fp8"], True),
    ("dynamo.sglang", ["--dcp-size", "2"], True),
    ("dynamo.sglang", ["--disaggregation-transfer-backend", "nixl"], True),
    # SGLang resolves an unset KV cache dtype per model and platform: `auto` written out is
    # not assumed to be the same
    ("dynamo.sglang", ["--kv-cache-dtype", "auto"], True),
])
def test_policy_follows_the_checker_on_parser_defaults(module: str, extra: list[str],
                                                       denied: bool) -> None:
    from dgdgen.check.classify import verdict
    from dgdgen.model.dgd import read_dgds
    from dgdgen.yamlio import load_documents_fast

    a, b = _disagg(module, []), _disagg(module, extra)
    out = evaluate(_policy(), a, b)
    assert not out.errors
    assert ("DGD202" in out.codes) is denied, out.codes
    # cel-cpp decides it alike: the default is normalised by the same CEL functions as the value
    import importlib.util

    if importlib.util.find_spec("cel_expr_python") is not None:
        from dgdgen.policy import typecheck

        assert ("DGD202" in (typecheck.evaluate(_policy(), a, b) or ())) is denied
    da, db = (read_dgds(load_documents_fast(yaml.safe_dump(d), "x.yaml"))[0] for d in (a, b))
    assert verdict(da, db).isolation_required is denied
