"""`dgdgen policy render|test` through the real command line."""

from __future__ import annotations

import os
import subprocess

import yaml
from gen_support import run_cli

from dgdgen.policy.schema import violations

CORPUS = os.path.join(os.path.dirname(__file__), "..", "check", "corpus")


def dgdgen(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("policy", *args, cwd=cwd)


def test_render_is_valid_and_deterministic() -> None:
    first = dgdgen("render", "--dynamo-version", "1.4", "--action", "Warn", "--action", "Audit")
    second = dgdgen("render", "--dynamo-version", "1.4", "--action", "Audit", "--action", "Warn")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    docs = list(yaml.safe_load_all(first.stdout))
    assert [violations(d) for d in docs] == [[], []]
    assert docs[0]["metadata"]["annotations"]["dgdgen.dev/dynamo-version"] == "1.4"
    assert docs[1]["spec"]["validationActions"] == ["Warn", "Audit"]


def test_render_writes_the_file(tmp_path: object) -> None:
    out = os.path.join(str(tmp_path), "policy.yaml")
    proc = dgdgen("render", "-o", out, "--name", "dgd-guard", "--failure-policy", "Ignore")
    assert proc.returncode == 0 and proc.stdout == ""
    with open(out, encoding="utf-8") as fh:
        docs = list(yaml.safe_load_all(fh))
    assert docs[0]["metadata"]["name"] == "dgd-guard" == docs[1]["spec"]["policyName"]
    assert docs[0]["spec"]["failurePolicy"] == "Ignore"


def test_usage_errors_exit_2_and_write_nothing(tmp_path: object) -> None:
    out = os.path.join(str(tmp_path), "policy.yaml")
    proc = dgdgen("render", "--action", "Deny", "--action", "Warn", "-o", out)
    assert proc.returncode == 2
    assert "Deny and Warn cannot be combined" in proc.stderr and "Traceback" not in proc.stderr
    assert not os.path.exists(out)
    proc = dgdgen("render", "--dynamo-version", "0.1")
    assert proc.returncode == 2 and "unknown Dynamo version '0.1'" in proc.stderr
    proc = dgdgen("render", "--name", "Not_A_Name")
    assert proc.returncode == 2 and "not a valid object name" in proc.stderr


def test_test_command_denies_and_admits() -> None:
    case = os.path.join(CORPUS, "vllm-kv-connector-v1beta1")
    proc = dgdgen("test", os.path.join(case, "old.yaml"), os.path.join(case, "new.yaml"))
    assert proc.returncode == 1
    assert "denied: DGD202 kv-transfer-change-in-place: VllmDecodeWorker: --kv-transfer-config" \
        in proc.stdout
    safe = os.path.join(CORPUS, "vllm-replicas-only")
    proc = dgdgen("test", os.path.join(safe, "old.yaml"), os.path.join(safe, "new.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.endswith(": admitted\n")


def test_test_command_reports_bad_input_with_file_and_line(tmp_path: object) -> None:
    bad = os.path.join(str(tmp_path), "bad.yaml")
    with open(bad, "w", encoding="utf-8") as fh:
        fh.write("apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: [\n")
    case = os.path.join(CORPUS, "vllm-replicas-only")
    proc = dgdgen("test", os.path.join(case, "old.yaml"), bad)
    assert proc.returncode == 2
    assert f"{bad}:" in proc.stderr and "Traceback" not in proc.stderr
