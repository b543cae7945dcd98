"""Shared by ANA401 / ANA402: conditions of Argo Rollouts Prometheus metrics."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from dgdgen.check.context import Context, object_id
from dgdgen.yamlio import Document

ANALYSIS_KINDS = ("AnalysisTemplate", "ClusterAnalysisTemplate", "AnalysisRun")
CONDITIONS = ("successCondition", "failureCondition")


@dataclass(frozen=True)
class Condition:
    doc: Document
    metric: str
    index: int
    key: str  # successCondition / failureCondition
    text: str
    query: str

    @property
    def object(self) -> str:
        return object_id(self.doc.data)

    @property
    def indexes_result(self) -> bool:
        return re.search(r"\bresult\s*\[", self.text) is not None


def conditions(ctx: Context) -> Iterator[Condition]:
    for doc in ctx.documents(*ANALYSIS_KINDS):
        if not str(doc.data.get("apiVersion", "")).startswith("argoproj.io/"):
            continue
        metrics = (doc.data.get("spec") or {}).get("metrics") or []
        for i, m in enumerate(metrics if isinstance(metrics, list) else []):
            if not isinstance(m, dict):
                continue
            provider = m.get("provider")
            prom = provider.get("prometheus") if isinstance(provider, dict) else None
            if not isinstance(prom, dict):
                continue
            for key in CONDITIONS:
                text = m.get(key)
                if isinstance(text, str) and re.search(r"\bresult\b", text):
                    yield Condition(doc, str(m.get("name", i)), i, key, text,
                                    str(prom.get("query", "")))
