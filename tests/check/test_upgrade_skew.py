"""DGD206 through the command line: a runtime image bump that skips a Dynamo minor release fails
the check (exit 1) and says which minor, the consequence and the fix; a tag that names no release
is said once and fails nothing; the version is read tolerantly from the tag."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dgdgen.check.releases import image_release, skipped

RUNTIME = "nvcr.io/nvidia/ai-dynamo/vllm-runtime"


def _dgd(frontend: str, worker: str) -> str:
    return f"""\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata:
  name: qwen
  namespace: inference
spec:
  components:
    - name: Frontend
      type: frontend
      podTemplate:
        spec:
          containers:
            - name: main
              image: {frontend}
    - name: VllmDecodeWorker
      type: worker
      replicas: 2
      podTemplate:
        spec:
          containers:
            - name: main
              image: {worker}
              command: [python3, -m, dynamo.vllm]
              args: [--model, Qwen/Qwen3-0.6B]
"""


def _diff(tmp_path: Path, old: tuple[str, str], new: tuple[str, str],
          *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "old.yaml").write_text(_dgd(*old))
    (tmp_path / "new.yaml").write_text(_dgd(*new))
    return subprocess.run(
        [sys.executable, "-m", "dgdgen", "diff", str(tmp_path / "old.yaml"),
         str(tmp_path / "new.yaml"), *extra],
        capture_output=True, text=True, check=False, env={**os.environ, "NO_COLOR": "1"})


def test_a_bump_from_1_5_to_1_7_is_a_finding_that_names_the_skipped_minor(
        tmp_path: Path) -> None:
    r = _diff(tmp_path, (f"{RUNTIME}:1.5.1", f"{RUNTIME}:1.5.1"),
              (f"{RUNTIME}:1.7.0", f"{RUNTIME}:1.7.0"), "--select", "DGD206")
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "error DGD206" in ln]
    assert len(lines) == 2  # the frontend and the worker
    for ln in lines:  # a headline: what changed, the consequence in a few words
        assert "image :1.5.1→:1.7.0 skips Dynamo 1.6: an upgrade path Dynamo does not support" \
            in ln and len(ln) - len(str(tmp_path)) < 160, ln
    assert r.stdout.count("help: go one minor at a time") == 1  # once per rule
    # --verbose: the whole text; the long part once per run, the fix on the object line
    r = _diff(tmp_path, (f"{RUNTIME}:1.5.1", f"{RUNTIME}:1.5.1"),
              (f"{RUNTIME}:1.7.0", f"{RUNTIME}:1.7.0"), "--select", "DGD206", "--verbose")
    text = " ".join(r.stdout.split())
    assert text.count("(Dynamo 1.5) → nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.7.0 (Dynamo 1.7) "
                      "skips Dynamo 1.6") == 2, r.stdout
    assert "only within a minor release or to the adjacent one" in text
    assert text.count("the v1.7.0 release page") == 1
    assert "Go through the adjacent minor" in text


def test_json_carries_the_finding_on_the_image_line(tmp_path: Path) -> None:
    r = _diff(tmp_path, (f"{RUNTIME}:1.5.1", f"{RUNTIME}:1.5.1"),
              (f"{RUNTIME}:1.5.1", f"{RUNTIME}:1.7.0"), "--format", "json")
    assert r.returncode == 1, r.stderr
    (f,) = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "DGD206"]
    assert f["component"] == "VllmDecodeWorker" and f["severity"] == "error"
    assert f["line"] == 22  # `image:` of the worker's container
    # the frontend stays on 1.5 while the workers go to 1.7: the bump finding says it, the
    # skew is not said a second time
    assert "skips Dynamo 1.6" in f["message"]
    assert "(Dynamo 1.5) → nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.7.0 (Dynamo 1.7)" in f["details"]


def test_adjacent_and_patch_upgrades_pass(tmp_path: Path) -> None:
    for old, new in (("1.6.1", "1.7.0"), ("1.6.0", "1.6.1"), ("1.7.0", "1.6.1")):
        r = _diff(tmp_path, (f"{RUNTIME}:{old}",) * 2, (f"{RUNTIME}:{new}",) * 2,
                  "--select", "DGD206", "--format", "json")
        assert r.returncode == 0, (old, new, r.stdout)
        assert json.loads(r.stdout)["findings"] == []


def test_a_tag_without_a_release_is_said_once_and_fails_nothing(tmp_path: Path) -> None:
    r = _diff(tmp_path, (f"{RUNTIME}:1.5.1",) * 2, (f"{RUNTIME}:latest",) * 2,
              "--select", "DGD206")
    assert r.returncode == 0, r.stdout
    lines = [ln for ln in r.stdout.splitlines() if "DGD206" in ln and "help:" not in ln]
    assert len(lines) == 1 and "info DGD206" in lines[0], r.stdout
    text = " ".join(r.stdout.split())
    assert "image :1.5.1→:latest (and 1 more): no Dynamo release in the tag" in text


@pytest.mark.parametrize(("image", "minor"), [
    (f"{RUNTIME}:1.7.0", (1, 7)), (f"{RUNTIME}:v1.6.1", (1, 6)),
    (f"{RUNTIME}:1.7.0-cuda13", (1, 7)), (f"{RUNTIME}:1.6.1.post1", (1, 6)),
    ("localhost:5000/mirror/ai-dynamo/sglang-runtime:1.10.2", (1, 10)),
    (f"{RUNTIME}:latest", None), (f"{RUNTIME}@sha256:" + "a" * 64, None), (RUNTIME, None),
    (f"{RUNTIME}:main-0a1b2c3", None)])
def test_tags_are_read_tolerantly(image: str, minor: tuple[int, int] | None) -> None:
    r = image_release(image)
    assert r.dynamo and r.minor == minor


def test_other_images_are_not_read_and_an_override_wins() -> None:
    assert image_release("vllm/vllm-openai:0.9.2").dynamo is False
    assert image_release("registry.example/llm:1.5.1").minor is None
    assert image_release("registry.example/llm:latest", "1.7.0").minor == (1, 7)


def test_skipped_minors() -> None:
    assert skipped((1, 5), (1, 7)) == skipped((1, 7), (1, 5)) == "1.6"
    assert skipped((1, 3), (1, 7)) == "1.4–1.6"
    assert skipped((1, 6), (1, 7)) is None and skipped((1, 6), (1, 6)) is None
    # across a major the old major's last minor is not known: only the new major's are counted
    assert skipped((0, 9), (1, 0)) is None and skipped((0, 9), (1, 2)) == "1.0–1.1"
