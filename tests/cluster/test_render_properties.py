"""Random rollout specs — every bundled example as a base, its steps, capacity and strategy
drawn, its traffic provider swapped among all those its isolation mode can take — rendered and
handed to the cluster model, and with 0-3 clusters in drawn waves its Argo objects (`dgdgen argo`)
too. A spec is either refused with a clear error, or its rendered tree and its GitOps objects
break no invariant the renderer is responsible for. CLU202 may fire: it is about the user's
stable DGD (its grace, its frontends' request migration), and `render` refuses such a tree with
that finding (exit 1) rather than render a cut.

Bounded for CI (``DGDGEN_PROPERTY_EXAMPLES``, default 120); `benchmarks/bench_cluster.py` runs
2,000 and records the time and the model's cost per state (docs/invariants.md)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgdgen import yamlio
from dgdgen.cluster.check import check_files
from dgdgen.errors import DgdgenError

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent for p in (REPO / "examples").glob("*/rollout.yaml"))
RENDERER_OWNED = {"CLU101", "CLU104", "CLU201"}
GITOPS_OWNED = {"CLU301", "CLU302"}  # the Argo objects `dgdgen argo` writes
CLUSTERS = ("us-east", "eu-west", "ap-south")
EXAMPLE_COUNT = int(os.environ.get("DGDGEN_PROPERTY_EXAMPLES", "120"))

PROVIDERS: dict[str, dict[str, Any]] = {
    "gateway-api": {"provider": "gateway-api", "gateway": {"name": "gw"}},
    "gamma": {"provider": "gamma", "gamma": {"service": "api-entry"}},
    "inference-pool": {"provider": "inference-pool", "gateway": {"name": "gw"},
                       "inferencePool": {"targetPort": 8000}},
    "haproxy": {"provider": "haproxy"},
    "none": {"provider": "none"},
}


@st.composite
def specs(draw: st.DrawFn) -> tuple[Path, dict[str, Any]]:
    example = draw(st.sampled_from(EXAMPLES))
    doc = yamlio.load_file(str(example / "rollout.yaml"))[0].data
    spec = doc["spec"]
    if spec.get("isolation") not in ("auto", "in-place"):  # the operator's roll has no steps
        weights = sorted(draw(st.lists(st.integers(0, 99), min_size=0, max_size=4)))
        spec["steps"] = [{"weight": w, "pause": draw(st.sampled_from(["1m", "10m"]))}
                         for w in dict.fromkeys(weights)] + [{"weight": 100}]
    spec["capacity"] = {
        "maxSurge": draw(st.sampled_from([1, 2, "50%", "100%"])),
        "maxUnavailable": draw(st.sampled_from([0, 0, 1, "25%"])),
    }
    spec["strategy"] = draw(st.sampled_from(["canary", "blue-green"]))
    if spec.get("isolation") not in ("partition", "auto", "in-place"):
        provider = draw(st.sampled_from(sorted(PROVIDERS)))
        keep = {k: v for k, v in (spec.get("traffic") or {}).items()
                if k == "requestTimeout" or (k == "sticky" and provider == "haproxy")}
        spec["traffic"] = {**PROVIDERS[provider], **keep}
    # a preview (header or cookie, the value given or the candidate's revision), which some
    # providers and modes refuse (a cookie over an HTTPRoute; provider none; one shared frontend)
    preview = draw(st.sampled_from([None, None, {"header": "X-Dgd-Preview", "value": "on"},
                                    {"header": "x-canary"}, {"cookie": "dgd-preview",
                                                             "value": "yes"}]))
    if preview is not None:
        spec.setdefault("traffic", {})["preview"] = preview
    # the fan-out: 0-3 clusters, each with a drawn wave or none (the default), so the GitOps
    # objects (ApplicationSet, workflow) are rendered and checked too; a wave layout the spec
    # refuses is a clear error like any other
    clusters = [{"name": n} for n in CLUSTERS[:draw(st.sampled_from([0, 1, 2, 3]))]]
    for c in clusters:
        wave = draw(st.sampled_from([None, None, None, 1, 2, 3]))  # mostly the default
        if wave is not None:
            c["wave"] = wave
    gitops = spec.setdefault("gitops", {})
    gitops["repoUrl"] = gitops.get("repoUrl") or "https://git.example.com/deploy.git"
    if clusters:
        gitops["clusters"] = clusters
    if isinstance(spec.get("analysis"), dict):
        # step gates change the rendered states nothing; with clusters the workflow runs each
        # wave's AnalysisRuns before the next wave moves (CLU302 reads them)
        spec["analysis"]["enabled"] = bool(clusters) and draw(st.booleans())
    return example, doc


@settings(max_examples=EXAMPLE_COUNT, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(specs())
def test_a_rendered_spec_breaks_no_invariant_or_is_refused(tmp_path_factory: Any,
                                                           drawn: tuple[Path, dict[str, Any]]
                                                           ) -> None:
    from dgdgen.pipeline.files import all_files
    from dgdgen.pipeline.prepare import prepare

    example, doc = drawn
    tmp = tmp_path_factory.mktemp("spec")
    for name in os.listdir(example):
        if name not in ("rollout.yaml", "rendered") and (example / name).is_file():
            shutil.copy(example / name, tmp / name)
    (tmp / "rollout.yaml").write_text(yamlio.dump(doc))
    try:
        prepared = prepare(str(tmp / "rollout.yaml"))
        files = all_files(prepared, validate=False)
        argo = argo_objects(prepared)
    except DgdgenError as exc:
        assert str(exc).strip(), "a refusal says why"
        return
    found = [f for f in check_files(files, str(tmp / "out")) if f.code in RENDERER_OWNED]
    found += [f for f in check_files(argo, str(tmp / "argo")) if f.code in GITOPS_OWNED]
    assert not found, (example.name, yamlio.dump(doc["spec"]),
                       [f"{f.code} {f.file}: {f.message}" for f in found])
    if "preview" in doc["spec"].get("traffic", {}):
        assert_preview_in_forward_steps_only(prepared, files)


def assert_preview_in_forward_steps_only(prepared: Any, files: dict[str, str]) -> None:
    """A preview the spec asks for and the renderer accepted: every forward step carries a
    path taken by a request with the value, and it reaches the candidate's frontends alone
    (CLU104 says the rest: its workers, the states that carry none)."""
    from dgdgen.cluster.model import build, reaches
    from dgdgen.cluster.transitions import states_of
    from dgdgen.traffic.preview import of

    route = of(prepared)
    assert route is not None
    want = route.describe()
    for state in states_of(files, "out"):
        paths = [r for r in reaches(build(state.objects)) if r.match]
        if state.label.startswith("step-") and int(state.label[5:]) > 0:
            assert paths, (state.label, "carries no preview path")
            for r in paths:
                assert r.match == want, (state.label, r.match, want)
                assert {fe.dgd for fe in r.frontends} == {prepared.candidate_name}, (
                    state.label, r.entry, [fe.name() for fe in r.frontends])
        else:
            assert not paths, (state.label, [r.entry for r in paths])


def argo_objects(prepared: Any) -> dict[str, str]:
    """What `dgdgen argo` writes (the Application(Set), the WorkflowTemplate...), unvalidated;
    the WorkflowTemplate (hera, the costly part) where it moves two or more clusters."""
    from dgdgen.gitops import argo_files

    fan_out = len(prepared.loaded.spec.spec.gitops.clusters) > 1
    return {f"{o['kind'].lower()}-{o['metadata']['name']}.yaml": yamlio.dump(o)
            for o in argo_files.objects(prepared, workflow=fan_out)}
