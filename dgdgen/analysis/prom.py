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


class PromError(Exception):
    """The query could not be run (transport, HTTP, or Prometheus error) — a measurement Error."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def shape(data: dict[str, Any]) -> Value:
    kind, res = data.get("resultType"), data.get("result")
    if res is None:
        raise PromError("Prometheus answered without a result")
    if kind == "vector":
        return [float(sample["value"][1]) for sample in res or ()]
    if kind == "scalar":
        return float(res[1])
    if kind == "matrix":
        return [float(v[1]) for series in res or () for v in series["values"]]
    raise PromError(f"Prometheus metric type not supported: {kind}")


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
            body = json.load(resp)
    except urllib.error.HTTPError as exc:
        try:
            detail = json.load(exc).get("error", "")
        except ValueError:
            detail = ""
        raise PromError(f"HTTP {exc.code} from {base_url}: {detail}".rstrip(": ")) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PromError(f"cannot query {base_url}: {reason}", unreachable=True) from None
    if body.get("status") != "success":
        raise PromError(f"{body.get('errorType', 'error')}: {body.get('error', '')}")
    return shape(body["data"])
