"""`dgdgen check`, `diff` and `rules` through the real command line: exit codes, formats,
suppressions, Git modes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from gen_support import run_cli

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "check" / "corpus"
BLOCK = CORPUS / "sglang-page-size-disagg-v1beta1"
SAFE = CORPUS / "vllm-replicas-only"


def dgdgen(*args: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd or REPO)


def test_diff_exit_codes() -> None:
    bad = dgdgen("diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"))
    assert bad.returncode == 1 and "DGD201" in bad.stdout
    ok = dgdgen("diff", str(SAFE / "old.yaml"), str(SAFE / "new.yaml"))
    assert ok.returncode == 0, ok.stdout
    assert dgdgen("diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"),
                  "--fail-on", "never").returncode == 0


def test_diff_of_two_rendered_generations_is_isolated_not_in_place(tmp_path: Path) -> None:
    """The stable DGD and the candidate rendered beside it (separate-dgd) are two DGDs; diffing
    them shows the change's categories but no in-place finding."""
    step = REPO / "examples" / "vllm-disagg-block-size" / "rendered" / "step-01"
    old = step / "dynamographdeployment-vllm-v1-disagg-router.yaml"
    new = step / "dynamographdeployment-bs32-vllm-v1-disagg-router.yaml"
    r = dgdgen("diff", str(old), str(new), "--format", "json")
    assert r.returncode == 0, r.stdout
    report = json.loads(r.stdout)
    assert report["findings"] == []
    (verdict,) = report["verdicts"]
    assert verdict["isolated_beside"] == "vllm-v1-disagg-router"
    assert "mdc-checksum" in verdict["categories"]
    # the same change made by renaming a hand-written DGD is still an in-place change
    renamed = tmp_path / "renamed.yaml"
    text = new.read_text()
    renamed.write_text(re.sub(r"\n  annotations:\n(    \S.*\n)+", "\n", text))
    assert "dgdgen.dev/base-name" not in renamed.read_text()
    bad = dgdgen("diff", str(old), str(renamed))
    assert bad.returncode == 1 and "DGD201" in bad.stdout and "renamed from" in bad.stdout


@pytest.mark.parametrize("args", [
    ["diff", "missing.yaml", "other.yaml"],
    ["diff", "x", "y", "--format", "xml"],
    ["check", str(BLOCK / "new.yaml"), "--select", "NOPE999"],
    ["check", str(BLOCK / "new.yaml"), "--dynamo-version", "0.1"],
    ["check", str(BLOCK / "new.yaml"), "--output", "a", "--output", "b"],
])
def test_bad_input_exits_2_without_traceback(args: list[str]) -> None:
    proc = dgdgen(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("apiVersion: v1\nkind: [\n")
    proc = dgdgen("check", str(f))
    assert proc.returncode == 2
    assert re.search(r"bad\.yaml:\d+", proc.stderr), proc.stderr


def test_json_report_shape() -> None:
    proc = dgdgen("diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"), "-f", "json")
    report = json.loads(proc.stdout)
    assert report["isolation_required"] is True
    f = next(x for x in report["findings"] if x["code"] == "DGD201")
    for key in ("code", "slug", "severity", "category", "message", "file", "line", "column",
                "object"):
        assert key in f
    assert f["category"] == "mdc-checksum" and f["object"] == "DynamoGraphDeployment/sglang-disagg"
    # the finding points at the changed value
    lines = (BLOCK / "new.yaml").read_text().splitlines()
    assert lines[f["line"] - 1].strip() == '- "32"'


