"""The quality gate in the rollout spec: fields, errors at file:line, the prompt set checked at
validate time, and the rendered ConfigMap + job metric (schema-valid against the vendored Argo
Rollouts CRDs, deterministic)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from gen_support import REPO, run_cli

EXAMPLE = REPO / "examples" / "vllm-agg-blue-green"

QUALITY = """\
    quality:
      prompts: prompts.jsonl
      model: Qwen/Qwen3-1.7B
      image: registry.example/dgdgen:1
"""
PROMPTS = '{"prompt": "Count from 1 to 50.", "reference": "1, 2"}\n{"prompt": "Name ten rivers."}\n'


def _spec(tmp: Path, quality: str = QUALITY, prompts: str = PROMPTS, gate: str = "quality") -> Path:
    (tmp / ".git").mkdir(exist_ok=True)  # the repository the prompt set must stay inside
    shutil.copy(EXAMPLE / "dgd.yaml", tmp / "dgd.yaml")
    text = (EXAMPLE / "rollout.yaml").read_text()
    text = text.replace("      smoke: [probe]\n", "      smoke: [probe]\n" + quality)
    text = text.replace("gate: smoke", f"gate: {gate}")
    (tmp / "prompts.jsonl").write_text(prompts)
    path = tmp / "rollout.yaml"
    path.write_text(text)
    return path


def _line(path: Path, needle: str) -> int:
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if needle in t)


def _objects(path: Path) -> list[dict[str, Any]]:
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render.analysis import render

    p = prepare(str(path))
    out: list[dict[str, Any]] = []
    for state in p.plan.all_states():
        out += [m.obj for m in render(p, state)]
    return out


def test_renders_config_map_and_job_metric(tmp_path: Path) -> None:
    from dgdgen import crd

    path = _spec(tmp_path, QUALITY + """\
      scorer: judge
      judge:
        url: http://judge.inference.svc:8000
        model: judge-model
        rubric: Prefer the complete, correct answer.
        apiKey: {name: judge-secret, key: token}
""")
    objs = _objects(path)
    cms = [o for o in objs if o["kind"] == "ConfigMap"]
    assert cms and all(c["data"]["prompts.jsonl"] == PROMPTS for c in cms)
    assert cms[0]["data"]["rubric.txt"] == "Prefer the complete, correct answer."
    run = next(o for o in objs if o["kind"] == "AnalysisRun")
    args = {a["name"]: a["value"] for a in run["spec"]["args"]}
    assert args["stable-url"].startswith("http://") and args["candidate-url"].startswith("http://")
    assert args["stable-url"] != args["candidate-url"]
    (metric,) = run["spec"]["metrics"]
    assert metric["name"] == "quality"
    pod = metric["provider"]["job"]["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"][:3] == ["python", "-m", "dgdgen.analysis.quality_gate"]
    assert c["command"][c["command"].index("--scorer") + 1] == "judge"
    assert c["command"][c["command"].index("--stable") + 1] == "{{args.stable-url}}"
    key = next(e for e in c["env"] if e["name"] == "DGDGEN_JUDGE_API_KEY")
    assert key == {"name": "DGDGEN_JUDGE_API_KEY",
                   "valueFrom": {"secretKeyRef": {"name": "judge-secret", "key": "token"}}}
    assert pod["volumes"][0]["configMap"]["name"] == cms[0]["metadata"]["name"]
    for obj in objs:
        assert crd.validate(obj) == [], obj["metadata"]
    assert _objects(path) == objs  # deterministic


def test_command_line_is_accepted_by_the_gate(tmp_path: Path) -> None:
    """Every flag the rendered Job passes exists in the gate's own argument parser."""
    from dgdgen.analysis import quality_gate

    path = _spec(tmp_path, QUALITY + "      scorer: regex\n      pattern: '^1, 2'\n")
    run = next(o for o in _objects(path) if o["kind"] == "AnalysisRun")
    cmd = run["spec"]["metrics"][0]["provider"]["job"]["spec"]["template"]["spec"][
        "containers"][0]["command"]
    prompts = tmp_path / "prompts.jsonl"
    argv = [str(prompts) if a.endswith("prompts.jsonl") else a for a in cmd[3:]]
    argv = [a.replace("{{args.stable-url}}", "http://127.0.0.1:9")
            .replace("{{args.candidate-url}}", "http://127.0.0.1:9") for a in argv]
    # Nothing listens on port 9: every pair is an error, too few pairs: Inconclusive (3), which
    # also proves the arguments parsed (argparse exits 2).
    assert quality_gate.main(argv + ["--timeout", "2"]) == 3


