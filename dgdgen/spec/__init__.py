"""The rollout spec: dgdgen's own kind (``dgdgen.dev/v1alpha1``, ``DGDRollout``).

Typed and validated at the boundary (pydantic v2, unknown fields rejected, camelCase keys as in
Kubernetes). :func:`dgdgen.plan.load.load_spec` reads a file, maps every pydantic error back to the
file, line and field path, and resolves the stable DGD; this package holds only the models:
the rollout itself here, its parts in :mod:`~dgdgen.spec.traffic`, :mod:`~dgdgen.spec.analysis` and
:mod:`~dgdgen.spec.gitops`, the shared field types in :mod:`~dgdgen.spec.base`.

The JSON Schema of this model is generated into ``schemas/rollout-spec.schema.json`` (a test fails
when it is stale) and printed by ``dgdgen schema``.

No ``from __future__ import annotations`` here: with it, pydantic compiles and evaluates each of
the 141 annotations from its text when a model is built (about 1 % of a ``dgdgen validate``).
"""

import re
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    field_validator,
    model_validator,
)

from dgdgen.spec.analysis import Analysis, CustomMetric
from dgdgen.spec.base import (
    API_VERSION,
    DIGEST,
    DNS1035_LABEL,
    DNS1123_LABEL,
    HOSTNAME,
    KIND,
    PROMOTION_IMAGE,
    PROMOTION_REPOSITORY,
    Duration,
    Image,
    PercentOrCount,
    Revision,
    SpecModel,
    parse_duration,
)
from dgdgen.spec.gitops import GitOps, cluster_waves
from dgdgen.spec.traffic import (
    EndpointPicker,
    Haproxy,
    InferencePoolSettings,
    Traffic,
    TrafficProvider,
)

__all__ = [
    "API_VERSION", "DNS1035_LABEL", "DNS1123_LABEL", "KIND", "MAX_ENTRIES", "MAX_STEPS",
    "PROMOTION_IMAGE", "PROMOTION_REPOSITORY", "Analysis", "CustomMetric", "DynamoTarget",
    "EndpointPicker", "GitOps", "Haproxy", "InferencePoolSettings", "Isolation", "RolloutBody",
    "RolloutSpec", "Strategy", "Traffic", "TrafficProvider", "cluster_waves", "json_schema",
    "parse_duration",
]


def _env_names(v: dict[str, str]) -> dict[str, str]:
    # The API server's rule for environment variable names (IsEnvVarName, relaxed form since
    # Kubernetes 1.30): printable ASCII except '='. Unchecked, the DGD is accepted and its pods
    # are refused.
    for name in v:
        if not name or "=" in name or not all(" " <= c <= "~" for c in name):
            raise ValueError(f"an environment variable name is printable ASCII without '=', "
                             f"got {name!r}")
    return v


class Isolation(str, Enum):
    SEPARATE_DGD = "separate-dgd"
    WORKER_GROUP = "worker-group"
    PARTITION = "partition"
    IN_PLACE = "in-place"
    AUTO = "auto"


class Strategy(str, Enum):
    CANARY = "canary"
    BLUE_GREEN = "blue-green"


class Metadata(SpecModel):
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


class StableGeneration(SpecModel):
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


class ArgChanges(SpecModel):
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


class EnvChanges(SpecModel):
    set: Annotated[dict[str, str], AfterValidator(_env_names)] = Field(
        default_factory=dict, description="Variables to set.")
    remove: list[str] = Field(default_factory=list, description="Variables to remove.")


class ComponentChange(SpecModel):
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


class Candidate(SpecModel):
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


class Capacity(SpecModel):
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


class Step(SpecModel):
    weight: int = Field(ge=0, le=100, description="Traffic to the candidate, in %.")
    pause: Duration | None = Field(
        None, description="Bake time before the next step, e.g. 10m (Go duration)."
    )
    gate: str | None = Field(None, description="Name of the analysis gate that must pass.")


_RELEASE = re.compile(r"^v?\d+\.\d+(\.\d+)?$")


class DynamoTarget(SpecModel):
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


class RolloutBody(SpecModel):
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
        if len(v) > 253 or not HOSTNAME.match(v) or v.startswith("*."):
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
            if image is not None and not DIGEST.search(image):
                raise ValueError(
                    f"requireImageDigests: spec.{where} {image!r} is not pinned by digest "
                    "(expected name@sha256:<64 hex>)"
                )
        return self


class RolloutSpec(SpecModel):
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
