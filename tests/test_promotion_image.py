"""The promotion image: the default names an image no registry publishes, so `render`,
`validate` and `argo` warn once while a rendered object runs it, and stop once it is another
image or pinned by digest; the spec accepts the digest forms and refuses a malformed one; and
argo/Dockerfile builds what the default tag names (checked statically: no Docker daemon here)."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from gen_support import EXAMPLES, REPO, copy_example_inputs, run_cli

from dgdgen import __version__
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import images
from dgdgen.spec import PROMOTION_IMAGE, PROMOTION_REPOSITORY

BLOCK_SIZE = REPO / "examples" / "vllm-disagg-block-size"
DIGEST = "sha256:" + "0123456789abcdef" * 4
WARNING = "is dgdgen's default promotion image, which no registry publishes"


def _container_images(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (str(c["image"]) for c in value if isinstance(c, dict))
            else:
                yield from _container_images(value)
    elif isinstance(node, list):
        for item in node:
            yield from _container_images(item)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_the_warning_says_what_the_rendered_tree_runs(example: Path) -> None:
    """Against each example's committed tree (every state): warned exactly when some rendered
    object runs the default image, naming each field that puts it there."""
    found = set()
    for path in sorted((example / "rendered").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            found.update(i for i in _container_images(doc) if images.unpublished(i))
    text = images.warning(prepare(str(example / "rollout.yaml")))
    assert (text is not None) == bool(found), (example.name, found, text)
    if found:
        assert found == {PROMOTION_IMAGE} and PROMOTION_IMAGE in text
    if example.name == "trtllm-disagg-v1beta1":  # the quality Job runs it as well
        assert text is not None and "spec.analysis.quality.image" in text


def test_unpublished_is_the_default_repository_without_a_digest() -> None:
    assert images.unpublished(PROMOTION_IMAGE)
    assert images.unpublished(PROMOTION_REPOSITORY)
    assert images.unpublished(f"{PROMOTION_REPOSITORY}:9.9.9")
    assert not images.unpublished(f"{PROMOTION_REPOSITORY}@{DIGEST}")
    assert not images.unpublished(f"{PROMOTION_IMAGE}@{DIGEST}")
    assert not images.unpublished("registry.example.com:5000/ml/dgdgen-promote:0.1.0")
    assert not images.unpublished("ghcr.io/dgdgen/dgdgen-promote-fork:0.1.0")


def _spec(tmp: Path, image: str | None) -> Path:
    shutil.copy(BLOCK_SIZE / "dgd.yaml", tmp / "dgd.yaml")
    copy_example_inputs(BLOCK_SIZE, tmp)
    text = (BLOCK_SIZE / "rollout.yaml").read_text()
    if image is not None:
        text = text.replace("  gitops:\n", f"  gitops:\n    workflow:\n      image: {image}\n", 1)
    (tmp / "rollout.yaml").write_text(text)
    return tmp / "rollout.yaml"


def test_render_warns_once_for_the_whole_tree(tmp_path: Path) -> None:
    spec = _spec(tmp_path, None)
    r = run_cli("render", str(spec), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if WARNING in x]
    assert len(lines) == 1, r.stderr  # seven states, one drain Job in three: one warning
    assert lines[0].startswith(f"dgdgen render: warning: {spec}:")
    assert "spec.gitops.workflow.image" in lines[0] and "argo/Dockerfile" in lines[0]
    assert "@sha256:<digest>" in lines[0]
    # --into writes one state (the baseline has no drain Job): the rollout reaches the others
    r = run_cli("render", str(spec), "--into", str(tmp_path / "deploy"))
    assert r.returncode == 0, r.stderr
    assert sum(WARNING in x for x in r.stderr.splitlines()) == 1, r.stderr


@pytest.mark.parametrize("image", [
    f"registry.example.com/ml/dgdgen-promote@{DIGEST}",
    f"registry.example.com/ml/dgdgen-promote:0.1.0@{DIGEST}",
    f"{PROMOTION_REPOSITORY}@{DIGEST}",
    "registry.example.com/ml/dgdgen-promote:0.1.0",
])
def test_a_digest_or_another_image_silences_it(tmp_path: Path, image: str) -> None:
    spec = _spec(tmp_path, image)
    r = run_cli("validate", str(spec))
    assert r.returncode == 0, r.stderr
    assert WARNING not in r.stderr
    rendered = images.rendered(prepare(str(spec)))
    assert [i for _f, i, _who in rendered] == [image]  # the drain Jobs run what was set


def test_validate_plan_and_argo_warn_with_the_default(tmp_path: Path) -> None:
    spec = _spec(tmp_path, None)
    r = run_cli("validate", str(spec))
    assert r.returncode == 0 and r.stderr.count(WARNING) == 1, r.stderr
    r = run_cli("plan", str(spec), "--format", "json")
    assert r.returncode == 0 and r.stderr.count(WARNING) == 1, r.stderr
    assert json.loads(r.stdout)["rollout"] == "qwen-router"  # stdout stays the plan
    pytest.importorskip("hera")
    r = run_cli("argo", str(spec), "-o", str(tmp_path / "argo"))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count(WARNING) == 1, r.stderr
    assert "the drain hook Jobs and the workflow" in r.stderr
    assert "not pinned by digest" not in r.stderr  # one note, not two about the same image


@pytest.mark.parametrize("bad", [
    "registry.example.com/ml/dgdgen-promote@sha256:abc",
    f"registry.example.com/ml/dgdgen-promote@{DIGEST.upper()}",
    f"registry.example.com/ml/dgdgen-promote:0.1.0@{DIGEST[:-1]}",
])
def test_a_malformed_digest_is_refused_at_load(tmp_path: Path, bad: str) -> None:
    spec = _spec(tmp_path, bad)
    r = run_cli("validate", str(spec))
    assert r.returncode == 2, r.stderr
    line = spec.read_text().splitlines().index(f"      image: {bad}") + 1
    assert f"{spec}:{line}:7: spec.gitops.workflow.image:" in r.stderr
    assert "NAME@sha256:<64 lower-case hex>" in r.stderr and "Traceback" not in r.stderr


def _dockerfile() -> list[tuple[str, str]]:
    text = (REPO / "argo" / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
            for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def test_the_dockerfile_builds_what_the_default_tag_names() -> None:
    """Every path it copies from the build context exists (with what the wheel force-includes),
    the version it builds is the default tag's, the user is the one the rendered pods run as,
    and the commands the rendered objects run exist in the package it installs."""
    from dgdgen.gitops import workflow
    from dgdgen.render import drain

    steps = _dockerfile()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    copied = []
    for op, arg in steps:
        if op == "COPY" and not arg.startswith("--from"):
            *sources, _dest = arg.split()
            copied += sources
    for src in copied:
        assert (REPO / src).exists(), src
    force = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert set(force) <= set(copied), "the wheel force-includes a folder the build does not copy"
    assert pyproject["project"]["version"] == __version__
    assert PROMOTION_IMAGE == f"{PROMOTION_REPOSITORY}:{__version__}"
    comment = (REPO / "argo" / "Dockerfile").read_text()
    assert f"dgdgen-promote:{__version__} ." in comment  # the build line it documents
    users = [arg for op, arg in steps if op == "USER"]
    assert users == [str(drain.UID)] == [str(workflow.UID)]
    assert any(op == "RUN" and f"--uid {drain.UID}" in arg for op, arg in steps)
    assert "dgdgen" in pyproject["project"]["scripts"]  # CMD ["dgdgen", "--help"]
    assert (REPO / "dgdgen" / "gitops" / "drain.py").is_file()  # python3 -m dgdgen.gitops.drain
    assert 'if __name__ == "__main__":' in (REPO / "dgdgen" / "gitops" / "drain.py").read_text()
    assert steps[-1] == ("CMD", '["dgdgen", "--help"]')
