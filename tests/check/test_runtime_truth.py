"""Ground truth for the checker from the real Dynamo 1.6.1 runtime (issue 13 item 2, issue 22
item 2).

Each probe is one edit of a worker (vLLM, SGLang or TRT-LLM) in a DGD. The test runs the base
worker (incumbent) and the edited worker (candidate) as real ``dynamo.mocker`` processes behind
the real ``dynamo.frontend``, sends requests for the incumbent's model, and compares what the
runtime did with what ``dgdgen diff`` says about the same edit — in both ways an in-place roll
can place the two generations:

* **one shared namespace** (old releases, Grove / LWS before 1.5, a worker that pins
  ``--endpoint``, ``--workers-run-by unmanaged``): the frontend logs "Rejected incompatible
  workers" for the model, or the candidate gets none of its requests  ⇔  DGD201, whose 1.6 text
  for one shared namespace says so; the candidate shares the load  ⇔  no isolation finding.
* **hash-suffixed worker namespaces behind a prefix frontend** — the operator's managed rolling
  update (``DYN_NAMESPACE_WORKER_SUFFIX`` on each worker generation, ``DYN_NAMESPACE_PREFIX`` on
  the frontend, no ``--namespace``): nothing is rejected; a checksum change is served side by side
  (both workers get requests)  ⇔  DGD201's text for hashed namespaces (the default backing) says
  exactly that; a new served name is a second model  ⇔  DGD201's rename text.

The rendered flags become mocker flags through the one mapping
(:func:`dgdgen.runtime.mocker.mocker_invocation`). What the mocker cannot take from a flag — the
files a model path or a chat template names — is reproduced by giving the candidate another local
model directory (:func:`dgdgen.runtime.model.make_model_dir`), as a new model or template would.

All probes of one layout share one frontend (each probe has its own namespace and model name)
and one private network namespace, and run one after the other so that at most four Dynamo
processes are up at a time.

Long: the first test waits for the module's fixture, which starts and probes every edit against the
real runtime one after the other (2–5 minutes on two CPUs); the others then read its results.
Marked `long` (tests/suite_support.py), and its tests share one worker.
"""

from __future__ import annotations

import json
import re
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from gen_support import run_cli

from dgdgen import runtime
from dgdgen.check.inplace import HASHED_MDC, RENAME, SHARED_MDC
from dgdgen.runtime.routing import count_ready_workers

pytestmark = [pytest.mark.runtime, pytest.mark.long(minutes=4)]

if not runtime.available():  # pragma: no cover - CI installs it (and turns the skip into a failure)
    pytest.skip(f"needs the ai-dynamo {runtime.DYNAMO_VERSION} wheels: {runtime.missing()}",
                allow_module_level=True)

REQUESTS = 12
HASHED_SAMPLE = 64


@dataclass(frozen=True)
class Probe:
    name: str
    base: tuple[str, ...]  # worker args after `--model M --served-model-name tiny-<name>`
    head: tuple[str, ...]
    backend: str = "vllm"
    head_model: str = "Qwen/Qwen3-0.6B"
    head_name: str | None = None  # another served model name for the candidate
    head_dir: str = "a"  # which local model directory the candidate reads
    note: str = ""
    extra: dict[str, str] = field(default_factory=dict)


# Local model directories: "a" for every incumbent; "template" has another chat template (what a
# --custom-jinja-template file changes); "config" another config.json (what another model path
# changes: the card hashes the files' contents, ai-dynamo/dynamo 2a6da14c8
# lib/llm/src/model_card.rs mdcsum()).
DIRS = {
    "a": {},
    "template": {"chat_template": "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}"
                                  "{% endfor %}<assistant>"},
    "config": {"context_length": 4096},
    # Another revision of the same model whose snapshot carries one more sibling file: the card
    # hashes every non-weight sibling as `extra_files` (ai-dynamo/dynamo 01159fcc8
    # lib/llm/src/local_model.rs harvest_extra_files, lib/llm/src/model_card.rs mdcsum()).
    "extra": {"extra_files": {"preprocessor_config.json": '{"image_size": 224}\n'}},
    # The files of "a" at another path: what the probes above change is the files' contents,
    # not where the worker reads them (the card hashes checksums, not paths).
    "copy": {},
}

