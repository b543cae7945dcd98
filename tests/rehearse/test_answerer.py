"""dgdgen's answering engine (dgdgen/runtime/answerer.py) behind the real Dynamo 1.6.1 frontend.

An aggregated worker answers the prompt set's reference question and an arithmetic one
correctly, streamed and unary; a disaggregated prefill + decode pair told to answer every prompt
wrongly (``--wrong-fraction 1``) answers both wrongly. The rehearsal's per-worker accounting
holds for it as for the mocker: the ``worker_id`` the frontend returns for ``nvext.extra_fields:
["worker_id"]`` is the worker's ``worker_id`` label on its own ``/metrics``, whose
``dynamo_component_requests_total`` counts each request it served.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dgdgen import runtime
from dgdgen.runtime.answerer import FALLBACK, WRONG_KINDS, fraction_of, last_user_message, reply

pytestmark = [
    pytest.mark.rehearse,
    pytest.mark.skipif(not runtime.available(), reason="the Dynamo runtime is not installed"),
]

MODEL = "Qwen/Qwen3-0.6B"
CAPITAL = "What is the capital of France? Answer in a few words."
SUM = "What is 17 + 25?"


def test_answers_are_deterministic_functions_of_the_prompt() -> None:
    table = {CAPITAL: "Paris", "Which planet is the largest?": "Jupiter",
             "The tool call?": '{"name": "get_weather", "arguments": {"city": "Paris"}}'}
    assert reply(CAPITAL, table, wrong_fraction=0, seed=0).text == "Paris"
    assert reply(SUM, table, wrong_fraction=0, seed=0).text == "42"
    assert reply("What is 6 x 7", table, wrong_fraction=0, seed=0).text == "42"
    assert reply("hello", table, wrong_fraction=0, seed=0).text == FALLBACK
    wrong = {q: reply(q, table, wrong_fraction=1, seed=0) for q in [*table, SUM]}
    assert wrong[SUM].text == "43" and wrong[SUM].wrong == "wrong value"
    assert wrong["The tool call?"].wrong == "broken tool-call JSON"
    with pytest.raises(ValueError):
        json.loads(wrong["The tool call?"].text)
    for q, r in wrong.items():
        assert r.wrong in WRONG_KINDS and r.text != table.get(q), (q, r)
        assert r == reply(q, table, wrong_fraction=1, seed=0)  # the same every time
    # the fraction is a seeded hash of the prompt: about F of many prompts, the same ones again
    prompts = [f"What is {i} + {i}?" for i in range(1000)]
    picked = [p for p in prompts if reply(p, {}, wrong_fraction=0.3, seed=0).wrong]
    assert 250 < len(picked) < 350
    assert picked == [p for p in prompts if fraction_of(0, p) < 0.3]
    # the local chat template (dgdgen.runtime.model): the last user message
    assert last_user_message(f"system: be brief\nuser: hi\nassistant: hello\nuser: {SUM}\n"
                             "assistant:") == SUM


def _chat(port: int, question: str, *, stream: bool) -> tuple[str, str | None, str]:
    """(content, finish reason, decode worker id in hex) of one chat completion."""
    import http.client

    body = {"model": MODEL, "messages": [{"role": "user", "content": question}],
            "max_tokens": 32, "temperature": 0, "stream": stream,
            "nvext": {"extra_fields": ["worker_id"]}}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read().decode()
        assert resp.status == 200, text
    finally:
        conn.close()
    chunks = ([json.loads(line[5:]) for line in text.splitlines()
               if line.startswith("data:") and "[DONE]" not in line] if stream
              else [json.loads(text)])
    content, finish, worker = "", None, ""
    for c in chunks:
        for choice in c.get("choices") or ():
            part = choice.get("delta" if stream else "message") or {}
            content += part.get("content") or ""
            finish = choice.get("finish_reason") or finish
        ids = (c.get("nvext") or {}).get("worker_id") or {}
        if "decode_worker_id" in ids:
            worker = f"{ids['decode_worker_id']:x}"
    return content, finish, worker


def test_answerer_behind_the_real_frontend(tmp_path: Path) -> None:
    from dgdgen.runtime import metrics
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo

    began = time.monotonic()
    model_dir = make_model_dir(tmp_path / "model")
    answers = tmp_path / "prompts.jsonl"
    answers.write_text(json.dumps({"prompt": CAPITAL, "reference": "Paris"}) + "\n")
    base = ["--model-path", str(model_dir), "--model-name", MODEL, "--block-size", "16",
            "--answers", str(answers)]
    with LocalDynamo(tmp_path / "rt") as rt:
        right_fe, wrong_fe = rt.frontend("right"), rt.frontend("wrong")
        agg = rt.answerer("right", base, name="agg")
        pair = [rt.answerer("wrong", [*base, "--wrong-fraction", "1", "--disaggregation-mode",
                                      mode], name=mode) for mode in ("prefill", "decode")]
        for fe in (right_fe, wrong_fe):
            rt.wait_frontend_up(fe)
        for w in (agg, *pair):
            rt.wait_worker_ready(w)
        rt.wait_model_ready(right_fe, MODEL, workers=1)
        rt.wait_model_ready(wrong_fe, MODEL, workers=2)
        worker_ids = set()
        for stream in (False, True):
            for question, right in ((CAPITAL, "Paris"), (SUM, "42")):
                content, finish, worker = _chat(right_fe.port, question, stream=stream)
                assert (content, finish) == (right, "stop")
                worker_ids.add(worker)
                content, finish, _ = _chat(wrong_fe.port, question, stream=stream)
                assert finish in ("stop", "length") and content and right not in content, (
                    question, content)
        samples = metrics.scrape(agg.system_port)
        labels = {s.labels.get("worker_id") for s in samples
                  if s.name == "dynamo_component_requests_total"}
        assert worker_ids == labels, (worker_ids, labels)
        assert metrics.worker_requests(agg) == 4
        assert [metrics.worker_requests(w) for w in pair] == [4, 4]
    print(f"answerer behind the frontend: {time.monotonic() - began:.1f} s")
