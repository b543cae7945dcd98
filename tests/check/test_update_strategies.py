"""Every update strategy in the one in-place model: Deployment-backed (surge / unavailable /
Recreate), Grove RollingRecreate, OnDelete and Coherent (resolved from the DGD's annotation, else
--grove-update-strategy, else the release's default for the graph), LeaderWorkerSet. The
checker's messages, its JSON verdicts and the plan notes say the same."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from gen_support import run_cli

from dgdgen.check.flags import RELEASES
from dgdgen.check.inplace import (
    GROVE_DEFAULT,
    GroveStrategy,
    RunBy,
    Target,
    grove_strategy_of,
    roll_of,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "vllm-disagg-block-size" / "dgd.yaml"
ANN = "nvidia.com/grove-update-strategy"
MODEL = "            - Qwen/Qwen3-0.6B\n"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env={"NO_COLOR": "1"})


def _pair(tmp_path: Path, annotation: str | None = None) -> tuple[str, str]:
    """The disaggregated example (two prefill, two decode replicas) and the same with
    --block-size 32 on both workers; ``annotation`` on both sides' metadata."""
    old = EXAMPLE.read_text()
    assert old.count(MODEL) == 2
    if annotation is not None:
        old = old.replace("  name: vllm-v1-disagg-router\n",
                          f"  name: vllm-v1-disagg-router\n  annotations:\n    {ANN}: "
                          f"{annotation}\n", 1)
    new = old.replace(MODEL, MODEL + "            - --block-size\n            - '32'\n")
    (tmp_path / "old.yaml").write_text(old)
    (tmp_path / "new.yaml").write_text(new)
    return str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")


def _diff(tmp_path: Path, *args: str, annotation: str | None = None,
          cwd: Path | None = None) -> tuple[list[str], dict[str, object]]:
    old, new = _pair(tmp_path, annotation)
    r = run("diff", old, new, "--format", "json", *args, cwd=cwd)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    # the whole text: how the strategy replaces the pods is behind the headline
    messages = [f["details"] for f in report["findings"] if f["code"] in ("DGD201", "DGD202")]
    assert messages
    (verdict,) = report["verdicts"]
    strategy = verdict["update_strategy"]
    assert isinstance(strategy, dict)
    return messages, strategy


def test_a_grove_disaggregated_edit_names_the_release_default_and_what_it_does(
        tmp_path: Path) -> None:
    messages, strategy = _diff(tmp_path, "--workers-run-by", "grove")
    for m in messages:
        assert ("Grove Coherent, the default of Dynamo 1.6 for a disaggregated graph (prefill "
                "and decode workers)") in m, m
        assert "prefill and decode are replaced together" in m and "no surge" in m
        assert "capacity drops to 0" in m and "replica changes are refused" in m
        # two replicas each: one step does not take the whole model away
        assert "the model has no worker" not in m
        # Coherent keeps the prefill:decode ratio: no drift caveat
        assert "ratios drift" not in m
    assert strategy == {
        "name": "Grove Coherent", "source": "the default of Dynamo 1.6 for a disaggregated "
        "graph (prefill and decode workers)",
        "replaces": ("minAvailable replicas of every worker component per step, replaced "
                     "together as one new gang"),
        "max_surge": "0", "max_unavailable": "minAvailable of every component",
        "prefill_decode_together": True, "scaling_blocked": True,
        "rolls_before_pods_are_deleted": True}
    # Before 1.6 the operator knows no Coherent: Grove's own default.
    messages, strategy = _diff(tmp_path, "--workers-run-by", "grove", "--dynamo-version", "1.5")
    assert strategy["name"] == "Grove RollingRecreate"
    assert all("Grove RollingRecreate, the default of Dynamo 1.5 for a disaggregated graph" in m
               and "one pod at a time in each component" in m and "ratios drift" in m
               for m in messages), messages


def test_one_replica_per_component_under_coherent_leaves_the_model_without_workers() -> None:
    target = Target("1.6", RunBy.GROVE)
    workers = [("prefill", False, {}, None), ("decode", False, {}, None)]
    one = roll_of(target, workers, disaggregated=True, single_replicas=True)
    assert "the model has no worker until the new set is ready" in one.pace
    two = roll_of(target, workers, disaggregated=True)
    assert "the model has no worker" not in two.pace


