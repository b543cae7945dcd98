"""Prometheus text exposition scraped from the local processes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dgdgen.runtime.procs import Proc, http_get


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Mapping[str, str]
    value: float


def parse(text: str) -> list[Sample]:
    from prometheus_client.parser import text_string_to_metric_families

    out: list[Sample] = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.append(Sample(s.name, dict(s.labels), float(s.value)))
    return out


def scrape(port: int) -> list[Sample]:
    status, body = http_get(port, "/metrics", timeout=5.0)
    if status != 200:
        return []
    return parse(body)


def total(samples: list[Sample], name: str, **labels: str) -> float:
    return sum(
        s.value
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def worker_requests(proc: Proc) -> int:
    """Requests a mocker worker has served on its ``generate`` endpoint."""
    return int(
        total(scrape(proc.system_port), "dynamo_component_requests_total", dynamo_endpoint="generate")
    )


def frontend_requests(proc: Proc, model: str | None = None) -> int:
    """Requests a frontend has completed (any status), for ``model`` when given."""
    labels = {"model": model} if model else {}
    return int(total(scrape(proc.port), "dynamo_frontend_requests_total", **labels))


def frontend_inflight(proc: Proc) -> int:
    return int(total(scrape(proc.port), "dynamo_frontend_inflight_requests"))
