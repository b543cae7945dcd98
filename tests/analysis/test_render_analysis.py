"""Rendered analysis objects: strict CRD validation, every query parses with a real PromQL
parser, gate names checked with file:line and a did-you-mean, --print-run."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml
from analysis_support import EXAMPLE
from gen_support import REPO, run_cli

EXAMPLES = sorted(p for p in (REPO / "examples").glob("*/rollout.yaml"))


def _analysis_objects() -> list[dict]:  # type: ignore[type-arg]
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render.analysis import analysis_run, render

    out = []
    for path in EXAMPLES:
        p = prepare(str(path))
        for state in p.plan.all_states():
            out += [m.obj for m in render(p, state)]
        for st in p.plan.steps[1:]:
            run = analysis_run(p, st.index, hook=True)
            if run is not None:
                out.append(run)
    return out


OBJECTS = _analysis_objects()


def test_examples_render_gated_steps() -> None:
    kinds = {o["kind"] for o in OBJECTS}
    # ConfigMap: the prompt set of the quality gate (trtllm-disagg-v1beta1)
    assert kinds == {"PodMonitor", "AnalysisTemplate", "AnalysisRun", "ConfigMap"}
    runs = [o for o in OBJECTS if o["kind"] == "AnalysisRun"]
    assert len(runs) >= 10


def test_objects_validate_strictly() -> None:
    from dgdgen import crd

    for obj in OBJECTS:
        assert crd.validate(obj) == [], obj["metadata"]


def test_validation_can_fail() -> None:
    from dgdgen import crd

    run = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == "AnalysisRun"))
    run["spec"]["metrics"][0]["provider"]["prometheus"]["timeOut"] = 30
    assert crd.validate(run)
    mon = copy.deepcopy(next(o for o in OBJECTS if o["kind"] == "PodMonitor"))
    del mon["spec"]["selector"]
    assert crd.validate(mon)


def test_every_query_parses_with_promql_parser() -> None:
    promql_parser = pytest.importorskip("promql_parser")
    from dgdgen.analysis import gates

    n = 0
    for obj in OBJECTS:
        if obj["kind"] == "AnalysisTemplate":
            # fill the caller-supplied args with plausible values
            args = {a["name"]: a.get("value", "x") for a in obj["spec"]["args"]}
        elif obj["kind"] == "AnalysisRun":
            args = {a["name"]: a["value"] for a in obj["spec"]["args"]}
        else:
            continue
        for m in gates.resolve_args(obj["spec"]["metrics"], args):
            if "prometheus" in m["provider"]:
                promql_parser.parse(m["provider"]["prometheus"]["query"])
                n += 1
    assert n > 50
    with pytest.raises(ValueError):
        promql_parser.parse("sum(rate(x[5m])")


def test_runs_inline_metrics_and_fill_args() -> None:
    for run in (o for o in OBJECTS if o["kind"] == "AnalysisRun"):
        declared = {a["name"] for a in run["spec"]["args"]}
        assert all("value" in a for a in run["spec"]["args"])
        text = yaml.safe_dump(run["spec"]["metrics"])
        import re

        used = set(re.findall(r"\{\{args\.([a-z0-9-]+)\}\}", text))
        assert used <= declared, used - declared


def _spec(tmp: Path, extra: str, steps: str | None = None) -> Path:
    text = EXAMPLE.read_text()
    shutil.copy(EXAMPLE.parent / "dgd.yaml", tmp / "dgd.yaml")  # dgd: stays inside the folder
    if steps:
        text = text.replace("gate: slo", steps, 1)
    path = tmp / "rollout.yaml"
    path.write_text(text + extra)
    return path


def test_unknown_gate_name_has_location_and_hint(tmp_path: Path) -> None:
    path = _spec(tmp_path, "", steps="gate: sol")
    r = run_cli("plan", str(path))
    assert r.returncode == 2
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "gate: sol" in t)
    assert f"rollout.yaml:{line}" in r.stderr
    assert "spec.steps[0].gate" in r.stderr and "did you mean 'slo'?" in r.stderr


def test_unknown_metric_in_custom_gate(tmp_path: Path) -> None:
    path = _spec(tmp_path, "    gates:\n      fast: [ttft-p95-vs-stabel]\n", steps="gate: fast")
    r = run_cli("validate", str(path))
    assert r.returncode == 2
    assert "spec.analysis.gates.fast[0]" in r.stderr and "did you mean 'ttft-p95-vs-stable'?" in r.stderr


def test_print_run_is_standalone(tmp_path: Path) -> None:
    r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--print-run")
    assert r.returncode == 0, r.stderr
    run = yaml.safe_load(r.stdout)
    assert run["kind"] == "AnalysisRun" and run["metadata"]["generateName"].endswith("-")
    assert "name" not in run["metadata"] and "annotations" not in run["metadata"]
    r = run_cli("analyze", str(EXAMPLE), "--step", "3", "--print-run")
    assert r.returncode == 2 and "has no gate" in r.stderr


def test_plan_shows_minimum_samples_and_bake_time() -> None:
    r = run_cli("plan", str(EXAMPLE))
    assert "min requests" in r.stdout and "12m11s" in r.stdout
    import json

    data = json.loads(run_cli("plan", str(EXAMPLE), "--format", "json").stdout)
    assert [g["minRequests"] for g in data["gates"]] == [1826, 1826]
    md = run_cli("plan", str(EXAMPLE), "--format", "markdown").stdout
    assert "| min requests | min bake |" in md


def test_plan_notes_gates_named_while_analysis_is_off(tmp_path: Path) -> None:
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["spec"]["analysis"]["enabled"] = False
    shutil.copy(EXAMPLE.parent / spec["spec"]["stable"]["dgd"], tmp_path / "dgd.yaml")
    spec["spec"]["stable"]["dgd"] = "dgd.yaml"
    path = tmp_path / "rollout.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = run_cli("plan", str(path))
    assert r.returncode == 0, r.stderr
    assert "analysis is off: gate(s) slo" in r.stdout and "min bake" not in r.stdout
    assert "analysis is off" not in run_cli("plan", str(EXAMPLE)).stdout
