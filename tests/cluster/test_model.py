"""The serving graph of rendered objects: which frontends each client path reaches and whether
their generations are complete — one behaviour a test, each able to fail."""

from __future__ import annotations

from typing import Any

from cluster_support import (
    dgd,
    haproxy,
    haproxy_config,
    objects,
    pool,
    proxy_deployment,
    route,
    service,
)

from dgdgen.cluster.model import build, reaches


def _reached(*docs: dict[str, object]) -> dict[str, list[tuple[str, list[str]]]]:
    """entry → [(frontend, missing roles of its generation)]."""
    g = build(objects(*docs))  # type: ignore[arg-type]
    gens = g.generations()
    return {r.entry: [(p.name(), gens[p.generation].missing()) for p in r.frontends]
            for r in reaches(g)}


def test_a_frontend_with_the_health_probe_stays_reachable_without_workers() -> None:
    got = _reached(dgd("blue", decode=0, prefill=0), service("entry", "blue"))
    assert got == {"callers of Service inference/entry": [
        ("blue/Frontend", ["decode", "prefill"])]}


def test_a_frontend_with_the_ready_probe_leaves_the_endpoints_without_workers() -> None:
    got = _reached(dgd("blue", decode=0, prefill=0, ready_probe=True), service("entry", "blue"))
    assert got == {"callers of Service inference/entry": []}
    # one role alone: the ready path answers 503 ("missing worker types"; the workers declare
    # each other in their cards' `needs`: tests/check/test_runtime_needs.py), so it leaves too
    got = _reached(dgd("blue", decode=1, prefill=0, ready_probe=True), service("entry", "blue"))
    assert got == {"callers of Service inference/entry": []}
    got = _reached(dgd("blue", decode=1, prefill=1, ready_probe=True), service("entry", "blue"))
    assert got == {"callers of Service inference/entry": [("blue/Frontend", [])]}


def test_disaggregated_generation_needs_both_roles() -> None:
    assert _reached(dgd("g", decode=1, prefill=1), service("e", "g"))[
        "callers of Service inference/e"] == [("g/Frontend", [])]
    assert _reached(dgd("g", decode=0, prefill=2), service("e", "g"))[
        "callers of Service inference/e"] == [("g/Frontend", ["decode"])]
    assert _reached(dgd("g", agg=0), service("e", "g"))[
        "callers of Service inference/e"] == [("g/Frontend", ["aggregated"])]


def test_routes_follow_weights_and_a_generations_own_handle_is_no_entry() -> None:
    got = _reached(dgd("blue", agg=1), dgd("green", agg=0), service("blue-fe", "blue"),
                   service("green-fe", "green"), route("r", {"blue-fe": 100, "green-fe": 0}))
    assert got == {"callers through Gateway inference/gw (HTTPRoute inference/r)": [
        ("blue/Frontend", [])]}
    got = _reached(dgd("blue", agg=1), dgd("green", agg=0), service("blue-fe", "blue"),
                   service("green-fe", "green"), route("r", {"blue-fe": 50, "green-fe": 50}))
    assert got["callers through Gateway inference/gw (HTTPRoute inference/r)"] == [
        ("blue/Frontend", []), ("green/Frontend", ["aggregated"])]


def test_gamma_mesh_callers_follow_the_route_others_the_parent_selector() -> None:
    got = _reached(dgd("blue", decode=0, prefill=0), dgd("green", decode=1, prefill=1),
                   service("blue-fe", "blue"), service("green-fe", "green"),
                   service("api", "blue"),
                   route("r", {"blue-fe": 0, "green-fe": 100}, parent="api"))
    assert got["mesh callers of Service inference/api (HTTPRoute inference/r)"] == [
        ("green/Frontend", [])]
    assert got["out-of-mesh callers of Service inference/api"] == [
        ("blue/Frontend", ["decode", "prefill"])]


def test_inference_pool_backends() -> None:
    got = _reached(dgd("blue", agg=1), dgd("green", agg=2), pool("pb", "blue"), pool("pg", "green"),
                   route("r", {"pb": 0, "pg": 1}, pool=True))
    assert got == {"callers through Gateway inference/gw (HTTPRoute inference/r)": [
        ("green/Frontend", [])]}


def test_haproxy_ready_check_takes_out_only_generations_with_no_workers() -> None:
    base = (dgd("blue", decode=0, prefill=0), dgd("green", decode=1, prefill=0),
            service("blue-fe", "blue"), service("green-fe", "green"))
    got = _reached(*base, *haproxy({"blue-fe": 50, "green-fe": 50}))
    [(entry, fronts)] = got.items()
    assert "HAProxy" in entry and len(fronts) == 2  # both still in the config …
    g = build(objects(*base, *haproxy({"blue-fe": 50, "green-fe": 50})))
    [r] = list(reaches(g))
    assert r.checked  # … the ready check marks blue (no workers) DOWN, not green (decode only)
    g = build(objects(*base, *haproxy({"blue-fe": 50, "green-fe": 50}, ready_check=False)))
    assert not next(iter(reaches(g))).checked
    assert _reached(*base, *haproxy({"blue-fe": 0, "green-fe": 1}))[entry] == [
        ("green/Frontend", ["prefill"])]


def test_haproxy_config_is_the_one_the_deployment_mounts() -> None:
    """Immutable, content-named ConfigMaps: until the prune the previous state's is there too,
    and only the config the proxy's pods mount carries traffic."""
    base = (dgd("blue", decode=1, prefill=1), dgd("green", decode=1, prefill=1),
            service("blue-fe", "blue"), service("green-fe", "green"))
    old = haproxy_config({"blue-fe": 1, "green-fe": 0}, name="proxy-old")
    new = haproxy_config({"blue-fe": 0, "green-fe": 1}, name="proxy-new")

    def fronts(*docs: dict[str, Any]) -> list[list[str]]:
        return sorted([f for f, _ in v] for k, v in _reached(*base, *docs).items()
                      if "HAProxy" in k)

    assert fronts(old, new, proxy_deployment("proxy-old")) == [["blue/Frontend"]]
    assert fronts(old, new, proxy_deployment("proxy-new")) == [["green/Frontend"]]
    assert fronts(old, new) == []  # no proxy pods: no way in through HAProxy


def test_worker_groups_split_one_dgd() -> None:
    doc = dgd("one", decode=1, prefill=1)
    doc["spec"]["services"]["Frontend-g2"] = {"componentType": "frontend", "replicas": 1,
                                              "workerGroupName": "g2"}
    doc["spec"]["services"]["Decode-g2"] = dict(doc["spec"]["services"]["Decode"],
                                                replicas=0, workerGroupName="g2")
    g = build(objects(doc))
    gens = g.generations()
    assert sorted((k[2], v.missing()) for k, v in gens.items()) == [("", []), ("g2", ["decode"])]


def test_without_a_rendered_path_callers_use_the_operators_frontend_service() -> None:
    got = _reached(dgd("only", agg=0))
    assert got == {"callers of the operator's Service inference/only-frontend": [
        ("only/Frontend", ["aggregated"])]}
