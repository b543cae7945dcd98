"""The paired quality gate against the real Dynamo 1.6.1 frontends and mockers.

The mocker's text is random (its content is even empty through the 1.6.1 frontend), so text
scorers cannot tell generations apart here. The degradation the mocker really produces is
truncation: a candidate engine with a short ``--max-model-len`` stops each answer when prompt
plus answer fill the window, so it answers the same prompt with fewer completion tokens than
the stable (measured: 27 instead of 48 for a 37-token prompt at --max-model-len 64). The
``length`` scorer sees that. The equal candidate runs the stable's configuration.

Long: each test starts real frontends and mockers and sends the gate's prompts through them, some
several times over — 40–60 s each on two CPUs, more beside other tests (marked `long`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rehearse_support import short_workdir

from dgdgen import runtime
from dgdgen.analysis.paired import PairedVerdict, sign_test_samples

pytestmark = [
    pytest.mark.rehearse,
    pytest.mark.long(minutes=1),
    pytest.mark.skipif(not runtime.available(), reason="the Dynamo runtime is not installed"),
]

MODEL = "Qwen/Qwen3-0.6B"
MAX_TOKENS = 48
SHARE, EFFECT = 0.5, 0.25


def _serve(rt: Any, work: Path, candidate_args: list[str]) -> dict[str, str]:
    """The stable and the candidate, each a frontend and one mocker in a Dynamo namespace of its
    own, both ready: their frontends' URLs by name ("stable", "cand")."""
    from dgdgen.runtime.model import make_model_dir

    base = ["--model-path", str(make_model_dir(work / "model")), "--model-name", MODEL,
            "--block-size", "16"]
    urls = {}
    for ns, extra in (("stable", []), ("cand", candidate_args)):
        fe = rt.frontend(ns)
        w = rt.mocker(ns, base + extra, name=f"w-{ns}")
        rt.wait_frontend_up(fe)
        rt.wait_worker_ready(w)
        rt.wait_model_ready(fe, MODEL, workers=1)
        urls[ns] = f"http://127.0.0.1:{fe.port}"
    return urls


def _gate(candidate_args: list[str], n: int) -> PairedVerdict:
    from dgdgen.analysis.paired import paired_verdict
    from dgdgen.analysis.quality import collect
    from dgdgen.analysis.scorers import Prompt, score
    from dgdgen.runtime.procs import LocalDynamo

    with short_workdir("dgdgen-quality-") as work:
        with LocalDynamo(work) as rt:
            urls = _serve(rt, work, candidate_args)
            prompts = [Prompt(f"Say something about item {i}.", None, i + 1) for i in range(n)]
            out = collect(prompts, stable_url=urls["stable"], candidate_url=urls["cand"],
                          model=MODEL, max_tokens=MAX_TOKENS, seed=1, timeout=30)
        pairs = []
        for o in out:
            assert o.error is None, o.error
            assert o.stable is not None and o.candidate is not None
            s, c = score("length", o.prompt, o.stable), score("length", o.prompt, o.candidate)
            assert s is not None and c is not None
            pairs.append((s, c))
        return paired_verdict(pairs, max_loss_share=SHARE, effect=EFFECT)


def test_truncating_candidate_fails_equal_passes_too_few_inconclusive() -> None:
    from dgdgen.runtime.netns import run_isolated

    needed = sign_test_samples(SHARE, EFFECT)
    worse = run_isolated(_gate, ["--max-model-len", "64"], needed, timeout=300)
    assert worse.verdict == "Failed", worse
    assert worse.losses == needed and worse.wins == 0
    equal = run_isolated(_gate, [], needed, timeout=300)
    assert equal.verdict == "Successful", equal
    assert equal.losses == 0
    few = run_isolated(_gate, [], needed - 1, timeout=300)
    assert few.verdict == "Inconclusive", few


JUDGE_KEY = "stand-in-key"
RUBRIC = "Prefer the answer that is complete and correct."