def test_the_option_and_the_annotation_change_the_strategy(tmp_path: Path) -> None:
    messages, strategy = _diff(tmp_path, "--workers-run-by", "grove",
                               "--grove-update-strategy", "RollingRecreate")
    assert strategy["name"] == "Grove RollingRecreate"
    assert strategy["source"] == "named by --grove-update-strategy"
    assert all("Grove RollingRecreate, named by --grove-update-strategy" in m
               for m in messages), messages
    # The DGD's annotation wins over the option.
    messages, strategy = _diff(tmp_path, "--workers-run-by", "grove",
                               "--grove-update-strategy", "Coherent",
                               annotation="RollingRecreate")
    assert strategy["name"] == "Grove RollingRecreate"
    assert all(f"set by the DGD's {ANN} annotation" in m for m in messages), messages
    # The config file's key, as the option.
    (tmp_path / ".dgdgen.yaml").write_text(
        "check:\n  workers-run-by: grove\n  grove-update-strategy: OnDelete\n")
    _, strategy = _diff(tmp_path, cwd=tmp_path)
    assert strategy["name"] == "Grove OnDelete"


def test_on_delete_says_nothing_rolls_until_pods_are_deleted(tmp_path: Path) -> None:
    messages, strategy = _diff(tmp_path, "--workers-run-by", "grove", annotation="OnDelete")
    assert strategy["rolls_before_pods_are_deleted"] is False
    old, new = _pair(tmp_path, "OnDelete")
    headlines = [f["message"] for f in json.loads(run(
        "diff", old, new, "--format", "json", "--workers-run-by", "grove").stdout)["findings"]
        if f["code"] in ("DGD201", "DGD202")]
    assert headlines and all(": nothing rolls until pods are deleted; then " in h
                             for h in headlines), headlines
    for m in messages:
        assert m.split("applied in place: ", 1)[1].startswith(
            f"Grove OnDelete, set by the DGD's {ANN} annotation: nothing rolls until you "
            "delete pods"), m
        assert "the change is silently pending" in m and "once pods are deleted: " in m


