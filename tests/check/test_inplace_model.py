"""Issue 22 item 1: one model of what applying a change in place does, per release and worker
backing, and every consumer (checker, plan notes, admission policy, CLI choices) says the same."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from gen_support import run_cli

from dgdgen.check.flags import RELEASES, Category
from dgdgen.check.inplace import (
    HASHED_KV,
    HASHED_MDC,
    MODEL_REMOVED,
    SHARED_KV,
    SHARED_MDC,
    Namespaces,
    RunBy,
    Target,
    namespaces_for,
    parse_run_by,
    roll_of,
)
from dgdgen.errors import InputError

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "check" / "corpus" / "vllm-block-size-disagg-v1alpha1"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env={"NO_COLOR": "1"})


@pytest.mark.parametrize("release", RELEASES)
def test_which_backings_get_hash_suffixed_worker_namespaces(release: str) -> None:
    # Deployment-backed: the managed rolling update (#6110) on every release covered.
    assert namespaces_for(release, RunBy.DEPLOYMENT) is Namespaces.HASHED
    # Grove / LWS: #12769, first in 1.5.0.
    expected = Namespaces.HASHED if release >= "1.5" else Namespaces.SHARED
    assert namespaces_for(release, RunBy.GROVE) is expected
    assert namespaces_for(release, RunBy.LWS) is expected
    assert namespaces_for(release, RunBy.UNMANAGED) is Namespaces.SHARED


def test_multinode_workers_are_never_deployment_backed() -> None:
    target = Target("1.4", RunBy.DEPLOYMENT)
    assert roll_of(target, [("decode", False, {}, None)]).hashed
    roll = roll_of(target, [("decode", True, {}, None), ("prefill", False, {}, None)])
    assert roll.run_by is RunBy.LWS and not roll.hashed


def test_a_pinned_endpoint_defeats_the_suffix_on_every_release() -> None:
    for release in RELEASES:
        roll = roll_of(Target(release), [("w", False, {}, "dyn://ns-x.backend.generate")])
        assert not roll.hashed and "--endpoint" in roll.why
    # An endpoint value that names no namespace does not count.
    assert roll_of(Target("1.6"), [("w", False, {}, "generate")]).hashed


def test_pace_follows_the_rolling_update_annotations() -> None:
    t = Target("1.6")
    assert "maxSurge 25% / maxUnavailable 25%" in roll_of(t, [("w", False, {}, None)]).pace
    ann = {"nvidia.com/deployment-rolling-update-max-surge": "1",
           "nvidia.com/deployment-rolling-update-max-unavailable": "0"}
    assert "maxSurge 1 / maxUnavailable 0" in roll_of(t, [("w", False, ann, None)]).pace
    recreate = {"nvidia.com/deployment-strategy": "Recreate"}
    assert "no worker in between" in roll_of(t, [("w", False, recreate, None)]).pace
    assert "one pod at a time" in roll_of(Target("1.6", RunBy.GROVE),
                                          [("w", False, {}, None)]).pace


def test_unknown_backing_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown worker backing"):
        parse_run_by("kubernetes")
    assert parse_run_by(None) is RunBy.DEPLOYMENT


def test_cli_choices_are_the_models() -> None:
    from dgdgen.commands import check

    assert check.RUN_BY == tuple(r.value for r in RunBy)


def test_spec_default_release_is_the_checker_default() -> None:
    # the newest release whose runtime dgdgen has run (dgdgen.check.releases), not the newest
    from dgdgen.check.releases import DEFAULT
    from dgdgen.spec import DynamoTarget

    assert DynamoTarget().version == DEFAULT
    assert DynamoTarget().workers_run_by == RunBy.DEPLOYMENT.value


@pytest.mark.parametrize(("run_by", "release", "texts"), [
    ("deployment", "1.6", (HASHED_MDC, HASHED_KV)),
    ("grove", "1.4", (SHARED_MDC["1.4"], SHARED_KV)),
    ("unmanaged", "1.6", (SHARED_MDC["1.6"], SHARED_KV)),
])
def test_diff_policy_and_config_say_the_same(run_by: str, release: str, texts: tuple[str, str],
                                             tmp_path: Path) -> None:
    old, new = str(CORPUS / "old.yaml"), str(CORPUS / "new.yaml")
    d = run("diff", old, new, "--format", "json", "--dynamo-version", release,
            "--workers-run-by", run_by)
    assert d.returncode == 1, d.stderr
    report = json.loads(d.stdout)
    # the whole consequence in the finding's details (its headline says it short)
    by_code = {f["code"]: f["details"] for f in report["findings"]}
    assert texts[0] in by_code["DGD201"] and texts[1] in by_code["DGD202"]
    # The same from the config file.
    (tmp_path / ".dgdgen.yaml").write_text(
        f'check:\n  dynamo-version: "{release}"\n  workers-run-by: {run_by}\n')
    c = run("diff", old, new, "--format", "json", cwd=tmp_path)
    assert json.loads(c.stdout)["worker_namespaces"] == report["worker_namespaces"]
    # The admission policy's denial says it too.
    p = run("policy", "test", old, new, "--dynamo-version", release, "--workers-run-by", run_by)
    assert p.returncode == 1, p.stderr
    assert texts[0] in p.stdout and texts[1] in p.stdout


def test_config_refuses_an_unknown_backing(tmp_path: Path) -> None:
    (tmp_path / ".dgdgen.yaml").write_text("check:\n  workers-run-by: kube\n")
    r = run("diff", str(CORPUS / "old.yaml"), str(CORPUS / "new.yaml"), cwd=tmp_path)
    assert r.returncode == 2 and ".dgdgen.yaml:2:" in r.stderr and "kube" in r.stderr


def test_the_text_report_names_the_target() -> None:
    r = run("diff", str(CORPUS / "old.yaml"), str(CORPUS / "new.yaml"),
            "--workers-run-by", "grove", "--dynamo-version", "1.5")
    assert "Dynamo 1.5, Grove-backed workers, hashed worker namespaces" in r.stdout
    r = run("diff", str(CORPUS / "old.yaml"), str(CORPUS / "new.yaml"),
            "--workers-run-by", "grove", "--dynamo-version", "1.5", "--verbose")
    assert "Dynamo 1.5, Grove-backed workers (hash-suffixed worker namespaces)" in r.stdout


DGD = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {{name: m, namespace: inference}}
spec:
  components:
{components}"""
WORKER = """\
    - name: {name}
      type: worker
      replicas: 1
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1
              command: [python3, -m, dynamo.vllm]
              args: [--model, Qwen/Qwen3-0.6B, --served-model-name, {served}]
"""


