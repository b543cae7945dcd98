"""The rollout spec's ``traffic``: how weight moves between the generations (Gateway API, GAMMA,
an InferencePool and its endpoint picker, or HAProxy; docs/traffic.md).

No ``from __future__ import annotations`` here, as in every module of the spec: with it, pydantic
compiles and evaluates each annotation from its text when a model is built.
"""

import re
from enum import Enum
from typing import Literal

from pydantic import Field, field_validator, model_validator

from dgdgen.spec.base import DNS1035_LABEL, HOSTNAME, QUANTITY, Duration, Image, SpecModel


class TrafficProvider(str, Enum):
    NONE = "none"
    GATEWAY_API = "gateway-api"
    GAMMA = "gamma"
    INFERENCE_POOL = "inference-pool"
    HAPROXY = "haproxy"


class GatewayParent(SpecModel):
    """The Gateway an HTTPRoute attaches to (``parentRefs[]``, group/kind default to Gateway)."""

    name: str = Field(description="Gateway name.")
    namespace: str | None = Field(
        None, description="Gateway namespace (default: the route's namespace). A Gateway in "
        "another namespace must allow routes from this one (listener allowedRoutes)."
    )
    section_name: str | None = Field(None, description="Listener name on the Gateway.")
    port: int | None = Field(None, ge=1, le=65535, description="Listener port.")


class Gamma(SpecModel):
    """GAMMA (service mesh): the HTTPRoute attaches to a Service, so in-cluster callers of that one
    Service name are split between the generations (Gateway API v1.6.1 HTTPRoute, parentRefs)."""

    service: str = Field(
        description="The Service in-cluster callers use; the route's parentRef (group \"\", "
        "kind Service)."
    )
    port: int = Field(8000, ge=1, le=65535, description="Service port the route applies to.")
    create_service: bool = Field(
        True, description="Render that Service (ClusterIP, selecting only the stable "
        "generation's frontend — the candidate's after cleanup — for callers outside the mesh). "
        "Set false when it exists already."
    )

    @field_validator("service")
    @classmethod
    def _service(cls, v: str) -> str:
        if len(v) > 63 or not DNS1035_LABEL.match(v):
            raise ValueError(f"must be a Service name (DNS-1035 label, ≤63), got {v!r}")
        return v


class EndpointPicker(SpecModel):
    """The endpoint picker (EPP) of each generation's InferencePool. Following the upstream
    rollout pattern, every pool has its own EPP; dgdgen renders it with the pool — the Gateway
    API Inference Extension v1.5.0 EPP as its `inferencepool` chart deploys it (Deployment,
    Service `{pool}{nameSuffix}`, RBAC, plugins ConfigMap), scoring the generation's Dynamo
    frontends by their queued and in-flight request gauges (docs/traffic.md)."""

    name_suffix: str = Field("-epp", description="EPP name = pool name + this suffix (the "
                             "upstream chart's `{release}-epp`).")
    port: int = Field(9002, ge=1, le=65535, description="EPP gRPC (ext-proc) port.")
    failure_mode: Literal["FailOpen", "FailClose"] = Field(
        "FailOpen", description="What the Gateway does when the EPP does not answer: FailOpen "
        "(the upstream chart's default) lets it pick an endpoint of the pool itself; FailClose "
        "fails the pool's share of requests."
    )
    image: Image = Field(
        "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0",
        description="EPP image (the release the rendered objects follow)."
    )
    cpu: str = Field(
        "500m", description="CPU request of the EPP container (Kubernetes quantity). Not the "
        "chart's 4: that sizing is for its prefix-cache scorer, which dgdgen does not configure."
    )
    memory: str = Field(
        "512Mi", description="Memory request and limit of the EPP container (Kubernetes "
        "quantity). Not the chart's 8Gi / 16Gi, for the same reason."
    )

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, v: str) -> str:
        if not QUANTITY.match(v):
            raise ValueError(f"must be a Kubernetes quantity (e.g. 500m, 1, 512Mi, 2Gi), got {v!r}")
        return v


class InferencePoolSettings(SpecModel):
    """Per-generation ``InferencePool`` (inference.networking.k8s.io/v1) settings."""

    target_port: int = Field(
        8000, ge=1, le=65535, description="Port of the selected pods (the Dynamo frontend's HTTP "
        "port, 8000 in the upstream DGD examples)."
    )
    app_protocol: Literal["http", "kubernetes.io/h2c"] | None = Field(
        None, description="Protocol to the pods (default http, HTTP/1.1)."
    )
    endpoint_picker: EndpointPicker = Field(
        default_factory=lambda: EndpointPicker.model_validate({}),
        description="The EPP rendered for each generation's pool."
    )


