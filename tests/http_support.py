"""Small loopback HTTP servers for tests: a stand-in for an API this machine does not run (the
Kubernetes API, Argo CD, an LLM judge) or a frontend's endpoint. One place for the serving thread
and the reply, so that each test writes only what its server answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Handler(BaseHTTPRequestHandler):
    """A request handler that does not log to stderr and answers with :meth:`reply` /
    :meth:`reply_json`."""

    def log_message(self, *args: Any) -> None:
        pass

    def reply(self, body: bytes, code: int = 200, content_type: str | None = None) -> None:
        self.send_response(code)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reply_json(self, value: Any, code: int = 200) -> None:
        self.reply(json.dumps(value).encode(), code, "application/json")

    def read_json(self) -> Any:
        """The request's JSON body."""
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free loopback port for the block; yields ``http://127.0.0.1:PORT``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
