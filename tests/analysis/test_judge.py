"""The LLM-as-judge contract, against a small local OpenAI-compatible HTTP server.

No LLM can run on these machines, so the judge here is a STAND-IN: a real HTTP server speaking
the chat-completions shape, whose deterministic rubric prefers the longer answer. It records
every request so that the test asserts what dgdgen sends (both orders, the rubric, the fixed
temperature and seed) and how it treats what comes back (verdicts, parse failures, errors).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from dgdgen.analysis.quality import judge_preference

RUBRIC = "Prefer the answer that is more complete."


class _Judge(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, Any]]] = []
    mode = "longer"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body["_auth"] = self.headers.get("Authorization")
        type(self).requests.append(body)
        if self.mode == "http500":
            self.send_response(500)
            self.end_headers()
            return
        user = body["messages"][1]["content"]
        a = re.search(r"\[Answer A\]\n(.*)\n\n\[Answer B\]", user, re.DOTALL)
        b = re.search(r"\[Answer B\]\n(.*)\Z", user, re.DOTALL)
        assert a and b
        if self.mode == "garbage":
            verdict = "I think the first one"
        elif self.mode == "always-a":  # pure position bias
            verdict = "A"
        else:
            la, lb = len(a.group(1)), len(b.group(1))
            verdict = "TIE" if la == lb else ("A" if la > lb else "B")
        out = json.dumps({"choices": [{"message": {"role": "assistant", "content": verdict},
                                       "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def judge() -> Iterator[str]:
    _Judge.requests = []
    _Judge.mode = "longer"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        t.join()


def _ask(url: str, stable: str, candidate: str) -> Any:
    return judge_preference(url, "judge", RUBRIC, "Explain X.", stable, candidate,
                            seed=7, api_key="k3y")


def test_both_orders_rubric_and_fixed_sampling(judge: str) -> None:
    r = _ask(judge, "short", "a much longer answer")
    assert r.preference == 1.0 and r.error is None
    first, second = _Judge.requests
    assert "[Answer A]\nshort\n" in first["messages"][1]["content"]
    assert "[Answer A]\na much longer answer\n" in second["messages"][1]["content"]
    for req in (first, second):
        assert RUBRIC in req["messages"][0]["content"]
        assert req["temperature"] == 0.0 and req["seed"] == 7
        assert req["_auth"] == "Bearer k3y"
    assert _ask(judge, "a much longer answer", "short").preference == 0.0
    assert _ask(judge, "same", "same").preference == 0.5


def test_position_bias_cancels_to_a_tie(judge: str) -> None:
    _Judge.mode = "always-a"
    assert _ask(judge, "short", "a much longer answer").preference == 0.5


@pytest.mark.parametrize("mode", ["garbage", "http500"])
def test_judge_failures_are_errors_never_wins(judge: str, mode: str) -> None:
    _Judge.mode = mode
    r = _ask(judge, "short", "a much longer answer")
    assert r.preference is None and r.error
    assert len(_Judge.requests) == 1  # stops at the first failure


def test_unreachable_judge_is_an_error() -> None:
    r = judge_preference("http://127.0.0.1:9", "j", RUBRIC, "p", "a", "b", seed=1, timeout=2)
    assert r.preference is None and "failed" in (r.error or "")