def test_sarif_validates_against_the_sarif_2_1_0_schema(tmp_path: Path) -> None:
    out = tmp_path / "r.sarif"
    proc = dgdgen("diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"), "-f", "sarif",
                  "-o", str(out), "-f", "json")
    assert proc.returncode == 1
    json.loads(proc.stdout)  # the second format went to stdout
    log = json.loads(out.read_text())
    schema = json.loads((REPO / "schemas" / "sarif-2.1.0-rtm.5.schema.json").read_text())
    jsonschema.Draft4Validator(schema).validate(log)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"DGD201", "DGD202"}
    assert all(r["level"] in ("error", "warning", "note") for r in results)
    # a broken log must not validate: the check has teeth
    log["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(log)


def test_github_annotations_follow_the_workflow_command_format() -> None:
    proc = dgdgen("diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"), "-f", "github")
    lines = proc.stdout.splitlines()
    assert lines
    pattern = re.compile(r"^::(error|warning|notice) file=[^,:]+,line=\d+,col=\d+,"
                         r"title=[^:,]+::[^\n]+$")
    for line in lines:
        assert pattern.match(line), line
    assert any(line.startswith("::error file=") and "DGD201 mdc-change-in-place" in line
               for line in lines)


def test_junit_is_well_formed() -> None:
    proc = dgdgen("diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"), "-f", "junit")
    root = ET.fromstring(proc.stdout)
    assert root.tag == "testsuites"
    assert int(root.get("failures", "0")) >= 4
    assert root.findall(".//failure")


def test_annotation_suppression_is_reported_not_dropped(tmp_path: Path) -> None:
    new = (BLOCK / "new.yaml").read_text().replace(
        "  name: sglang-disagg\n",
        "  name: sglang-disagg\n  annotations:\n"
        "    dgdgen.dev/ignore: \"DGD201: page size verified with the frontend team; "
        "DGD202: canary cluster; DGD106: no streaming clients\"\n")
    (tmp_path / "new.yaml").write_text(new)
    proc = dgdgen("diff", str(BLOCK / "old.yaml"), str(tmp_path / "new.yaml"), "-f", "json")
    assert proc.returncode == 0, proc.stdout
    report = json.loads(proc.stdout)
    sup = [f for f in report["findings"] if f["suppressed"]]
    assert {f["code"] for f in sup} == {"DGD201", "DGD202", "DGD106"}
    assert all("(annotation)" in f["suppression_reason"] for f in sup)
    assert report["summary"]["suppressed"] == len(sup)


def test_config_file_suppression_select_and_fail_on(tmp_path: Path) -> None:
    cfg = tmp_path / ".dgdgen.yaml"
    cfg.write_text("check:\n  fail-on: warning\n  suppress:\n    - rule: kv-transfer-change-in-place\n"
                   "      object: DynamoGraphDeployment/sglang-*\n      reason: lab cluster\n")
    args = ["diff", str(BLOCK / "old.yaml"), str(BLOCK / "new.yaml"), "-f", "json",
            "--config", str(cfg)]
    report = json.loads(dgdgen(*args).stdout)
    kv = [f for f in report["findings"] if f["code"] == "DGD202"]
    assert kv and all(f["suppressed"] and f["suppression_reason"] == "lab cluster (config)"
                      for f in kv)
    only = json.loads(dgdgen(*args, "--select", "DGD2", "--ignore", "mdc-change-in-place").stdout)
    assert {f["code"] for f in only["findings"]} == {"DGD202"}
    # fail-on warning from the config: the DGD106 warning alone fails
    proc = dgdgen(*args[:-2], "--config", str(cfg), "--select", "DGD106")
    assert proc.returncode == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text("check:\n  suppress:\n    - rule: DGD105\n")
    assert dgdgen(*args[:-2], "--config", str(bad)).returncode == 2


def test_rules_list_and_explain() -> None:
    proc = dgdgen("rules", "list")
    assert proc.returncode == 0 and "DGD201" in proc.stdout and "mdc-change-in-place" in proc.stdout
    exp = dgdgen("rules", "explain", "kv-transfer-change-in-place")
    assert exp.returncode == 0 and exp.stdout.startswith("# DGD202")
    assert "## Bad" in exp.stdout and "## Good" in exp.stdout
    assert dgdgen("rules", "explain", "XYZ123").returncode == 2


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})