def test_bad_prompt_line_is_reported_at_its_line(tmp_path: Path) -> None:
    path = _spec(tmp_path, prompts='{"prompt": "ok"}\n{"prompt": 3}\n')
    r = run_cli("validate", str(path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "prompts.jsonl:2" in r.stderr and "Traceback" not in r.stderr


def test_missing_prompt_file_is_reported_at_the_spec_field(tmp_path: Path) -> None:
    path = _spec(tmp_path)
    (tmp_path / "prompts.jsonl").unlink()
    r = run_cli("validate", str(path))
    assert r.returncode == 2
    assert f"rollout.yaml:{_line(path, 'prompts: prompts.jsonl')}" in r.stderr
    assert "spec.analysis.quality.prompts" in r.stderr and "cannot read" in r.stderr


def test_a_prompt_set_that_is_not_a_regular_file_is_refused_not_read(tmp_path: Path) -> None:
    """A FIFO named by a pull request would block `validate` forever, /dev/zero fill the memory:
    the prompt set is read as every input is (regular files only, within the size limit)."""
    import os

    path = _spec(tmp_path)
    (tmp_path / "prompts.jsonl").unlink()
    os.mkfifo(tmp_path / "prompts.jsonl")
    r = run_cli("validate", str(path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"rollout.yaml:{_line(path, 'prompts: prompts.jsonl')}" in r.stderr
    assert "not a regular file" in r.stderr and "Traceback" not in r.stderr


def test_prompt_file_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    path = _spec(repo, QUALITY.replace("prompts.jsonl", "../outside.jsonl"))
    (tmp_path / "outside.jsonl").write_text(PROMPTS)
    r = run_cli("validate", str(path))
    assert r.returncode == 2 and "outside the repository" in r.stderr


def test_judge_scorer_without_judge(tmp_path: Path) -> None:
    path = _spec(tmp_path, QUALITY + "      scorer: judge\n")
    r = run_cli("validate", str(path))
    assert r.returncode == 2
    assert "spec.analysis.quality" in r.stderr and "needs `judge`" in r.stderr


def test_reference_scorer_needs_a_reference(tmp_path: Path) -> None:
    path = _spec(tmp_path, QUALITY + "      scorer: exact\n", prompts='{"prompt": "hi"}\n')
    r = run_cli("validate", str(path))
    assert r.returncode == 2 and "no prompt of the set has a `reference`" in r.stderr


def test_secret_by_reference_only(tmp_path: Path) -> None:
    path = _spec(tmp_path, QUALITY + """\
      scorer: judge
      judge:
        url: http://judge:8000
        model: j
        rubric: r
        apiKey: sk-plain-text
""")
    r = run_cli("validate", str(path))
    assert r.returncode == 2
    assert f"rollout.yaml:{_line(path, 'apiKey:')}" in r.stderr


def test_gate_quality_needs_the_section(tmp_path: Path) -> None:
    path = _spec(tmp_path, quality="")
    r = run_cli("validate", str(path))
    assert r.returncode == 2 and "gate 'quality' needs spec.analysis.quality" in r.stderr


def test_plan_shows_the_quality_gate_and_a_too_small_prompt_set(tmp_path: Path) -> None:
    from dgdgen.analysis.paired import sign_test_samples

    needed = sign_test_samples(0.5, 0.2)
    path = _spec(tmp_path)
    r = run_cli("plan", str(path))
    assert r.returncode == 0, r.stderr
    assert ("quality gate (step 1): 2 prompts of prompts.jsonl to the stable and the candidate "
            "(4 requests), scorer untruncated") in r.stdout
    assert f"Inconclusive below {needed} scored pairs" in r.stdout
    assert f"2 prompts < {needed} pairs needed" in r.stdout
    row = next(t for t in r.stdout.splitlines() if t.startswith("1 "))
    # no request minimum (the Job sends its own requests); the pairs the sign test needs
    assert row.split()[-5:] == ["-", "-", "quality", str(needed), "pairs"], row
    many = "".join(f'{{"prompt": "p{i}"}}\n' for i in range(needed))
    path = _spec(tmp_path, prompts=many)
    r = run_cli("plan", str(path), "--format", "markdown")
    assert r.returncode == 0 and f"{needed} prompts of prompts.jsonl" in r.stdout
    assert "pairs needed" not in r.stdout
