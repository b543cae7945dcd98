"""The rollout spec: dgdgen's own kind (``dgdgen.dev/v1alpha1``, ``DGDRollout``).

Typed and validated at the boundary (pydantic v2, unknown fields rejected, camelCase keys as in
Kubernetes). :func:`dgdgen.load.load_spec` reads a file, maps every pydantic error back to the
file, line and field path, and resolves the stable DGD; this module holds only the models.

The JSON Schema of this model is generated into ``schemas/rollout-spec.schema.json`` (a test fails
when it is stale) and printed by ``dgdgen schema``.

No ``from __future__ import annotations`` here: with it, pydantic compiles and evaluates each of
the 141 annotations from its text when a model is built (about 1 % of a ``dgdgen validate``).
"""

import inspect
import re
import types
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from dgdgen import __version__

API_VERSION = "dgdgen.dev/v1alpha1"
KIND = "DGDRollout"

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_PERCENT = re.compile(r"^(\d{1,3})%$")
# A Kubernetes resource quantity (apimachinery resource.Quantity: a number with an optional
# binary, decimal or exponent suffix), positive.
QUANTITY = re.compile(r"^(?:\d+(?:\.\d*)?|\.\d+)(?:[KMGTPE]i|[numkMGTPE]|[eE][-+]?\d+)?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
# The promotion image (argo/Dockerfile) as `docker build -t` names it in docs/gitops.md. No
# registry publishes it: every user builds and pushes their own (dgdgen.render.images warns).
PROMOTION_REPOSITORY = "ghcr.io/dgdgen/dgdgen-promote"
PROMOTION_IMAGE = f"{PROMOTION_REPOSITORY}:{__version__}"
_HOSTNAME = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def parse_duration(text: str) -> int:
    """``"1h30m"`` / ``"10m"`` / ``"45s"`` → seconds (the Go duration subset Argo uses)."""
    m = _DURATION.match(text)
    if not text or not m or not any(m.groups()):
        raise ValueError(f"expected a duration such as 30s, 10m or 1h30m, got {text!r}")
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return h * 3600 + mi * 60 + s


def _duration(v: str) -> str:
    parse_duration(v)
    return v


def _percent_or_count(v: int | str) -> int | str:
    if isinstance(v, bool):
        # pydantic turns only ValueError into a validation error with a location
        raise ValueError("expected a replica count or a percentage such as 25%")  # noqa: TRY004
    if isinstance(v, int):
        if v < 0:
            raise ValueError("must not be negative")
        return v
    m = _PERCENT.match(v)
    if not m or int(m.group(1)) > 100:
        raise ValueError(f"expected a replica count or a percentage 0%..100%, got {v!r}")
    return v


def _revision(v: str) -> str:
    if len(v) > 12 or not DNS1035_LABEL.match(v):
        raise ValueError(
            "a revision id is 1-12 characters of lower-case letters, digits and '-', starting "
            f"with a letter (it becomes part of object names), got {v!r}"
        )
    return v


def _image(v: str) -> str:
    # The API server requires a container image and refuses one with leading or trailing
    # whitespace (k8s.io/kubernetes pkg/apis/core/validation validateContainerCommon); the DGD
    # CRD does not, so a bad image would be accepted here and fail only when the operator
    # creates the pods.
    if not v or v != v.strip():
        raise ValueError(f"expected a container image reference, got {v!r}")
    # A digest the API server takes but no registry resolves fails only at the pull, on the
    # cluster: `name@sha256:<64 hex>` or `name:tag@sha256:<64 hex>` (distribution/reference).
    name, at, digest = v.partition("@")
    if at and (not name or not _DIGEST.fullmatch(at + digest)):
        raise ValueError(f"expected an image pinned as NAME@sha256:<64 lower-case hex> (or "
                         f"NAME:TAG@sha256:...), got {v!r}")
    return v


def _env_names(v: dict[str, str]) -> dict[str, str]:
    # The API server's rule for environment variable names (IsEnvVarName, relaxed form since
    # Kubernetes 1.30): printable ASCII except '='. Unchecked, the DGD is accepted and its pods
    # are refused.
    for name in v:
        if not name or "=" in name or not all(" " <= c <= "~" for c in name):
            raise ValueError(f"an environment variable name is printable ASCII without '=', "
                             f"got {name!r}")
    return v


Duration = Annotated[str, AfterValidator(_duration)]
Image = Annotated[str, AfterValidator(_image)]
PercentOrCount = Annotated[int | str, AfterValidator(_percent_or_count)]
Revision = Annotated[str, AfterValidator(_revision)]


def _leaf_types(annotation: Any) -> set[Any]:
    """The plain types an annotation admits (Optional, unions and Annotated unwrapped)."""
    import typing

    out: set[Any] = set()
    stack = [annotation]
    while stack:
        t = stack.pop()
        origin = typing.get_origin(t)
        if origin is Annotated:
            stack.append(typing.get_args(t)[0])
        elif origin in (typing.Union, types.UnionType):
            stack.extend(typing.get_args(t))
        elif origin is not None:
            out.add(origin)
        else:
            out.add(t)
    return out


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        use_enum_values=False,
        defer_build=True,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_coercion(cls, value: Any, info: ValidationInfo) -> Any:
        """Numbers and booleans exactly as written: pydantic's lax mode would read `weight: true`
        as 1 and `replicas: "2"` as 2; a spec says what it means or is refused."""
        if info.field_name is None or not isinstance(value, (bool, str, int, float)):
            return value
        leaves = _leaf_types(cls.model_fields[info.field_name].annotation)
        numeric = leaves & {int, float}
        number = "a number" if float in leaves else "an integer"
        if isinstance(value, bool):
            if numeric and bool not in leaves:
                raise ValueError(f"expected {number}, got {str(value).lower()}")
        elif isinstance(value, str):
            if (numeric or bool in leaves) and str not in leaves and not leaves - {int, float, bool,
                                                                                  type(None)}:
                raise ValueError(f"expected {number if numeric else 'true or false'}, "
                                 f"got the string {value!r}")
        elif bool in leaves and not numeric and str not in leaves:
            raise ValueError(f"expected true or false, got {value!r}")
        elif isinstance(value, float) and int in leaves and float not in leaves:
            raise ValueError(f"expected an integer, got {value!r}")
        return value


# pydantic inspects a field validator's signature once for every field it applies to (155 times
# for `_no_coercion`, about 1 % of a `dgdgen validate`); the signature given here is read back
# instead of being worked out again (`inspect.signature` honours `__signature__`).
_no_coercion: Any = _Model._no_coercion.__func__  # type: ignore[attr-defined]
_no_coercion.__signature__ = inspect.signature(_no_coercion)


class Isolation(str, Enum):
    SEPARATE_DGD = "separate-dgd"
    WORKER_GROUP = "worker-group"
    PARTITION = "partition"
    IN_PLACE = "in-place"
    AUTO = "auto"


class Strategy(str, Enum):
    CANARY = "canary"
    BLUE_GREEN = "blue-green"


class Metadata(_Model):
    name: str = Field(description="Name of this rollout; labels and object names derive from it.")
    namespace: str = Field(
        "default", description="Kubernetes namespace the DGDs run in (the Dynamo namespace is "
        "derived from it and the DGD name)."
    )

    @field_validator("name", "namespace")
    @classmethod
    def _label(cls, v: str) -> str:
        if len(v) > 63 or not DNS1123_LABEL.match(v):
            raise ValueError(f"must be a DNS-1123 label (lower-case, digits, '-'; ≤63), got {v!r}")
        return v


class StableGeneration(_Model):
    """The generation running today."""

    dgd: str | None = Field(
        None, description="Path to today's DGD manifest (relative to this spec file), "
        "nvidia.com/v1alpha1 or nvidia.com/v1beta1. The file may hold several documents."
    )
    name: str | None = Field(
        None, description="Which DGD of the file to use, when it holds more than one."
    )
    manifest: dict[str, Any] | None = Field(
        None, description="The DGD inline, instead of `dgd`."
    )
    revision: Revision | None = Field(
        None, description="Short revision id of the stable generation (default: a content hash)."
    )

    @model_validator(mode="after")
    def _one_source(self) -> "StableGeneration":
        if (self.dgd is None) == (self.manifest is None):
            raise ValueError("give exactly one of `dgd` (a path) or `manifest` (inline)")
        return self


class ArgChanges(_Model):
    set: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict,
        description="Flags to set, e.g. {'--block-size': 32}. A null value is a flag without a "
        "value (e.g. '--trust-remote-code'); false removes such a flag.",
    )
    remove: list[str] = Field(default_factory=list, description="Flags to remove.")

    @field_validator("set")
    @classmethod
    def _flags(cls, v: dict[str, Any]) -> dict[str, Any]:
        for k, value in v.items():
            if not k.startswith("-"):
                raise ValueError(f"argument names start with '-', got {k!r}")
            if (k in ("--served-model-name", "--model", "--model-path") and isinstance(value, str)
                    and value and not value.strip()):
                raise ValueError(f"{k} {value!r}: a model name that is blank (only whitespace)")
        return v


