"""The request-migration limit dgdgen renders on candidate frontends and the plan note that says
what protects each step stopping stable workers while the stable serves (dgdgen.render.migration;
the loss it prevents is measured in tests/rehearse/test_no_loss.py and docs/rehearse.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dgdgen.model import dgd as dgdmod
from dgdgen import yamlio
from dgdgen.render import migration

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"


def _render(spec: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-m", "dgdgen", "render", str(spec), "-o", str(out)],
                   check=True, capture_output=True)


def _plan_notes(spec: Path) -> list[str]:
    r = subprocess.run([sys.executable, "-m", "dgdgen", "plan", str(spec), "--format", "json"],
                       check=True, capture_output=True, text=True)
    notes: list[str] = json.loads(r.stdout)["notes"]
    return notes


def test_every_rendered_candidate_frontend_migrates_requests(tmp_path: Path) -> None:
    # the example with its stable as upstream ships it (no limit: examples/SOURCES.md); its
    # workers then stop under traffic unprotected, which the render refuses (CLU202) unless the
    # stable DGD acknowledges it
    spec = _copy(tmp_path, stable_limit=False)
    r = subprocess.run([sys.executable, "-m", "dgdgen", "render", str(spec), "-o",
                        str(tmp_path / "refused")], capture_output=True, text=True, check=False)
    assert r.returncode == 1 and "CLU202 pods-stop-under-traffic" in r.stderr
    assert not (tmp_path / "refused").exists()
    spec = _copy(tmp_path, stable_limit=False, acknowledge=True)
    tmp_path = tmp_path / "out"
    _render(spec, tmp_path)
    seen = 0
    for f in sorted(tmp_path.glob("*/dynamographdeployment-bs32-*.yaml")):
        d = dgdmod.parse(yamlio.load_file(str(f))[0].data)
        limits = migration.frontend_limits(d)
        assert limits and all(v == migration.LIMIT for v in limits.values()), (f, limits)
        seen += 1
    assert seen >= 4
    # the running stable is never edited: its frontend keeps no limit
    stable = dgdmod.parse(yamlio.load_file(
        str(tmp_path / "step-00" / "dynamographdeployment-vllm-v1-disagg-router.yaml"))[0].data)
    assert migration.unprotected(stable) == ["Frontend"]


def _copy(tmp: Path, *, stable_limit: bool, acknowledge: bool = False) -> Path:
    from example_support import upstream_text

    dgd = yamlio.load_documents(upstream_text(EXAMPLE), "dgd.yaml")[0].data
    if acknowledge:
        dgd["metadata"].setdefault("annotations", {})["dgdgen.dev/ignore"] = (
            "CLU202: test of the candidate's own migration")
    if stable_limit:
        main = dgd["spec"]["services"]["Frontend"]["extraPodSpec"]["mainContainer"]
        main["env"] = [{"name": migration.ENV, "value": "2"}]
    (tmp / "dgd.yaml").write_text(yamlio.dump(dgd))
    (tmp / "rollout.yaml").write_text((EXAMPLE / "rollout.yaml").read_text())
    return tmp / "rollout.yaml"


def test_plan_says_a_stable_frontend_without_migration_is_unprotected(tmp_path: Path) -> None:
    notes = _plan_notes(_copy(tmp_path, stable_limit=False))
    hits = [n for n in notes if "no request-migration limit" in n]
    assert len(hits) == 1 and hits[0].startswith("step(s) 2 ") and "Frontend" in hits[0], notes


def test_plan_names_what_protects_the_stable_shrink(tmp_path: Path) -> None:
    notes = _plan_notes(_copy(tmp_path, stable_limit=True))
    assert not [n for n in notes if "no request-migration limit" in n], notes
    hits = [n for n in notes if "protected by the stable frontends' request migration" in n]
    assert len(hits) == 1 and "Frontend --migration-limit 2" in hits[0], notes


def test_a_limit_already_set_is_kept() -> None:
    d = dgdmod.parse(yamlio.load_file(str(EXAMPLE / "dgd.yaml"))[0].data)
    d.main_container("Frontend", create=True)["args"] = ["--migration-limit", "7"]
    d.refresh()
    migration.apply(d)
    assert migration.frontend_limits(d) == {"Frontend": 7}
    assert "env" not in (d.main_container("Frontend") or {})
