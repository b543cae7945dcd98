"""An OpenAI-compatible client that records what a rollout has to prove about each request:
status, tokens, time to first token, and whether a stream ended early (truncated)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    status: int  # HTTP status; 0 when the connection failed
    stream: bool
    tokens: int  # completion tokens the server reported (usage)
    ttft: float | None  # seconds to the first streamed chunk (streams) or to the response
    duration: float
    truncated: bool  # a stream that ended without its finish_reason and [DONE]
    error: str = ""
    served_by: str = ""  # the generation header set by the proxy, when it sets one
    # The worker instance ids (hex, as the workers' metrics label them) the frontend reports for
    # the request when asked (``worker_ids=True``): Dynamo's ``nvext.extra_fields: ["worker_id"]``
    # answer ``nvext.worker_id.{prefill,decode}_worker_id`` (ai-dynamo 1.6.1, NvExt / WorkerIdInfo).
    decode_worker: str = ""
    prefill_worker: str = ""

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.truncated and not self.error

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def request(
    port: int,
    model: str,
    *,
    stream: bool,
    max_tokens: int = 16,
    host: str = "127.0.0.1",
    timeout: float = 60.0,
    headers: Mapping[str, str] | None = None,
    served_by_header: str = "x-dgdgen-generation",
    prompt: str = "the rollout moves traffic step by step",
    worker_ids: bool = False,
) -> Outcome:
    """One chat completion, unary or SSE, through ``host:port``; with ``worker_ids`` the frontend
    is asked which worker instances served it (recorded in the outcome)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "stream": stream,
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    if worker_ids:
        body["nvext"] = {"extra_fields": ["worker_id"]}
    workers: dict[str, str] = {}
    payload = json.dumps(body).encode()
    start = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    ttft: float | None = None
    tokens = 0
    status = 0
    served = ""
    try:
        conn.request(
            "POST",
            "/v1/chat/completions",
            body=payload,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        resp = conn.getresponse()
        status = resp.status
        served = resp.getheader(served_by_header, "") or ""
        if status != 200:
            resp.read()
            return Outcome(status, stream, 0, None, time.monotonic() - start, False,
                           f"HTTP {status}", served)
        if not stream:
            data = json.loads(resp.read())
            ttft = time.monotonic() - start
            tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
            _worker_ids(data, workers)
            return Outcome(status, stream, tokens, ttft, time.monotonic() - start, False, "", served,
                           workers.get("decode", ""), workers.get("prefill", ""))
        finished = done = False
        while True:
            raw = resp.readline()
            if not raw:
                break
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data_text = line[5:].strip()
            if ttft is None:
                ttft = time.monotonic() - start
            if data_text == b"[DONE]":
                done = True
                break
            chunk = json.loads(data_text)
            if worker_ids and not workers:
                _worker_ids(chunk, workers)
            for choice in chunk.get("choices") or ():
                if choice.get("finish_reason"):
                    finished = True
            usage = chunk.get("usage")
            if usage:
                tokens = int(usage.get("completion_tokens") or 0)
        truncated = not (finished and done)
        return Outcome(status, stream, tokens, ttft, time.monotonic() - start, truncated, "", served,
                       workers.get("decode", ""), workers.get("prefill", ""))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return Outcome(status, stream, tokens, ttft, time.monotonic() - start,
                       stream and status == 200, f"{type(exc).__name__}: {exc}", served,
                       workers.get("decode", ""), workers.get("prefill", ""))
    finally:
        conn.close()


def _worker_ids(data: Any, out: dict[str, str]) -> None:
    """``nvext.worker_id`` of a response or chunk as hex ids (the workers' metrics spell their
    ``worker_id`` label that way)."""
    nvext = data.get("nvext") if isinstance(data, dict) else None
    ids = nvext.get("worker_id") if isinstance(nvext, dict) else None
    if not isinstance(ids, dict):
        return
    for key in ("decode", "prefill"):
        value = ids.get(f"{key}_worker_id")
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = f"{value:x}"
