"""`dgdgen verify` end to end, as a user runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gen_support import run_cli

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = REPO / "tests" / "data" / "upstream" / "dynamo" / "examples"

GOOD = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: qwen
spec:
  components:
  - name: Frontend
    type: frontend
    replicas: 1
  - name: Worker
    type: worker
    replicas: 2
    minAvailable: 1
"""

BAD = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: qwen
spec:
  components:
  - name: Frontend
    type: frontend
    replica: 1
  - name: frontend
    type: worker
    replicas: 1
    minAvailable: 2
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
"""

PROPOSED = GOOD.replace("    minAvailable: 1\n", "    minAvailable: 1\n    partition: 1\n")


def verify(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("verify", *args, cwd=REPO)


def test_valid_files_exit_0(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD)
    result = verify(str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""
    assert "1 document(s) in 1 file(s): all valid" in result.stderr
    # which DGD CRD it validated against (GOOD is a DGD), and that it is no release's
    assert "; DGD CRD of Dynamo main df7deed0d (2026-08-20), not a release tag" in result.stderr


def test_violations_exit_1_with_file_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD)
    result = verify(str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        (f"{path}:6:3: DynamoGraphDeployment/qwen: spec.components: component names must be "
        "unique case-insensitively"),
        (f"{path}:9:5: DynamoGraphDeployment/qwen: spec.components[0].replica: unknown field "
        "'replica': the schema does not declare it, so the API server would drop it "
        "(did you mean 'replicas'?)"),
        (f"{path}:10:5: DynamoGraphDeployment/qwen: spec.components[1]: minAvailable must be less "
        "than or equal to replicas unless replicas is 0"),
        (f"{path}:15:1: Widget/w: warning: no schema for apiVersion 'example.com/v1' kind "
        "'Widget'; not validated"),
    ]


def test_skip_unknown_kinds(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(BAD.split("---\n")[1])
    result = verify("--skip-unknown-kinds", str(tmp_path))
    assert (result.returncode, result.stdout) == (2, "")  # nothing validated
    result = verify(str(tmp_path))
    assert result.returncode == 2 and "warning:" in result.stdout
    (tmp_path / "a.yaml").write_text(GOOD)
    result = verify("--skip-unknown-kinds", str(tmp_path))
    assert (result.returncode, result.stdout) == (0, "")
    assert "2 document(s) in 2 file(s): all valid (1 not validated)" in result.stderr


def test_nothing_validated_is_not_all_valid(tmp_path: Path) -> None:
    """`verify rollout.yaml` (a kind without a schema) validates nothing: exit 2, never
    "all valid"; an empty directory likewise."""
    rollout = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"
    result = verify(str(rollout))
    assert result.returncode == 2
    assert "not validated" in result.stdout and "all valid" not in result.stderr
    assert "none validated" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = verify(str(empty))
    assert result.returncode == 2 and "0 document(s) in 0 file(s): none validated" in result.stderr


def test_overlay_option(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PROPOSED)
    result = verify(str(tmp_path))
    assert result.returncode == 1 and "unknown field 'partition'" in result.stdout
    result = verify("--overlay", "dgd-proposed-rollout-fields", str(tmp_path))
    assert result.returncode == 0, result.stdout
    result = verify("--overlay", "no-such-overlay", str(tmp_path))
    assert result.returncode == 2 and "unknown schema overlay" in result.stderr


def test_bad_input_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: [unclosed\n")
    result = verify(str(broken))
    assert result.returncode == 2
    assert str(broken) in result.stderr and "malformed YAML" in result.stderr
    result = verify(str(tmp_path / "missing.yaml"))
    assert result.returncode == 2 and "file not found" in result.stderr


def test_directories_are_walked_in_sorted_order(tmp_path: Path) -> None:
    for name in ("b.yaml", "a/c.yml", "a/b.yaml", "ignored.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(BAD.split("---\n")[1])
    result = verify(str(tmp_path))
    files = [line.split(":", 1)[0] for line in result.stdout.splitlines()]
    assert files == [str(tmp_path / "a/b.yaml"), str(tmp_path / "a/c.yml"), str(tmp_path / "b.yaml")]


def test_upstream_examples_verify_clean() -> None:
    result = verify("--skip-unknown-kinds", str(UPSTREAM))
    assert result.returncode == 0, result.stdout
