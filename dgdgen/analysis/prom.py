"""A minimal Prometheus HTTP API client (``GET /api/v1/query``), standard library only.

The result is shaped as Argo Rollouts' Prometheus provider shapes it (``processResponse`` in
argo-rollouts v1.9.1 metricproviders/prometheus/prometheus.go): an instant vector becomes a list
of its sample values (labels dropped, in the order Prometheus returns them), a scalar a float, a
matrix every sample flattened; a string result is an error.

The answer is untrusted input (a proxy, a misconfigured address, a hostile server): every query
ends by a deadline (:class:`Deadline`, shared by every query of one gate) whatever the server
does — a watchdog shuts the socket down at the deadline, so a server that sends one byte every
few seconds, in its headers or its body, cannot hold the command — and reads at most
``max_bytes`` of answer; the JSON is checked for the shape of Prometheus' answer before any value
is taken from it.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from dgdgen.analysis.expr import Value

DEFAULT_TIMEOUT = 60.0  # seconds for every query of one gate together
DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # one answer; a gate's answer is a few hundred bytes
_ERROR_BODY_BYTES = 64 * 1024  # what is read of an HTTP error's body, for its message
_CHUNK = 64 * 1024


class PromError(Exception):
    """The query could not be run (transport, HTTP, or Prometheus error) — a measurement Error.
    ``unreachable``: no answer at all (a bad address, a refused connection, the deadline)."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass
class Deadline:
    """The moment (``time.monotonic()``) by which every query must have ended, and what it was
    given as (for the message)."""

    at: float
    seconds: float
    _sockets: list[socket.socket] = field(default_factory=list)

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> PromError:
        return PromError(f"Prometheus did not answer within {self.seconds:g} s "
                         "(--prometheus-timeout)", unreachable=True)


def _watched(base: type[http.client.HTTPConnection], deadline: Deadline,
             ) -> Callable[..., http.client.HTTPConnection]:
    """``base`` whose connection attempt ends by the deadline and whose socket the watchdog
    knows."""

    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            left = deadline.remaining()
            if left <= 0:
                raise TimeoutError("deadline")
            given: float | None = getattr(self, "timeout", None)
            self.timeout = left if given is None else min(given, left)
            super().connect()
            deadline._sockets.append(self.sock)

    return Watched


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._conn = _watched(http.client.HTTPConnection, deadline)

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._conn, req)


class _HTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._conn = _watched(http.client.HTTPSConnection, deadline)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._conn, req)


