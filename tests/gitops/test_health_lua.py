"""The DGD health check, run by real Lua 5.1 runtimes — lupa's bundled Lua 5.1 and the Debian
`lua5.1` binary — over DGD status samples that validate against the DGD CRD's status schema: with
only the base functions Argo CD always provides, and with the open libraries dgdgen's argocd-cm
patch asks for (the timed `insufficient_capacity` wait) under a pinned clock."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dgdgen import crd, resources, yamlio

HERE = Path(__file__).parent
REPO = HERE.parents[1]
SAMPLES = yamlio.load_file(str(HERE / "dgd_status_samples.yaml"))[0].data
BASES = {
    "v1alpha1": REPO / "examples" / "vllm-disagg-block-size" / "dgd.yaml",
    "v1beta1": REPO / "examples" / "trtllm-disagg-v1beta1" / "dgd.yaml",
}
# The environment Argo CD gives a health script that does not ask for useOpenLibs: base functions.
SAFE = ("pairs", "ipairs", "type", "tostring", "next")


def _obj(sample: dict[str, Any]) -> dict[str, Any]:
    base = next(d.data for d in yamlio.load_file(str(BASES[sample["version"]]))
                if d.data.get("kind") == "DynamoGraphDeployment")
    obj = copy.deepcopy(base)
    obj["metadata"].setdefault("namespace", "inference")
    if "generation" in sample:
        obj["metadata"]["generation"] = sample["generation"]
    for name, replicas in (sample.get("spec_replicas") or {}).items():
        spec = obj["spec"]
        if "services" in spec:  # v1alpha1: a map of services
            spec["services"][name]["replicas"] = replicas
        else:  # v1beta1: a list of components
            next(c for c in spec["components"] if c["name"] == name)["replicas"] = replicas
    if "status" in sample:
        obj["status"] = copy.deepcopy(sample["status"])
    return obj


def _ids(s: dict[str, Any]) -> str:
    return str(s["name"])


def test_samples_cover_the_states() -> None:
    states = {s.get("status", {}).get("state") for s in SAMPLES}
    assert states == {None, "initializing", "pending", "successful", "failed"}
    assert {s["expect"] for s in SAMPLES} == {"Healthy", "Progressing", "Degraded"}


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids)
def test_sample_is_a_valid_dgd_status(sample: dict[str, Any]) -> None:
    obj = _obj(sample)
    obj["metadata"].pop("generation", None)  # set by the API server, not part of the schema
    assert crd.validate(obj) == []


def _lua_literal(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid Lua 5.1 string literal for this text
    if isinstance(v, list):
        return "{" + ", ".join(_lua_literal(x) for x in v) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {_lua_literal(x)}" for k, x in v.items()) \
            + "}"
    raise TypeError(type(v))


def _script() -> str:
    return resources.read_text("argo", "dgd-health.lua")


@pytest.mark.parametrize("sample", SAMPLES, ids=_ids)
def test_lupa_lua51(sample: dict[str, Any]) -> None:
    lua51 = pytest.importorskip("lupa.lua51")
    rt = lua51.LuaRuntime(unpack_returned_tuples=True)
    assert rt.eval("_VERSION") == "Lua 5.1"
    run = rt.eval(
        "function(src, obj) local f = assert(loadstring(src)); setfenv(f, {"
        + ", ".join(f"{n} = {n}" for n in SAFE)
        + ", obj = obj}); local hs = f(); return hs.status, hs.message end"
    )
    obj = rt.eval(_lua_literal(_obj(sample)))
    status, message = run(_script(), obj)
    assert status == sample["expect"], message
    assert sample["message"] in message


def test_lua51_binary(tmp_path: Path) -> None:
    binary = shutil.which("lua5.1")
    if binary is None:
        pytest.skip("lua5.1 is not installed (apt-get install lua5.1)")
    script = tmp_path / "health.lua"
    script.write_text(_script())
    env_fields = ", ".join(f"{n} = {n}" for n in SAFE)
    harness = [f"local samples = {{{', '.join(_lua_literal(_obj(s)) for s in SAMPLES)}}}"]
    harness.append(
        "for i, obj in ipairs(samples) do\n"
        f"  local f = assert(loadfile({json.dumps(str(script))}))\n"
        f"  setfenv(f, {{{env_fields}, obj = obj}})\n"
        "  local hs = f()\n"
        "  io.write(hs.status, '\\t', hs.message, '\\n')\n"
        "end\n"
    )
    (tmp_path / "run.lua").write_text("\n".join(harness))
    r = subprocess.run([binary, str(tmp_path / "run.lua")], capture_output=True, text=True,
                       check=True, timeout=60)
    lines = r.stdout.splitlines()
    assert len(lines) == len(SAMPLES)
    for sample, line in zip(SAMPLES, lines, strict=True):
        status, message = line.split("\t", 1)
        assert status == sample["expect"], (sample["name"], message)
        assert sample["message"] in message, sample["name"]


def test_lua_is_the_one_in_the_argocd_cm_patch() -> None:
    from dgdgen.gitops import argocd
    from dgdgen.pipeline.prepare import prepare

    cm = argocd.argocd_cm_patch(prepare(str(REPO / "examples" / "vllm-disagg-block-size"
                                             / "rollout.yaml")))
    assert cm["data"]["resource.customizations.health.nvidia.com_DynamoGraphDeployment"] \
        == _script()


# Argo CD with resource.customizations.useOpenLibs for the DGD kind (dgdgen's argocd-cm patch):
# the standard libraries. The clock is the one thing pinned — `os.time()` with no argument is the
# sample's lastTransitionTime plus `after` seconds; everything else (os.date, os.time of a table,
# string.match) is the runtime's own.
OPEN_CASES = [(s, case) for s in SAMPLES for case in s.get("openlibs", [])]


def _epoch(stamp: str) -> int:
    import datetime
    return int(datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
               .replace(tzinfo=datetime.timezone.utc).timestamp())


def _now(sample: dict[str, Any], case: dict[str, Any]) -> int:
    ready = next(c for c in sample["status"]["conditions"] if c["type"] == "Ready")
    return _epoch(ready["lastTransitionTime"]) + int(case["after"])


_OPEN_ENV = (
    "local env = {}; for k, v in pairs(_G) do env[k] = v end; "
    "local real = os; "
    "env.os = {date = real.date, clock = real.clock, difftime = real.difftime, "
    "time = function(t) if t == nil then return NOW end return real.time(t) end}; "
)


def test_the_argocd_cm_patch_opens_the_libraries_the_clock_needs() -> None:
    from dgdgen.gitops import argocd
    from dgdgen.pipeline.prepare import prepare

    cm = argocd.argocd_cm_patch(prepare(str(REPO / "examples" / "vllm-disagg-block-size"
                                             / "rollout.yaml")))
    assert cm["data"]["resource.customizations.useOpenLibs.nvidia.com_DynamoGraphDeployment"] \
        == "true"


@pytest.mark.parametrize(("sample", "case"), OPEN_CASES,
                         ids=[f"{s['name']}-{c['after']}" for s, c in OPEN_CASES])
def test_lupa_lua51_with_open_libs(sample: dict[str, Any], case: dict[str, Any]) -> None:
    lua51 = pytest.importorskip("lupa.lua51")
    rt = lua51.LuaRuntime(unpack_returned_tuples=True)
    run = rt.eval(
        "function(src, obj, now) NOW = now; " + _OPEN_ENV
        + "env.obj = obj; local f = assert(loadstring(src)); setfenv(f, env); "
        "local hs = f(); return hs.status, hs.message end")
    status, message = run(_script(), rt.eval(_lua_literal(_obj(sample))), _now(sample, case))
    assert status == case["expect"], message
    assert case["message"] in message, message


@pytest.mark.parametrize("tz", ["UTC", "America/New_York", "Asia/Kolkata"])
def test_lua51_binary_with_open_libs_in_any_time_zone(tmp_path: Path, tz: str) -> None:
    """The wait is read in UTC whatever zone the repo server runs in."""
    import os

    binary = shutil.which("lua5.1")
    if binary is None:
        pytest.skip("lua5.1 is not installed (apt-get install lua5.1)")
    script = tmp_path / "health.lua"
    script.write_text(_script())
    lines = []
    for sample, case in OPEN_CASES:
        lines.append(
            f"do NOW = {_now(sample, case)}; " + _OPEN_ENV
            + f"env.obj = {_lua_literal(_obj(sample))}; "
            f"local f = assert(loadfile({json.dumps(str(script))})); setfenv(f, env); "
            "local hs = f(); io.write(hs.status, '\\t', hs.message, '\\n') end")
    (tmp_path / "run.lua").write_text("\n".join(lines))
    r = subprocess.run([binary, str(tmp_path / "run.lua")], capture_output=True, text=True,
                       check=True, timeout=60, env={**os.environ, "TZ": tz})
    out = r.stdout.splitlines()
    assert len(out) == len(OPEN_CASES)
    for (sample, case), line in zip(OPEN_CASES, out, strict=True):
        status, message = line.split("\t", 1)
        assert status == case["expect"], (sample["name"], case["after"], message)
        assert case["message"] in message, (sample["name"], message)