def test_check_against_git_base_and_index(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "dgd.yaml").write_text((BLOCK / "old.yaml").read_text())
    _git(repo, "add", "dgd.yaml")
    _git(repo, "commit", "-q", "-m", "base")
    (repo / "dgd.yaml").write_text((BLOCK / "new.yaml").read_text())
    # nothing staged yet: pre-commit mode sees no change
    assert dgdgen("check", cwd=repo).returncode == 0
    # working tree vs HEAD
    proc = dgdgen("check", "dgd.yaml", "-f", "json", cwd=repo)
    assert proc.returncode == 1 and json.loads(proc.stdout)["isolation_required"]
    # --base REV with no paths: every changed YAML file
    assert dgdgen("check", "--base", "HEAD", cwd=repo).returncode == 1
    # staged content vs HEAD
    _git(repo, "add", "dgd.yaml")
    assert dgdgen("check", cwd=repo).returncode == 1
    assert dgdgen("check", "--base", "nope", cwd=repo).returncode == 2
    # a new file has no base: single-file rules only
    (repo / "new.yaml").write_text((BLOCK / "new.yaml").read_text())
    _git(repo, "add", "new.yaml")
    proc = dgdgen("check", "new.yaml", "-f", "json", cwd=repo)
    assert not json.loads(proc.stdout)["isolation_required"]


def test_diff_of_files_without_a_dgd_compares_nothing_and_exits_2(tmp_path: Path) -> None:
    """A CI job pointed at the wrong path (a rollout spec, a Service) must not go green."""
    example = REPO / "examples" / "vllm-disagg-block-size"
    service = tmp_path / "service.yaml"
    service.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {}\n")
    for old, new, empty in ((example / "rollout.yaml", example / "dgd.yaml", "rollout.yaml"),
                            (service, service, "service.yaml"),
                            (example / "dgd.yaml", service, "service.yaml")):
        r = dgdgen("diff", str(old), str(new))
        assert r.returncode == 2, r.stdout + r.stderr
        assert "0 error(s)" not in r.stdout
        said = ("is a dgdgen rollout spec (kind DGDRollout)" if empty == "rollout.yaml" else
                "no DynamoGraphDeployment: nothing to compare")
        assert empty in r.stderr and said in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


def test_check_says_when_no_dgd_was_among_the_files(tmp_path: Path) -> None:
    """`check` is run by pre-commit on every staged YAML file (`types_or: [yaml]`), so a commit
    of other YAML passes, but the summary says no DGD was checked."""
    other = tmp_path / "workflow.yaml"
    other.write_text("name: ci\non: push\n")
    r = dgdgen("check", str(other))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.rstrip().endswith("; no DynamoGraphDeployment among them")
    assert json.loads(dgdgen("check", str(other), "-f", "json").stdout)["summary"]["dgds"] == 0
    dgd = dgdgen("check", str(SAFE / "new.yaml"))
    assert "no DynamoGraphDeployment" not in dgd.stdout
    assert json.loads(dgdgen("check", str(SAFE / "new.yaml"), "-f", "json").stdout)[
        "summary"]["dgds"] == 1


def test_a_check_leaves_its_objects_to_the_process_exit_and_only_its_own(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The documents and the report of a check stay referenced after it returns (the console
    script then ends without freeing them one by one); a later command replaces them, so a
    process that runs many holds one run's objects at most."""
    import weakref

    from dgdgen import cli
    from dgdgen.commands import _common

    assert cli.main(["check", str(SAFE / "new.yaml"), "--fail-on", "never"]) == 0
    files, report = _common._KEPT
    assert [f.file for f in files] == report.files and report.pairs
    first = weakref.ref(report.pairs[0])
    del files, report
    assert first() is not None  # still referenced after the command returned
    assert cli.main(["check", str(BLOCK / "new.yaml"), "--fail-on", "never"]) == 0
    assert first() is None  # replaced, and freed, by the next check
    assert len(_common._KEPT) == 2
    capsys.readouterr()