def _analyze(candidate_args: list[str], n: int, judge: str | None = None
             ) -> tuple[int, str, list[dict]]:  # type: ignore[type-arg]
    """`dgdgen analyze` of a spec whose step 1 is gated by `quality` (scorer `length`), against
    two real frontends: the same module and arguments as the rendered Job. With ``judge`` (a
    mode of the STAND-IN judge, tests/judge_support.py) the scorer is `judge` and the stand-in
    judge runs in the same private network namespace; its requests are returned."""
    import contextlib
    import io
    import os
    import shutil

    from gen_support import REPO
    from judge_support import StandInJudge, stand_in_judge

    from dgdgen.cli import main
    from dgdgen.runtime.procs import LocalDynamo

    with short_workdir("dgdgen-quality-") as work:
        repo = work / "repo"
        repo.mkdir()
        (repo / ".git").mkdir()
        example = REPO / "examples" / "vllm-agg-blue-green"
        shutil.copy(example / "dgd.yaml", repo / "dgd.yaml")
        with contextlib.ExitStack() as stack:
            judge_url = stack.enter_context(stand_in_judge(judge)) if judge else None
            scorer = "length" if judge_url is None else (
                "judge\n      judge:\n        url: " + judge_url + "\n        model: judge-model\n"
                "        rubric: " + RUBRIC + "\n        apiKey: {name: judge, key: token}")
            text = (example / "rollout.yaml").read_text().replace("gate: smoke", "gate: quality")
            text = text.replace("      smoke: [probe]\n", "      smoke: [probe]\n    quality:\n"
                                "      prompts: prompts.jsonl\n      model: " + MODEL + "\n"
                                "      scorer: " + scorer + "\n      maxTokens: " + str(MAX_TOKENS)
                                + "\n      effect: " + str(EFFECT) + "\n      seed: 1\n"
                                "      image: registry.example/dgdgen:1\n")
            (repo / "rollout.yaml").write_text(text)
            (repo / "prompts.jsonl").write_text("".join(
                f'{{"prompt": "Say something about item {i}."}}\n' for i in range(n)))
            rt = stack.enter_context(LocalDynamo(work))
            urls = _serve(rt, work, candidate_args)
            # in a cluster the key comes from the Secret (secretKeyRef); here, from the environment
            os.environ["DGDGEN_JUDGE_API_KEY"] = JUDGE_KEY
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                code = main(["analyze", str(repo / "rollout.yaml"), "--step", "1",
                             "--stable-url", urls["stable"], "--candidate-url", urls["cand"],
                             "--format", "json"])
            asked = list(StandInJudge.requests) if judge else []
        return code, out.getvalue(), asked


def test_analyze_runs_the_rendered_quality_gate() -> None:
    import json

    from dgdgen.runtime.netns import run_isolated

    needed = sign_test_samples(SHARE, EFFECT)
    for args, n, code, phase in ((["--max-model-len", "64"], needed, 1, "Failed"),
                                 ([], needed, 0, "Successful"),
                                 ([], needed - 1, 3, "Inconclusive")):
        got, out, _ = run_isolated(_analyze, args, n, timeout=300)
        assert got == code, out
        report = json.loads(out)
        assert report["phase"] == phase
        (row,) = report["metrics"]
        assert row["metric"] == "quality" and row["phase"] == phase, row


def test_the_judge_decides_the_rendered_gate() -> None:
    """The rendered gate with scorer `judge` against two real frontends and the STAND-IN judge
    (tests/judge_support.py: a real HTTP server with a deterministic rubric, since no LLM runs
    here). The mocker's answers are empty through the 1.6.1 frontend, so the rubric (the longer
    answer wins) ties every pair: enough ties pass, and the judge was asked twice per pair
    (both orders) with the spec's rubric, the fixed sampling and the key. A judge that answers
    no verdict makes every pair an error: Inconclusive, never a pass, though every prompt was
    answered by both generations."""
    import json

    from dgdgen.runtime.netns import run_isolated

    needed = sign_test_samples(SHARE, EFFECT)
    code, out, asked = run_isolated(_analyze, [], needed, "longer", timeout=300)
    assert code == 0, out
    report = json.loads(out)
    (row,) = report["metrics"]
    assert row["metric"] == "quality" and row["phase"] == "Successful", row
    assert f"0 losses, {needed} ties" in json.dumps(row) and "0 errors" in json.dumps(row), row
    assert len(asked) == 2 * needed
    prompts = [r["messages"][1]["content"] for r in asked]
    for i in range(needed):  # each prompt judged twice, one call after the other
        assert f"Say something about item {i}." in prompts[2 * i]
        assert f"Say something about item {i}." in prompts[2 * i + 1]
    for r in asked:
        assert r["_path"] == "/v1/chat/completions" and r["model"] == "judge-model"
        assert RUBRIC in r["messages"][0]["content"]
        assert r["temperature"] == 0.0 and r["seed"] == 1
        assert r["_auth"] == f"Bearer {JUDGE_KEY}"
    code, out, asked = run_isolated(_analyze, [], needed, "garbage", timeout=300)
    assert code == 3, out
    (row,) = json.loads(out)["metrics"]
    assert row["phase"] == "Inconclusive", row
    assert f"{needed} errors of {needed} prompts" in json.dumps(row), row
    assert len(asked) == needed  # a pair stops at the judge's first failure