class EnvChanges(_Model):
    set: Annotated[dict[str, str], AfterValidator(_env_names)] = Field(
        default_factory=dict, description="Variables to set.")
    remove: list[str] = Field(default_factory=list, description="Variables to remove.")


class ComponentChange(_Model):
    image: Image | None = Field(None, description="New image of the component's main container.")
    args: ArgChanges | None = None
    env: EnvChanges | None = None
    # int32 in the DGD CRD (schemas/crds/dynamo): refused here, at this line, not later at the
    # stable DGD's replicas line the candidate copies it into.
    replicas: int | None = Field(None, ge=0, le=2**31 - 1,
                                 description="Replicas of the candidate at 100%.")
    gpus: int | None = Field(
        None, ge=0, le=2**31 - 1,
        description="GPUs each pod of the candidate's component asks for (each node's pod of a "
        "multinode replica): what a change of tensor / pipeline / data parallelism needs with "
        "it, or its new pods never start (invariant CLU102).")


class Candidate(_Model):
    """The new generation, as a small set of changes against the stable one."""

    revision: Revision | None = Field(
        None, description="Short revision id (default: a content hash of the candidate DGD)."
    )
    name: str | None = Field(
        None, description="DGD name of the candidate (separate-dgd; default derived from the "
        "stable name and the revision so no Dynamo namespace is a prefix of another)."
    )
    image: Image | None = Field(
        None, description="New image for every component that has a main container image."
    )
    components: dict[str, ComponentChange] = Field(
        default_factory=dict, description="Per-component changes, keyed by component name."
    )


