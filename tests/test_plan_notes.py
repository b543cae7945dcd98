"""Plan notes that say what clients will see."""

from __future__ import annotations

from gen_support import REPO

from dgdgen.pipeline.prepare import prepare


def test_a_candidate_serving_another_model_name_is_noted() -> None:
    # blue/green to a larger model: clients naming Qwen/Qwen3-0.6B get 404 from green (the
    # rehearsal of this example showed every request after the switch failing)
    plan = prepare(str(REPO / "examples" / "vllm-agg-blue-green" / "rollout.yaml")).plan
    assert any("get 404 from the candidate" in n and "Qwen/Qwen3-1.7B" in n for n in plan.notes)


def test_the_same_model_name_is_not_noted() -> None:
    plan = prepare(str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml")).plan
    assert not any("get 404" in n for n in plan.notes)
