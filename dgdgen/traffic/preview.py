"""Preview before weight: a request carrying the spec's header (or cookie) value reaches the
candidate only, through the public entry point, whatever the step's weights
(``spec.traffic.preview``; docs/traffic.md, "Preview before weight").

The route exists in the forward steps, from the first state in which the candidate runs until
cleanup; the baseline, the rollback states and cleanup carry none (so a rollback is
byte-identical to the baseline). Every provider that reads requests renders it: an HTTPRoute rule
with a header match and the candidate's backend alone, ahead of the weighted rule (Gateway API
v1.6.1: a rule with more header matches takes precedence, and within a route the first of equal
rules); HAProxy an ACL on the header or cookie that selects a backend holding the candidate's
server alone. What cannot honour it is refused here, with the field's file:line (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dgdgen.errors import InputError

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.load import LoadedSpec
    from dgdgen.plan.prepared import Prepared

FIELD = ("spec", "traffic", "preview")
HTTPROUTE_PROVIDERS = ("gateway-api", "gamma", "inference-pool")
# One frontend serves both revisions there: no route can send a request to the candidate alone.
SHARED_FRONTEND_MODES = ("partition", "in-place")
# The HAProxy backend the preview ACL selects (templates/haproxy/haproxy.cfg.j2).
HAPROXY_BACKEND = "be_preview"


@dataclass(frozen=True)
class PreviewRoute:
    """The resolved preview: a header or a cookie, its name and the value that selects the
    candidate."""

    kind: str  # header | cookie
    name: str
    value: str

    def describe(self) -> str:
        """``header X-Dgd-Preview: on`` / ``cookie dgd-preview=on``, for people."""
        if self.kind == "cookie":
            return f"cookie {self.name}={self.value}"
        return f"header {self.name}: {self.value}"

    def request_headers(self) -> dict[str, str]:
        """What a client sends to be routed to the candidate."""
        if self.kind == "cookie":
            return {"Cookie": f"{self.name}={self.value}"}
        return {self.name: self.value}

    def haproxy_fetch(self) -> str:
        return f"req.cook({self.name})" if self.kind == "cookie" else f"req.hdr({self.name})"


def of(prepared: Prepared) -> PreviewRoute | None:
    """The spec's preview, its value defaulted to the candidate's revision; None without one."""
    p = prepared.loaded.spec.spec.traffic.preview
    if p is None:
        return None
    value = p.value if p.value is not None else prepared.plan.candidate_revision
    if p.cookie is not None:
        return PreviewRoute("cookie", str(p.cookie), str(value))
    return PreviewRoute("header", str(p.header), str(value))


def carries(state: PlanStep) -> bool:
    """Whether ``state`` carries the preview route: a forward step in which the candidate runs
    with workers. Never the baseline, a rollback state or cleanup."""
    return (state.kind == "step" and state.index > 0 and state.candidate.present
            and state.candidate.capacity > 0)


def of_state(prepared: Prepared, state: PlanStep) -> PreviewRoute | None:
    """The preview route ``state`` renders, or None."""
    route = of(prepared)
    return route if route is not None and carries(state) else None


def check(prepared: Prepared) -> None:
    """Refuse a preview that the isolation mode or the traffic provider cannot honour."""
    loaded = prepared.loaded
    traffic = loaded.spec.spec.traffic
    p = traffic.preview
    if p is None:
        return
    provider = traffic.provider.value
    if prepared.mode in SHARED_FRONTEND_MODES:
        raise InputError(
            f"a preview needs the candidate's own frontend, and in isolation {prepared.mode!r} "
            "one frontend serves both revisions: no route can send a request to the candidate "
            "alone", location=loaded.location(FIELD), field=FIELD,
            hint="use isolation separate-dgd (or worker-group), or remove spec.traffic.preview")
    if provider == "none":
        raise InputError(
            "a preview routes by request header, and traffic provider 'none' renders no router "
            "that reads requests (a Service's selector moves connections, not requests)",
            location=loaded.location(FIELD), field=FIELD,
            hint="choose provider gateway-api, gamma, inference-pool or haproxy (a blue-green "
            "strategy works with each: its weight-0 step is the preview)")
    if p.cookie is not None and provider in HTTPROUTE_PROVIDERS:
        f = FIELD + ("cookie",)
        raise InputError(
            f"provider {provider!r} cannot match a cookie: an HTTPRoute (Gateway API v1.6.1, "
            "standard channel) matches headers, and a match on `Cookie` compares the whole "
            "header, every cookie of the client at once",
            location=loaded.location(f), field=f,
            hint="use `header: NAME` instead, or provider haproxy (req.cook)")
    sticky = traffic.sticky
    if sticky is not None:
        same = (p.header is not None and sticky.header is not None
                and p.header.lower() == sticky.header.lower()) or (
            p.cookie is not None and p.cookie == sticky.cookie)
        if same:
            f = FIELD + (("header",) if p.header is not None else ("cookie",))
            raise InputError(
                f"the preview's {'header' if p.header else 'cookie'} {p.header or p.cookie!r} is "
                "also the sticky key: one value cannot both pin a client and select the "
                "candidate", location=loaded.location(f), field=f,
                hint="give the preview a name of its own, e.g. X-Dgd-Preview")


def entry_url(prepared: Prepared) -> str | None:
    """The public entry point the gates call with the preview header: ``preview.url``, else
    the HAProxy Service dgdgen renders; None where the entry point is not known (a Gateway's
    address is its implementation's; a GAMMA parent applies the route to callers inside the
    mesh only)."""
    p = prepared.loaded.spec.spec.traffic.preview
    if p is None:
        return None
    if p.url is not None:
        return str(p.url).rstrip("/")
    traffic = prepared.loaded.spec.spec.traffic
    if traffic.provider.value == "haproxy":
        from dgdgen.spec import Haproxy

        s = traffic.haproxy or Haproxy.model_validate({})
        ns = prepared.loaded.spec.metadata.namespace
        domain = s.cluster_domain or prepared.loaded.spec.spec.cluster_domain
        # the proxy's Service (dgdgen.render.traffic.haproxy_name)
        return f"http://{prepared.plan.rollout}-haproxy.{ns}.svc.{domain}:{s.port}"
    return None


def gate_entry(prepared: Prepared) -> str | None:
    """The URL the probe and the quality gate reach the candidate through: the public entry
    point (:func:`entry_url`) with a preview, else None — they call the candidate's own Service
    as without one. Every gated step carries the preview: a gate runs at a forward step, where
    the candidate runs (:func:`carries`)."""
    return entry_url(prepared) if of(prepared) is not None else None


def gate_headers(prepared: Prepared) -> dict[str, str] | None:
    """What the probe and the quality gate send to be routed to the candidate: the preview's
    header (or cookie) where they call the public entry point, else None."""
    route = of(prepared)
    if route is None or entry_url(prepared) is None:
        return None
    return route.request_headers()


def check_cohorts(loaded: LoadedSpec, i: int) -> None:
    """Cohorts by the preview's value (docs/analysis.md, "A/B experiments"): the candidate's
    users are exactly those who carry it, so the step gives it no public share, and the share
    of units expected to carry it sizes the sample. No stick table is needed: the value keeps
    each user in their cohort, over an HTTPRoute too."""
    body = loaded.spec.spec
    if body.traffic.preview is None:
        f: tuple[str | int, ...] = ("spec", "analysis", "experiment", "cohorts")
        raise InputError("experiment cohorts `preview` need spec.traffic.preview (the header or "
                         "cookie value that puts a user in the candidate's cohort)",
                         location=loaded.location(f), field=f,
                         hint="traffic: {preview: {header: X-Dgd-Cohort, value: b}}")
    w = body.steps[i].weight
    if w != 0:
        f = ("spec", "steps", i, "weight")
        raise InputError(f"with cohorts by the preview's value the candidate's users are those "
                         f"who carry it; weight {w} would add others at random: give the "
                         "experiment step weight 0", location=loaded.location(f), field=f)
    if body.analysis.experiment.cohort_share is None:
        f = ("spec", "analysis", "experiment")
        raise InputError("experiment cohorts `preview` need cohortShare: the share of users "
                         "expected to carry the value, which sizes the sample",
                         location=loaded.location(f), field=f, hint="cohortShare: 0.1")
