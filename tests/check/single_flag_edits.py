"""In-place single-flag edits of the bundled examples' DGDs: every backend (vLLM, SGLang,
TRT-LLM), aggregated and disaggregated, v1alpha1 and v1beta1, each edit checked on both worker
layouts (hash-suffixed worker namespaces, the operator's roll; one shared namespace) and on Grove.
The cases that tests/check/test_headlines.py holds the text report to and that
benchmarks/bench_finding_length.py measures (docs/checker.md, "Reading a finding").

An edit is one flag set (or one value changed) on the workers it names — all of them, or one role
of a disaggregated graph — or the runtime image of every component. The aggregated SGLang and
TRT-LLM DGDs are the disaggregated examples with the prefill workers removed and the decode
workers made aggregated workers (no example ships one)."""

from __future__ import annotations

import copy
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]

# The worker layouts an in-place roll can have, as `dgdgen diff` options.
LAYOUTS: dict[str, tuple[str, ...]] = {
    "hashed": (),  # Deployment-backed workers, hash-suffixed worker namespaces (the default)
    "shared": ("--workers-run-by", "unmanaged"),  # old and new workers in one namespace
    "grove": ("--workers-run-by", "grove"),  # Grove, the release's default update strategy
    "grove-1.4": ("--workers-run-by", "grove", "--dynamo-version", "1.4"),  # one namespace
}


@dataclass(frozen=True)
class Base:
    name: str  # the example folder
    backend: str
    disaggregated: bool
    aggregate: bool = False  # derived: the disaggregated example made aggregated

    @property
    def label(self) -> str:
        return f"{self.backend}-agg" if self.aggregate else self.name


BASES = (
    Base("vllm-agg-auto", "vllm", False),
    Base("vllm-disagg-block-size", "vllm", True),
    Base("vllm-disagg-v1beta1-worker-group", "vllm", True),
    Base("sglang-disagg-transfer-backend", "sglang", True),
    Base("sglang-disagg-v1beta1-partition", "sglang", True),
    Base("sglang-disagg-transfer-backend", "sglang", False, aggregate=True),
    Base("trtllm-disagg-v1beta1", "trtllm", True),
    Base("trtllm-disagg-v1beta1", "trtllm", False, aggregate=True),
)

# (flag, new value, which workers: "all", "prefill") per backend; "image" bumps every image.
EDITS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "vllm": (("--block-size", "32", "all"), ("--max-model-len", "8192", "all"),
             ("--kv-cache-dtype", "fp8", "prefill"), ("--dtype", "float16", "all"),
             ("--served-model-name", "qwen", "all"), ("--max-num-seqs", "64", "all"),
             ("image", ":0.7.0", "all"),
             ("--kv-transfer-config",
              '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}', "prefill")),
    "sglang": (("--page-size", "32", "all"), ("--context-length", "8192", "all"),
               ("--kv-cache-dtype", "fp8_e5m2", "prefill"), ("--dtype", "float16", "all"),
               ("--served-model-name", "qwen", "all"),
               ("--disaggregation-transfer-backend", "mooncake", "all"),
               ("image", ":0.7.0", "all")),
    "trtllm": (("--max-seq-len", "8192", "all"), ("--served-model-name", "qwen", "all"),
               ("--extra-engine-args",
                "./examples/backends/trtllm/engine_configs/qwen3/fp8.yaml", "prefill"),
               ("image", ":0.7.0", "all")),
}


@dataclass(frozen=True)
class Case:
    id: str
    base: Base
    flag: str
    value: str
    where: str
    old: str  # the DGD before the edit (YAML)
    new: str  # after it

    @property
    def path(self) -> str:
        """Where the edited DGD lives, as a repository would hold it (relative)."""
        return f"examples/{self.base.label}/dgd.yaml"


def _components(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(name, component, main container) of every component, for both CRD versions."""
    spec = doc["spec"]
    if "services" in spec:  # v1alpha1
        for name, comp in spec["services"].items():
            yield name, comp, comp.setdefault("extraPodSpec", {}).setdefault("mainContainer", {})
    else:  # v1beta1
        for comp in spec["components"]:
            containers = comp["podTemplate"]["spec"]["containers"]
            main = next(c for c in containers if c.get("name") == "main")
            yield comp["name"], comp, main


def _role(comp: dict[str, Any], main: dict[str, Any]) -> str:
    args = [str(a) for a in main.get("args") or []]
    if "--disaggregation-mode" in args:
        return args[args.index("--disaggregation-mode") + 1]
    kind = comp.get("subComponentType") or comp.get("type") or comp.get("componentType")
    return str(kind)


def _aggregate(doc: dict[str, Any]) -> dict[str, Any]:
    """The disaggregated DGD with its prefill workers removed and its decode workers made
    aggregated workers."""
    out = copy.deepcopy(doc)
    spec = out["spec"]
    prefill = [n for n, c, m in _components(out) if _role(c, m) == "prefill"]
    if "services" in spec:
        for n in prefill:
            del spec["services"][n]
    else:
        spec["components"] = [c for c in spec["components"] if c["name"] not in prefill]
    for _, comp, main in _components(out):
        args = [str(a) for a in main.get("args") or []]
        if "--disaggregation-mode" in args:
            i = args.index("--disaggregation-mode")
            del args[i:i + 2]
            main["args"] = args
        comp.pop("subComponentType", None)
        if comp.get("type") == "decode":
            comp["type"] = "worker"
    out["metadata"]["name"] += "-agg"
    return out


def _set_flag(main: dict[str, Any], flag: str, value: str) -> None:
    args = [str(a) for a in main.get("args") or []]
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    main["args"] = args


def _edit(doc: dict[str, Any], flag: str, value: str, where: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for _, comp, main in _components(out):
        role = _role(comp, main)
        if flag == "image":
            if "image" in main:
                main["image"] = main["image"].rsplit(":", 1)[0] + value
            continue
        if role == "frontend" or (where != "all" and role != where):
            continue
        _set_flag(main, flag, value)
    return out


def as_shell(text: str) -> str:
    """The same DGD with every worker started by one ``sh -c`` chain (``set -e && exec python3
    -m dynamo.X ...``) instead of a command and an argument list."""
    doc = yaml.safe_load(text)
    for _, comp, main in _components(doc):
        if _role(comp, main) == "frontend" or not main.get("command"):
            continue
        words = [str(w) for w in [*main["command"], *(main.get("args") or [])]]
        main["command"] = ["/bin/sh", "-c"]
        main["args"] = ["set -e && exec " + " ".join(shlex.quote(w) for w in words)]
    return _dump(doc)


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=200)


def cases() -> list[Case]:
    out = []
    for base in BASES:
        doc = yaml.safe_load((REPO / "examples" / base.name / "dgd.yaml").read_text())
        if base.aggregate:
            doc = _aggregate(doc)
        old = _dump(doc)
        for flag, value, where in EDITS[base.backend]:
            if where == "prefill" and not base.disaggregated:
                where = "all"
            if flag.startswith("--disaggregation") and not base.disaggregated:
                continue
            new = _dump(_edit(doc, flag, value, where))
            assert new != old, (base, flag)
            out.append(Case(f"{base.label}:{flag}:{where}", base, flag, value, where, old, new))
    return out
