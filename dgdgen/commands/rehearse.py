"""dgdgen rehearse SPEC: the whole rollout, step by step, against the real Dynamo runtime."""

from __future__ import annotations

import argparse
import sys

HELP = "rehearse a whole rollout against the real Dynamo frontend and mocker workers"
DESCRIPTION = """\
Run the rollout end to end on this machine before a GPU is spent: every rendered DGD of every
state becomes local processes (one Dynamo frontend per generation, one mocker worker per worker
replica, engine flags carried over), traffic goes through a real HAProxy (the rendered haproxy.cfg,
or a stand-in with the HTTPRoute's weights), a real Prometheus scrapes what the rendered
PodMonitors select, a bounded streaming + unary load runs throughout, and the GitOps commands
(render --into, analyze --record, promote, rollback, cleanup) move the rollout in a scratch Git
repository. Everything runs in a private network namespace with only loopback (as root directly,
otherwise inside an unprivileged user namespace).

Needs the `rehearse` extra and the Dynamo wheels, `haproxy`, `prometheus` and `git`
(docs/rehearse.md). Nothing is fetched from the network (HF_HUB_OFFLINE=1).

exit codes: 0 the rollout completed (cleanup reached) and no request failed, 1 a gate rolled it back
or clients saw failed or truncated requests, 2 bad input or the
extra is missing, 3 the rehearsal could not run here (no haproxy / prometheus / namespace).

examples:
  dgdgen rehearse examples/vllm-disagg-block-size/rollout.yaml --min-requests 40
  dgdgen rehearse examples/vllm-disagg-block-size/rollout.yaml --candidate-slowdown 4
"""


def _positive(value: str) -> float:
    try:
        f = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not f > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {value!r}")
    return f


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="rollout spec file")
    p.add_argument("--time-scale", type=_positive, default=0.05, metavar="F",
                   help="multiply pauses and analysis windows by F (default 0.05: 10m → 30s)")
    p.add_argument("--rate", type=_positive, default=20.0, metavar="RPS",
                   help="requests per second through the proxy (default 20)")
    p.add_argument("--min-requests", type=int, default=None, metavar="N",
                   help="the gates' minimum requests per window in the rehearsal (default: the "
                   "spec's; a scaled clock rarely collects a production-sized sample)")
    p.add_argument("--candidate-slowdown", type=_positive, default=1.0, metavar="X",
                   help="make the candidate X times slower (the mocker's speedup ratio 1/X), "
                   "to rehearse a regression the gates must catch")
    p.add_argument("--traffic-path", choices=("reload", "runtime-api"), default="reload",
                   help="haproxy provider: move weights by reloading the rendered config (the "
                   "Git path, default) or through the runtime API first (the fast path)")
    p.add_argument("--report", metavar="DIR", default="rehearsal",
                   help="write report.md, report.json and chart.svg here (default ./rehearsal)")
    p.add_argument("--workdir", metavar="DIR",
                   help="keep processes' logs, the scratch repository and Prometheus data here "
                   "(default: a temporary folder, removed afterwards)")


def run(args: argparse.Namespace) -> int:
    import os
    import shutil
    import tempfile
    from pathlib import Path

    from dgdgen import runtime
    from dgdgen.errors import DgdgenError
    from dgdgen.pipeline import prepare
    from dgdgen.rehearse.prometheus import prometheus_binary
    from dgdgen.rehearse.proxy import haproxy_binary

    if args.min_requests is not None and args.min_requests < 1:
        raise runtime.MissingExtra("--min-requests must be at least 1")
    runtime.require()
    prepare(args.spec)  # bad input: exit 2 before anything starts
    for name, found in (("haproxy", haproxy_binary()), ("prometheus", prometheus_binary()),
                        ("git", shutil.which("git"))):
        if not found:
            raise runtime.RuntimeUnavailable(
                f"`{name}` is not installed; the rehearsal runs the real one "
                "(Debian: apt-get install haproxy prometheus git)"
            )
    import signal

    from dgdgen.rehearse.report import summary_lines, write_report
    from dgdgen.rehearse.run import Options, Rehearsal
    from dgdgen.runtime.netns import enter_private_netns

    def _terminated(signum: int, _frame: object) -> None:
        # a stopped rehearsal still stops its processes (the finally blocks below)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _terminated)
    enter_private_netns()
    os.environ["HF_HUB_OFFLINE"] = "1"
    keep = args.workdir is not None
    workdir = Path(args.workdir) if keep else Path(tempfile.mkdtemp(prefix="dgdgen-rehearse-"))

    def say(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    opts = Options(
        spec=Path(args.spec), time_scale=args.time_scale, rate=args.rate,
        min_requests=args.min_requests, candidate_slowdown=args.candidate_slowdown,
        traffic_path=args.traffic_path, workdir=workdir,
    )
    try:
        try:
            outcome = Rehearsal(opts, say).run()
        except DgdgenError as exc:
            if exc.exit_code == 3:
                raise
            # the spec was checked before anything started: what fails now is the rehearsal
            raise runtime.RuntimeUnavailable(f"the rehearsal could not run: {exc}") from exc
        except RuntimeError as exc:
            raise runtime.RuntimeUnavailable(
                f"the rehearsal could not run: {exc}"
                + ("" if keep else " (keep the logs with --workdir DIR)")
            ) from exc
        try:
            data = write_report(outcome, Path(args.report))
        finally:
            outcome.prometheus.stop()
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"rehearsal {data['result']}: {data['requests']} requests, {data['failed']} failed, "
          f"{data['truncated']} truncated, {data['wallSeconds']} s")
    for line in summary_lines(data):
        print(line)
    print(f"report: {Path(args.report) / 'report.md'}")
    return int(outcome.exit_code)
