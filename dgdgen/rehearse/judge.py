"""A STAND-IN judge for the quality gate: a real HTTP server, not a model.

    python -m dgdgen.rehearse.judge --port 8791 --references prompts.jsonl \
        [--accuracy 0.6] [--seed N]

No LLM runs where the gate is tested, so the gate's tests (and the rehearsal) need a judge whose
verdicts are known in advance. This server speaks the OpenAI chat-completions shape
(``POST /v1/chat/completions``, ``GET /v1/models``), reads the judge request dgdgen sends
(:func:`dgdgen.analysis.quality.judge_messages`: rubric, prompt, ``[Answer A]``, ``[Answer B]``),
looks the prompt up in the references file (the quality prompt-set format: JSON lines with
``prompt`` and ``reference``) and answers ``A``, ``B`` or ``TIE``: the answer that contains the
reference wins; both or neither is a tie. It ignores the rubric: it tests the gate's handling
of verdicts, never the quality of an answer.

``--accuracy p`` below 1 makes it wrong on a fraction 1 - p of requests: which ones is decided by
a hash of the seed and the request (messages, model), so the same request always gets the same
verdict and a run can be repeated exactly. A wrong verdict is one of the two other verdicts.
The two orders of a pair are different requests, so an inaccurate stand-in is also
position-inconsistent, as a real judge is.

Every response says what it is: the model name and ``system_fingerprint`` name the stand-in. A
prompt that is not in the references file, a request that is not a judge request, or a body
larger than :data:`MAX_BODY` is refused with an HTTP error (dgdgen counts it as a judge error,
never a win). Standard library only; SIGTERM / SIGINT stop it cleanly.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

from dgdgen.analysis.quality import JUDGE_VERDICTS, read_judge_messages
from dgdgen.analysis.scorers import load_prompts
from dgdgen.errors import InputError

MODEL = "dgdgen-stand-in-judge"
FINGERPRINT = "dgdgen stand-in judge: tests the quality gate, not a model"
MAX_BODY = 1 << 20  # a judge request is a rubric, a prompt and two answers


def correct_verdict(reference: str | None, first: str, second: str) -> str:
    """The answer that contains the reference wins; both, neither or no reference: a tie."""
    a = reference is not None and reference in first
    b = reference is not None and reference in second
    return "TIE" if a == b else ("A" if a else "B")


def verdict(
    body: dict[str, Any], references: dict[str, str | None], *, accuracy: float, seed: int,
) -> str | None:
    """The stand-in's verdict for one request body; None when it cannot judge it."""
    req = read_judge_messages(body.get("messages"))
    if req is None or req.prompt not in references:
        return None
    right = correct_verdict(references[req.prompt], req.first, req.second)
    canonical = json.dumps([seed, body.get("model"), body.get("messages")], sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).digest()
    draw = int.from_bytes(digest[:8], "big") / 2**64
    if draw < accuracy:
        return right
    others = [v for v in JUDGE_VERDICTS if v != right]
    return others[digest[8] % len(others)]


class StandInJudgeServer(ThreadingHTTPServer):
    """The stand-in judge bound to ``(host, port)``; port 0 picks a free one."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], references: dict[str, str | None], *,
                 accuracy: float = 1.0, seed: int = 0) -> None:
        if not 0 <= accuracy <= 1:
            raise ValueError("accuracy is a share in [0, 1]")
        self.references = references
        self.accuracy = accuracy
        self.seed = seed
        self.answered = 0
        self._lock = threading.Lock()
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def count(self) -> None:
        with self._lock:
            self.answered += 1


class _Handler(BaseHTTPRequestHandler):
    server: StandInJudgeServer
    timeout = 30  # a client that stops sending does not hold a thread for ever
    server_version = "dgdgen-stand-in-judge"

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, value: Any, code: int = 200) -> None:
        body = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, code: int, message: str) -> None:
        self._json({"error": {"message": f"{message} ({FINGERPRINT})", "type": "stand_in",
                              "code": code}}, code)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._json({"object": "list", "data": [
                {"id": MODEL, "object": "model", "owned_by": FINGERPRINT}]})
            return
        self._error(404, f"no such path {self.path!r}")

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no such path {self.path!r}")
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._error(411, "a Content-Length is required")
            return
        if not 0 <= length <= MAX_BODY:
            self.close_connection = True
            self._error(413, f"a request body is at most {MAX_BODY} bytes")
            return
        try:
            body = json.loads(self.rfile.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError):
            self._error(400, "the body is not JSON")
            return
        if not isinstance(body, dict):
            self._error(400, "the body is not a JSON object")
            return
        srv = self.server
        said = verdict(body, srv.references, accuracy=srv.accuracy, seed=srv.seed)
        if said is None:
            self._error(422, "not a dgdgen judge request, or a prompt not in the references")
            return
        srv.count()
        self._json({
            "id": f"stand-in-{srv.answered}", "object": "chat.completion", "model": MODEL,
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": said},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1},
        })


def load_references(path: Path) -> dict[str, str | None]:
    """Prompt → reference from a quality prompt set (an :class:`InputError` at a bad line)."""
    return {p.prompt: p.reference for p in load_prompts(path)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dgdgen.rehearse.judge",
        description="A stand-in judge for testing the quality gate (not a model): the answer "
        "that contains the prompt's reference wins.")
    ap.add_argument("--port", type=int, required=True, help="port (0: a free one)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--references", type=Path, required=True,
                    help="JSONL prompt set with `prompt` and `reference`")
    ap.add_argument("--accuracy", type=float, default=1.0,
                    help="share of requests answered right (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="seeds which requests are wrong")
    a = ap.parse_args(argv)
    try:
        references = load_references(a.references)
        server = StandInJudgeServer((a.host, a.port), references, accuracy=a.accuracy,
                                    seed=a.seed)
    except (InputError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    def stop(_sig: int, _frame: FrameType | None) -> None:
        # shutdown() waits for serve_forever to return: call it from another thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"stand-in judge (not a model) on {server.url}: {len(references)} references, "
          f"accuracy {a.accuracy:g}, seed {a.seed}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