PROBES: tuple[Probe, ...] = (
    Probe("block-size", ("--block-size", "16"), ("--block-size", "32")),
    Probe("max-model-len", ("--max-model-len", "4096"), ("--max-model-len", "2048")),
    Probe("chat-template", (), ("--custom-jinja-template", "/templates/chat.jinja"),
          head_dir="template"),
    Probe("model-dir", (), (), head_model="Qwen/Qwen3-0.6B-FP8", head_dir="config"),
    Probe("served-model-name", (), (), head_name="other"),
    Probe("router-mode-kv", (), ("--router-mode", "kv")),
    Probe("max-num-seqs", ("--max-num-seqs", "64"), ("--max-num-seqs", "8")),
    Probe("num-gpu-blocks-override", (), ("--num-gpu-blocks-override", "2048")),
    Probe("kv-cache-dtype", (), ("--kv-cache-dtype", "fp8")),
    Probe("data-parallel-size", (), ("--data-parallel-size", "2")),
    Probe("prefix-caching", ("--enable-prefix-caching",), ("--no-enable-prefix-caching",)),
    Probe("router-mode-round-robin", (), ("--router-mode", "round-robin")),
    # 1.6.1 build_router_config: the busy thresholds and session affinity ride in the card's
    # RouterConfig whatever the mode; the KV router flags only with --router-mode kv.
    Probe("router-threshold-with-round-robin", ("--router-mode", "round-robin"),
          ("--router-mode", "round-robin", "--active-decode-blocks-threshold", "0.95")),
    Probe("router-affinity-with-round-robin", ("--router-mode", "round-robin"),
          ("--router-mode", "round-robin", "--router-session-affinity-ttl-secs", "60")),
    Probe("router-kv-flag-with-round-robin", ("--router-mode", "round-robin"),
          ("--router-mode", "round-robin", "--router-temperature", "0.5")),
    Probe("router-kv-flag-with-kv", ("--router-mode", "kv"),
          ("--router-mode", "kv", "--router-temperature", "0.5")),
    # The revision is not a mocker flag: its candidate reads a model directory with one more
    # sibling file, as a new revision's snapshot would (the card's extra_files).
    Probe("revision-extra-file", (), ("--revision", "v2"), head_dir="extra"),
    Probe("router-flag-without-mode", (), ("--router-temperature", "0.5")),
    Probe("kv-events-alias-without-mode", (), ("--no-kv-events",)),
    Probe("kv-events-alias-with-mode", ("--router-mode", "kv"),
          ("--router-mode", "kv", "--no-kv-events")),
    Probe("sglang-page-size", ("--page-size", "16"), ("--page-size", "32"), backend="sglang"),
    Probe("sglang-context-length", ("--context-length", "4096"), ("--context-length", "2048"),
          backend="sglang"),
    Probe("sglang-max-running-requests", ("--max-running-requests", "64"),
          ("--max-running-requests", "8"), backend="sglang"),
    Probe("trtllm-max-seq-len", ("--max-seq-len", "4096"), ("--max-seq-len", "2048"),
          backend="trtllm"),
    Probe("trtllm-tokens-per-block", (),
          ("--override-engine-args", '{"kv_cache_config": {"tokens_per_block": 64}}'),
          backend="trtllm"),
    Probe("trtllm-max-batch-size", ("--max-batch-size", "64"), ("--max-batch-size", "8"),
          backend="trtllm"),
)
PROBE_NAMES = frozenset(p.name for p in PROBES)

# A worker that names its endpoint registers in the namespace the endpoint names: the operator's
# suffix is not applied (ai-dynamo 1.6.1 dynamo/vllm/args.py; the mocker parses it the same way).
# Played only in the hashed layout, where the suffix would otherwise isolate the two.
PINNED = Probe("endpoint-pinned",
               ("--endpoint", "dyn://inference-hashed-endpoint-pinned.backend.generate",
                "--block-size", "16"),
               ("--endpoint", "dyn://inference-hashed-endpoint-pinned.backend.generate",
                "--block-size", "32"))