class HaproxyTimeouts(SpecModel):
    """HAProxy timeouts. ``server`` is an inactivity timeout that must cover queueing + prefill
    (and a whole non-streaming generation); ``timeout tunnel`` does not apply to SSE
    (docs/traffic.md, the haproxy.cfg choices)."""

    connect: Duration = "5s"
    client: Duration = Field("30m", description="Client inactivity (slow uploads, idle).")
    server: Duration = Field("30m", description="Longest silence from a frontend.")
    http_request: Duration = Field("30s", description="Time to receive the request headers.")
    http_keep_alive: Duration = "10s"
    queue: Duration = "30s"
    hard_stop_after: Duration = Field(
        "30m", description="Longest a soft-stopping proxy (reload, pod stop) waits for streams; "
        "also bounds the pod's termination grace period."
    )


class HaproxyHealthCheck(SpecModel):
    path: str | None = Field(
        None, description="Path HAProxy checks on each generation's frontend. Default: "
        "`/v1/models/{served model}/ready`, which answers 404 while the frontend has no workers "
        "for the model; the frontend's `/health` answers 200 even with zero workers "
        "(observed on Dynamo 1.6.1, docs/traffic.md), so it cannot take a workerless generation out "
        "of rotation."
    )
    interval: Duration = "2s"
    fall: int = Field(2, ge=1, description="Failed checks before a frontend is marked DOWN.")
    rise: int = Field(2, ge=1, description="Passed checks before it is UP again.")
    error_limit: int = Field(
        10, ge=1, description="Consecutive 5xx / connection errors on live traffic that mark a "
        "frontend DOWN at once (circuit breaking; health checks bring it back)."
    )


class Haproxy(SpecModel):
    """The HAProxy Deployment + ConfigMap + Service in front of the generations' frontends."""

    image: Image = Field(
        "haproxy:2.6", description="Image (docker-library layout: config in "
        "/usr/local/etc/haproxy, STOPSIGNAL SIGUSR1). The config is checked with HAProxy 2.6."
    )
    replicas: int = Field(2, ge=1, description="Proxy replicas.")
    port: int = Field(8000, ge=1, le=65535, description="Port of the proxy Service.")
    service_type: Literal["ClusterIP", "LoadBalancer", "NodePort"] = "ClusterIP"
    cluster_domain: str | None = Field(
        None, description="Cluster DNS domain of the frontend Services' FQDNs (default: "
        "spec.clusterDomain)."
    )
    memory_limit: str = Field(
        "512Mi", description="Memory limit of each proxy container (also its request). HAProxy "
        "buffers about 2 × tune.bufsize (16 KiB) per connection: maxconn 4096 needs ~130 MiB."
    )
    maxconn: int = Field(
        4096, ge=1, description="Concurrent client connections per proxy replica (HAProxy needs "
        "about 2 file descriptors per connection from the container's nofile limit)."
    )
    timeouts: HaproxyTimeouts = Field(
        default_factory=lambda: HaproxyTimeouts.model_validate({})
    )
    health_check: HaproxyHealthCheck = Field(
        default_factory=lambda: HaproxyHealthCheck.model_validate({})
    )