class Capacity(_Model):
    max_surge: PercentOrCount = Field(
        "25%", description="Extra replicas per worker component allowed above the stable size "
        "at any moment (count, or % of the stable replicas, rounded up)."
    )
    max_unavailable: PercentOrCount = Field(
        0, description="Serving capacity that may be missing at any moment (count per "
        "component, or %, rounded down). Used together with `headroom`."
    )
    headroom: PercentOrCount = Field(
        0, description="How far (in % of full traffic) a generation's traffic share may exceed "
        "its share of serving capacity while replicas move. A count is read as that many "
        "replicas of the smallest worker component (count / its stable replicas, at most 100%: "
        "`1` on a 4-replica component is 25%, on a 1-replica prefill 100%); prefer a "
        "percentage. Never lets a generation that carries traffic run without workers."
    )


class Step(_Model):
    weight: int = Field(ge=0, le=100, description="Traffic to the candidate, in %.")
    pause: Duration | None = Field(
        None, description="Bake time before the next step, e.g. 10m (Go duration)."
    )
    gate: str | None = Field(None, description="Name of the analysis gate that must pass.")


class TrafficProvider(str, Enum):
    NONE = "none"
    GATEWAY_API = "gateway-api"
    GAMMA = "gamma"
    INFERENCE_POOL = "inference-pool"
    HAPROXY = "haproxy"


class GatewayParent(_Model):
    """The Gateway an HTTPRoute attaches to (``parentRefs[]``, group/kind default to Gateway)."""

    name: str = Field(description="Gateway name.")
    namespace: str | None = Field(
        None, description="Gateway namespace (default: the route's namespace). A Gateway in "
        "another namespace must allow routes from this one (listener allowedRoutes)."
    )
    section_name: str | None = Field(None, description="Listener name on the Gateway.")
    port: int | None = Field(None, ge=1, le=65535, description="Listener port.")


class Gamma(_Model):
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


class EndpointPicker(_Model):
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


class InferencePoolSettings(_Model):
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


class HaproxyTimeouts(_Model):
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


class HaproxyHealthCheck(_Model):
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


class Haproxy(_Model):
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


class Sticky(_Model):
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


class Traffic(_Model):
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
            if len(h) > 253 or not _HOSTNAME.match(h):
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


class Slos(_Model):
    """Absolute SLOs of the candidate generation (null disables that check)."""

    ttft_p95_seconds: float | None = Field(
        2.0, gt=0, description="Time to first token, 95th percentile, at most this (seconds)."
    )
    ttft_p99_seconds: float | None = Field(
        5.0, gt=0, description="Time to first token, 99th percentile, at most this (seconds)."
    )
    itl_p95_seconds: float | None = Field(
        0.1, gt=0, description="Inter-token latency, 95th percentile, at most this (seconds)."
    )
    error_rate: float | None = Field(
        0.01, ge=0, le=1, description="Share of failed requests (client cancellations "
        "excluded) at most this."
    )


class ProbePrompt(_Model):
    prompt: str = Field(description="User message sent with temperature 0.")
    expected: str = Field(description="Expected reply text (see `match`).")


class Probe(_Model):
    """A deterministic canary probe: a Job (Argo Rollouts job provider) that sends each prompt
    to the candidate frontend with temperature 0 and fails on an error or a mismatch."""

    prompts: list[ProbePrompt] = Field(min_length=1)
    model: str | None = Field(
        None, description="Served model name (default: the first model the frontend lists)."
    )
    match: Literal["exact", "prefix", "contains"] = Field(
        "exact", description="How a reply must match `expected` (after trimming whitespace)."
    )
    max_tokens: int = Field(32, ge=1, le=4096)
    image: Image = Field(
        "python:3.12-slim", description="Image of the probe Job (needs python3 on PATH). Pin it "
        "by digest (`python:3.12-slim@sha256:…`) and set spec.requireImageDigests to enforce it."
    )
    thinking: bool = Field(
        False, description="Let a reasoning model think before it answers. Off by default: the "
        "request carries `chat_template_kwargs: {enable_thinking: false}`, so the reply starts "
        "with the answer and `exact` / `prefix` matches work (the Dynamo 1.6.1 frontend passes "
        "it to the chat template)."
    )


