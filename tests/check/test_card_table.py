"""The card table (issue 32 item 5): every 1.6 card checksum input, the flags and variables of
each backend that feed it, and how each row is verified (dgdgen/check/cardtable.py, the table in
docs/checker.md). The table agrees with the checker's flag tables, with the runtime probes, and —
where the ai-dynamo 1.6.1 wheel is installed — with the wheel's own parsers."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest
from worker_support import worker_dgd_text

from dgdgen.check import cardtable
from dgdgen.check.classify import classify
from dgdgen.check.facts import DgdFacts, canonical_flag, dgd_facts, env_flag
from dgdgen.check.flags import Category, inputs_for
from dgdgen.model.dgd import Backend, parse
from dgdgen.yamlio import load_documents_fast

ROOT = Path(__file__).resolve().parents[2]
ROWS = [(row, b, feed) for row in cardtable.CARD_INPUTS for b, feed in row.feeds.items()]


def _ids(rows: list[tuple[cardtable.CardInput, Backend, cardtable.Feed]]) -> list[str]:
    return [f"{row.field.split(' ')[0]}-{b.value}" for row, b, _ in rows]


@pytest.mark.parametrize(("row", "backend", "feed"), ROWS, ids=_ids(ROWS))
def test_every_listed_flag_is_a_card_input_of_its_backend_on_1_6(
        row: cardtable.CardInput, backend: Backend, feed: cardtable.Feed) -> None:
    for flag in feed.flags:
        hits = [e for e in inputs_for(flag, backend, "1.6", False) if e.category is Category.MDC]
        assert hits, (row.field, backend, flag)
        assert all(e.requires in (None, row.requires) for e in hits), (flag, hits)
    for alias in feed.aliases:
        assert canonical_flag(alias, backend) in feed.flags, (backend, alias)
    for var in feed.env:
        assert env_flag(var, backend) in feed.flags, (backend, var)


def test_every_probe_the_table_names_is_played_on_the_runtime() -> None:
    text = (ROOT / "tests" / "check" / "test_runtime_truth.py").read_text(encoding="utf-8")
    probes = set(re.findall(r'Probe\(\s*"([a-z0-9-]+)"', text))
    named = {p for row in cardtable.CARD_INPUTS for p in row.probes}
    assert named <= probes, named - probes
    # a row either names probes or says why the mocker cannot express it, or has no flag at all
    for row in cardtable.CARD_INPUTS:
        has_flags = any(f.flags for f in row.feeds.values())
        assert row.probes or row.not_expressible or not has_flags, row.field


def test_the_committed_table_is_fresh() -> None:
    doc = (ROOT / "docs" / "checker.md").read_text(encoding="utf-8")
    assert cardtable.with_table(doc) == doc, \
        "stale: python -m dgdgen.check.docs --checker-doc docs/checker.md"


def _facts(*args: str, env: dict[str, str] | None = None, backend: str = "vllm"
           ) -> DgdFacts:
    lines = [f"command: [python3, -m, dynamo.{backend}]",
             "args: [" + ", ".join(f'"{a}"' for a in ("--model", "Q", *args)) + "]"]
    if env:
        lines.append("env: [" + ", ".join(f"{{name: {k}, value: '{v}'}}"
                                          for k, v in env.items()) + "]")
    doc = load_documents_fast(worker_dgd_text(*lines), "w.yaml")[0]
    return dgd_facts(parse(doc.data, source=doc))


def _categories(base: DgdFacts, head: DgdFacts) -> list[tuple[str, str, str]]:
    verdict = classify(base, head, "1.6")
    return [(c.field, c.category.value, c.reason) for c in verdict.changes]


def test_kv_router_flags_reach_the_card_only_with_router_mode_kv() -> None:
    rr = ("--router-mode", "round-robin")
    changes = _categories(_facts(*rr), _facts(*rr, "--router-temperature", "0.5"))
    assert changes == [("--router-temperature", "safe",
                        "--router-temperature (unset) → 0.5 (a card input only with a worker "
                        "--router-mode kv, set on neither side)")]
    kv = ("--router-mode", "kv")
    changes = _categories(_facts(*kv), _facts(*kv, "--router-temperature", "0.5"))
    assert [c[:2] for c in changes] == [("--router-temperature", "mdc-checksum")]
    assert "kv_router_config" in changes[0][2]
    # the mode set by its variable counts the same
    changes = _categories(_facts(env={"DYN_ROUTER_MODE": "kv"}),
                          _facts("--router-temperature", "0.5", env={"DYN_ROUTER_MODE": "kv"}))
    assert [c[:2] for c in changes] == [("--router-temperature", "mdc-checksum")]


@pytest.mark.parametrize("flag", ["--active-decode-blocks-threshold",
                                  "--router-session-affinity-ttl-secs"])
def test_router_config_fields_count_in_every_mode(flag: str) -> None:
    rr = ("--router-mode", "round-robin")
    changes = _categories(_facts(*rr), _facts(*rr, flag, "60"))
    assert [c[:2] for c in changes] == [(flag, "mdc-checksum")]
    # without a worker --router-mode the card carries no router_config
    assert [c[1] for c in _categories(_facts(), _facts(flag, "60"))] == ["safe"]


def test_worker_type_and_needs() -> None:
    # unset is agg: nothing changes
    assert [c[1] for c in _categories(_facts(), _facts("--disaggregation-mode", "agg"))] \
        == ["safe"]
    changes = _categories(_facts(), _facts("--disaggregation-mode", "decode"))
    assert ("--disaggregation-mode", "mdc-checksum") in [c[:2] for c in changes]
    changes = _categories(_facts(backend="sglang"),
                          _facts("--dedicated-mm-encoder", backend="sglang"))
    assert [c[:2] for c in changes] == [("--dedicated-mm-encoder", "mdc-checksum")]
    changes = _categories(_facts(backend="sglang"),
                          _facts(backend="sglang", env={"DYN_SGL_DEDICATED_MM_ENCODER": "true"}))
    assert [c[:2] for c in changes] == [("--dedicated-mm-encoder", "mdc-checksum")]


# --------------------------------------------------------------------------- the 1.6.1 wheel

def _wheel() -> Path:
    dynamo = pytest.importorskip("dynamo.common.configuration.groups.router_args",
                                 reason="needs the ai-dynamo 1.6.1 wheel")
    return Path(dynamo.__file__).resolve().parents[4]


def test_router_rows_are_what_1_6_1_puts_in_the_router_config() -> None:
    """ai-dynamo 1.6.1 build_router_config: RouterConfig(mode, KvRouterConfig(**kv_router_kwargs())
    only for kv, **router_kwargs()). Every worker router flag is in exactly one of the two rows,
    with the parser's variable."""
    _wheel()
    from dynamo.common.configuration.groups import kv_router_args, router_args

    parser = argparse.ArgumentParser(add_help=False)
    router_args.add_worker_router_arguments(parser)
    mode_fields = set(router_args._ROUTER_FIELDS)
    kv_fields = set(kv_router_args._KV_ROUTER_FIELDS)
    seen_config: dict[str, str | None] = {}
    seen_kv: dict[str, str | None] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest == "router_mode":
            continue
        env = re.search(r"env var: (\S+)", action.help or "")
        flag = canonical_flag(action.option_strings[0], Backend.VLLM)
        aliases = {canonical_flag(o, Backend.VLLM) for o in action.option_strings
                   if not o.startswith("--no-")} - {flag}
        assert aliases <= {flag} | {canonical_flag(a, Backend.VLLM)
                                    for a in cardtable.ROUTER_ALIASES}
        if action.dest in mode_fields:
            seen_config[flag] = env.group(1) if env else None
        else:
            # a KvRouterConfig field, or one the presets fold into them (load_aware,
            # conditional_disagg_config: kv_router_args.py apply_router_config)
            assert action.dest in kv_fields | {"load_aware", "conditional_disagg_config"}, \
                action.dest
            seen_kv[flag] = env.group(1) if env else None
    assert seen_config == cardtable.ROUTER_CONFIG_ENV
    # --router-kv-overlap-score-weight hides its help (and so its variable) in 1.6.1
    assert {k: v for k, v in seen_kv.items() if v} == {
        k: v for k, v in cardtable.KV_ROUTER_ENV.items()
        if k != "--router-kv-overlap-score-weight"}
    assert set(seen_kv) == set(cardtable.KV_ROUTER_ENV)
    source = Path(kv_router_args.__file__).read_text(encoding="utf-8")
    for var in (cardtable.KV_ROUTER_ENV["--router-kv-overlap-score-weight"],
                *cardtable.ROUTER_ENV_ALIASES):
        assert f'"{var}"' in source, var


def test_every_listed_variable_is_a_1_6_1_parser_variable() -> None:
    root = _wheel() / "dynamo"
    text = "\n".join(p.read_text(encoding="utf-8") for sub in ("vllm", "sglang", "trtllm",
                                                               "common")
                     for p in (root / sub).rglob("*.py") if "tests" not in p.parts)
    for row in cardtable.CARD_INPUTS:
        for feed in row.feeds.values():
            for var in feed.env:
                assert re.search(rf'env_var=\(?\s*"{var}"', text) or f'"{var}"' in text, var


def test_register_model_has_no_indexer_identity_nor_prompt_context() -> None:
    pyi = (_wheel() / "dynamo" / "_core.pyi").read_text(encoding="utf-8")
    start = pyi.index("async def register_model(")
    signature = pyi[start:pyi.index(") -> None:", start)]
    assert "model_aliases" in signature and "router_config" in signature
    assert "indexer_identity" not in signature and "prompt_context" not in signature
