"""The invariants over rendered trees: the tree the landed code rendered before the fix reports
its finding; every bundled example reports nothing; `verify` prints them; `render` and the GitOps
commands refuse (exit 1, nothing written) what would break one; a wave-order mistake shows up at
the moment it would bite."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from cluster_support import dgd, haproxy, preview_route, route, service
from gen_support import stable_only_parent
from hostile_support import cli

from dgdgen import yamlio
from dgdgen.cluster.check import check_tree

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "data" / "cluster"
EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("*/rollout.yaml"))


def test_finding_1_tree_reports_the_out_of_mesh_path_to_a_workerless_frontend() -> None:
    """The GAMMA example as the landed code rendered it: at the 100 % step the parent Service
    still selects the stable frontend, whose workers that step removes. (Its cleanup drains the
    stable by the in-flight gauge alone behind that L4 parent: finding 5, CLU203.)"""
    found = check_tree(str(FIXTURES / "finding1-gamma-parent"))
    assert [x.code for x in found] == ["CLU203", "CLU101"]
    f = found[1]
    assert (f.code, f.slug) == ("CLU101", "incomplete-generation-reachable")
    assert f.file.endswith("step-03/service-qwen-router.yaml") and f.line == 15  # spec.selector
    assert "out-of-mesh callers of Service inference/qwen-router" in f.message
    assert "vllm-v1-disagg-router runs no decode and no prefill worker" in f.message


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_bundled_examples_break_no_invariant(example: Path) -> None:
    assert check_tree(str(example / "rendered")) == []


def test_verify_prints_broken_invariants_and_exits_1(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "finding1-gamma-parent", tree)
    r = cli("verify", str(tree))
    assert r.code == 1
    # the report wraps a finding to the terminal, where a deep temp folder moves the break
    assert f"{tree}/step-03/service-qwen-router.yaml:15:3: Service/inference/qwen-router: " \
        "CLU101 incomplete-generation-reachable: step-03 at rest:" in " ".join(r.out.split())
    assert "2 broken invariant(s)" in r.err  # and CLU203 at cleanup (finding 5)
    r = cli("verify", "--skip-invariants", str(tree))
    assert r.code == 0 and "CLU101" not in r.out and "CLU203" not in r.out
    r = cli("verify", str(REPO / "examples" / "vllm-disagg-block-size" / "rendered"))
    assert r.code == 0, r.out


def _write(folder: Path, *docs: dict[str, Any]) -> None:
    folder.mkdir(parents=True)
    for d in docs:
        (folder / f"{d['kind'].lower()}-{d['metadata']['name']}.yaml").write_text(yamlio.dump(d))


def test_a_route_that_moves_in_the_wave_its_generation_grows_in_is_caught(tmp_path: Path
                                                                         ) -> None:
    """Both states are fine at rest; between them the route gives the new generation weight in
    wave 0, where its DGD is created: its frontend is Ready long before its workers."""
    blue = dgd("blue", agg=1)
    _write(tmp_path / "t" / "step-00", blue, service("blue-fe", "blue"),
           route("r", {"blue-fe": 100}))
    _write(tmp_path / "t" / "step-01", blue, dgd("green", agg=1, wave="0"),
           service("blue-fe", "blue"), service("green-fe", "green", wave="0"),
           route("r", {"blue-fe": 50, "green-fe": 50}, wave="0"))
    [f] = check_tree(str(tmp_path / "t"))
    assert f.code == "CLU101" and f.file.endswith("step-01/httproute-r.yaml")
    assert f.message.startswith("step-00 → step-01, wave 0: HTTPRoute/r applied alone") or \
        f.message.startswith("step-00 → step-01, wave 0 applied")
    assert "green/Frontend" in f.message and "runs no aggregated worker" in f.message
    # the same route in the shift wave: nothing
    (tmp_path / "t" / "step-01" / "httproute-r.yaml").write_text(yamlio.dump(
        route("r", {"blue-fe": 50, "green-fe": 50}, wave="1")))
    assert check_tree(str(tmp_path / "t")) == []


@pytest.fixture
def stable_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    stable_only_parent(monkeypatch)


@pytest.mark.usefixtures("stable_parent")
def test_render_refuses_a_tree_that_breaks_an_invariant(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = cli("render", str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"),
            "-o", str(out))
    assert r.code == 1, r.err
    assert "CLU101 incomplete-generation-reachable" in r.err and "nothing was written" in r.err
    assert not out.exists()



def test_registry_and_docs() -> None:
    """Codes unique and well-formed, every invariant documented, the committed pages current."""
    from dgdgen.cluster import docs
    from dgdgen.cluster.rules.registry import RULES

    codes = [m.RULE.code for m in RULES.values()]
    assert len(set(codes)) == len(codes)
    for m in RULES.values():
        meta = m.RULE
        assert meta.code.startswith("CLU") and meta.slug and meta.finding_of and meta.rationale
    for name, text in docs.pages().items():
        path = REPO / "docs" / name
        assert path.exists(), f"run: python -m dgdgen.cluster.docs --write docs ({name})"
        assert path.read_text() == text, "stale: python -m dgdgen.cluster.docs --write docs"


def test_finding_4_tree_reports_the_rollback_that_drops_the_roll_settings() -> None:
    """The in-place example as the landed code rendered it: step 1 rolls with surge 1 /
    unavailable 0; the rollback state is the bare stable DGD, so the way back rolls on the
    operator's 25 %/25 % defaults."""
    [f] = check_tree(str(FIXTURES / "finding4-inplace-rollback"))
    assert (f.code, f.slug) == ("CLU201", "rollback-drops-roll-settings")
    assert f.file.endswith("rollback/dynamographdeployment-vllm-agg.yaml")
    assert f.message.startswith("step-01 → rollback: component VllmDecodeWorker rolls back")
    assert "max-surge: '1'" in f.message and "max-unavailable: '0'" in f.message