# The control for the probes that give the candidate another local directory (chat-template,
# model-dir, revision-extra-file): the same files at another path, the DGD unchanged. Played in
# the shared namespace only.
COPY = Probe("model-dir-copy", (), (), head_dir="copy")

# The operator's worker hash suffixes of the old and the new generation.
OLD_SUFFIX, NEW_SUFFIX = "aaaa1111", "bbbb2222"
HASHED_PREFIX = "inference-hashed"


def dgd_text(model: str, served: str, extra: tuple[str, ...], backend: str = "vllm") -> str:
    model_flag = "--model-path" if backend == "sglang" else "--model"
    args = ", ".join(json.dumps(a) for a in (model_flag, model, "--served-model-name", served,
                                            *extra))
    return textwrap.dedent(f"""\
        apiVersion: nvidia.com/v1beta1
        kind: DynamoGraphDeployment
        metadata:
          name: tiny
          namespace: inference
        spec:
          components:
            - name: worker
              type: worker
              replicas: 2
              podTemplate:
                spec:
                  containers:
                    - name: main
                      image: nvcr.io/nvidia/ai-dynamo/{backend}-runtime:1.6.1
                      command: [python3, -m, dynamo.{backend}]
                      args: [{args}]
        """)


def sides(p: Probe) -> tuple[str, str]:
    name = f"tiny-{p.name}"
    return (dgd_text("Qwen/Qwen3-0.6B", name, p.base, p.backend),
            dgd_text(p.head_model, f"{name}-{p.head_name}" if p.head_name else name, p.head,
                     p.backend))


def mocker_args(text: str, model_dir: Path) -> tuple[tuple[str, ...], str]:
    """The mocker command line of the DGD's worker, through the one mapping."""
    from dgdgen.check.facts import dgd_facts
    from dgdgen.model.dgd import parse
    from dgdgen.runtime.mocker import mocker_invocation
    from dgdgen.yamlio import load_documents_fast

    doc = load_documents_fast(text, "probe.yaml")[0]
    comp = dgd_facts(parse(doc.data, source=doc)).components["worker"]
    inv = mocker_invocation(comp, model_dir=model_dir)
    return inv.args, inv.served_model_name


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def rejected(log: str, model: str) -> bool:
    """The frontend logged that it rejected workers of ``model`` (1.6.1's controller line)."""
    pattern = re.compile(rf"model={re.escape(model)}(\s|$)")
    return any("Rejected incompatible workers" in line and pattern.search(line)
               for line in _ANSI.sub("", log).splitlines())


def run_probes(workdir: str) -> dict[str, dict[str, Any]]:
    """Runs in the private network namespace: every probe in one shared namespace behind a
    frontend that serves every namespace, then every probe (and the pinned endpoint) in
    hash-suffixed worker namespaces behind a prefix frontend, as the operator runs them."""
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.podserver import PodServer
    from dgdgen.runtime.procs import LocalDynamo, inherited_env

    work = Path(workdir)
    out: dict[str, dict[str, Any]] = {}
    # the probes' hundred-odd workers start as forks of a server that imported Dynamo once
    # (dgdgen.runtime.podserver)
    with PodServer(inherited_env()) as pods, LocalDynamo(work / "dynamo", pods=pods) as dyn:
        dirs = {k: make_model_dir(work / "models" / k, **v)  # type: ignore[arg-type]
                for k, v in DIRS.items()}
        fe = dyn.frontend()
        dyn.wait_frontend_up(fe)
        for p in (*PROBES, COPY):
            out[p.name] = play(dyn, fe, p, dirs, hashed=False)
        dyn.stop(fe)
        out["_prefix"] = prefix_split(dyn, dirs["a"])
        # The operator's layout: the frontend selects by prefix (DYN_NAMESPACE_PREFIX, no
        # --namespace), each worker generation registers in {base}-{suffix}.
        fe = dyn.frontend(prefix=HASHED_PREFIX, name="frontend-hashed")
        dyn.wait_frontend_up(fe)
        for p in (*PROBES, PINNED):
            out[f"hashed:{p.name}"] = play(dyn, fe, p, dirs, hashed=True)
        dyn.stop(fe)
    return out


