"""HAProxy: the weight scale and the ``haproxy.cfg`` of one plan state.

Choices and the facts behind them are in docs/traffic.md; the short form is in the template
(``templates/haproxy/haproxy.cfg.j2``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dgdgen.traffic.preview import HAPROXY_BACKEND as PREVIEW_BACKEND
from dgdgen.traffic.preview import of_state as preview_of_state
from dgdgen.traffic.weights import Backend

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared

# Config and runtime weights are 0..256 (docs/traffic.md; tests/traffic/test_haproxy_config.py).
MAX_WEIGHT = 256
BACKEND = "be_frontends"
CONFIG_DIR = "/usr/local/etc/haproxy"  # docker-library/haproxy 2.6/Dockerfile
CONFIG_FILE = "haproxy.cfg"
RUN_DIR = "/var/run/haproxy"
ADMIN_SOCKET = f"{RUN_DIR}/admin.sock"
MASTER_SOCKET = f"{RUN_DIR}/master.sock"
STATE_FILE = f"{RUN_DIR}/server-state"
STATS_PORT = 8404
PEER_NAME = "local"
PEER_ADDRESS = "127.0.0.1:10000"
CHECKSUM_ANNOTATION = "checksum/config"


def haproxy_weights(percents: Sequence[int]) -> tuple[int, ...]:
    """Percentages → HAProxy weights, exactly. Round robin splits by the weights' ratios, so
    multiplying every percentage by the same integer ``k = 256 // total`` keeps the planned split
    with no rounding and the scale fixed across steps (a plan's 100 % → ``k = 2``: 10 % is weight
    20, 50 % is 100). Inputs above 256 in total are reduced by their common divisor instead.
    Raises ValueError when all are zero, one is negative, or no exact form fits 0..256."""
    if any(p < 0 for p in percents) or sum(percents) <= 0:
        raise ValueError(f"weights must be non-negative and not all zero, got {list(percents)}")
    total = sum(percents)
    if total <= MAX_WEIGHT:
        k = MAX_WEIGHT // total
        return tuple(p * k for p in percents)
    g = 0
    for p in percents:
        g = math.gcd(g, p)
    reduced = tuple(p // g for p in percents)
    if max(reduced) > MAX_WEIGHT:
        raise ValueError(f"{list(percents)} cannot be expressed exactly in 0..{MAX_WEIGHT}")
    return reduced


def seconds(duration: str) -> str:
    """A spec duration as HAProxy time (HAProxy takes one number and one unit, not ``1h30m``)."""
    from dgdgen.spec import parse_duration

    return f"{parse_duration(duration)}s"


@dataclass(frozen=True)
class Server:
    name: str
    address: str  # host:port
    weight: int  # 0..256
    enabled: bool  # false: `disabled` (maintenance) — no traffic at all, sticky clients included
    comment: str


def served_model(dgd: Any) -> str | None:
    """The model name a DGD's workers serve: ``--served-model-name`` if given, else the
    ``--model`` / ``--model-path`` they load (the name the frontend lists)."""
    found: dict[str, str] = {}
    for comp in dgd.workers():
        words = [w for a in comp.args for w in str(a).split()]
        for i, w in enumerate(words):
            for flag in ("--served-model-name", "--model", "--model-path"):
                if w == flag and i + 1 < len(words):
                    found.setdefault(flag, words[i + 1])
                elif w.startswith(flag + "="):
                    found.setdefault(flag, w.split("=", 1)[1])
    for flag in ("--served-model-name", "--model", "--model-path"):
        if flag in found:
            return found[flag]
    return None


def health_path(prepared: Prepared) -> str:
    """The readiness path HAProxy checks: the spec's, else ``/v1/models/{model}/ready`` of the
    model both generations serve (one ``option httpchk`` per backend). The Dynamo 1.6.1 frontend
    answers it 404 while it has no workers for the model and 200 once it has, whereas ``/health``
    is 200 with zero workers (tests/rehearse/test_frontend_readiness.py)."""
    from urllib.parse import quote

    from dgdgen.errors import InputError

    hc = settings(prepared).health_check
    if hc.path is not None:
        return str(hc.path)
    field = ("spec", "traffic", "haproxy", "healthCheck", "path")
    names = {served_model(g.dgd) for g in (prepared.stable, prepared.candidate)}
    if len(names) != 1 or None in names:
        shown = ", ".join(sorted(repr(n) for n in names))
        raise InputError(
            "cannot derive the HAProxy readiness check: the generations serve "
            f"{'different models' if len(names) > 1 else 'no model named in their args'} "
            f"({shown}), and one backend has one check path",
            location=prepared.loaded.location(("spec", "traffic", "provider")), field=field,
            hint="set spec.traffic.haproxy.healthCheck.path, e.g. /v1/models/<model>/ready",
        )
    (name,) = names
    # The model name is one path segment (`Qwen/Qwen3-0.6B` → `Qwen%2FQwen3-0.6B`).
    return f"/v1/models/{quote(str(name), safe='')}/ready"


def cluster_domain(prepared: Prepared) -> str:
    return str(settings(prepared).cluster_domain or prepared.loaded.spec.spec.cluster_domain)


def settings(prepared: Prepared) -> Any:
    """The spec's haproxy settings, defaults filled in."""
    from dgdgen.spec import Haproxy

    return prepared.loaded.spec.spec.traffic.haproxy or Haproxy.model_validate({})


