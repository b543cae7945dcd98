"""dgdgen traffic: look at a rollout's traffic split and move an HAProxy's weights at run time."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from dgdgen.commands._common import state_selector

if TYPE_CHECKING:
    from dgdgen.plan.prepared import Prepared

HELP = "show each step's traffic split; apply a step's weights to a running HAProxy"
DESCRIPTION = """\
Traffic between the stable and candidate generations, per plan state.

  show         the split of new requests at every state (and the HAProxy weights, for the
               haproxy provider)
  config       print the haproxy.cfg of one state (haproxy provider)
  set-weights  apply one state's weights to a running HAProxy through its runtime API (stats
               socket): instant, no reload, streams in flight are not touched. Not persistent:
               a reload or a new pod starts from the config weights (Git stays the truth) unless
               --state-file saves them for the next reload. Use `--step rollback` for an instant
               rollback.

examples:
  dgdgen traffic show examples/sglang-disagg-transfer-backend/rollout.yaml
  dgdgen traffic config examples/sglang-disagg-transfer-backend/rollout.yaml --step 2
  dgdgen traffic set-weights rollout.yaml --step 2 --socket /var/run/haproxy/admin.sock
  dgdgen traffic set-weights rollout.yaml --step rollback --socket /var/run/haproxy/admin.sock
  dgdgen traffic set-weights rollout.yaml --step 1 --dry-run
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    sub.required = True
    show = sub.add_parser(
        "show", help="the split of new requests at every state",
        description="Print, for every plan state (baseline, each step, rollback, cleanup), the "
        "share of new requests each generation's frontend gets and, with the haproxy provider, "
        "the HAProxy server weights (0..256) that carry it. Requests already streaming stay "
        "where they are.",
    )
    show.add_argument("spec", metavar="SPEC", help="rollout spec file")
    show.add_argument("-f", "--format", choices=("table", "json"), default="table",
                      help="table: one line per state; json: the states with their backends "
                      "as data (default: table)")
    cfg = sub.add_parser(
        "config", help="print the haproxy.cfg of one state",
        description="Print the haproxy.cfg that the rendered ConfigMap holds for one plan "
        "state (haproxy provider only): frontends, the backend with one server per generation "
        "at the state's weights, health checks, timeouts for streaming responses and the "
        "runtime API socket. The file `haproxy -c -f` accepts.",
    )
    cfg.add_argument("spec", metavar="SPEC", help="rollout spec file")
    cfg.add_argument("--step", type=state_selector, required=True, metavar="N",
                     help="a step number, baseline, rollback or cleanup")
    sw = sub.add_parser(
        "set-weights", help="apply one state's weights through HAProxy's runtime API",
        description="Apply one plan state's weights to a running HAProxy (stats socket, level "
        "admin). Exit 0 when the proxy reports exactly the planned weights.",
    )
    sw.add_argument("spec", metavar="SPEC", help="rollout spec file")
    sw.add_argument("--step", type=state_selector, required=True, metavar="N",
                    help="a step number, baseline, rollback or cleanup")
    sw.add_argument("--socket", metavar="PATH", help="the proxy's `stats socket` path")
    sw.add_argument("--dry-run", action="store_true",
                    help="print the runtime commands instead of sending them; with --socket, "
                    "exactly those a live run would send from the proxy's current weights "
                    "(read, not changed)")
    sw.add_argument("--state-file", metavar="PATH",
                    help="then save `show servers state` here (the config's server-state-file) "
                    "so the weights survive a reload")
    sw.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                    help="socket timeout (default 5)")


def _require_haproxy(prepared: Prepared) -> None:
    from dgdgen.errors import InputError

    loaded = prepared.loaded
    provider = loaded.spec.spec.traffic.provider.value
    if provider != "haproxy":
        field = ("spec", "traffic", "provider")
        raise InputError(
            f"this needs the haproxy traffic provider, the spec has {provider!r}",
            location=loaded.location(field), field=field,
            hint="Gateway API weights move by applying the step's HTTPRoute (dgdgen render)",
        )


def _has_backend(api: Any, backend: str) -> bool:
    from dgdgen.errors import InputError

    try:
        api.servers(backend)
    except InputError:
        return False
    return True