def play(dyn: Any, fe: Any, p: Probe, dirs: dict[str, Path], *, hashed: bool) -> dict[str, Any]:
    """One probe: the incumbent, then the candidate beside it; what the frontend did."""
    from dgdgen.runtime import client, metrics

    ns = f"{HASHED_PREFIX}-{p.name}" if hashed else f"inference-probe-{p.name}"
    old_env = {"DYN_NAMESPACE_WORKER_SUFFIX": OLD_SUFFIX} if hashed else {}
    new_env = {"DYN_NAMESPACE_WORKER_SUFFIX": NEW_SUFFIX} if hashed else {}
    base_text, head_text = sides(p)
    inc_args, model = mocker_args(base_text, dirs["a"])
    cand_args, cand_model = mocker_args(head_text, dirs[p.head_dir])
    inc = dyn.mocker(ns, inc_args, env=old_env, name=f"{p.name}-incumbent")
    dyn.wait_worker_ready(inc)
    dyn.wait_model_ready(fe, model, workers=1)
    log_before = len(fe.log_text())
    cand = dyn.mocker(ns, cand_args, env=new_env, name=f"{p.name}-candidate")
    dyn.wait_worker_ready(cand)
    # The frontend either admits the candidate (2 workers), rejects it (log line), or serves it
    # as another model (another served name): wait for one of the three.
    deadline = time.monotonic() + 20
    verdict = "undecided"
    ready: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        ready = dyn.model_ready(fe, model)
        if ready and count_ready_workers(ready) >= 2:
            verdict = "shared"
            break
        if rejected(fe.log_text()[log_before:], model):
            verdict = "rejected"
            break
        if cand_model != model and dyn.model_ready(fe, cand_model):
            verdict = "separate-model"
            break
        time.sleep(0.1)
    if verdict == "shared":
        # The frontend lists the candidate's worker as ready a moment before its router picks
        # it (seen once in CI, operator's layout: all 12 requests right after went to the
        # incumbent). The sample below is the steady state: first one request served by the
        # candidate, within a bound, none of them counted.
        warm = time.monotonic() + 10
        while metrics.worker_requests(cand) == 0 and time.monotonic() < warm:
            client.request(fe.port, model, stream=False, max_tokens=4)
            time.sleep(0.05)
    inc_before, cand_before = metrics.worker_requests(inc), metrics.worker_requests(cand)
    outcomes = [client.request(fe.port, model, stream=False, max_tokens=4)
                for _ in range(REQUESTS)]
    if hashed and verdict == "shared":
        # The prefix frontend picks one of the model's worker namespaces per request at random,
        # in proportion to its workers (lib/llm/src/discovery/model.rs): twelve requests all to
        # one of two namespaces happen once in 2,048 runs of a probe. Sample on until both have
        # served one, up to HASHED_SAMPLE requests, so "both serve" fails by chance 1 in 2^63.
        while len(outcomes) < HASHED_SAMPLE and (metrics.worker_requests(inc) == inc_before
                                                  or metrics.worker_requests(cand) == cand_before):
            outcomes.append(client.request(fe.port, model, stream=False, max_tokens=4))
    seen: dict[str, Any] = {
        "verdict": verdict,
        "rejected_logged": rejected(fe.log_text()[log_before:], model),
        "sent": len(outcomes),
        "ok": sum(1 for o in outcomes if o.ok),
        "incumbent": metrics.worker_requests(inc) - inc_before,
        "candidate": metrics.worker_requests(cand) - cand_before,
        "incumbent_args": list(inc_args),
        "candidate_args": list(cand_args),
        # The Dynamo namespaces the frontend lists for the model (one per worker generation
        # when the suffix isolates them).
        "namespaces": sorted((dyn.model_ready(fe, model) or {}).get("namespaces") or {}),
    }
    if verdict in ("rejected", "separate-model"):
        seen["after_last_old_worker"] = last_old_worker_goes(dyn, fe, inc, cand, model)
    dyn.stop(cand)
    dyn.stop(inc)
    return seen


