"""The candidate's frontends are ready only while their model is served: every example with a
frontend per generation renders the candidate frontend's readiness probe on
``/v1/models/<model>/ready`` (not the operator's ``/health``, 200 with zero workers), leaves the
stable's template untouched, and validates against the vendored DGD CRD. What the path answers is
proven against the real frontend in tests/rehearse/test_frontend_readiness.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml
from gen_support import EXAMPLES, REPO

from dgdgen import crd
from dgdgen.model import dgd as dgdmod
from dgdgen.pipeline.prepare import prepare
from dgdgen.render import dgds
from dgdgen.traffic.haproxy import served_model


def _probe(d: dgdmod.Dgd, name: str) -> Any:
    if d.version == "v1alpha1":
        return d.component_doc(name).get("readinessProbe")
    main = d.main_container(name)
    return (main or {}).get("readinessProbe")


def test_candidate_frontends_probe_model_readiness() -> None:
    seen = 0
    for ex in EXAMPLES:
        p = prepare(str(ex / "rollout.yaml"))
        state = p.plan.steps[1]
        stable = dgds.stable_dgd(p, state.stable)
        for fe in stable.frontends():
            # the stable's template is the user's: changing it would restart its serving pods
            assert _probe(stable, fe.name) == _probe(p.stable.dgd, fe.name), ex.name
        if p.mode != "separate-dgd":
            continue
        cand = dgds.candidate_dgd(p, state.candidate, p.candidate_name)
        model = served_model(p.candidate.dgd)
        assert model is not None
        for fe in cand.frontends():
            probe = _probe(cand, fe.name)
            assert probe["httpGet"]["port"] == "http", ex.name
            path = probe["httpGet"]["path"]
            assert path.startswith("/v1/models/") and path.endswith("/ready")
            # one path segment: the model name with its slash escaped
            segment = path[len("/v1/models/"):-len("/ready")]
            assert "/" not in segment and unquote(segment) == model
            seen += 1
        assert crd.validate(cand.doc) == [], ex.name
    assert seen >= 4


def test_worker_group_candidate_frontend_probe() -> None:
    p = prepare(str(REPO / "examples" / "vllm-disagg-v1beta1-worker-group" / "rollout.yaml"))
    (doc,) = [m.obj for m in dgds.render(p, p.plan.steps[1])]
    d = dgdmod.parse(doc)
    rev = p.candidate.revision
    probes = {fe.name: _probe(d, fe.name) for fe in d.frontends()}
    cand = {n: pr for n, pr in probes.items() if n.endswith(f"-{rev}")}
    assert cand and all(pr["httpGet"]["path"] == "/v1/models/Qwen%2FQwen3-0.6B/ready"
                        for pr in cand.values())
    # the stable group's frontend keeps what the user wrote
    for n, pr in probes.items():
        if n not in cand:
            assert pr == _probe(p.stable.dgd, n)


def test_frontends_without_resource_requests_are_said(tmp_path: Path) -> None:
    src = REPO / "examples" / "vllm-disagg-image-bump"
    p = prepare(str(src / "rollout.yaml"))
    notes = [n for n in p.plan.notes if "request no CPU or memory" in n]
    # the example's frontends request nothing: both generations are said
    assert [n.split(" ")[0] for n in notes] == ["stable", "candidate"]
    # the candidate's DGD is rendered from the stable's: the fix is named where the user can
    # make it (it said "in the candidate's DGD", a file nobody writes)
    assert all("in the stable's DGD" in n and "in the candidate's DGD" not in n for n in notes)
    # with requests on the stable's frontend, the note goes (the candidate inherits them)
    for name in ("rollout.yaml", "dgd.yaml"):
        shutil.copy(src / name, tmp_path / name)
    doc = yaml.safe_load((tmp_path / "dgd.yaml").read_text())
    doc["spec"]["services"]["Frontend"]["resources"] = {
        "requests": {"cpu": "1", "memory": "1Gi"}}
    (tmp_path / "dgd.yaml").write_text(yaml.safe_dump(doc))
    p = prepare(str(tmp_path / "rollout.yaml"))
    assert not [n for n in p.plan.notes if "request no CPU or memory" in n]


@pytest.mark.parametrize("example", ["vllm-agg-auto", "sglang-disagg-v1beta1-partition"])
def test_a_frontend_both_revisions_share_is_said_once(example: str) -> None:
    """In place and in partition one frontend serves both revisions: one note, not a stable
    and a candidate note about the same pods."""
    p = prepare(str(REPO / "examples" / example / "rollout.yaml"))
    assert p.mode in ("in-place", "partition")
    notes = [n for n in p.plan.notes if "request no CPU or memory" in n]
    assert len(notes) == 1, notes
    assert "which serve both revisions" in notes[0]
    assert "both revisions's" not in notes[0] and "both revisions' entry point" in notes[0]
