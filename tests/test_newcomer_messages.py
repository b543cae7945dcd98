"""Mistakes a newcomer makes get a clear message: a candidate without a revision (warned, with
the generated name and the field to set), `status` on a directory that does not exist (exit 2),
a PNG plan sent to a terminal (refused, exit 2; a pipe still gets it), `diff` given rollout specs
(named, with what to use instead), and the checker's text report, which prints a rule's long
explanation and its fix once per run, later findings referring to the first."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from gen_support import EXAMPLES, REPO, run_cli

BLOCK_SIZE = REPO / "examples" / "vllm-disagg-block-size"
CORPUS = REPO / "tests" / "check" / "corpus" / "sglang-page-size-disagg-v1beta1"


def _spec(tmp: Path, *, revision: bool) -> Path:
    shutil.copy(BLOCK_SIZE / "dgd.yaml", tmp / "dgd.yaml")
    text = (BLOCK_SIZE / "rollout.yaml").read_text()
    assert "  candidate:\n    revision: bs32\n" in text
    if not revision:
        text = text.replace("  candidate:\n    revision: bs32\n", "  candidate:\n")
    (tmp / "rollout.yaml").write_text(text)
    return tmp / "rollout.yaml"


def test_a_missing_candidate_revision_is_named_once(tmp_path: Path) -> None:
    spec = _spec(tmp_path, revision=False)
    runs = [run_cli("validate", str(spec)) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
        lines = [x for x in r.stderr.splitlines() if "spec.candidate.revision" in x]
        assert len(lines) == 1, r.stderr
    line = lines[0]
    name = r.stdout.rsplit("→ ", 1)[1].strip()  # the revision the plan uses
    assert name.startswith("r") and len(name) == 8
    line_no = spec.read_text().splitlines().index("  candidate:") + 1
    assert line.startswith(f"dgdgen validate: warning: {spec}:{line_no}:")
    assert f"named {name!r}" in line and f"revision: {name}" in line
    assert runs[0].stderr == runs[1].stderr  # the generated name is the same on every run
    # an edit of the candidate renames it: what the warning says
    edited = spec.read_text().replace("--block-size: 32", "--block-size: 64")
    assert edited != spec.read_text()
    spec.write_text(edited)
    r = run_cli("validate", str(spec))
    assert r.returncode == 0 and name not in r.stdout, r.stdout
    spec = _spec(tmp_path, revision=True)
    r = run_cli("validate", str(spec))
    assert "spec.candidate.revision" not in r.stderr, r.stderr


def test_no_example_leaves_the_revision_to_a_hash() -> None:
    from dgdgen.errors import InputWarning
    from dgdgen.pipeline.prepare import prepare

    for example in EXAMPLES:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", InputWarning)
            prepare(str(example / "rollout.yaml"))
        assert not [w for w in seen if "spec.candidate.revision" in str(w.message)], example


def test_status_of_a_directory_that_does_not_exist(tmp_path: Path) -> None:
    spec = _spec(tmp_path, revision=True)
    missing = tmp_path / "no" / "such"
    r = run_cli("status", str(spec), "--into", str(missing))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""  # not "step 0 (baseline)"
    assert f"{missing}: --into: no such directory" in r.stderr
    assert f"dgdgen render {spec} --into {missing} --init" in r.stderr
    r = run_cli("status", str(spec), cwd=tmp_path)  # the default, spec.gitops.path
    assert r.returncode == 2 and "spec.gitops.path (the default --into)" in r.stderr, r.stderr
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    r = run_cli("status", str(spec), "--into", str(missing))  # in a work tree --init is refused
    assert r.returncode == 2 and f"--into {missing} --commit" in r.stderr, r.stderr
    (tmp_path / "empty").mkdir()  # a directory with nothing rendered yet is a valid answer
    r = run_cli("status", str(spec), "--into", str(tmp_path / "empty"))
    assert r.returncode == 0 and "nothing rendered yet" in r.stdout, r.stderr


def _plan_png(spec: Path, *, tty: bool) -> tuple[int, bytes, str]:
    args = [sys.executable, "-m", "dgdgen", "plan", str(spec), "--format", "png"]
    if not tty:
        r = subprocess.run(args, capture_output=True, timeout=120, check=False)
        return r.returncode, r.stdout, r.stderr.decode()
    leader, follower = pty.openpty()
    try:
        r = subprocess.run(args, stdout=follower, stderr=subprocess.PIPE, timeout=120,
                           check=False)
        os.set_blocking(leader, False)
        try:
            shown = os.read(leader, 1 << 16)
        except BlockingIOError:
            shown = b""
    finally:
        os.close(follower)
        os.close(leader)
    return r.returncode, shown, r.stderr.decode()


def test_a_png_plan_is_not_written_to_a_terminal(tmp_path: Path) -> None:
    spec = _spec(tmp_path, revision=True)
    code, shown, err = _plan_png(spec, tty=True)
    assert code == 2, err
    assert shown == b""  # nothing binary reached the terminal
    assert "standard output is a terminal" in err and "-o plan.png" in err
    assert "Traceback" not in err
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert (librsvg) missing: the pipe half needs it")
    code, data, err = _plan_png(spec, tty=False)  # a pipe gets the picture
    assert code == 0, err
    assert data.startswith(b"\x89PNG\r\n\x1a\n")


def test_diff_of_rollout_specs_says_what_they_are(tmp_path: Path) -> None:
    spec = _spec(tmp_path, revision=True)
    other = tmp_path / "other.yaml"
    shutil.copy(spec, other)
    r = run_cli("diff", str(spec), str(other))
    assert r.returncode == 2, r.stdout + r.stderr
    assert (f"OLD {spec} and NEW {other} are dgdgen rollout specs (kind DGDRollout), not "
            "DynamoGraphDeployment files") in r.stderr
    assert "git diff" in r.stderr and "dgdgen plan SPEC" in r.stderr
    r = run_cli("diff", str(BLOCK_SIZE / "dgd.yaml"), str(other))
    assert r.returncode == 2
    assert f"NEW {other} is a dgdgen rollout spec (kind DGDRollout)" in r.stderr
    assert f"OLD {BLOCK_SIZE / 'dgd.yaml'}" in r.stderr or "OLD examples/" in r.stderr


def test_the_text_report_explains_each_rule_once(tmp_path: Path) -> None:
    """One page-size edit of a disaggregated DGD: DGD201 and DGD202 each at decode and prefill.
    By default each finding is one headline and each rule's help is said once; `--verbose`
    prints each rule's explanation of the in-place roll once, the shared fix once; the JSON
    report keeps every finding whole (its details)."""
    old, new = str(CORPUS / "old.yaml"), str(CORPUS / "new.yaml")
    r = run_cli("diff", old, new)
    assert r.returncode == 1, r.stderr
    v = run_cli("diff", old, new, "--verbose")
    assert v.returncode == 1, v.stderr
    report = json.loads(run_cli("diff", old, new, "--format", "json").stdout)
    inplace = [f for f in report["findings"] if f["code"] in ("DGD201", "DGD202")]
    assert sorted(f["code"] for f in inplace) == ["DGD201", "DGD201", "DGD202", "DGD202"]
    effects = {f["code"]: f["details"].split("applied in place: ", 1)[1] for f in inplace}
    assert all(len(e) > 300 for e in effects.values())  # the long part the issue is about
    flat = " ".join(v.stdout.split())
    for code, effect in effects.items():
        assert flat.count(" ".join(effect.split())) == 1, code
        first = min(f["line"] for f in inplace if f["code"] == code)
        assert flat.count(f"as explained for {code} at line {first} above") == 1
        assert effect not in r.stdout  # not in the default report: a headline each
        assert r.stdout.count(f"`dgdgen rules explain {code}`") == 1
    fix = inplace[0]["remediation"]
    assert flat.count(" ".join(fix.split())) == 1 and fix not in r.stdout
    assert flat.count("fix: as for DGD201 at line") == 3
    assert all(f"{f['code']} {f['message']}" in r.stdout for f in inplace)
    # the default report is far shorter than the four findings' whole texts
    assert len(r.stdout) < sum(len(f["details"]) for f in inplace) / 2