def last_old_worker_goes(dyn: Any, fe: Any, inc: Any, cand: Any, model: str) -> dict[str, Any]:
    """The end of an in-place roll: the last incumbent stops. 1.6 then admits the rejected
    configuration, and all traffic flips to it (the block size the frontend reports changes)."""
    from dgdgen.runtime import client, metrics

    def block_size() -> float:
        return metrics.total(metrics.scrape(fe.port), "dynamo_frontend_model_kv_cache_block_size",
                             model=model)

    before_size, before_requests = block_size(), metrics.worker_requests(cand)
    dyn.stop(inc)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ready = dyn.model_ready(fe, model)
        if ready and count_ready_workers(ready) >= 1:
            break
        time.sleep(0.05)
    else:
        time.sleep(1.0)  # no worker for the model (another served name): let the frontend settle
    outcomes = [client.request(fe.port, model, stream=False, max_tokens=4) for _ in range(6)]
    return {"ok": sum(1 for o in outcomes if o.ok),
            "candidate": metrics.worker_requests(cand) - before_requests,
            "block_size_before": before_size, "block_size_after": block_size()}


def prefix_split(dyn: Any, model_dir: Path) -> dict[str, Any]:
    """A frontend selecting by prefix (DYN_NAMESPACE_PREFIX), and two namespaces that start with
    it whose workers have different checksums (block size 16 and 32): how the frontend splits
    the model's requests."""
    from dgdgen.check.facts import dgd_facts
    from dgdgen.model.dgd import parse
    from dgdgen.runtime import client, metrics
    from dgdgen.runtime.mocker import mocker_invocation
    from dgdgen.yamlio import load_documents_fast

    fe = dyn.frontend(prefix="inference-pfx")
    dyn.wait_frontend_up(fe)
    workers = []
    for ns, block in (("inference-pfx", "16"), ("inference-pfx-canary", "32")):
        doc = load_documents_fast(dgd_text("Qwen/Qwen3-0.6B", "tiny-prefix",
                                           ("--block-size", block)), "p.yaml")[0]
        comp = dgd_facts(parse(doc.data, source=doc)).components["worker"]
        w = dyn.mocker(ns, mocker_invocation(comp, model_dir=model_dir).args, name=ns)
        dyn.wait_worker_ready(w)
        workers.append(w)
    dyn.wait_model_ready(fe, "tiny-prefix", workers=2)
    outcomes = [client.request(fe.port, "tiny-prefix", stream=False, max_tokens=4)
                for _ in range(2 * REQUESTS)]
    seen = {"ok": sum(1 for o in outcomes if o.ok),
            "served": [metrics.worker_requests(w) for w in workers]}
    for proc in (*workers, fe):
        dyn.stop(proc)
    return seen


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from dgdgen.runtime import RuntimeUnavailable
    from dgdgen.runtime.netns import run_isolated

    work = tmp_path_factory.mktemp("runtime-truth")
    start = time.monotonic()
    try:
        result: dict[str, dict[str, Any]] = run_isolated(run_probes, str(work), timeout=600)
    except RuntimeUnavailable as exc:  # pragma: no cover - CI runs as root
        pytest.skip(f"ai-dynamo runtime cannot run here: {exc}")
    result["_elapsed"] = {"seconds": time.monotonic() - start}
    # What the runtime did, per probe, next to the logs (for reading a failure).
    (work / "truth.json").write_text(json.dumps(result, indent=2, sort_keys=True),
                                     encoding="utf-8")
    return result