class SecretKeyRef(_Model):
    """A key of a Secret in the rollout's namespace (the value never appears in the spec)."""

    name: str = Field(description="Secret name.")
    key: str = Field(description="Key in the Secret's data.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > 253 or not _HOSTNAME.match(v) or v.startswith("*"):
            raise ValueError(f"must be a Secret name (DNS-1123 subdomain), got {v!r}")
        return v

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        # A Secret data key (k8s.io/apimachinery IsConfigMapKey): [-._a-zA-Z0-9]+, ≤253.
        if not re.fullmatch(r"[-._a-zA-Z0-9]{1,253}", v):
            raise ValueError(f"must be a Secret key ([-._a-zA-Z0-9]+), got {v!r}")
        return v


class QualityJudge(_Model):
    """LLM-as-judge: an OpenAI-compatible endpoint asked, in both orders, which answer is better
    under the rubric (docs/analysis.md). A judge failure counts as an error, never as a win."""

    url: str = Field(description="Base URL of the judge's OpenAI-compatible API "
                     "(`…/v1/chat/completions` is appended).")
    model: str = Field(description="Model name the judge serves.")
    rubric: str = Field(min_length=1, description="What makes one answer better than the other.")
    api_key: SecretKeyRef | None = Field(
        None, description="The judge's API key, only by reference to a Secret (passed to the "
        "Job as DGDGEN_JUDGE_API_KEY through `secretKeyRef`)."
    )

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://[^\s/]+", v):
            raise ValueError(f"expected an http:// or https:// URL, got {v!r}")
        return v


class QualityGate(_Model):
    """The paired quality gate: every prompt of the set goes to the stable and the candidate
    frontend (temperature 0, fixed seed and max tokens), each answer is scored, and a sign test
    fails the step when the candidate loses more pairs than allowed; Inconclusive, never a pass,
    below the minimum sample (docs/analysis.md, quality gate). Used by the built-in gate
    `quality` (and by `slo` when set)."""

    prompts: str = Field(
        description="JSONL prompt set, relative to the spec file, inside the repository: one "
        "object a line, `prompt` (string) and optional `reference` (string). Rendered into a "
        "ConfigMap."
    )
    model: str = Field(description="Served model name sent in every request.")
    scorer: Literal["exact", "prefix", "contains", "regex", "json", "toolcall", "untruncated",
                    "length", "judge"] = Field(
        "untruncated", description="How each answer is scored (docs/analysis.md): reference "
        "matches (exact, prefix, contains), regex, json, toolcall, untruncated (finish reason "
        "is not `length`), length (completion tokens), or judge (pairwise LLM-as-judge)."
    )
    pattern: str | None = Field(None, description="Pattern of the `regex` scorer (re.search).")
    max_loss_share: float = Field(
        0.5, gt=0, lt=1, description="Share of decided pairs the candidate may lose without "
        "failing (0.5: no worse than the stable)."
    )
    effect: float = Field(
        0.2, gt=0, lt=0.5, description="Extra loss share the minimum sample is sized to detect "
        "(alpha 0.05, power 0.8), like the latency gates' max regression."
    )
    max_tokens: int = Field(256, ge=1, le=32768, description="max_tokens of every request.")
    seed: int = Field(0, ge=0, description="Seed of every request (and of the judge's).")
    timeout_seconds: int = Field(60, ge=1, le=3600, description="Per-request timeout.")
    image: Image = Field(
        description="Image of the quality-gate Job: has dgdgen installed "
        "(`python -m dgdgen.analysis.quality_gate`). Pin it by digest."
    )
    judge: QualityJudge | None = Field(None, description="Required by the `judge` scorer.")

    @field_validator("prompts")
    @classmethod
    def _prompts(cls, v: str) -> str:
        if not v.endswith(".jsonl") or v.startswith("/"):
            raise ValueError(f"expected a relative path to a .jsonl file, got {v!r}")
        return v

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"not a regular expression: {e}") from None
        return v

    @model_validator(mode="after")
    def _scorer_needs(self) -> "QualityGate":
        if self.scorer == "judge" and self.judge is None:
            raise ValueError("scorer 'judge' needs `judge` (url, model, rubric)")
        if self.scorer != "judge" and self.judge is not None:
            raise ValueError(f"`judge` is set but scorer is {self.scorer!r}; set scorer: judge")
        if self.scorer == "regex" and self.pattern is None:
            raise ValueError("scorer 'regex' needs `pattern`")
        if self.scorer != "regex" and self.pattern is not None:
            raise ValueError(f"`pattern` is set but scorer is {self.scorer!r}")
        return self


class Hooks(_Model):
    enabled: bool = Field(
        False, description="Annotate each step's AnalysisRun as an Argo CD PostSync hook."
    )
    delete_policy: Literal["BeforeHookCreation", "HookSucceeded", "HookFailed"] = Field(
        "BeforeHookCreation", description="argocd.argoproj.io/hook-delete-policy."
    )


