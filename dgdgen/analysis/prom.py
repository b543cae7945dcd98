"""A minimal Prometheus HTTP API client (``GET /api/v1/query``), standard library only.

The result is shaped as Argo Rollouts' Prometheus provider shapes it (``processResponse`` in
argo-rollouts v1.9.1 metricproviders/prometheus/prometheus.go): an instant vector becomes a list
of its sample values (labels dropped, in the order Prometheus returns them), a scalar a float, a
matrix every sample flattened; a string result is an error.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from dgdgen.analysis.expr import Value

# An instant query's answer holds one sample per series; more than this is not a gate's query
# (and would be read whole into memory).
MAX_ANSWER_BYTES = 32 * 1024 * 1024


class PromError(Exception):
    """The query could not be run (transport, HTTP, or Prometheus error) — a measurement Error."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def shape(data: Any) -> Value:
    """The value of a query's ``data`` as Argo Rollouts shapes it; a :class:`PromError` (a
    measurement Error) for an answer of any other shape: whatever answers at the Prometheus
    address is read as untrusted input, never trusted to be well formed."""
    if not isinstance(data, dict):
        raise PromError(f"Prometheus answered with data that is not an object: {_short(data)}")
    kind, res = data.get("resultType"), data.get("result")
    if res is None:
        raise PromError("Prometheus answered without a result")
    if kind == "vector":
        return [_sample(sample, "value") for sample in _items(res, kind)]
    if kind == "scalar":
        return _number(res)
    if kind == "matrix":
        return [_number(v) for series in _items(res, kind)
                for v in _items(_field(series, "values"), "values of a series")]
    raise PromError(f"Prometheus metric type not supported: {_short(kind)}")


def _items(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise PromError(f"Prometheus answered a {what} that is not a list: {_short(value)}")
    return value


def _field(value: Any, name: str) -> Any:
    if not isinstance(value, dict) or name not in value:
        raise PromError(f"Prometheus answered a series without {name!r}: {_short(value)}")
    return value[name]


def _sample(value: Any, name: str) -> float:
    return _number(_field(value, name))


def _number(pair: Any) -> float:
    """A sample's value: Prometheus writes ``[time, "value"]``, the value a decimal string (or
    NaN, +Inf, -Inf)."""
    if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[1], (str, int, float)) \
            or isinstance(pair[1], bool):
        raise PromError(f"Prometheus answered a sample that is not [time, value]: "
                        f"{_short(pair)}")
    try:
        return float(pair[1])
    except ValueError:
        raise PromError(f"Prometheus answered a sample value that is not a number: "
                        f"{_short(pair[1])}") from None


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def query(base_url: str, promql: str, *, at: float | None = None, timeout: float = 30) -> Value:
    if urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
        raise PromError(f"expected the Prometheus address as an http:// or https:// URL, got "
                        f"{base_url!r}", unreachable=True)
    params = {"query": promql}
    if at is not None:
        params["time"] = repr(float(at))
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            raw = resp.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        try:
            answer = json.loads(exc.read(64 * 1024))
            detail = _text(answer.get("error", "")) if isinstance(answer, dict) else ""
        except (ValueError, OSError, RecursionError):
            detail = ""
        raise PromError(f"HTTP {exc.code} from {base_url}: {detail}".rstrip(": ")) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PromError(f"cannot query {base_url}: {reason}", unreachable=True) from None
    if len(raw) > MAX_ANSWER_BYTES:
        raise PromError(f"Prometheus answered more than {MAX_ANSWER_BYTES:,} bytes")
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
        raise PromError(f"Prometheus answered with something that is not JSON: "
                        f"{raw[:40]!r}") from None
    if not isinstance(body, dict):
        raise PromError(f"Prometheus answered with JSON that is not an object: {_short(body)}")
    if body.get("status") != "success":
        raise PromError(f"{_text(body.get('errorType', 'error'))}: {_text(body.get('error', ''))}")
    return shape(body.get("data"))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else _short(value)
