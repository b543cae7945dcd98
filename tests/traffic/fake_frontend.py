"""A fake Dynamo frontend for the loopback proofs: asyncio, standard library only.

It behaves as the real Dynamo 1.6.1 frontend does (tests/rehearse/test_frontend_readiness.py
observes it): ``GET /health`` and ``GET /live`` answer 200 even with zero workers;
``GET /v1/models/{model}/ready`` answers 200 with workers and 404 without (started with
``--no-workers``: a frontend whose generation has no ready workers), and any POST is
an OpenAI-style streaming response: ``text/event-stream`` over chunked HTTP/1.1, one
``data: {...}`` event per token, then ``data: [DONE]``. Each event carries the sender's name, its
index and the CLOCK_MONOTONIC time it was written (system-wide on Linux, so the client can
compute the delivery delay per token). Keep-alive connections are served, as HAProxy reuses
server connections.

Request headers ``X-Tokens`` and ``X-Interval-Ms`` set the stream's length and pace.

    python fake_frontend.py NAME PORT
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str]] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    if length:
        await reader.readexactly(length)
    return method, path, headers


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


async def _serve(name: str, ready: bool, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        while True:
            req = await _read_request(reader)
            if req is None:
                return
            method, path, headers = req
            close = headers.get("connection", "").lower() == "close"
            conn = b"close" if close else b"keep-alive"
            if method == "GET" and (
                path in ("/health", "/live")
                or (path.startswith("/v1/models/") and path.endswith("/ready"))
            ):
                if path.endswith("/ready"):
                    status = b"200 OK" if ready else b"404 Not Found"
                    body = json.dumps({"ready": ready}).encode()
                else:  # /health is 200 with zero workers too
                    status = b"200 OK"
                    body = json.dumps({"status": "healthy", "instances": []}).encode()
                writer.write(
                    b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\nConnection: %s\r\n\r\n" % (len(body), conn) + body
                )
                await writer.drain()
            else:
                tokens = int(headers.get("x-tokens", "10"))
                interval = int(headers.get("x-interval-ms", "20")) / 1000
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
                    b"X-Backend: " + name.encode() + b"\r\nConnection: " + conn + b"\r\n\r\n"
                )
                await writer.drain()
                for i in range(tokens):
                    await asyncio.sleep(interval)
                    event = {"backend": name, "i": i, "t": time.monotonic_ns()}
                    writer.write(_chunk(b"data: " + json.dumps(event).encode() + b"\n\n"))
                    await writer.drain()
                writer.write(_chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
                await writer.drain()
            if close:
                return
    except (ConnectionError, asyncio.CancelledError):
        return
    finally:
        writer.close()


async def main(name: str, port: int, ready: bool) -> None:
    server = await asyncio.start_server(
        lambda r, w: _serve(name, ready, r, w), "127.0.0.1", port, backlog=1024
    )
    sys.stdout.write(f"listening {name} {port}\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), "--no-workers" not in sys.argv))