def _read(fp: IO[bytes], limit: int) -> bytes | None:
    """At most ``limit`` bytes of ``fp``; None when it holds more."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = fp.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            return None


def _fetch(url: str, deadline: Deadline, max_bytes: int) -> tuple[int, bytes | None]:
    """(HTTP status, the answer's body, None when over ``max_bytes``), ended by the deadline."""
    if deadline.remaining() <= 0:
        raise deadline.expired()
    opener = urllib.request.build_opener(_HTTP(deadline), _HTTPS(deadline))
    fired = threading.Event()

    def shut() -> None:
        fired.set()
        for sock in list(deadline._sockets):
            try:  # the socket's own shutdown (an SSL socket's would unwrap it): recv ends
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(deadline.remaining(), shut)
    timer.daemon = True
    timer.start()
    failed: Exception | None = None
    answer: tuple[int, bytes | None] = (0, None)
    try:
        with opener.open(url, timeout=min(30.0, max(deadline.remaining(), 0.001))) as resp:
            if (getattr(resp, "length", None) or 0) > max_bytes:  # the declared length
                answer = resp.status, None
            else:
                answer = resp.status, _read(resp, max_bytes)
    except urllib.error.HTTPError as exc:
        try:
            answer = exc.code, _read(exc, _ERROR_BODY_BYTES)
        except (OSError, ValueError, http.client.HTTPException) as inner:
            failed = inner
        finally:
            exc.close()
    except (urllib.error.URLError, OSError, ValueError, OverflowError,
            http.client.HTTPException) as exc:  # OverflowError: a port over 65535
        failed = exc
    finally:
        timer.cancel()
        timer.join()
        deadline._sockets.clear()
    if fired.is_set():  # the watchdog ended it, whatever came of the read
        raise deadline.expired()
    if failed is not None:
        reason = getattr(failed, "reason", None) or failed
        raise PromError(f"cannot query: {reason}", unreachable=True)
    return answer


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except RecursionError:
        raise PromError("Prometheus answered with JSON nested too deeply") from None
    except ValueError as exc:  # not JSON, not UTF-8, or a number wider than Python reads
        raise PromError(f"Prometheus answered with something that is not JSON: {exc}"[:300]
                        ) from None


def _number(v: Any, where: str) -> float:
    """A sample value: Prometheus writes it as a string (``"0.25"``, ``"NaN"``, ``"+Inf"``)."""
    if isinstance(v, list) and len(v) == 2 and isinstance(v[1], str):
        try:
            return float(v[1])
        except ValueError:
            raise PromError(f"Prometheus answered with {where} whose value is not a number: "
                            f"{_short(v[1])}") from None
    raise PromError(f"Prometheus answered with {where} that is not [time, \"number\"]: "
                    f"{_short(v)}")


def _short(value: Any) -> str:
    """A value of an answer, in a message: its JSON, at most 60 characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def shape(data: Any) -> Value:
    """The value of an answer's ``data``, checked for the shape Prometheus gives it."""
    if not isinstance(data, dict):
        raise PromError("Prometheus answered without a data object")
    kind, res = data.get("resultType"), data.get("result")
    if res is None:
        raise PromError("Prometheus answered without a result")
    if kind == "vector":
        if not isinstance(res, list) or not all(isinstance(s, dict) for s in res):
            raise PromError("Prometheus answered with a vector that is not a list of samples")
        return [_number(sample.get("value"), "a sample") for sample in res]
    if kind == "scalar":
        return _number(res, "a scalar")
    if kind == "matrix":
        if not isinstance(res, list) or not all(
                isinstance(s, dict) and isinstance(s.get("values"), list) for s in res):
            raise PromError("Prometheus answered with a matrix that is not a list of series")
        return [_number(v, "a sample") for series in res for v in series["values"]]
    raise PromError(f"Prometheus metric type not supported: {str(kind)[:40]}")


def query(base_url: str, promql: str, *, at: float | None = None,
          deadline: Deadline | None = None, max_bytes: int = DEFAULT_MAX_BYTES) -> Value:
    """Run ``promql`` at ``at`` (default now); ``deadline`` (default :data:`DEFAULT_TIMEOUT`
    from now) ends it, ``max_bytes`` bounds the answer."""
    try:
        scheme = urllib.parse.urlsplit(base_url).scheme
    except ValueError as exc:  # `http://[::1`: a bracket left open
        raise PromError(f"not a URL: {base_url!r} ({exc})", unreachable=True) from None
    if scheme not in ("http", "https"):
        raise PromError(f"expected the Prometheus address as an http:// or https:// URL, got "
                        f"{base_url!r}", unreachable=True)
    deadline = deadline or Deadline.after(DEFAULT_TIMEOUT)
    params = {"query": promql}
    if at is not None:
        params["time"] = repr(float(at))
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    try:
        code, body = _fetch(url, deadline, max_bytes)
    except PromError as exc:
        raise PromError(str(exc).replace("cannot query:", f"cannot query {base_url}:", 1),
                        unreachable=exc.unreachable) from None
    if body is None:
        raise PromError(f"Prometheus answered with more than {max_bytes} bytes "
                        "(--prometheus-max-bytes); a gate's query returns a few")
    if code != 200:
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            doc = None
        detail = doc.get("error") if isinstance(doc, dict) else None
        raise PromError(f"HTTP {code} from {base_url}"
                        + (f": {str(detail)[:300]}" if detail else ""))
    doc = _json(body)
    if not isinstance(doc, dict):
        raise PromError(f"Prometheus answered with JSON that is not an object: {_short(doc)}")
    if doc.get("status") != "success":
        raise PromError(f"{str(doc.get('errorType', 'error'))[:80]}: "
                        f"{str(doc.get('error', ''))[:300]}")
    return shape(doc.get("data"))
