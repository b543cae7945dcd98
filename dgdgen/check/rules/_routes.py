"""Shared walk over Gateway API routes for the RTE3xx rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dgdgen.check.context import Context
from dgdgen.yamlio import Document

ROUTE_KINDS = ("HTTPRoute", "GRPCRoute")


def backend_weight(ref: object) -> int:
    """A backendRef's weight; the CRD default is 1."""
    if not isinstance(ref, dict):
        return 1
    w = ref.get("weight", 1)
    return w if isinstance(w, int) and not isinstance(w, bool) else 1


def route_rules(ctx: Context) -> Iterator[tuple[Document, int, list[Any]]]:
    """(route document, rule index, backendRefs) for every Gateway API route rule."""
    for doc in ctx.documents(*ROUTE_KINDS):
        if not str(doc.data.get("apiVersion", "")).startswith("gateway.networking.k8s.io/"):
            continue
        rules = (doc.data.get("spec") or {}).get("rules") or []
        for i, rule in enumerate(rules if isinstance(rules, list) else []):
            refs = rule.get("backendRefs") if isinstance(rule, dict) else None
            yield doc, i, refs if isinstance(refs, list) else []