def dgdgen_diff(tmp: Path, p: Probe, *extra: str) -> dict[str, Any]:
    base, head = sides(p)
    (tmp / "old.yaml").write_text(base, encoding="utf-8")
    (tmp / "new.yaml").write_text(head, encoding="utf-8")
    proc = run_cli("diff", str(tmp / "old.yaml"), str(tmp / "new.yaml"),
                   "--format", "json", "--fail-on", "never", "--dynamo-version",
                   runtime.DYNAMO_VERSION, *extra, env={"NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_checker_verdict_matches_the_runtime(probe: Probe, truth: dict[str, dict[str, Any]],
                                             tmp_path: Path) -> None:
    seen = truth[probe.name]
    # Every request for the incumbent's model succeeded: the probe measured something.
    assert seen["ok"] == REQUESTS, seen
    assert seen["incumbent"] + seen["candidate"] >= REQUESTS, seen
    assert seen["verdict"] != "undecided", seen
    runtime_isolates = seen["candidate"] == 0
    # The log line and the verdict agree with the request counts.
    assert (seen["verdict"] == "rejected") == seen["rejected_logged"], seen
    assert runtime_isolates == (seen["verdict"] in ("rejected", "separate-model")), seen

    # One shared namespace is what `--workers-run-by unmanaged` (and Grove / LWS before 1.5)
    # describes: the checker's shared-namespace text for 1.6 must be what the runtime did.
    report = dgdgen_diff(tmp_path, probe, "--workers-run-by", "unmanaged")
    codes = sorted({f["code"] for f in report["findings"]})
    assert ("DGD201" in codes) == runtime_isolates, (probe.name, codes, seen)
    assert report["isolation_required"] == runtime_isolates, (probe.name, report, seen)
    assert report["worker_namespaces"] == "shared"
    for m in [f["details"] for f in report["findings"] if f["code"] == "DGD201"]:
        expected = RENAME if probe.head_name else SHARED_MDC["1.6"]
        assert expected in m and HASHED_MDC not in m, (probe.name, m)


@pytest.mark.parametrize("probe", PROBES, ids=[p.name for p in PROBES])
def test_checker_consequence_matches_the_operators_hashed_roll(
        probe: Probe, truth: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """The operator's layout (the default `--workers-run-by deployment` on 1.6): nothing is
    rejected. A checksum change is served side by side — both generations get requests and the
    frontend lists both namespaces for the one model — exactly when DGD201 says so; a new served
    name is a second model, as DGD201's rename text says; a safe change is shared too."""
    seen = truth[f"hashed:{probe.name}"]
    assert REQUESTS <= seen["sent"] <= HASHED_SAMPLE and seen["ok"] == seen["sent"], seen
    assert not seen["rejected_logged"], seen
    assert seen["incumbent_args"] != seen["candidate_args"], seen
    report = dgdgen_diff(tmp_path, probe)
    assert report["worker_namespaces"] == "hashed"
    messages = [f["details"] for f in report["findings"] if f["code"] == "DGD201"]
    if probe.head_name:
        assert seen["verdict"] == "separate-model" and seen["candidate"] == 0, seen
        after = seen["after_last_old_worker"]
        assert after["ok"] == 0, after  # the old name has no worker once the old one goes
        assert messages and all(RENAME in m for m in messages), messages
        return
    # Both generations served the one model, each from its own suffixed namespace.
    assert seen["verdict"] == "shared", seen
    assert seen["incumbent"] > 0 and seen["candidate"] > 0, seen
    assert seen["namespaces"] == [f"{HASHED_PREFIX}-{probe.name}-{OLD_SUFFIX}",
                                  f"{HASHED_PREFIX}-{probe.name}-{NEW_SUFFIX}"], seen
    shared_texts = set(SHARED_MDC.values())
    for m in messages:
        assert HASHED_MDC in m, m
        assert not any(t in m for t in shared_texts), m
    # The runtime cannot tell a checksum change from a safe one here (both are served): whether
    # DGD201 fires at all is pinned by the shared-namespace probes above.
    assert bool(messages) == (truth[probe.name]["verdict"] in ("rejected", "separate-model"))


def test_a_pinned_endpoint_defeats_the_suffix_and_the_checker_says_so(
        truth: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """A worker that names its --endpoint registers in that namespace whatever the operator's
    suffix: on the operator's layout the frontend then rejects the new block size, and DGD201
    (default backing) gives the one-namespace text with the reason."""
    seen = truth[f"hashed:{PINNED.name}"]
    assert seen["verdict"] == "rejected" and seen["rejected_logged"], seen
    assert seen["candidate"] == 0 and seen["ok"] == REQUESTS, seen
    assert seen["namespaces"] == [f"{HASHED_PREFIX}-{PINNED.name}"], seen
    report = dgdgen_diff(tmp_path, PINNED)
    messages = [f["details"] for f in report["findings"] if f["code"] == "DGD201"]
    assert messages, report
    for m in messages:
        assert SHARED_MDC["1.6"] in m and HASHED_MDC not in m, m
        assert "pins --endpoint" in m, m


def test_every_probe_changes_what_the_mocker_runs(truth: dict[str, dict[str, Any]]) -> None:
    """A probe whose candidate runs the incumbent's exact command line would prove nothing about
    the flag (a flag the mapping dropped would look safe)."""
    for p in PROBES:
        seen = truth[p.name]
        assert seen["incumbent_args"] != seen["candidate_args"], p.name


def test_prefix_selection_splits_across_checksums_and_dgd107_flags_it(
        truth: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """Item 4: the prefix frontend sends the model's requests to both namespaces although their
    checksums differ, and DGD107 flags a frontend configured that way."""
    seen = truth["_prefix"]
    assert seen["ok"] == 2 * REQUESTS, seen
    split = all(n > 0 for n in seen["served"])
    case = tmp_path / "frontend.yaml"
    case.write_text(textwrap.dedent("""\
        apiVersion: nvidia.com/v1beta1
        kind: DynamoGraphDeployment
        metadata:
          name: pfx
          namespace: inference
        spec:
          components:
            - name: frontend
              type: frontend
              podTemplate:
                spec:
                  containers:
                    - name: main
                      image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1
                      command: [python3, -m, dynamo.frontend]
                      env:
                        - name: DYN_NAMESPACE_PREFIX
                          value: inference-pfx
        """), encoding="utf-8")
    proc = run_cli("check", str(case), "--format", "json", "--fail-on", "never", "--select",
                   "DGD107")
    assert proc.returncode == 0, proc.stderr
    codes = [f["code"] for f in json.loads(proc.stdout)["findings"]]
    assert ("DGD107" in codes) == split, (codes, seen)


def test_1_6_consequence_the_rejected_configuration_takes_all_traffic_at_the_end(
        truth: dict[str, dict[str, Any]]) -> None:
    """DGD201's 1.6 text: rejected workers sit idle while old workers remain, then all traffic
    flips to them when the last old worker goes (for the block size: the frontend's reported
    block size changes to the candidate's)."""
    assert "flips all traffic" in SHARED_MDC["1.6"]
    rejected_probes = [p for p in PROBES if truth[p.name]["verdict"] == "rejected"]
    assert len(rejected_probes) >= 5
    for p in rejected_probes:
        seen = truth[p.name]
        after = seen["after_last_old_worker"]
        assert seen["candidate"] == 0, (p.name, seen)
        assert after["ok"] == 6 and after["candidate"] == 6, (p.name, after)
    size = truth["block-size"]["after_last_old_worker"]
    base = dict(zip(PROBES[0].base[::2], PROBES[0].base[1::2], strict=True))["--block-size"]
    head = dict(zip(PROBES[0].head[::2], PROBES[0].head[1::2], strict=True))["--block-size"]
    assert (size["block_size_before"], size["block_size_after"]) == (float(base), float(head))


def test_a_new_served_name_leaves_the_old_name_without_workers(
        truth: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """DGD201's text for a served-name change: the old name loses its workers, and requests for
    it fail once the last old worker goes (nothing is rejected: it is another model)."""
    probe = next(p for p in PROBES if p.head_name)
    seen = truth[probe.name]
    after = seen["after_last_old_worker"]
    assert seen["verdict"] == "separate-model" and not seen["rejected_logged"], seen
    assert after["ok"] == 0 and after["candidate"] == 0, after
    messages = [f["details"] for f in dgdgen_diff(tmp_path, probe)["findings"]
                if f["code"] == "DGD201"]
    assert messages and all(RENAME in m for m in messages), messages


def test_another_model_directory_is_another_card_whatever_its_files(
        truth: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """The mocker registers its local model directory as the card's source_path, so a candidate
    reading the very same files from another path is rejected too: the probes that change the
    directory (chat-template, model-dir, revision-extra-file) show that a new directory is a new
    card, not which of its files the card hashes (that is read in the source; docs/checker.md,
    "The card table"). The DGD is unchanged, and the checker rightly says nothing."""
    seen = truth[COPY.name]
    assert seen["verdict"] == "rejected" and seen["rejected_logged"], seen
    assert seen["candidate"] == 0 and seen["ok"] == REQUESTS, seen
    assert seen["incumbent_args"] != seen["candidate_args"], seen
    assert dgdgen_diff(tmp_path, COPY)["findings"] == []
