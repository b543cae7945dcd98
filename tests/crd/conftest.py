from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from dgdgen import yamlio

REPO = Path(__file__).resolve().parents[2]
# Verbatim upstream copies, vendored with their provenance (tests/data/upstream/README.md).
UPSTREAM_EXAMPLES = REPO / "tests" / "data" / "upstream" / "dynamo" / "examples"


def upstream_examples() -> list[Path]:
    return sorted(UPSTREAM_EXAMPLES.glob("*.yaml"))


def load_upstream(name: str) -> list[dict[str, Any]]:
    path = UPSTREAM_EXAMPLES / name
    return [d.data for d in yamlio.load_file(str(path))]


def dgd(name: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for d in load_upstream(name) if d["kind"] == "DynamoGraphDeployment"))


@pytest.fixture
def v1beta1() -> dict[str, Any]:
    return dgd("vllm-disagg.v1beta1.yaml")


@pytest.fixture
def v1alpha1() -> dict[str, Any]:
    return dgd("vllm-disagg.yaml")


@pytest.fixture
def httproute() -> dict[str, Any]:
    return copy.deepcopy(load_upstream("vllm-gaie-http-route.yaml")[0])
