"""Every bundled example's healthy candidate, rehearsed on `dgdgen rehearse`'s defaults, passes its
gate and is promoted: the defaults (time scale, rate and `--min-requests auto`) let every gate
collect its minimum sample.

To keep the run bounded (about 6 minutes on 2 cores for the whole rollouts, more than CI can
spare), each example is rehearsed through its first step and the promotion decision only: the
first step as bundled (weight, pause, gate), the later ones with their weights but no pause and no
gate, so the rollout walks through them to the clean-up. The first step is the
hardest to gate — the candidate's smallest share — and `auto` sizes the minimum sample by the
smallest share of the whole rollout, which is the first step's in every bundled example
(test_auto_minimum_is_the_first_steps_in_every_example), so the first gate sees the same minimum
sample as in the whole rollout.

`vllm-disagg-block-size` is rehearsed on the defaults by the docs run instead: the first command
of docs/rehearse.md rehearses its whole rollout on them and must exit 0 — completed, every gate
Successful, no request failed (tests/test_docs_run.py; a test below keeps that command there) —
and its callers outside the mesh (GAMMA) are checked on the whole rollout by
tests/rehearse/test_scenarios.py's healthy candidate: one rehearsal of the first step on the
defaults less (27 CPU-seconds on 2026-12-07).

Not here: `vllm-agg-auto` resolves to in-place, which has no gate (test_inplace.py rehearses it on
its defaults); `vllm-agg-blue-green`'s only gate is a probe Job that only a cluster runs (`dgdgen
analyze` says Inconclusive: docs/rehearse.md) and its candidate serves another model;
`sglang-disagg-v1beta1-partition` and `vllm-disagg-v1beta1-worker-group` use operator
capabilities no released operator has, which the rehearsal does not play (exit 3).
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

import pytest
from rehearse_support import REPO, rehearse

from dgdgen import yamlio

GATED = ("sglang-disagg-transfer-backend", "trtllm-disagg-v1beta1", "vllm-disagg-block-size",
         "vllm-disagg-image-bump")
# rehearsed on the defaults by the docs run (module docstring)
BY_THE_DOCS_RUN = "vllm-disagg-block-size"
NOT_REHEARSED_HERE = ("vllm-agg-auto", "vllm-agg-blue-green", "sglang-disagg-v1beta1-partition",
                      "vllm-disagg-v1beta1-worker-group")


def _first_step_and_promotion(example: str, dest: Path) -> Path:
    src = REPO / "examples" / example
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("rendered"))
    spec = yamlio.load_file(str(dest / "rollout.yaml"))[0].data
    first, *later = spec["spec"]["steps"]
    assert first.get("gate"), first
    # the later steps' weights as bundled (the surge budget may need them), without bake or gate
    spec["spec"]["steps"] = [first] + [{"weight": step["weight"]} for step in later]
    (dest / "rollout.yaml").write_text(yamlio.dump(spec))
    return dest / "rollout.yaml"


def test_every_bundled_example_is_accounted_for() -> None:
    bundled = sorted(p.parent.name for p in (REPO / "examples").glob("*/rollout.yaml"))
    assert bundled == sorted(GATED + NOT_REHEARSED_HERE)


def test_auto_minimum_is_the_first_steps_in_every_example(tmp_path: Path) -> None:
    # `auto` on the whole rollout and on its first step alone give the same minimum sample, and
    # on the defaults no gate of the whole rollout is warned about
    from dgdgen.commands.rehearse import add_arguments
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.rehearse.run import Options, auto_min_requests, sample_warnings
    from dgdgen.rehearse.scale import write_scaled_spec

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args(["x"])
    assert defaults.min_requests == "auto"
    for example in GATED:
        values = []
        for i, spec in enumerate((REPO / "examples" / example / "rollout.yaml",
                                  _first_step_and_promotion(example, tmp_path / example))):
            opts = Options(spec=spec, time_scale=defaults.time_scale, rate=defaults.rate,
                           auto_min_requests=True)
            original = prepare(str(spec))
            first = write_scaled_spec(original.loaded.document.data, spec, tmp_path / f"{i}a",
                                      time_scale=opts.time_scale, request_rate=opts.rate,
                                      min_requests=None)
            n = auto_min_requests(prepare(str(first.path)), opts)
            assert n is not None
            scaled = write_scaled_spec(original.loaded.document.data, spec, tmp_path / f"{i}b",
                                       time_scale=opts.time_scale, request_rate=opts.rate,
                                       min_requests=n, auto=True)
            assert sample_warnings(original, prepare(str(scaled.path)), opts) == [], example
            values.append(n)
            shutil.rmtree(tmp_path / f"{i}a")
            shutil.rmtree(tmp_path / f"{i}b")
        assert values[0] == values[1], (example, values)


def test_the_docs_run_rehearses_block_size_on_defaults() -> None:
    """docs/rehearse.md runs `dgdgen rehearse` on the block-size example with nothing but a report
    folder — the defaults — in a block the docs run runs, and expects exit 0."""
    import test_docs_run as docs_run

    found = [c.text for b in docs_run.RUNNABLE["docs/rehearse.md"]
             if b.skip is None or docs_run._once(b) for c in b.commands
             if re.fullmatch(rf"dgdgen rehearse examples/{BY_THE_DOCS_RUN}/rollout\.yaml "
                             r"--report \S+", c.text)]
    assert found and all(docs_run._expected_exit(c) == (0,) for c in found), found


@pytest.mark.slow
@pytest.mark.rehearse
@pytest.mark.long(minutes=2)
@pytest.mark.parametrize("example", [e for e in GATED if e != BY_THE_DOCS_RUN])
def test_healthy_candidate_completes_on_defaults(tmp_path: Path, example: str) -> None:
    """Long: the defaults' time scale is the one under test, so the first step's bake runs at it
    (90–150 s per example on two CPUs)."""
    spec = _first_step_and_promotion(example, tmp_path / "spec")
    code, data, log = rehearse(tmp_path, str(spec))
    assert "cannot collect its sample" not in log, log
    assert code == 0, log
    assert data["result"] == "completed" and data["states"][-1]["state"] == "cleanup", log
    gated = [s for s in data["states"] if s["gate"]]
    assert [s["verdict"] for s in gated] == ["Successful"], (gated, log)
    assert data["failed"] == 0 and data["truncated"] == 0, (data["failures"], log)
    changes = {c["field"]: c["rehearsed"] for c in data["scaled"]}
    assert changes["spec.analysis.minRequests"].endswith(" (auto)"), changes
    # only GAMMA (the block-size example's provider) has callers the route does not steer
    assert data["outOfMesh"] is None
