"""Issue 13 item 4: a frontend that selects Dynamo namespaces by prefix is flagged (DGD107), and
dgdgen's own rendered output never relies on prefix selection (no DGD101 / DGD107 finding in
any rendered step of the examples, and no rendered frontend sets a prefix)."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = sorted(glob.glob(os.path.join(REPO, "examples", "*", "rendered", "step-*")))


def test_rendered_examples_never_rely_on_prefix_selection() -> None:
    assert len(STEPS) >= 8
    proc = subprocess.run(
        [sys.executable, "-m", "dgdgen", "check", *STEPS, "--select", "DGD101,DGD107",
         "--format", "json", "--fail-on", "never"],
        capture_output=True, text=True, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    # Both generations of each step were checked (one verdict per DGD), and nothing fired.
    assert len(report["verdicts"]) > len(STEPS)
    assert report["findings"] == []


def test_no_rendered_frontend_sets_a_namespace_prefix() -> None:
    frontends = 0
    for step in STEPS:
        for path in glob.glob(os.path.join(step, "dynamographdeployment-*.yaml")):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            doc = yaml.safe_load(text)
            comps = doc["spec"].get("components") or list((doc["spec"].get("services") or {})
                                                          .values())
            frontends += sum(1 for c in comps
                             if c.get("type") == "frontend" or c.get("componentType") == "frontend")
            assert "DYN_NAMESPACE_PREFIX" not in text and "--namespace-prefix" not in text, path
    assert frontends > 0
