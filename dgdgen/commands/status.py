"""dgdgen status SPEC: where a rollout rendered into Git stands."""

from __future__ import annotations

import argparse
import os
import sys

from dgdgen.commands import _gitops

HELP = "show the recorded step, weights, generations and next gate of a rollout in Git"
DESCRIPTION = """\
Read the rollout's directory (see `dgdgen render --into`) and show the step HEAD records (outside
Git: the directory's index), the traffic weights, the replicas of each generation, the gate of the
current step (the one that must pass before the next promotion) and what comes next. Apart from
that it reports what is not committed: a directory that records another step than HEAD, a write
that was interrupted (which the next writing command finishes or discards), files that differ
from a fresh render (hand edits, a stale render) and uncommitted changes. It only reads.

With --live FILE (the DGDs as the cluster returns them: `kubectl get dgd -n NAMESPACE -o yaml >
FILE`) it also shows the health Argo CD gives each generation's DGD — the health check dgdgen
ships for Argo CD, run on them: Healthy, Progressing (rolling, `updating`, waiting for capacity)
or Degraded (failed, or `insufficient_capacity` for more than 10 minutes), with the operator's
reason; a DGD the recorded step has and the file lacks is Missing.

Exit 0; 1 when the directory drifted from the recorded step (as `render --check`); 2 when the
directory does not exist (a mistyped --into is not a rollout at its baseline).

examples:
  dgdgen status rollout.yaml --into deploy/qwen
  dgdgen status rollout.yaml --into deploy/qwen --format json
  kubectl get dgd -n inference -o yaml > live.yaml
  dgdgen status rollout.yaml --into deploy/qwen --live live.yaml
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    _gitops.add_target(p, push=False)
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: aligned lines for a person; json: the same as data (default: text)")
    p.add_argument("--live", metavar="FILE",
                   help="the DGDs as the cluster returns them (kubectl get dgd -o yaml): show "
                   "the Argo CD health of each generation's DGD (needs lupa: "
                   "pip install 'dgdgen[live]')")


def _title(label: str, index: int, kind: str) -> str:
    return {"baseline": "0 (baseline)", "step": str(index)}.get(kind, kind)


def run(args: argparse.Namespace) -> int:
    import json

    from dgdgen.gitops import status
    from dgdgen.pipeline.report import duration_text, replicas_text

    t = _gitops.target(args)
    if not os.path.isdir(t.into):
        # a mistyped --into (or a spec whose gitops.path is not where the reader stands) must
        # not read as a rollout at its baseline
        from dgdgen.errors import InputError, Location

        given = "--into" if args.into else "spec.gitops.path (the default --into)"
        where = args.into or t.rel
        raise InputError(
            f"{given}: no such directory: nothing was rendered there", location=Location(where),
            hint=f"check the path; a first render creates it: dgdgen render {args.spec} --into "
            f"{where} " + ("--commit" if t.top is not None else "--init"),
        )
    st = status.status(t)
    healths = None
    if args.live is not None:
        from dgdgen.gitops import live

        healths = live.live_health(t.prepared, st.state, live.read_live(args.live))
    if args.format == "json":
        data = st.to_json()
        if healths is not None:
            data["live"] = [lh.to_json() for lh in healths]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 1 if st.drifted else 0
    s = st.state
    n = len(t.prepared.plan.steps) - 1
    rows = [
        ("rollout", f"{st.rollout} ({t.prepared.mode}, {t.prepared.plan.strategy})"),
        ("path", st.path + ("" if st.recorded else "  (nothing rendered yet)")),
        ("step", f"{_title(s.label, s.index, s.kind)} of {n}"),
        ("traffic", (f"stable {s.stable.revision} {s.stable.weight}%, "
                     f"candidate {s.candidate.revision} {s.candidate.weight}%")),
        ("stable", f"{s.stable.revision}: {replicas_text(t.prepared, s.stable)}"),
        ("candidate", f"{s.candidate.revision}: {replicas_text(t.prepared, s.candidate)}"),
    ]
    if s.gate:
        res = st.gates.get(s.label)
        text = "not recorded" if res is None else res.result + (
            f" ({res.message})" if res.message else "")
        rows.append(("gate", f"{s.gate}: {text}"))
    else:
        rows.append(("gate", "none"))
    if st.hold is not None:
        h = st.hold
        rows.append(("paused", (f"by {h.by} since {h.since}: {h.reason} (promote and cleanup "
                     "refuse until `dgdgen resume`)")))
    if st.next_state is not None:
        nx = st.next_state
        what = "cleanup (remove the old generation)" if nx.kind == "cleanup" else (
            f"step {nx.index}: candidate {nx.candidate.weight}%")
        if s.pause_seconds:
            what += f", after a bake time of {duration_text(s.pause_seconds)}"
        if s.gate:
            what += f", once gate {s.gate} passes"
        rows.append(("next", what))
    else:
        rows.append(("next", "nothing: the rollout is finished"))
    if st.head:
        rows.append(("commit", st.head[:12]))
    if st.uncommitted:
        rows.append(("uncommitted", st.uncommitted))
    if st.pending:
        rows.append(("interrupted", st.pending))
    if st.dirty:
        rows.append(("dirty", ", ".join(st.dirty[:5]) + (" …" if len(st.dirty) > 5 else "")))
    for lh in healths or ():
        rows.append((f"live {lh.generation}", f"{lh.name}: {lh.status}: {lh.message}"
                     + ("" if lh.expected else "  (the recorded step no longer has it)")))
    if st.drifted:
        rows.append(("drifted", ", ".join(st.drifted) + "  (see `dgdgen render --into --check`)"))
    width = max(len(k) for k, _ in rows)
    sys.stdout.write("".join(f"{k:<{width}}  {v}\n" for k, v in rows))
    return 1 if st.drifted else 0