def servers(prepared: Prepared, backends: Sequence[Backend]) -> tuple[Server, ...]:
    """One server per generation in *every* state, so the runtime API can move weights between
    any two states of the plan (it cannot add servers). A generation that does not exist or has
    no workers is ``disabled``: HAProxy sends it nothing, not even sticky clients."""
    ns = prepared.loaded.spec.metadata.namespace
    weights = haproxy_weights([b.weight for b in backends])
    out = []
    for b, w in zip(backends, weights, strict=True):
        state = f"{b.weight}% of new requests" if b.serving else "not serving"
        out.append(Server(
            name=b.key,
            address=f"{b.service}.{ns}.svc.{cluster_domain(prepared)}:8000",
            weight=w,
            enabled=b.serving,
            comment=f"{b.role} generation {b.key} (DGD {b.dgd}): {state}",
        ))
    return tuple(out)


def config_text(prepared: Prepared, state: PlanStep, backends: Sequence[Backend]) -> str:
    """The ``haproxy.cfg`` of ``state`` (deterministic text)."""
    import jinja2

    from dgdgen.resources import read_text

    hp = settings(prepared)
    t = hp.timeouts
    sticky = prepared.loaded.spec.spec.traffic.sticky
    sticky_ctx = None
    if sticky is not None:
        fetch = f"req.hdr({sticky.header})" if sticky.header else f"req.cook({sticky.cookie})"
        sticky_ctx = {"fetch": fetch, "expire": seconds(sticky.expire)}
    split = ", ".join(f"{b.key} {b.weight}%" for b in backends if b.present)
    preview_ctx = None
    route = preview_of_state(prepared, state)
    cand = next((s for s, b in zip(servers(prepared, backends), backends, strict=True)
                 if b.role == "candidate" and s.enabled), None)
    if route is not None and cand is not None:
        preview_ctx = {
            "what": route.describe(), "fetch": route.haproxy_fetch(), "value": route.value,
            "backend": PREVIEW_BACKEND,
            "server": Server(cand.name, cand.address, 1, True,
                             f"candidate generation {cand.name}: every request with "
                             f"{route.describe()}"),
        }
    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )
    template = env.from_string(read_text("templates", "haproxy", "haproxy.cfg.j2"))
    return template.render(
        # No state label: rollback must render byte-identical to the baseline.
        title=f"rollout {prepared.plan.rollout}: {split}",
        admin_socket=ADMIN_SOCKET,
        state_file=STATE_FILE,
        hard_stop_after=seconds(t.hard_stop_after),
        maxconn=hp.maxconn,
        sticky=sticky_ctx,
        peer_name=PEER_NAME,
        peer_address=PEER_ADDRESS,
        timeouts={
            "connect": seconds(t.connect),
            "server": seconds(t.server),
            "client": seconds(t.client),
            "http_request": seconds(t.http_request),
            "http_keep_alive": seconds(t.http_keep_alive),
            "queue": seconds(t.queue),
            "check": seconds(hp.health_check.interval),
        },
        bind=f":{hp.port}",
        stats_bind=f":{STATS_PORT}",
        backend=BACKEND,
        health={
            "path": health_path(prepared),
            "interval": seconds(hp.health_check.interval),
            "fall": hp.health_check.fall,
            "rise": hp.health_check.rise,
            "error_limit": hp.health_check.error_limit,
        },
        servers=servers(prepared, backends),
        preview=preview_ctx,
    )


def checksum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def config_map_name(proxy: str, cfg: str) -> str:
    """The proxy's ConfigMap for ``cfg``: ``{proxy}-{10 hex of its SHA-256}``, the same text
    always the same name (40 bits: two configs of one rollout meet by chance about once in
    10^12 pairs)."""
    return f"{proxy}-{checksum(cfg)[:10]}"


def runtime_targets(prepared: Prepared, state: PlanStep) -> list[Any]:
    """The runtime-API targets of ``state``: exactly the servers, weights and enabled flags its
    rendered ``haproxy.cfg`` holds, so the fast path and the config path agree."""
    from dgdgen.traffic.runtime import Target
    from dgdgen.traffic.weights import state_backends

    return [
        Target(s.name, s.weight, s.enabled)
        for s in servers(prepared, state_backends(prepared, state))
    ]


def preview_targets(prepared: Prepared, state: PlanStep) -> list[Any]:
    """The runtime-API target of the preview backend (``be_preview``) for ``state``: the
    candidate's server there, in rotation exactly in the states that carry the preview; empty
    without a preview. The runtime API cannot add or remove the ACL: a state without a preview
    puts that server in maintenance, so a request with the header gets 503 until the state's
    config is loaded — never the candidate being rolled back (docs/traffic.md)."""
    from dgdgen.traffic.preview import carries, of
    from dgdgen.traffic.runtime import Target

    if of(prepared) is None:
        return []
    return [Target(prepared.plan.candidate_revision, 1, carries(state))]