def _frontend_grace(doc: dict[str, Any], seconds: int) -> dict[str, Any]:
    doc["spec"]["services"]["Frontend"]["extraPodSpec"] = {
        "terminationGracePeriodSeconds": seconds}
    return doc


def _migrating(doc: dict[str, Any]) -> dict[str, Any]:
    doc["spec"]["services"]["Frontend"].setdefault("extraPodSpec", {})["mainContainer"] = {
        "env": [{"name": "DYN_MIGRATION_LIMIT", "value": "3"}]}
    return doc


def _timed(r: dict[str, Any], timeout: str) -> dict[str, Any]:
    r["spec"]["rules"][0]["timeouts"] = {"request": timeout}
    return r


def _shrink_tree(tmp: Path, before: dict[str, Any], after: dict[str, Any]) -> Path:
    green = dgd("green", agg=2, wave="0")
    _write(tmp / "step-00", before, green, service("blue-fe", "blue"), service("green-fe", "green"),
           _timed(route("r", {"blue-fe": 75, "green-fe": 25}), "610s"))
    _write(tmp / "step-01", after, green, service("blue-fe", "blue"), service("green-fe", "green"),
           _timed(route("r", {"blue-fe": 50, "green-fe": 50}, wave="1"), "610s"))
    return tmp