def test_a_model_no_worker_serves_any_more_breaks_clients_everywhere(tmp_path: Path) -> None:
    two = WORKER.format(name="a", served="qwen") + WORKER.format(name="b", served="llama")
    (tmp_path / "old.yaml").write_text(DGD.format(components=two))
    (tmp_path / "new.yaml").write_text(
        DGD.format(components=WORKER.format(name="a", served="qwen")))
    for run_by in ("deployment", "unmanaged"):
        r = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format",
                "json", "--workers-run-by", run_by)
        assert r.returncode == 1, r.stderr
        found = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD201"]
        assert len(found) == 1 and MODEL_REMOVED in found[0]["details"], found
        assert "llama" in found[0]["message"] and found[0]["severity"] == "error"
        assert "404" in found[0]["message"]
    # Removing a worker whose model another worker still serves is no such change.
    twin = WORKER.format(name="a", served="qwen") + WORKER.format(name="b", served="qwen")
    (tmp_path / "old.yaml").write_text(DGD.format(components=twin))
    r = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json")
    assert not [f for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD201"]


def test_plan_notes_say_what_the_named_target_would_do(tmp_path: Path) -> None:
    example = REPO / "examples" / "vllm-agg-auto"
    (tmp_path / "dgd.yaml").write_text((example / "dgd.yaml").read_text())
    spec = textwrap.dedent("""\
        apiVersion: dgdgen.dev/v1alpha1
        kind: DGDRollout
        metadata: {name: qwen-bs, namespace: inference}
        spec:
          stable: {dgd: dgd.yaml}
          candidate:
            components:
              VllmDecodeWorker: {args: {set: {--block-size: 32}}}
          isolation: auto
        """)
    (tmp_path / "rollout.yaml").write_text(spec)
    r = run("plan", str(tmp_path / "rollout.yaml"))
    assert r.returncode == 0, r.stderr
    assert "Dynamo 1.6, Deployment-backed workers (hash-suffixed worker namespaces)" in r.stdout
    assert HASHED_MDC in r.stdout
    (tmp_path / "rollout.yaml").write_text(
        spec + '  dynamo: {version: "1.4", workersRunBy: grove}\n')
    r = run("plan", str(tmp_path / "rollout.yaml"))
    assert r.returncode == 0, r.stderr
    assert SHARED_MDC["1.4"] in r.stdout and HASHED_MDC not in r.stdout
    (tmp_path / "rollout.yaml").write_text(spec + "  dynamo: {version: 1.6}\n")
    r = run("plan", str(tmp_path / "rollout.yaml"))
    assert r.returncode == 2 and "rollout.yaml:10:" in r.stderr and "quote it" in r.stderr


def test_every_category_has_a_consequence_in_both_layouts() -> None:
    from dgdgen.check.inplace import consequence

    for release in RELEASES:
        for ns in Namespaces:
            for cat in (Category.MDC, Category.KV, Category.RUNTIME):
                assert consequence(cat, release, ns)
            assert consequence(Category.SAFE, release, ns) is None


FRONTEND_AND_WORKER = """\
    - name: Frontend
      type: frontend
      replicas: 1
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:{frontend}
    - name: worker
      type: worker
      replicas: 1
      podTemplate:
        spec:
          containers:
            - name: main
              image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:{worker}
              command: [python3, -m, dynamo.vllm]
              args: [--model, Qwen/Qwen3-0.6B]
"""


@pytest.mark.parametrize(("frontend", "worker", "run_by", "says", "never"), [
    # only the workers' image: the frontend is not replaced, it serves both worker runtimes
    ("1.6.0", "1.6.1", "deployment", "the frontend keeps its image",
     "frontend is replaced in place"),
    ("1.6.0", "1.6.1", "unmanaged", "the frontend keeps its image",
     "frontend is replaced in place"),
    # only the frontend's: no worker rolls (their hash does not change)
    ("1.6.1", "1.6.0", "deployment", "the frontend is replaced in place",
     "new workers serve"),
    # both: the frontend is replaced and the workers roll
    ("1.6.1", "1.6.1", "deployment", ("it is replaced in place, so new frontends serve old "
                                      "workers"), "keeps its image"),
])
def test_the_image_bump_text_names_only_what_is_replaced(
        tmp_path: Path, frontend: str, worker: str, run_by: str, says: str, never: str) -> None:
    (tmp_path / "old.yaml").write_text(DGD.format(
        components=FRONTEND_AND_WORKER.format(frontend="1.6.0", worker="1.6.0")))
    (tmp_path / "new.yaml").write_text(DGD.format(
        components=FRONTEND_AND_WORKER.format(frontend=frontend, worker=worker)))
    r = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json",
            "--workers-run-by", run_by)
    assert r.returncode == 1, r.stderr
    found = [f["details"] for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD203"]
    assert found and all(says in m and never not in m for m in found), found
    if worker == "1.6.0":  # no worker rolls: no worker pace, no prefill:decode caveat
        assert not any("maxSurge" in m or "prefill:decode" in m for m in found), found


def test_a_prefill_only_kv_edit_fails_the_new_generation_in_hashed_namespaces(
        tmp_path: Path) -> None:
    """Issue 32: `--kv-cache-dtype fp8` on the prefill workers alone. The operator's worker hash
    covers every worker component, so the decode workers are rolled too, into the same new
    namespace, where they cannot read the new prefill workers' blocks: DGD202 says the new
    generation fails (not that transfers "stay within a generation"), and DGD108 names the
    disagreement. One shared namespace keeps its own text."""
    from dgdgen.check.inplace import HASHED_KV_SPLIT, HASHED_KV_SPLIT_SHORT

    case = REPO / "tests" / "check" / "corpus" / "vllm-kv-cache-dtype-auto-disagg"
    old = (case / "new.yaml").read_text()  # both roles at `--kv-cache-dtype auto`
    prefill = old.index("VllmPrefillWorker:")
    new = old[:prefill] + old[prefill:].replace("- --kv-cache-dtype\n            - auto",
                                                "- --kv-cache-dtype\n            - fp8", 1)
    assert new != old and new.count("fp8") == 1
    (tmp_path / "old.yaml").write_text(old)
    (tmp_path / "new.yaml").write_text(new)
    r = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json")
    assert r.returncode == 1, r.stderr
    findings = json.loads(r.stdout)["findings"]
    dgd202 = [f["details"] for f in findings if f["code"] == "DGD202"]
    split = HASHED_KV_SPLIT.format(what="KV cache dtype", prefill="fp8", decode="auto")
    assert dgd202 and all(split in m for m in dgd202), dgd202
    assert all(HASHED_KV not in m for m in dgd202)
    # the headline says it in a few words: the new generation fails every request
    assert all(f["message"] == "VllmPrefillWorker --kv-cache-dtype auto→fp8: "
               + HASHED_KV_SPLIT_SHORT for f in findings if f["code"] == "DGD202")
    assert any(f["code"] == "DGD108" for f in findings)
    r = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json",
            "--workers-run-by", "unmanaged")
    shared = [f["details"] for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD202"]
    assert shared and all(SHARED_KV in m for m in shared), shared
    # an edit of both roles keeps them agreeing: the hashed text without the split
    both = new.replace("- --kv-cache-dtype\n            - auto", "- --kv-cache-dtype\n            - fp8")
    (tmp_path / "new.yaml").write_text(both)
    r = run("diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format", "json")
    msgs = [f["details"] for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD202"]
    assert msgs and all(HASHED_KV in m for m in msgs), msgs
