"""Every bad input gets one clear message (file, line, field path), exit code 2, no traceback,
and nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gen_support import REPO, run_cli

EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE / "dgd.yaml", tmp_path / "dgd.yaml")
    return tmp_path


def spec_text(**replace: str) -> str:
    text = (EXAMPLE / "rollout.yaml").read_text()
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def _render(work: Path, text: str, *extra: str):
    (work / "rollout.yaml").write_text(text)
    out = work / "out"
    result = run_cli("render", str(work / "rollout.yaml"), "-o", str(out), *extra)
    return result, out


CASES = {
    "malformed-yaml": (
        lambda: spec_text(**{"  steps:\n": "  steps: [\n"}),
        ["rollout.yaml:", "malformed YAML"],
    ),
    "unknown-field-did-you-mean": (
        lambda: spec_text(**{"  capacity:\n": "  capacitty:\n"}),
        ["rollout.yaml:26:3:", "spec.capacitty", "unknown field", "did you mean 'capacity'?"],
    ),
    "nested-unknown-field": (
        lambda: spec_text(**{"    maxSurge: 1": "    maxSurgee: 1"}),
        ["rollout.yaml:27:5:", "spec.capacity.maxSurgee", "did you mean 'maxSurge'?"],
    ),
    "mistyped-field": (
        lambda: spec_text(**{"    - weight: 25": "    - weight: lots"}),
        ["rollout.yaml:30:7:", "spec.steps[0].weight", "integer"],
    ),
    "bad-duration": (
        lambda: spec_text(**{"pause: 10m": "pause: ten minutes"}),
        ["spec.steps[0].pause", "duration"],
    ),
    "missing-dgd-file": (
        lambda: spec_text(**{"dgd: dgd.yaml": "dgd: nowhere.yaml"}),
        ["rollout.yaml:13:5:", "spec.stable.dgd", "not found"],
    ),
    "component-not-in-dgd": (
        lambda: spec_text(**{"      VllmDecodeWorker:": "      VllmDecodeWorkr:"}),
        ["rollout.yaml:18:7:", "spec.candidate.components.VllmDecodeWorkr",
         "has no component", "did you mean 'VllmDecodeWorker'?"],
    ),
    "candidate-replicas-over-int32": (
        lambda: spec_text(**{"            --block-size: 32\n      VllmPrefillWorker:":
                             "            --block-size: 32\n        replicas: 3000000000\n"
                             "      VllmPrefillWorker:"}),
        ["rollout.yaml:22:9:", "spec.candidate.components.VllmDecodeWorker.replicas",
         "less than or equal to 2147483647"],
    ),
    "candidate-empty-image": (
        lambda: spec_text(**{"            --block-size: 32\n      VllmPrefillWorker:":
                             "            --block-size: 32\n        image: ''\n"
                             "      VllmPrefillWorker:"}),
        ["rollout.yaml:22:9:", "spec.candidate.components.VllmDecodeWorker.image",
         "expected a container image reference"],
    ),
    "candidate-env-name-with-equals": (
        lambda: spec_text(**{"            --block-size: 32\n      VllmPrefillWorker:":
                             "            --block-size: 32\n        env: {set: {A=B: x}}\n"
                             "      VllmPrefillWorker:"}),
        ["rollout.yaml:22:15:", "spec.candidate.components.VllmDecodeWorker.env.set",
         "printable ASCII without '='", "'A=B'"],
    ),
    "weights-backwards": (
        lambda: spec_text(**{"    - weight: 50": "    - weight: 20"}),
        ["rollout.yaml:33:7:", "spec.steps[1].weight", "backwards"],
    ),
    "weight-over-100": (
        lambda: spec_text(**{"    - weight: 100": "    - weight: 120"}),
        ["spec.steps[2].weight", "less than or equal to 100"],
    ),
    "surge-too-small": (
        lambda: spec_text(**{"maxSurge: 1": "maxSurge: 0"}),
        ["spec.steps[0].weight", "surge budget is too small to make progress"],
    ),
    "name-too-long": (
        lambda: spec_text(**{"revision: bs32": "revision: bs32\n    name: " + "a" * 50}),
        ["spec.candidate.name", "cannot fit the length limits"],
    ),
    "prefix-cross-talk": (
        lambda: spec_text(**{"revision: bs32": "revision: bs32\n    name: vllm-v1-disagg-router-new"}),
        ["spec.candidate.name", "is a prefix of"],
    ),
    "cluster-wave-zero": (
        lambda: spec_text(**{"    branch: main\n": "    branch: main\n    clusters:\n"
                             "      - {name: us-east, wave: 0}\n      - {name: eu-west}\n"}),
        ["rollout.yaml:54:25:", "spec.gitops.clusters[0].wave", "greater than or equal to 1"],
    ),
    "cluster-waves-with-a-gap": (
        lambda: spec_text(**{"    branch: main\n": "    branch: main\n    clusters:\n"
                             "      - {name: us-east}\n      - {name: eu-west, wave: 3}\n"}),
        ["rollout.yaml:53:5:", "spec.gitops.clusters", "without a gap", "got waves 1, 3",
         "no cluster is in wave 2"],
    ),
    "cluster-waves-without-a-canary": (
        lambda: spec_text(**{"    branch: main\n": "    branch: main\n    clusters:\n"
                             "      - {name: us-east, wave: 2}\n      - {name: eu-west}\n"}),
        ["spec.gitops.clusters", "got waves 2: no cluster is in wave 1"],
    ),
    "every-cluster-in-one-wave": (
        lambda: spec_text(**{"    branch: main\n": "    branch: main\n    clusters:\n"
                             "      - {name: us-east}\n      - {name: eu-west, wave: 1}\n"}),
        ["spec.gitops.clusters", "all 2 clusters are in wave 1",
         "one commit would move every cluster at once"],
    ),
    "duplicate-cluster-name": (
        lambda: spec_text(**{"    branch: main\n": "    branch: main\n    clusters:\n"
                             "      - {name: us-east}\n      - {name: us-east}\n"}),
        ["spec.gitops.clusters", "clusters[1] and clusters[0] are both named 'us-east'"],
    ),
    "wrong-kind": (
        lambda: spec_text(**{"kind: DGDRollout": "kind: Rollout"}),
        ["rollout.yaml:", "kind", "not a rollout spec"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_spec(work: Path, case: str) -> None:
    text, expected = CASES[case]
    result, out = _render(work, text())
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    for needle in expected:
        assert needle in result.stderr, f"{needle!r} not in {result.stderr!r}"
    assert not out.exists(), "nothing may be written on bad input"


def test_dgd_that_is_not_a_dgd(work: Path) -> None:
    (work / "dgd.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
    result, out = _render(work, spec_text())
    assert result.returncode == 2
    assert "holds no DynamoGraphDeployment (found: ConfigMap)" in result.stderr
    assert "rollout.yaml:13:5: spec.stable.dgd" in result.stderr
    assert not out.exists()


def test_dgd_with_malformed_yaml(work: Path) -> None:
    (work / "dgd.yaml").write_text("apiVersion: nvidia.com/v1alpha1\nkind: [\n")
    result, out = _render(work, spec_text())
    assert result.returncode == 2
    assert "dgd.yaml:3:1: malformed YAML" in result.stderr
    assert not out.exists()


def test_dgd_wrong_shape(work: Path) -> None:
    (work / "dgd.yaml").write_text(
        "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata:\n  name: x\n"
        "spec:\n  components:\n    Frontend: {}\n"
    )
    result, _ = _render(work, spec_text())
    assert result.returncode == 2
    # held to the CRD schema before planning, at the DGD file's own line
    assert "dgd.yaml:6:3: spec.components: must be of type array" in result.stderr


def test_several_field_errors_reported_together(work: Path) -> None:
    text = spec_text(**{"  capacity:\n": "  capacitty:\n", "    - weight: 25": "    - weight: x"})
    result, _ = _render(work, text)
    assert result.returncode == 2
    assert "spec.capacitty" in result.stderr and "spec.steps[0].weight" in result.stderr


def test_unknown_step_selector(work: Path) -> None:
    result, out = _render(work, spec_text(), "--step", "9")
    assert result.returncode == 2
    assert "there is no step 9" in result.stderr
    assert not out.exists()


def test_output_dir_not_owned_is_refused(work: Path) -> None:
    out = work / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    result, _ = _render(work, spec_text())
    assert result.returncode == 2
    assert "not written by dgdgen render" in result.stderr
    assert (out / "precious.txt").read_text() == "keep me"


def test_validate_reports_every_spec(work: Path) -> None:
    (work / "rollout.yaml").write_text(spec_text())
    (work / "bad.yaml").write_text(spec_text(**{"  capacity:\n": "  capacitty:\n"}))
    result = run_cli("validate", str(work / "rollout.yaml"), str(work / "bad.yaml"))
    assert result.returncode == 2
    assert "ok: " in result.stdout and "rollout.yaml" in result.stdout
    assert "bad.yaml:26:3: spec.capacitty: unknown field" in result.stderr


def test_unknown_step_of_stdout_render_names_the_states(work: Path) -> None:
    spec = work / "rollout.yaml"
    spec.write_text(spec_text())
    r = run_cli("render", str(spec), "--stdout", "--step", "9")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert (
        "has steps 0..3, rollback-02, rollback and cleanup; there is no step 9"
        in r.stderr
    )