def test_finding_8_a_serving_generation_shrinks_with_a_short_grace(tmp_path: Path) -> None:
    """The stable keeps half the traffic and loses a worker and a frontend: no drain, the
    default 30 s grace against a 610 s request bound."""
    tree = _shrink_tree(tmp_path / "a", dgd("blue", frontend=2, agg=2),
                        dgd("blue", frontend=1, agg=1, wave="3"))
    found = check_tree(str(tree))
    assert [(f.code, f.message.split(": ", 1)[1][:47]) for f in found] == [
        ("CLU202", "1 pod(s) of blue/Frontend stop while its genera"),
        ("CLU202", "1 pod(s) of blue/Worker stop while its generati")]
    assert "termination grace of 30 s against a request bound of 610 s" in found[0].message
    # frontends that migrate protect the workers, not the frontend's own connections
    tree = _shrink_tree(tmp_path / "b", _migrating(dgd("blue", frontend=2, agg=2)),
                        _migrating(dgd("blue", frontend=1, agg=1, wave="3")))
    assert [f.message.split(": ", 1)[1][:26] for f in check_tree(str(tree))] == [
        "1 pod(s) of blue/Frontend "]
    # a grace covering the bound keeps them all
    tree = _shrink_tree(tmp_path / "c", _migrating(_frontend_grace(dgd("blue", frontend=2, agg=2),
                                                                   620)),
                        _migrating(_frontend_grace(dgd("blue", frontend=1, agg=1, wave="3"), 620)))
    assert check_tree(str(tree)) == []
    # or an acknowledgment with a reason, on the DGD
    acked = dgd("blue", frontend=1, agg=1, wave="3")
    acked["metadata"]["annotations"]["dgdgen.dev/ignore"] = "CLU202: batch clients retry"
    tree = _shrink_tree(tmp_path / "d", dgd("blue", frontend=2, agg=2), acked)
    assert check_tree(str(tree)) == []