def run(args: argparse.Namespace) -> int:
    import json

    from dgdgen.errors import InputError
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.traffic import haproxy as hp
    from dgdgen.traffic import settings
    from dgdgen.traffic.preview import HAPROXY_BACKEND as PREVIEW_BACKEND
    from dgdgen.traffic.preview import of_state as preview_of_state
    from dgdgen.traffic.runtime import RuntimeApi, commands
    from dgdgen.traffic.weights import state_backends

    prepared = prepare(args.spec)
    settings.check(prepared.loaded)
    provider = prepared.loaded.spec.spec.traffic.provider.value
    if args.action == "show":
        rows: list[dict[str, Any]] = []
        for state in prepared.plan.all_states():
            backends = state_backends(prepared, state)
            hw = hp.haproxy_weights([b.weight for b in backends])
            route = preview_of_state(prepared, state)
            rows.append({
                "state": state.label,
                "preview": route.describe() if route is not None else None,
                "backends": [
                    {"generation": b.key, "role": b.role, "service": b.service,
                     "weight": b.weight, "present": b.present,
                     "capacity": round(b.capacity, 4), "haproxyWeight": w,
                     "serving": b.serving}
                    for b, w in zip(backends, hw, strict=True)
                ],
            })
        if args.format == "json":
            sys.stdout.write(json.dumps({"provider": provider, "states": rows}, indent=2) + "\n")
            return 0
        sys.stdout.write(f"provider: {provider}\n")
        width = max(9, *(len(row["state"]) for row in rows))
        for row in rows:
            parts = []
            for b in row["backends"]:
                if not b["present"]:
                    continue
                text = f"{b['generation']} {b['weight']:>3}%"
                if provider == "haproxy":
                    text += f" (weight {b['haproxyWeight']})"
                if not b["serving"]:
                    text += " no workers"  # haproxy: `disabled`, not even sticky clients
                parts.append(text)
            if row["preview"]:  # spec.traffic.preview: the header's own way to the candidate
                parts.append(f"+ {row['preview']} → {prepared.plan.candidate_revision}")
            sys.stdout.write(f"  {row['state']:<{width}} " + "  ".join(parts) + "\n")
        return 0
    _require_haproxy(prepared)
    state = prepared.state(args.step)
    if args.action == "config":
        sys.stdout.write(hp.config_text(prepared, state, state_backends(prepared, state)))
        return 0
    targets = hp.runtime_targets(prepared, state)
    if args.socket is None and not args.dry_run:
        raise InputError("set-weights needs --socket PATH (or --dry-run)")
    if args.dry_run:
        # The order depends on the weights the proxy has now (gains first, docs/traffic.md), so
        # with --socket the dry run reads them and prints the live run's exact sequence.
        current = None
        if args.socket is not None:
            current = RuntimeApi(args.socket, timeout=args.timeout).servers(hp.BACKEND)
        for cmd in commands(hp.BACKEND, targets, current):
            sys.stdout.write(cmd + "\n")
        # the preview backend's server, where the running config has one (docs/traffic.md)
        previews = hp.preview_targets(prepared, state)
        now = None
        if previews and args.socket is not None:
            api = RuntimeApi(args.socket, timeout=args.timeout)
            now = api.servers(PREVIEW_BACKEND) if _has_backend(api, PREVIEW_BACKEND) else None
            previews = previews if now is not None else []
        for cmd in commands(PREVIEW_BACKEND, previews, now):
            sys.stdout.write(cmd + "\n")
        return 0
    api = RuntimeApi(args.socket, timeout=args.timeout)
    sent = api.apply(hp.BACKEND, targets)
    previews = hp.preview_targets(prepared, state)
    if previews and _has_backend(api, PREVIEW_BACKEND):
        sent += api.apply(PREVIEW_BACKEND, previews)
    elif previews and previews[0].enabled:
        sys.stderr.write(f"{state.label}: the running config has no preview route: it comes "
                         "with this state's config (a reload), the runtime API cannot add it\n")
    for cmd in sent:  # the same lines, in the same order, as --dry-run --socket prints
        sys.stdout.write(cmd + "\n")
    if args.state_file:
        api.save_state(args.state_file)
    split = ", ".join(f"{t.server}={t.weight}{'' if t.enabled else ' (maint)'}" for t in targets)
    sys.stderr.write(
        f"{state.label}: {split} ({len(sent)} command(s)"
        f"{', state saved' if args.state_file else ''})\n"
    )
    return 0
