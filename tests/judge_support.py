"""A STAND-IN LLM judge: no LLM can run on these machines, so the judge the tests talk to is a
small real HTTP server speaking the OpenAI chat-completions shape, with a deterministic rubric
(the longer answer wins, equal lengths tie). It records every request, so a test asserts what
dgdgen sends (both orders, the rubric, the fixed temperature and seed, the key) and how it
treats what comes back. Modes: ``longer`` (the rubric), ``always-a`` (pure position bias),
``garbage`` (a reply that is not a verdict), ``http500`` (the judge fails)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from http_support import Handler, serving


class StandInJudge(Handler):
    requests: ClassVar[list[dict[str, Any]]] = []
    mode = "longer"

    def do_POST(self) -> None:
        body = self.read_json()
        body["_auth"] = self.headers.get("Authorization")
        body["_path"] = self.path
        type(self).requests.append(body)
        if self.mode == "http500":
            self.reply(b"", 500)
            return
        user = body["messages"][1]["content"]
        a = re.search(r"\[Answer A\]\n(.*)\n\n\[Answer B\]", user, re.DOTALL)
        b = re.search(r"\[Answer B\]\n(.*)\Z", user, re.DOTALL)
        assert a and b
        if self.mode == "garbage":
            verdict = "I think the first one"
        elif self.mode == "always-a":
            verdict = "A"
        else:
            la, lb = len(a.group(1)), len(b.group(1))
            verdict = "TIE" if la == lb else ("A" if la > lb else "B")
        self.reply_json({"choices": [{"message": {"role": "assistant", "content": verdict},
                                      "finish_reason": "stop"}]})


@contextmanager
def stand_in_judge(mode: str = "longer") -> Iterator[str]:
    """The stand-in judge on a free loopback port; yields its base URL."""
    StandInJudge.requests = []
    StandInJudge.mode = mode
    with serving(StandInJudge) as url:
        yield url