class CustomMetric(_Model):
    """A gate metric from PromQL the user writes (docs/analysis.md, "Custom metrics"): evaluated
    once per generation through the labels the rendered PodMonitors add, compared with an
    absolute threshold and/or with the stable generation, Inconclusive below ``minSamples``."""

    name: str = Field(description="Metric name (lower-case letters, digits, '-'); the gate "
                      "metrics are custom-NAME (absolute) and custom-NAME-vs-stable (relative).")
    query: str = Field(description="PromQL giving one value for one generation. Every vector "
                       "selector must carry ${generation} among its matchers (it becomes the "
                       "namespace, rollout and generation labels) and a range may use ${window}.")
    samples: str = Field(description="PromQL counting the events behind `query` for one "
                         "generation in the window (same placeholders), e.g. the feedback count "
                         "under a thumbs-down rate.")
    min_samples: int = Field(ge=1, description="Events per generation below which the metric is "
                             "Inconclusive, never a pass.")
    better: Literal["lower", "higher"] = Field(
        "lower", description="Which direction is better (a refusal rate: lower; a KPI: higher)."
    )
    threshold: float | None = Field(
        None, description="Absolute bound on the candidate: at most this (better: lower) or at "
        "least this (better: higher)."
    )
    max_difference: float | None = Field(
        None, ge=0, description="The candidate may be worse than the stable by at most this "
        "(absolute difference, in the query's unit)."
    )
    max_ratio: float | None = Field(
        None, gt=1, description="The candidate may be worse than the stable by at most this factor "
        "(candidate/stable for better: lower, stable/candidate for better: higher)."
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.match(r"^[a-z][a-z0-9-]{0,30}$", v):
            raise ValueError(f"a metric name is lower-case letters, digits and '-', got {v!r}")
        return v

    @model_validator(mode="after")
    def _bounds(self) -> "CustomMetric":
        if self.threshold is None and self.max_difference is None and self.max_ratio is None:
            raise ValueError("give `threshold`, `maxDifference` or `maxRatio` (or several)")
        if self.max_difference is not None and self.max_ratio is not None:
            raise ValueError("give one of `maxDifference` or `maxRatio`, not both")
        return self


class Experiment(_Model):
    """An A/B experiment (docs/analysis.md, "A/B experiments"): the step gated `experiment`
    holds both generations at its weight until the planned sample is in, then
    `dgdgen experiment` decides with a Mann-Whitney U test."""

    metric: str = Field(description="What one sample value is (one per user or request), e.g. "
                        "'user rating 1-5'; shown with the decision.")
    minimum_detectable_effect: float = Field(
        gt=0, lt=0.5, description="Smallest effect worth detecting, as a win rate above one half "
        "(0.1: the candidate beats the stable in 60 % of random pairs); sizes the sample."
    )
    better: Literal["lower", "higher"] = Field("higher", description="Which values are better.")
    alpha: float = Field(0.05, gt=0, lt=0.5, description="Two-sided significance level.")
    power: float = Field(0.8, ge=0.5, lt=1, description="Chance to detect the effect.")
    on_no_difference: Literal["promote", "rollback"] = Field(
        "promote", description="What a decision of no difference records: `promote` (the gate "
        "passes) or `rollback` (the gate fails)."
    )


# kube-prometheus-stack's Prometheus selects PodMonitors labelled `release: <Helm release>`
# (podMonitorSelectorNilUsesHelmValues: true, the chart default); docs/analysis.md.
DEFAULT_MONITOR_LABELS = {"release": "kube-prometheus-stack"}

GATE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class Analysis(_Model):
    """SLO gates: Argo Rollouts AnalysisTemplates and per-step AnalysisRuns (docs/analysis.md)."""

    enabled: bool = Field(
        False, description="Render the monitoring objects, AnalysisTemplates and one "
        "AnalysisRun per gated step."
    )
    prometheus: str | None = Field(
        None, description="Prometheus address used by the gates (default: the Argo Rollouts "
        "controller's ARGO_ROLLOUTS_PROMETHEUS_ADDRESS)."
    )
    slos: Slos = Field(default_factory=Slos)
    max_regression: float = Field(
        1.2, gt=1, description="Candidate p95/p99 latency may be at most this factor of the "
        "stable generation's; also the effect size the minimum sample is sized for."
    )
    max_error_rate_increase: float = Field(
        0.01, gt=0, lt=1, description="Candidate error rate may exceed the stable's by at most "
        "this (absolute, e.g. 0.01 = one percentage point)."
    )
    latency_spread: float = Field(
        0.5, gt=0, le=5, description="Assumed standard deviation of ln(latency) (log-normal "
        "shape), used only to size the minimum sample."
    )
    min_requests: int | None = Field(
        None, ge=1, description="Requests per window below which a gate is Inconclusive "
        "(default: derived from effect size, alpha 0.05 and power 0.8)."
    )
    expected_request_rate: float | None = Field(
        None, gt=0, description="Expected requests per second over both generations; gives "
        "the minimum bake time per step and widens the window to it."
    )
    window: Duration = Field("5m", description="Shortest query window (rate/increase range).")
    interval: Duration = Field("1m", description="Time between measurements.")
    count: int | None = Field(
        None, ge=1, description="Measurements per metric (default: as many as fit the step's "
        "pause after the initial delay, at least 1)."
    )
    failure_limit: int = Field(0, ge=0, description="Failed measurements tolerated.")
    inconclusive_limit: int | None = Field(
        None, ge=0, description="Inconclusive measurements tolerated per metric (a quiet "
        "spell: too few requests in the window, no data). Default: all but one of the step's "
        "measurements, so a lull passes once a later window holds the minimum sample and meets "
        "the SLOs, while a metric that never sees enough data still ends Inconclusive. A value "
        "is capped at the step's count - 1 for the same reason; 0 ends the gate at the first "
        "quiet measurement (Argo Rollouts' default)."
    )
    consecutive_error_limit: int = Field(
        2, ge=0, description="Consecutive measurement errors (e.g. Prometheus unreachable) "
        "tolerated before the metric ends as Error."
    )
    hooks: Hooks = Field(default_factory=Hooks)
    probe: Probe | None = None
    quality: QualityGate | None = Field(
        None, description="Paired quality gate (built-in gate `quality`)."
    )
    monitor_labels: dict[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_MONITOR_LABELS),
        description="Labels on the rendered PodMonitors that your Prometheus' "
        "`podMonitorSelector` matches; a PodMonitor without them is never scraped and every "
        "gate ends Inconclusive. Default `{release: kube-prometheus-stack}`: what the "
        "kube-prometheus-stack chart selects (`release: <Helm release name>`, with "
        "`podMonitorSelectorNilUsesHelmValues: true`, its default) for a release named "
        "kube-prometheus-stack. `dgdgen validate` warns while this is left to the default; give "
        "`{}` for a Prometheus that selects every PodMonitor."
    )
    cluster_label: str = Field(
        "cluster", description="With `spec.gitops.clusters`: the label that tells the clusters' "
        "series apart in the Prometheus the gates query (`prometheus`, a global view such as "
        "Thanos or Mimir; each cluster's Prometheus sets it as an external label), valued with "
        "the cluster's `name`. Every gate query matches it, and each cluster gets its own "
        "AnalysisRun (docs/gitops.md, \"Several clusters\")."
    )
    gates: dict[str, list[str]] = Field(
        default_factory=dict, description="Extra named gates: gate name -> metric names "
        "(built-in gates: slo, latency, errors, absolute, probe, quality)."
    )
    experiment: Experiment | None = Field(
        None, description="A/B experiment settings for the step gated `experiment`."
    )
    custom_metrics: list[CustomMetric] = Field(
        default_factory=list, max_length=32, description="Metrics from your own PromQL "
        "(custom-NAME, custom-NAME-vs-stable); the `custom` gate runs them all, `slo` includes "
        "them."
    )

    @field_validator("cluster_label")
    @classmethod
    def _label_name(cls, v: str) -> str:
        # Prometheus label names: [a-zA-Z_][a-zA-Z0-9_]*, `__` reserved for internal use
        # (prometheus.io/docs/concepts/data_model/#metric-names-and-labels)
        if not re.match(r"^[a-zA-Z_][a-zA-Z0-9_]*$", v) or v.startswith("__"):
            raise ValueError(f"expected a Prometheus label name such as cluster, got {v!r}")
        if v in ("namespace", "dgdgen_rollout", "dgdgen_generation", "le"):
            raise ValueError(f"{v!r} already scopes the gate queries; name the cluster label")
        return v

    @field_validator("gates")
    @classmethod
    def _gate_names(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, metrics in v.items():
            if not GATE_NAME.match(name):
                raise ValueError(f"a gate name is lower-case letters, digits and '-', got {name!r}")
            if not metrics:
                raise ValueError(f"gate {name!r} names no metrics")
        return v


class Cluster(_Model):
    """One destination of the ApplicationSet (a list-generator element)."""

    name: str = Field(description="Cluster name as registered in Argo CD (also names the app).")
    server: str | None = Field(
        None, description="API server URL; default: the cluster registered under `name`."
    )
    namespace: str | None = Field(
        None, description="Namespace on this cluster (default: metadata.namespace)."
    )
    wave: int | None = Field(
        None, ge=1, description="The cluster wave this cluster moves in: the rollout workflow "
        "syncs each promotion commit to wave 1 (the canary), waits for it and runs its "
        "AnalysisRuns, and only then moves wave 2, and so on. Default: 1 for the first listed "
        "cluster, 2 for every other one (docs/gitops.md, \"Several clusters\")."
    )

    @field_validator("name")
    @classmethod
    def _label(cls, v: str) -> str:
        if len(v) > 40 or not DNS1123_LABEL.match(v):
            raise ValueError(f"must be a DNS-1123 label of at most 40 characters, got {v!r}")
        return v


def cluster_waves(clusters: list[Cluster]) -> list[tuple[int, Cluster]]:
    """(wave, cluster) for every cluster in the order the spec lists them: its ``wave``, else 1
    for the first listed cluster (the canary) and 2 for every other one."""
    return [(c.wave if c.wave is not None else (1 if i == 0 else 2), c)
            for i, c in enumerate(clusters)]


class Workflow(_Model):
    """The Argo Workflows ``WorkflowTemplate`` that drives the rollout in-cluster."""

    image: Image = Field(
        PROMOTION_IMAGE,
        description="Promotion image: dgdgen and git, built from argo/Dockerfile (the drain "
        "hooks' Jobs and the workflow run it). The default names an image that is not "
        "published: build and push it, then set this to it pinned by digest "
        "(`registry/dgdgen-promote@sha256:<64 hex>`); `render`, `plan`, `validate` and `argo` warn "
        "while the default is used, `dgdgen argo` also when the image is a tag only.",
    )
    service_account_name: str = Field(
        "dgdgen-rollout", description="Service account of the workflow's pods (create/get "
        "AnalysisRuns in the rollout's namespace; nothing on Argo CD's Applications)."
    )
    argocd_server: str | None = Field(
        None, description="Argo CD API server the workflow asks (refresh, wait, terminate a "
        "sync). Default: https://argocd-server.<argocdNamespace>.svc.<spec.clusterDomain>."
    )
    argocd_token_secret: str = Field(
        "dgdgen-argocd", description="Secret (in the rollout's namespace) with key `token`: an "
        "API token of the Argo CD account `dgdgen argo` declares (applications get and sync on "
        "this rollout's Applications only)."
    )
    wait_timeout: Duration = Field(
        "2h", description="How long the workflow waits for one commit to be synced, Healthy "
        "and (with analysis hooks) analysed, per Application."
    )
    git_secret: str = Field(
        "dgdgen-git", description="Secret with the Git push credentials: keys `username` and "
        "`password` (a token) for HTTPS remotes."
    )
    spec_path: str | None = Field(
        None, description="Path of this rollout spec inside the Git repository (default: its "
        "path relative to the work tree it is in)."
    )
    cleanup: bool = Field(
        True, description="Remove the old generation after the last step succeeds."
    )


class GitOps(_Model):
    """Where the rendered manifests live in Git and how Argo CD picks them up."""

    repo_url: str | None = Field(
        None, description="Git URL Argo CD pulls the rendered manifests from (Application "
        "`source.repoURL`). Needed by `dgdgen argo`."
    )
    path: str | None = Field(
        None, description="Directory of the rendered manifests inside that repository (also the "
        "default of `--into`). Default: deploy/<metadata.name>."
    )
    branch: str | None = Field(
        None, description="Branch that promotion commits are pushed to (default: the checked-out "
        "branch)."
    )
    target_revision: str | None = Field(
        None, description="Revision Argo CD syncs (default: `branch`, else HEAD)."
    )
    remote: str = Field("origin", description="Git remote that `--push` pushes to.")
    commit_author: str | None = Field(
        None, description="Author of promotion commits, `Name <email>` (default: git's "
        "configured identity, else `dgdgen <dgdgen@localhost>`)."
    )
    project: str = Field("default", description="Argo CD project of the Applications.")
    app_project: bool = Field(
        False, description="Also emit an AppProject named `project` that allows only this "
        "repository and the rollout's namespace."
    )
    argocd_namespace: str = Field("argocd", description="Namespace Argo CD runs in.")
    auto_sync: bool = Field(
        True, description="Automated sync with prune and self-heal: a promotion commit is the "
        "whole deployment action."
    )
    clusters: list[Cluster] = Field(
        default_factory=list, description="Clusters for an ApplicationSet (one Application per "
        "cluster). Empty: a single Application on the cluster Argo CD runs in."
    )
    workflow: Workflow = Field(default_factory=Workflow)

    @field_validator("clusters")
    @classmethod
    def _waves(cls, v: list[Cluster]) -> list[Cluster]:
        seen: dict[str, int] = {}
        for i, c in enumerate(v):
            if c.name in seen:
                raise ValueError(f"clusters[{i}] and clusters[{seen[c.name]}] are both named "
                                 f"{c.name!r}: each cluster is one Application, named after it")
            seen[c.name] = i
        waves = cluster_waves(v)
        used = sorted({w for w, _ in waves})
        if used and used != list(range(1, used[-1] + 1)):
            missing = sorted(set(range(1, used[-1] + 1)) - set(used))
            raise ValueError(
                "cluster waves count 1, 2, 3 … without a gap (wave 1 is the canary), got "
                f"waves {', '.join(map(str, used))}: no cluster is in wave "
                f"{', '.join(map(str, missing))}")
        if len(v) > 1 and len(used) == 1:
            raise ValueError(
                f"all {len(v)} clusters are in wave 1, so one commit would move every cluster "
                "at once: put the canary cluster(s) in wave 1 and the others in wave 2 (or leave "
                "`wave` out: the first listed cluster is the canary)")
        return v

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str | None) -> str | None:
        if v is not None and (v.startswith("/") or ".." in v.split("/") or v.strip("/") == ""):
            raise ValueError(f"a path inside the repository (relative, no '..'), got {v!r}")
        if v is not None and any(p.lower() == ".git" for p in v.split("/")):
            # git's own folder: its hooks run code, and nothing there is a work tree
            raise ValueError(f"a path of the work tree, not inside .git, got {v!r}")
        return v

    @field_validator("commit_author")
    @classmethod
    def _author(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[^<>]+ <[^<>\s]+>$", v):
            raise ValueError(f"expected `Name <email>`, got {v!r}")
        return v


_RELEASE = re.compile(r"^v?\d+\.\d+(\.\d+)?$")


class DynamoTarget(_Model):
    """The Dynamo release and operator the DGDs run on: what applying a change in place would do
    there (said by `plan` / `validate` for `isolation: auto` and `in-place`) and which flags feed
    the ModelDeploymentCard (the checker's tables, dgdgen.check.inplace)."""

    version: str = Field(
        "1.6", description="Dynamo release (X.Y; X.Y.Z selects X.Y): 1.3, 1.4, 1.5 or 1.6 "
        "(default, the newest known).")
    workers_run_by: Literal["deployment", "grove", "lws", "unmanaged"] = Field(
        "deployment", description="How the operator runs the DGD's worker pods: `deployment` "
        "(default: Kubernetes Deployments; the operator's managed rolling update puts each "
        "worker generation in its own hash-suffixed Dynamo namespace on every release), "
        "`grove` or `lws` (hash-suffixed from 1.5, one shared Dynamo namespace before), "
        "`unmanaged` (old and new workers share one Dynamo namespace whatever the release).")
    operator_capabilities: list[Literal["dgd-worker-groups", "dgd-partitioned-rollout"]] = Field(
        default_factory=list, description="Capabilities from Dynamo's enhancement proposal "
        "\"Revision-aware DGD rollout and release groups\" (ai-dynamo/dynamo issue #15214) that "
        "this cluster's Dynamo operator implements. No released operator does: the fields are in "
        "no released DGD CRD, and a released API server drops them. `dgd-worker-groups` "
        "(per-component `workerGroupName`) allows isolation `worker-group`; "
        "`dgd-partitioned-rollout` (per-component `partition`) allows isolation `partition`. "
        "Without it those modes are refused.")

    @field_validator("version", mode="before")
    @classmethod
    def _quoted(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            raise ValueError(f"expected a string such as \"1.6\": quote it (YAML reads {v!r} "  # noqa: TRY004 (pydantic reports ValueError)
                             "as a number, and 1.10 as 1.1)")
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not _RELEASE.match(v.strip()):
            raise ValueError(f"expected a Dynamo release such as 1.6 or 1.6.1, got {v!r}")
        return v


# A schedule has at most 101 distinct weights (whole percentages that never go back); a weight held
# over several gated steps repeats one. 1,000 steps leaves room for any such schedule, while a plan
# that long already renders about 9,000 files (50 MB for the examples) into the deploy repository
# and takes `validate` about a second; past it a spec is a generator gone wrong, and every
# command's cost grows with it (docs/robustness.md).
MAX_STEPS = 1000
# No list or mapping of a spec needs more entries than this (its steps are the longest, and they
# are at most MAX_STEPS): a longer one is refused before the model validates it item by item
# (pydantic's 200,000 errors for one list of 200,000 wrong items took 300 MB).
MAX_ENTRIES = 10_000


class RolloutBody(_Model):
    stable: StableGeneration
    candidate: Candidate
    isolation: Isolation = Isolation.SEPARATE_DGD
    strategy: Strategy = Strategy.CANARY
    capacity: Capacity = Field(default_factory=Capacity)
    steps: list[Step] = Field(
        default_factory=list, max_length=MAX_STEPS,
        description="Traffic steps; weights never go backwards and end at 100 (at most "
        f"{MAX_STEPS:,}). Empty: a default schedule (for `auto`, the one the change's risk "
        "grade calls for).",
    )
    traffic: Traffic = Field(default_factory=Traffic)
    analysis: Analysis = Field(default_factory=Analysis)
    gitops: GitOps = Field(default_factory=GitOps)
    cluster_domain: str = Field(
        "cluster.local", description="Cluster DNS domain (the kubelet's clusterDomain) used in "
        "every Service FQDN dgdgen renders: the HAProxy servers, the probe's URL, the frontend "
        "Services the drain hooks poll, the workflow's default Argo CD API server."
    )
    dynamo: DynamoTarget = Field(
        default_factory=DynamoTarget,
        description="The Dynamo release and worker backing the DGDs run on.")
    require_image_digests: bool = Field(
        False, description="Refuse an image dgdgen runs itself (the probe Job, the HAProxy "
        "Deployment, the promotion workflow) that is not pinned by digest "
        "(`name@sha256:<64 hex>`): a tag can move under a running rollout."
    )

    @field_validator("cluster_domain")
    @classmethod
    def _domain(cls, v: str) -> str:
        if len(v) > 253 or not _HOSTNAME.match(v) or v.startswith("*."):
            raise ValueError(f"expected a DNS domain such as cluster.local, got {v!r}")
        return v

    @model_validator(mode="after")
    def _digests(self) -> "RolloutBody":
        if not self.require_image_digests:
            return self
        images: list[tuple[str, str | None]] = [
            ("gitops.workflow.image", self.gitops.workflow.image),
            ("traffic.haproxy.image", self.traffic.haproxy.image if self.traffic.haproxy
             else (Haproxy.model_fields["image"].default
                   if self.traffic.provider == TrafficProvider.HAPROXY else None)),
            ("analysis.probe.image", self.analysis.probe.image if self.analysis.probe else None),
        ]
        for where, image in images:
            if image is not None and not _DIGEST.search(image):
                raise ValueError(
                    f"requireImageDigests: spec.{where} {image!r} is not pinned by digest "
                    "(expected name@sha256:<64 hex>)"
                )
        return self


class RolloutSpec(_Model):
    """A dgdgen rollout: stable DGD → candidate, in weighted, gated steps."""

    api_version: Literal["dgdgen.dev/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["DGDRollout"]
    metadata: Metadata
    spec: RolloutBody


def json_schema() -> dict[str, Any]:
    schema = RolloutSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://dgdgen.dev/schemas/rollout-spec.schema.json"
    return schema
