"""PromQL for the gates, over Dynamo frontend metrics (docs/analysis.md).

Frontend metrics carry only ``model``; the per-generation PodMonitors that
:mod:`dgdgen.render.analysis` renders add ``dgdgen_rollout`` and ``dgdgen_generation`` at scrape
time, and prometheus-operator adds ``namespace``. Every query selects on those three labels, with
``{{args.NAME}}`` placeholders that Argo Rollouts fills from the run's args (``ResolveMetricArgs``).

With ``spec.gitops.clusters`` (one Application per cluster, docs/gitops.md) every selector also
matches the cluster label (``analysis.clusterLabel``, default ``cluster``) against
``{{args.cluster}}``: :func:`cluster_scoped`. Without it a query over a Prometheus that holds
several clusters' series sums them all, and one cluster could be promoted on another's data.

Each gate query is *guarded*: ``… and on() (sum(increase(requests[W])) >= MIN)`` returns an empty
vector when a generation served fewer than ``min-requests`` requests in the window, so the
conditions (which test ``len(result) > 0`` first) give Inconclusive, never a pass.
"""

from __future__ import annotations

REQUESTS = "dynamo_frontend_requests_total"
TTFT = "dynamo_frontend_time_to_first_token_seconds"
ITL = "dynamo_frontend_inter_token_latency_seconds"

# Label names added at scrape time by the PodMonitors (dgdgen.render.analysis).
LABEL_ROLLOUT = "dgdgen_rollout"
LABEL_GENERATION = "dgdgen_generation"

CANDIDATE = "candidate"
STABLE = "stable"


def arg(name: str) -> str:
    return "{{args." + name + "}}"


def selector(generation_arg: str, *extra: str) -> str:
    parts = [
        f'namespace="{arg("namespace")}"',
        f'{LABEL_ROLLOUT}="{arg("rollout")}"',
        f'{LABEL_GENERATION}="{arg(generation_arg)}"',
        *extra,
    ]
    return "{" + ",".join(parts) + "}"


# Every selector :func:`selector` writes, and so every custom query (dgdgen.analysis.custom
# puts ``${generation}``'s matchers in the user's selectors), holds this matcher, and nothing else
# in a gate query does.
_NAMESPACE_MATCHER = f'namespace="{arg("namespace")}"'


def cluster_scoped(query: str, label: str) -> str:
    """``query`` with ``label="{{args.cluster}}"`` beside the generation's matchers in every
    selector it holds."""
    if _NAMESPACE_MATCHER not in query:
        raise ValueError(f"no generation selector in {query!r}")
    return query.replace(_NAMESPACE_MATCHER, f'{label}="{arg("cluster")}",{_NAMESPACE_MATCHER}')


def window() -> str:
    return "[" + arg("window") + "]"


def request_count(gen: str) -> str:
    """Requests a generation finished in the window (successes and errors)."""
    return f"sum(increase({REQUESTS}{selector(gen)}{window()}))"


def guard(gen: str) -> str:
    return f"({request_count(gen)} >= {arg('min-requests')})"


def quantile(q: float, histogram: str, gen: str) -> str:
    return (
        f"histogram_quantile({q}, sum by (le) "
        f"(rate({histogram}_bucket{selector(gen)}{window()})))"
    )


def error_ratio(gen: str) -> str:
    # Client cancellations are not the generation's fault; every other error_type counts
    # (not_found included: a changed served model name shows up as not_found). A generation
    # without any error series yet has an error rate of 0, hence `or vector(0)`.
    sel = selector(gen, 'status="error"', 'error_type!="cancelled"')
    errors = f"sum(increase({REQUESTS}{sel}{window()}))"
    return f"(({errors} or vector(0)) / {request_count(gen)})"


def absolute_quantile(q: float, histogram: str) -> str:
    return f"{quantile(q, histogram, CANDIDATE)} and on() {guard(CANDIDATE)}"


def relative_quantile(q: float, histogram: str) -> str:
    return (
        f"({quantile(q, histogram, CANDIDATE)} / {quantile(q, histogram, STABLE)})"
        f" and on() {guard(CANDIDATE)} and on() {guard(STABLE)}"
    )


def absolute_error_rate() -> str:
    return f"{error_ratio(CANDIDATE)} and on() {guard(CANDIDATE)}"


def relative_error_rate() -> str:
    return (
        f"({error_ratio(CANDIDATE)} - {error_ratio(STABLE)})"
        f" and on() {guard(CANDIDATE)} and on() {guard(STABLE)}"
    )


def candidate_requests() -> str:
    return f"{request_count(CANDIDATE)} or vector(0)"
