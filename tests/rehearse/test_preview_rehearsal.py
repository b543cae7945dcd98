"""A preview rehearsed (`dgdgen rehearse` on a spec with spec.traffic.preview): part of the load
carries the preview's header; the report shows, per state, the share of those requests and of
the others that the candidate served — at the weight-0 step 100 % and 0 %, later 100 % for the
header whatever the weights, and before the candidate runs none.

The rendered `haproxy.cfg` runs in a real HAProxy (its ACL and preview backend), in front of the
real Dynamo 1.6.1 frontends and mocker workers. Kept at the smallest scale where the claim means
something: a 6 s bake per state (5m × 0.02) at 20 + 5 requests/s, about 20 previewed requests
and 80 others per state after the split settles; an exact 100 % / 0 % over 20 requests is no
accident of round robin, which puts every other request on each side at 50/50.

Long: a whole rollout rehearsed with real processes starting, baking and draining, on two CPUs
about a minute, more beside other tests (marked `long`, tests/suite_support.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rehearse_support import REPO, rehearse

from dgdgen import yamlio

pytestmark = [pytest.mark.slow, pytest.mark.rehearse, pytest.mark.long(minutes=2)]


def test_rehearsal_reports_the_header_split_per_step(tmp_path: Path) -> None:
    src = REPO / "examples" / "vllm-agg-blue-green"
    shutil.copy(src / "dgd.yaml", tmp_path / "dgd.yaml")
    doc = yamlio.load_file(str(src / "rollout.yaml"))[0].data
    spec = doc["spec"]
    spec["candidate"]["components"] = {
        "VllmDecodeWorker": {"args": {"set": {"--max-num-seqs": 64}}}}
    spec["strategy"] = "canary"
    spec["steps"] = [{"weight": 0, "pause": "5m"}, {"weight": 50, "pause": "5m"},
                     {"weight": 100, "pause": "5m"}]
    spec["analysis"] = {"enabled": False}
    spec["traffic"] = {"provider": "haproxy", "haproxy": {"replicas": 1},
                       "preview": {"header": "X-Dgd-Preview", "value": "on"}}
    (tmp_path / "rollout.yaml").write_text(yamlio.dump(doc))
    code, data, log = rehearse(tmp_path, str(tmp_path / "rollout.yaml"),
                               "--time-scale", "0.02", "--rate", "20")
    assert code == 0, log
    assert data["proxy"] == "rendered haproxy.cfg"
    p = data["preview"]
    assert p["carries"] == "header X-Dgd-Preview: on" and p["failed"] == 0, (p, log)
    assert data["failed"] == 0 and data["truncated"] == 0, data["failures"]
    by = {s["state"]: s for s in p["states"]}
    assert list(by) == ["step-00", "step-01", "step-02", "step-03", "cleanup"], list(by)
    for label in ("step-01", "step-02", "step-03"):  # the baked steps (6 s each)
        assert by[label]["previewRequests"] >= 15 and by[label]["otherRequests"] >= 60, by
    # before the candidate runs, the header reaches the stable (no preview route)
    assert by["step-00"]["previewOnCandidate"] == 0, by["step-00"]
    # the preview step: the public split is 100/0, every header request on the candidate
    assert by["step-01"]["candidateWeight"] == 0
    assert (by["step-01"]["previewOnCandidate"], by["step-01"]["othersOnCandidate"]) == (100, 0)
    # later steps: the header still reaches the candidate alone; the rest follows the weights
    assert by["step-02"]["previewOnCandidate"] == 100
    assert 30 <= by["step-02"]["othersOnCandidate"] <= 70, by["step-02"]
    assert by["step-03"]["previewOnCandidate"] == by["step-03"]["othersOnCandidate"] == 100
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| step-01 | 0 % |" in md and "Preview:" in md, md