@pytest.mark.parametrize(("where", "value", "args", "says"), [
    ("annotation", "coherent", (), "unknown Grove update strategy 'coherent'"),
    ("annotation", "Coherent", ("--dynamo-version", "1.5"), "needs Dynamo 1.6 or later"),
    ("option", "Coherent", ("--dynamo-version", "1.5"), "needs Dynamo 1.6 or later"),
    ("config", "Rolling", (), "unknown Grove update strategy 'Rolling'"),
])
def test_bad_values_are_input_errors_with_their_place(
        tmp_path: Path, where: str, value: str, args: tuple[str, ...], says: str) -> None:
    old, new = _pair(tmp_path, value if where == "annotation" else None)
    extra = ["--grove-update-strategy", value] if where == "option" else []
    if where == "config":
        (tmp_path / ".dgdgen.yaml").write_text(f"check:\n  grove-update-strategy: {value}\n")
    r = run("diff", old, new, "--workers-run-by", "grove", *args, *extra, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert says in r.stderr and "Traceback" not in r.stderr
    if where == "annotation":
        assert "new.yaml:9:" in r.stderr and f"metadata.annotations.{ANN}" in r.stderr
    elif where == "config":
        assert ".dgdgen.yaml:2:" in r.stderr and "check.grove-update-strategy" in r.stderr
    else:
        assert "--grove-update-strategy" in r.stderr


def test_leaderworkerset_rolls_one_group_at_a_time() -> None:
    roll = roll_of(Target("1.6"), [("decode", True, {}, None)], annotated=GroveStrategy.ON_DELETE)
    # Multinode under "deployment" is LeaderWorkerSet, whose roll the annotation does not touch.
    assert roll.run_by is RunBy.LWS and roll.strategy.name == "LeaderWorkerSet RollingUpdate"
    assert roll.pace == ("one group at a time (LeaderWorkerSet rolling update: maxUnavailable "
                         "1, maxSurge 0)")


def test_deployment_backed_text_names_the_disaggregated_gap(tmp_path: Path) -> None:
    messages, strategy = _diff(tmp_path)
    assert strategy["name"] == "RollingUpdate" and strategy["source"] is None
    for m in messages:
        pace, gap = m.split(" — disaggregated: ", 1)
        assert pace.endswith(
            "(pods replaced with maxSurge 25% / maxUnavailable 25%; prefill:decode ratios drift "
            "during the roll, Dynamo #10936; the DGD may say `successful` before the roll ends, "
            "#3567)"), m
        # when it happens, what it does, and that no Deployment setting avoids it
        assert gap.startswith("prefill and decode are replaced independently, so whichever "
                              "finishes first leaves a generation with one role alone (the old "
                              "one with decode workers and no prefill worker"), gap
        # what the 1.6.1 frontend does with it, measured with workers registering as the
        # backends do (tests/check/test_runtime_needs.py): no request to the incomplete
        # generation; 503 only while no generation is complete
        assert "routes only to a generation whose prefill and decode workers are both ready" \
            in gap and "serve nothing" in gap
        assert "neither generation is complete" in gap and "every request gets 503" in gap
        assert "can get 503" not in gap
        assert gap.endswith("no setting of Deployment-backed workers avoids it (each component's "
                            "maxSurge / maxUnavailable paces that component alone); Grove-backed "
                            "workers with the Coherent update strategy (Dynamo 1.6 and later) "
                            "replace prefill and decode together"), gap
    # Grove's RollingRecreate: Coherent avoids it; Coherent itself has no such window
    messages, _ = _diff(tmp_path, "--workers-run-by", "grove", "--grove-update-strategy",
                        "RollingRecreate")
    assert all(m.endswith("the Coherent update strategy avoids it (nvidia.com/grove-update-"
                          "strategy: Coherent, Dynamo 1.6 and later; the default for such a "
                          "graph on 1.6, opt-in on 1.7): prefill and decode replaced "
                          "together") for m in messages), messages
    messages, _ = _diff(tmp_path, "--workers-run-by", "grove")
    assert all("disaggregated:" not in m for m in messages), messages
    # before 1.6, nothing avoids it
    messages, _ = _diff(tmp_path, "--workers-run-by", "grove", "--dynamo-version", "1.5")
    assert all(m.endswith("the Grove Coherent update strategy, which replaces prefill and "
                          "decode together, needs Dynamo 1.6") for m in messages), messages
    # A Grove annotation does not affect Deployment-backed DGDs.
    _, strategy = _diff(tmp_path, annotation="OnDelete")
    assert strategy["name"] == "RollingUpdate"


def test_every_release_has_a_grove_default_and_only_1_6_defaults_to_coherent() -> None:
    assert set(GROVE_DEFAULT) == set(RELEASES)
    for release, (disagg, other) in GROVE_DEFAULT.items():
        assert other is GroveStrategy.ROLLING_RECREATE
        # 1.6: the 1.6.0 chart notes; 1.7: opt-in only (its DGD reference)
        assert (disagg is GroveStrategy.COHERENT) == (release == "1.6")
    assert not grove_strategy_of(GroveStrategy.ON_DELETE).automatic
    assert grove_strategy_of(GroveStrategy.COHERENT).scaling_blocked


def test_1_7_rolls_a_disaggregated_grove_graph_with_rolling_recreate(tmp_path: Path) -> None:
    # Dynamo 1.7's DGD reference: RollingRecreate unless the annotation selects another, for
    # every graph (source, not run); 1.6 keeps Coherent for this disaggregated graph (above).
    messages, strategy = _diff(tmp_path, "--dynamo-version", "1.7", "--workers-run-by", "grove")
    assert strategy["name"] == "Grove RollingRecreate", strategy
    assert strategy["source"] == ("the default of Dynamo 1.7 for a disaggregated graph (prefill "
                                  "and decode workers)")
    for m in messages:
        assert "Grove RollingRecreate, the default of Dynamo 1.7" in m, m
        assert "one pod at a time in each component" in m and "ratios drift" in m
        # prefill and decode paced apart: the disaggregated gap, and Coherent as the opt-in
        assert "— disaggregated: " in m and "opt-in on 1.7" in m, m
    # the annotation still wins on 1.7
    _, strategy = _diff(tmp_path, "--dynamo-version", "1.7.0", "--workers-run-by", "grove",
                        annotation="Coherent")
    assert strategy["name"] == "Grove Coherent"
    assert strategy["source"] == f"set by the DGD's {ANN} annotation"


def test_plan_notes_name_the_grove_strategy(tmp_path: Path) -> None:
    (tmp_path / "dgd.yaml").write_text(EXAMPLE.read_text())
    spec = textwrap.dedent("""\
        apiVersion: dgdgen.dev/v1alpha1
        kind: DGDRollout
        metadata: {name: bs, namespace: inference}
        spec:
          stable: {dgd: dgd.yaml}
          candidate:
            components:
              VllmDecodeWorker: {args: {set: {--block-size: 32}}}
              VllmPrefillWorker: {args: {set: {--block-size: 32}}}
          isolation: auto
          dynamo: {workersRunBy: grove}
        """)
    (tmp_path / "rollout.yaml").write_text(spec)
    r = run("plan", str(tmp_path / "rollout.yaml"))
    assert r.returncode == 0, r.stderr
    assert "Grove Coherent, the default of Dynamo 1.6 for a disaggregated graph" in r.stdout
    # The stable DGD's annotation decides for the plan too.
    (tmp_path / "dgd.yaml").write_text(EXAMPLE.read_text().replace(
        "  name: vllm-v1-disagg-router\n",
        f"  name: vllm-v1-disagg-router\n  annotations:\n    {ANN}: OnDelete\n", 1))
    r = run("plan", str(tmp_path / "rollout.yaml"))
    assert r.returncode == 0, r.stderr
    assert "nothing rolls until you delete pods" in r.stdout