def test_a_generation_that_leaves_without_a_drain_is_reported(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    _write(tree / "step-00", dgd("blue", agg=1), dgd("green", agg=1), service("blue-fe", "blue"),
           service("green-fe", "green"), route("r", {"blue-fe": 50, "green-fe": 50}))
    _write(tree / "step-01", dgd("blue", agg=0, wave="3"), dgd("green", agg=1),
           service("blue-fe", "blue"), service("green-fe", "green"),
           route("r", {"blue-fe": 0, "green-fe": 100}, wave="1"))
    [f] = check_tree(str(tree))
    assert f.code == "CLU202" and "as its generation leaves the traffic, and no drain hook" in \
        f.message


def test_finding_6_gitops_objects_whose_deletion_cascades_to_serving_dgds(tmp_path: Path
                                                                         ) -> None:
    """`dgdgen argo` output as the landed code wrote it (one Application; an ApplicationSet for
    two clusters) reports both; today's output for the same specs reports nothing."""
    found = check_tree(str(FIXTURES / "finding6-cascading-delete"))
    assert [(f.code, f.object) for f in found] == [
        ("CLU301", "Application/argocd/qwen-router"),
        ("CLU301", "ApplicationSet/argocd/qwen-router"),
        # the same ApplicationSet synced both clusters automatically: the test below
        ("CLU302", "ApplicationSet/argocd/qwen-router")]
    assert "cascading-delete finalizer" in found[0].message
    assert "preserveResourcesOnDeletion is not true" in found[1].message
    spec = tmp_path / "rollout.yaml"
    shutil.copy(REPO / "examples" / "vllm-disagg-block-size" / "dgd.yaml", tmp_path / "dgd.yaml")
    text = (REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml").read_text()
    for name, fan_out in (("one", ""), ("two", ("    clusters:\n"
                                                "      - {name: us-east, server: https://a:6443}\n"
                                                "      - {name: eu-west, server: https://b:6443}\n"))):
        spec.write_text(text.replace("    branch: main\n", "    branch: main\n" + fan_out, 1))
        out = tmp_path / name
        assert cli("argo", str(spec), "-o", str(out)).code == 0
        r = cli("verify", str(out))
        assert r.code == 0 and "CLU301" not in r.out, r.out


def test_finding_6_fan_out_one_commit_moves_every_cluster_at_once(tmp_path: Path) -> None:
    """`dgdgen argo` output for two clusters as the landed code wrote it: an ApplicationSet that
    syncs every cluster automatically. Today's output for the same spec (the fixture's
    rollout.yaml.txt) moves the clusters in waves and reports nothing; a workflow edited to move
    wave 2 before wave 1 is judged, or every cluster in one sync, is reported."""
    fixture = FIXTURES / "finding6-fanout-at-once"
    [f] = check_tree(str(fixture))
    assert (f.code, f.slug) == ("CLU302", "fan-out-moves-every-cluster-at-once")
    assert f.object == "ApplicationSet/argocd/qwen-router"
    assert f.file.endswith("applicationset-qwen-router.yaml") and f.line == 43  # automated
    assert "syncs its 2 clusters' Applications automatically" in f.message
    r = cli("verify", str(fixture))
    assert r.code == 1 and "CLU302 fan-out-moves-every-cluster-at-once" in r.out
    shutil.copy(REPO / "examples" / "vllm-disagg-block-size" / "dgd.yaml", tmp_path / "dgd.yaml")
    shutil.copy(fixture / "rollout.yaml.txt", tmp_path / "rollout.yaml")
    out = tmp_path / "out"
    assert cli("argo", str(tmp_path / "rollout.yaml"), "-o", str(out)).code == 0
    r = cli("verify", str(out))
    assert r.code == 0 and "CLU302" not in r.out, r.out
    wf_file = out / "workflowtemplate-qwen-router-rollout.yaml"
    wf = yamlio.load_file(str(wf_file))[0].data
    rollout = next(t for t in wf["spec"]["templates"] if t["name"] == "rollout")
    groups = rollout["steps"]

    def at(name: str) -> int:
        return next(k for k, g in enumerate(groups) if g[0]["name"] == name)

    def broken(edit: Any) -> list[Any]:
        saved = [list(g) for g in groups]
        edit()
        wf_file.write_text(yamlio.dump(wf))
        groups[:] = saved
        return check_tree(str(out))

    # wave 2 synced before the canary's AnalysisRun ran
    a, b = at("step-1-analysis-us-east"), at("step-1-sync-wave-2")
    [f] = broken(lambda: groups.__setitem__(slice(a, b + 1), [groups[b], groups[a]]))
    assert f.object == "WorkflowTemplate/inference/qwen-router-rollout"
    assert "syncs wave 2 (eu-west-qwen-router) at the commit of step-1-promote before the " \
        "AnalysisRun of us-east-qwen-router has passed" in f.message
    # ... or before the canary is synced and Healthy
    w = at("step-1-synced-us-east")
    [f] = broken(lambda: groups.pop(w))
    assert "before us-east-qwen-router is synced and Healthy" in f.message
    # ... or every cluster in the first sync
    s1 = groups[at("step-1-sync-wave-1")][0]["arguments"]["parameters"]

    def both() -> None:
        s1[:] = [dict(q, value="us-east-qwen-router,eu-west-qwen-router") if q["name"] == "apps"
                 else q for q in s1]
    [f] = broken(both)
    assert "syncs all 2 clusters' Applications at the commit of step-1-promote in one step" in \
        f.message


def test_finding_2_a_parallelism_change_without_its_gpus(tmp_path: Path) -> None:
    """`isolation: auto`, vLLM aggregated, --tensor-parallel-size 1 → 2 and nothing else: the
    landed code rendered it in place with pods asking for 1 GPU (the fixture, and its spec)."""
    [f] = check_tree(str(FIXTURES / "finding2-tp-in-place"))
    assert (f.code, f.slug) == ("CLU102", "parallelism-exceeds-gpus")
    assert "VllmDecodeWorker's engine needs 2 GPU(s) per replica" in f.message
    assert "its pods ask for 1" in f.message
    # today the spec is refused where the change is written, before any isolation is decided
    shutil.copy(REPO / "examples" / "vllm-agg-auto" / "dgd.yaml", tmp_path / "dgd.yaml")
    spec = tmp_path / "rollout.yaml"
    spec.write_text((FIXTURES / "finding2-tp-in-place" / "rollout.yaml.txt").read_text())
    for command in ("validate", "plan", "render"):
        args = [command, str(spec)] + (["-o", str(tmp_path / "out")] if command == "render"
                                        else [])
        r = cli(*args)
        assert r.code == 2, (command, r.err)
        assert "spec.candidate.components.VllmDecodeWorker: the candidate's VllmDecodeWorker " \
            "needs 2 GPU(s)" in r.err and "gpus: 2" in r.err
    assert not (tmp_path / "out").exists()
    # with the GPUs given, it renders, and its pods ask for 2
    spec.write_text(spec.read_text().replace(
        "            --tensor-parallel-size: 2\n",
        "            --tensor-parallel-size: 2\n        gpus: 2\n"))
    r = cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert r.code == 0, r.err
    text = (tmp_path / "out" / "step-01" / "dynamographdeployment-vllm-agg.yaml").read_text()
    assert "gpu: '2'" in text
    assert cli("verify", str(tmp_path / "out")).code == 0


def test_gpus_change_on_a_v1beta1_component(tmp_path: Path) -> None:
    from dgdgen.model.dgd import parse

    example = REPO / "examples" / "trtllm-disagg-v1beta1"
    for name in ("dgd.yaml", "quality-prompts.jsonl"):
        if (example / name).exists():
            shutil.copy(example / name, tmp_path / name)
    doc = yamlio.load_file(str(example / "rollout.yaml"))[0].data
    worker = next(n for n, c in parse(yamlio.load_file(str(example / "dgd.yaml"))[0].data)
                  .components.items() if c.is_worker)
    doc["spec"]["candidate"].setdefault("components", {}).setdefault(worker, {})["gpus"] = 4
    (tmp_path / "rollout.yaml").write_text(yamlio.dump(doc))
    r = cli("render", str(tmp_path / "rollout.yaml"), "-o", str(tmp_path / "out"), "--step", "1")
    assert r.code == 0, r.err
    [cand] = [p for p in (tmp_path / "out").glob("dynamographdeployment-*.yaml")
              if "r" in p.name.split("-")[1][:1] and p.name != "dynamographdeployment-" +
              "trtllm-disagg.yaml"]
    d = parse(yamlio.load_file(str(cand))[0].data)
    assert d.components[worker].gpus_per_replica == 4


@pytest.mark.parametrize("folder", ["step-2", "step-02", "x", "rollback-7"])
def test_one_state_rendered_into_any_folder(tmp_path: Path, folder: str) -> None:
    """`render --step N -o DIR`: one state, whatever DIR is called (a name like a state's but
    not one, `step-2`, was taken for a step and crashed the model)."""
    out = tmp_path / folder
    r = cli("render", str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"),
            "-o", str(out), "--step", "2")
    assert r.code == 0, r.err
    assert cli("verify", str(out)).code == 0


def test_finding_5_a_drain_behind_an_l4_switch_that_ignores_pooled_clients() -> None:
    """Blue/green with the `none` provider: clients call the switch Service, whose selector moves
    only new connections. The tree the landed code rendered drained blue (cleanup) and green
    (rollback from the 100 % step) by the in-flight gauge alone; green's rollback from step 1,
    before any caller could reach it, is not a finding."""
    found = check_tree(str(FIXTURES / "finding5-l4-drain"))
    assert [(f.code, f.message.split(":", 1)[0]) for f in found] == [
        ("CLU203", "step-02 → cleanup"), ("CLU203", "step-02 → rollback")]
    assert all("L4 switch Service/inference/qwen-agg" in f.message for f in found)
    assert found[0].file.endswith("cleanup/job-qwen-agg-drain-blue.yaml")


def test_finding_5_fixed_every_drain_behind_an_l4_switch_counts_arrivals(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = cli("render", str(REPO / "examples" / "vllm-agg-blue-green" / "rollout.yaml"), "-o",
            str(out))
    assert r.code == 0, r.err
    assert check_tree(str(out)) == []
    jobs = sorted(out.glob("*/job-*-drain-*.yaml"))
    assert jobs and all("--l4-switch" in j.read_text() for j in jobs)
    # an L7 provider's drains poll through the Service (a route picks per request)
    r = cli("render", str(REPO / "examples" / "vllm-disagg-image-bump" / "rollout.yaml"), "-o",
            str(tmp_path / "l7"))
    assert r.code == 0, r.err
    l7 = sorted((tmp_path / "l7").glob("*/job-*-drain-*.yaml"))
    assert l7 and not any("--l4-switch" in j.read_text() for j in l7)


def test_finding_7_a_picker_that_scores_frontends_by_metrics_they_do_not_export(
        tmp_path: Path) -> None:
    """The trtllm InferencePool example's picker configs as the landed code rendered them: GAIE's
    stock scorers on vLLM's default metrics. Today's render scores by the frontend's gauges."""
    found = check_tree(str(FIXTURES / "finding7-stock-picker"))
    assert [(f.code, f.object) for f in found] == [
        ("CLU103", "ConfigMap/inference/r6de4fe4-trtllm-disagg-pool-epp"),
        ("CLU103", "ConfigMap/inference/trtllm-disagg-pool-epp")]
    assert "queue-scorer by vllm:num_requests_waiting, kv-cache-utilization-scorer by " \
           "vllm:kv_cache_usage_perc" in found[0].message
    assert check_tree(str(REPO / "examples" / "trtllm-disagg-v1beta1" / "rendered")) == []
    # a config that maps the queue scorer to the frontend's gauge but keeps a KV-cache scorer
    text = (FIXTURES / "finding7-stock-picker" / "step-01"
            / "configmap-trtllm-disagg-pool-epp.yaml").read_text()
    mapped = text.replace("    - type: core-metrics-extractor\n", (
        "    - type: core-metrics-extractor\n"
        "      parameters:\n"
        "        defaultEngine: dynamo\n"
        "        engineConfigs:\n"
        "        - name: dynamo\n"
        "          queuedRequestsSpec: dynamo_frontend_queued_requests\n"))
    assert mapped != text
    (tmp_path / "step-01").mkdir()
    (tmp_path / "step-01" / "cm.yaml").write_text(mapped)
    [f] = check_tree(str(tmp_path))
    assert "scores kv-cache-utilization-scorer by nothing (its engine config names no metric)," \
        in f.message


def _preview_tree(root: Path, step01: list[dict[str, Any]],
                  rollback: list[dict[str, Any]] | None = None) -> Path:
    """step-00: blue alone behind route r; step-01: ``step01`` beside blue and green (both
    complete); rollback: ``rollback`` beside blue (default: step-00's route)."""
    blue, green = dgd("blue", decode=1, prefill=1), dgd("green", decode=1, prefill=1, wave="0")
    svcs = [service("blue-fe", "blue"), service("green-fe", "green")]
    for d in [*step01, *(rollback or [])]:  # the shift wave, as dgdgen renders it
        d["metadata"]["annotations"] = {"argocd.argoproj.io/sync-wave":
                                        "0" if d["kind"] == "ConfigMap" else "1"}
    _write(root / "step-00", blue, svcs[0], route("r", {"blue-fe": 100}))
    _write(root / "step-01", blue, green, *svcs, *step01)
    _write(root / "rollback", blue, svcs[0], *(rollback or [route("r", {"blue-fe": 100})]))
    return root


def _paths(tree: Path) -> list[Any]:
    """The client-path findings (CLU101, CLU104): the drain and termination invariants ask more
    of a tree than these small ones give."""
    return [f for f in check_tree(str(tree)) if f.code in ("CLU101", "CLU104")]


def test_clu104_a_preview_on_the_complete_candidate_breaks_nothing(tmp_path: Path) -> None:
    tree = _preview_tree(tmp_path / "t", [preview_route("r", {"blue-fe": 100, "green-fe": 0},
                                                        ["green-fe"])])
    assert _paths(tree) == []
    cfg, dep = haproxy({"blue-fe": 200, "green-fe": 0}, preview="green-fe")
    tree = _preview_tree(tmp_path / "h", [cfg, dep], rollback=list(haproxy({"blue-fe": 200})))
    assert _paths(tree) == []


@pytest.mark.parametrize(("preview", "says"), [
    (["blue-fe"], "reach the stable generation blue (the baseline serves it), not a candidate"),
    (["blue-fe", "green-fe"], "reach the frontends of blue and green: a preview reaches one"),
])
def test_clu104_a_preview_that_reaches_the_stable(tmp_path: Path, preview: list[str],
                                                  says: str) -> None:
    tree = _preview_tree(tmp_path / "t", [preview_route("r", {"blue-fe": 100, "green-fe": 0},
                                                        preview)])
    found = [f for f in _paths(tree) if f.code == "CLU104"]
    [rest] = [f for f in found if "at rest" in f.message]
    assert rest.file.endswith("step-01/httproute-r.yaml") and rest.message.startswith(
        "step-01 at rest: callers through Gateway inference/gw with header X-Dgd-Preview: on "
        "(HTTPRoute inference/r) " + says), rest.message


def test_clu104_a_preview_on_an_incomplete_candidate(tmp_path: Path) -> None:
    tree = _preview_tree(tmp_path / "t", [preview_route("r", {"blue-fe": 100, "green-fe": 0},
                                                        ["green-fe"])])
    (tree / "step-01" / "dynamographdeployment-green.yaml").write_text(
        yamlio.dump(dgd("green", decode=0, prefill=1)))
    [f] = [f for f in _paths(tree) if f.code == "CLU104" and "at rest" in f.message]
    assert "step-01 at rest" in f.message and "runs no decode worker" in f.message
    assert not [f for f in _paths(tree) if f.code == "CLU101"]  # said once, by CLU104


def test_clu104_a_preview_left_in_the_rollback_state(tmp_path: Path) -> None:
    step = [preview_route("r", {"blue-fe": 100, "green-fe": 0}, ["green-fe"])]
    tree = _preview_tree(tmp_path / "t", step, rollback=[
        preview_route("r", {"blue-fe": 100}, ["blue-fe"])])
    found = [f for f in _paths(tree) if f.code == "CLU104"]
    assert [f.file.split("/t/")[1] for f in found if "at rest" in f.message] == [
        "rollback/httproute-r.yaml"]
    assert "although this is a rollback state" in found[0].message
    # HAProxy: the ACL left in the rollback config
    cfg, dep = haproxy({"blue-fe": 200, "green-fe": 0}, preview="green-fe")
    tree = _preview_tree(tmp_path / "h", [cfg, dep],
                         rollback=list(haproxy({"blue-fe": 200}, preview="blue-fe")))
    found = [f for f in _paths(tree) if f.code == "CLU104" and "at rest" in f.message]
    assert len(found) == 1 and found[0].file.endswith("rollback/configmap-proxy-cfg.yaml")
    assert "callers through HAProxy with header X-Dgd-Preview: on" in found[0].message


@pytest.mark.parametrize("ready_check", [True, False])
def test_a_checked_path_whose_every_frontend_is_incomplete(tmp_path: Path,
                                                           ready_check: bool) -> None:
    """A proxy whose ready-path health check takes out every frontend it has (the generation runs
    prefill workers alone: the 1.6.1 frontend answers its ready path 503) leaves nothing to serve:
    CLU101 says so once for the path. Without the ready-path check the frontend stays in and
    answers every request 503: CLU101 names it and the role its generation lacks."""
    cfg, dep = haproxy({"blue-fe": 100}, ready_check=ready_check)
    _write(tmp_path / "t" / "step-00", dgd("blue", decode=0, prefill=1),
           service("blue-fe", "blue"), cfg, dep)
    found = [f for f in check_tree(str(tmp_path / "t")) if f.code == "CLU101"]
    assert len(found) == 1, [f.message for f in found]
    message = found[0].message
    if ready_check:
        assert "no frontend whose generation is complete (its health check takes every one out)" \
            in message, message
    else:
        assert "frontend blue/Frontend" in message and "runs no decode worker" in message, message
        assert "health check takes" not in message