class Sticky(SpecModel):
    """Keep a client on one generation for the rollout, keyed by a header or a cookie."""

    header: str | None = Field(None, description="Request header naming the client/session.")
    cookie: str | None = Field(None, description="Cookie naming the client/session.")
    expire: Duration = Field("1h", description="Forget a client after this long idle.")

    @model_validator(mode="after")
    def _one(self) -> "Sticky":
        if (self.header is None) == (self.cookie is None):
            raise ValueError("give exactly one of `header` or `cookie`")
        name = self.header or self.cookie or ""
        if not re.match(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", name):
            raise ValueError(f"not a valid header / cookie name: {name!r}")
        return self


# RFC 9110 §5.1: a field name is a `token` (§5.6.2 tchar); the HTTPRoute CRD's header name pattern
# is the same set (Gateway API v1.6.1, HTTPHeaderMatch.name, at most 256 characters). RFC 6265
# §4.1.1: a cookie name is a token too.
TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$")
# A preview value: what is safe at once as a header value, a cookie value (RFC 6265 cookie-octet:
# no space, quote, comma, semicolon or backslash) and one word of haproxy.cfg (no space, quote,
# '#', backslash or brace).
PREVIEW_VALUE = re.compile(r"^[A-Za-z0-9._~+/=:@-]{1,256}$")
# Header names a router cannot match a preview on: the hop-by-hop ones each intermediary removes
# (RFC 9110 §7.6.1) and the framing ones (Content-Length, Transfer-Encoding); Host, which an
# HTTPRoute matches through `hostnames` and HTTP/2 carries as `:authority` (RFC 9113 §8.3.1); and
# Cookie, which holds every cookie at once (a header match compares the whole value): use `cookie`.
UNMATCHABLE_HEADERS = frozenset({
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
    "upgrade", "content-length", "host", "cookie",
})


class Preview(SpecModel):
    """Reach the candidate by a request header (or a cookie) through the public entry point,
    whatever the step's weights: from the first step until cleanup a request carrying the value
    goes to the candidate only; every other request follows the weights (docs/traffic.md,
    "Preview before weight")."""

    header: str | None = Field(None, description="Request header that selects the candidate "
                               "(an RFC 9110 token, e.g. X-Dgd-Preview).")
    cookie: str | None = Field(None, description="Cookie that selects the candidate instead of "
                               "a header (haproxy only: an HTTPRoute cannot match one cookie).")
    value: str | None = Field(None, description="The value that selects it (default: the "
                              "candidate's revision). Letters, digits and ._~+/=:@- only.")
    url: str | None = Field(
        None, description="The public entry point the probe and the quality gate call with the "
        "header, e.g. http://gateway.example.com (default with haproxy: the proxy's Service; "
        "with the HTTPRoute providers the gates keep the candidate's own Service unless this is "
        "set: the Gateway's address, or a GAMMA parent Service the gate Jobs reach from inside "
        "the mesh)."
    )

    @model_validator(mode="after")
    def _check(self) -> "Preview":
        if (self.header is None) == (self.cookie is None):
            raise ValueError("give exactly one of `header` or `cookie`")
        if self.header is not None:
            if not TOKEN.match(self.header):
                raise ValueError(f"header {self.header!r} is not an HTTP field name (RFC 9110 "
                                 "token: letters, digits and !#$%&'*+-.^_`|~, 1-256 characters)")
            if self.header.lower() in UNMATCHABLE_HEADERS:
                why = ("use `cookie: NAME` to match one cookie" if self.header.lower() == "cookie"
                       else "routes use `hostnames` for it" if self.header.lower() == "host"
                       else "a proxy removes or consumes it (RFC 9110 §7.6.1)")
                raise ValueError(f"header {self.header!r} cannot select a preview: {why}")
        if self.cookie is not None and not TOKEN.match(self.cookie):
            raise ValueError(f"cookie {self.cookie!r} is not a cookie name (RFC 6265 token)")
        if self.value is not None and not PREVIEW_VALUE.match(self.value):
            raise ValueError(f"value {self.value!r}: expected 1-256 letters, digits or ._~+/=:@-")
        if self.url is not None and not re.match(r"^https?://[^\s/?#]+(/[^\s?#]*)?$", self.url):
            raise ValueError(f"url {self.url!r}: expected http(s)://HOST[:PORT][/PATH]")
        return self


class Traffic(SpecModel):
    """How traffic is split between the generations' frontends (docs/traffic.md)."""

    provider: TrafficProvider = Field(
        TrafficProvider.NONE, description="gateway-api | gamma | inference-pool | haproxy | none."
    )
    gateway: GatewayParent | None = Field(
        None, description="The Gateway (required for `gateway-api` and `inference-pool`)."
    )
    gamma: Gamma | None = Field(None, description="Settings of `gamma` (required for it).")
    inference_pool: InferencePoolSettings | None = Field(
        None, description="Settings of `inference-pool`."
    )
    haproxy: Haproxy | None = Field(None, description="Settings of `haproxy`.")
    hostnames: list[str] = Field(
        default_factory=list, max_length=16, description="HTTPRoute hostnames (at most 16)."
    )
    path: str = Field("/", description="Path prefix routed to the model.")
    request_timeout: Duration = Field(
        "1h", description="HTTPRoute whole-request timeout; long enough for the longest "
        "generation (0s disables it where the implementation allows)."
    )
    backend_request_timeout: Duration | None = Field(
        None, description="HTTPRoute per-backend-attempt timeout (≤ requestTimeout)."
    )
    sticky: Sticky | None = Field(
        None, description="Pin a client to a generation (haproxy only; see docs/traffic.md for "
        "what HTTPRoute can and cannot do)."
    )
    preview: Preview | None = Field(
        None, description="Reach the candidate by a header or cookie value before (and while) "
        "it takes weight; steps may then have weight 0 (docs/traffic.md, \"Preview before "
        "weight\")."
    )
    switch_service: str | None = Field(
        None, description="Provider `none` with two frontends (separate-dgd, worker-group): the "
        "Service clients call, whose selector moves from the stable's frontend to the "
        "candidate's at the 100 % step (default: metadata.name). Such a rollout can only switch: "
        "its steps are 0 or 100."
    )

    @field_validator("switch_service")
    @classmethod
    def _switch(cls, v: str | None) -> str | None:
        if v is not None and (len(v) > 63 or not DNS1035_LABEL.match(v)):
            raise ValueError(f"must be a Service name (DNS-1035 label, ≤63), got {v!r}")
        return v

    @field_validator("hostnames")
    @classmethod
    def _hostnames(cls, v: list[str]) -> list[str]:
        for h in v:
            if len(h) > 253 or not HOSTNAME.match(h):
                raise ValueError(
                    f"not a hostname (lower-case DNS name, optionally starting with '*.'): {h!r}"
                )
        return v

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        # the HTTPRoute path rules (Gateway API v1.6.1 CEL), applied to every provider
        bad = ("//", "/./", "/../", "%2f", "%2F", "#")
        if not v.startswith("/") or any(b in v for b in bad) or v.endswith(("/..", "/.")):
            raise ValueError(f"expected an absolute, normalised path prefix such as /v1, got {v!r}")
        return v


