"""The rollout spec's ``analysis``: the SLO, probe, quality and custom-metric gates of each step
(docs/analysis.md).

No ``from __future__ import annotations`` here, as in every module of the spec: with it, pydantic
compiles and evaluates each annotation from its text when a model is built.
"""

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from dgdgen.spec.base import HOSTNAME, Duration, Image, SpecModel


class Slos(SpecModel):
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


class ProbePrompt(SpecModel):
    prompt: str = Field(description="User message sent with temperature 0.")
    expected: str = Field(description="Expected reply text (see `match`).")


class Probe(SpecModel):
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


class SecretKeyRef(SpecModel):
    """A key of a Secret in the rollout's namespace (the value never appears in the spec)."""

    name: str = Field(description="Secret name.")
    key: str = Field(description="Key in the Secret's data.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if len(v) > 253 or not HOSTNAME.match(v) or v.startswith("*"):
            raise ValueError(f"must be a Secret name (DNS-1123 subdomain), got {v!r}")
        return v

    @field_validator("key")
    @classmethod
    def _key(cls, v: str) -> str:
        # A Secret data key (k8s.io/apimachinery IsConfigMapKey): [-._a-zA-Z0-9]+, ≤253.
        if not re.fullmatch(r"[-._a-zA-Z0-9]{1,253}", v):
            raise ValueError(f"must be a Secret key ([-._a-zA-Z0-9]+), got {v!r}")
        return v


class JudgeCalibration(SpecModel):
    """Labelled pairs the judge must agree with before it may gate (docs/analysis.md, "The
    judge's calibration"): asked in both orders before the gate's pairs; below `minAgreement`
    the gate is Inconclusive, never a pass."""

    pairs: str = Field(
        description="JSONL calibration set, relative to the spec file, inside the repository: one "
        "object a line, `prompt`, `stable` and `candidate` (the two answers) and `label` "
        "(`stable`, `candidate` or `tie`: the better answer). Rendered into the prompt ConfigMap."
    )
    min_agreement: float = Field(
        0.8, gt=0, le=1, description="The lower bound of the 95 % Wilson interval of the judge's "
        "agreement with the labels must reach this (the point estimate is not enough: a small "
        "set agrees by luck)."
    )

    @field_validator("pairs")
    @classmethod
    def _pairs(cls, v: str) -> str:
        if not v.endswith(".jsonl") or v.startswith("/"):
            raise ValueError(f"expected a relative path to a .jsonl file, got {v!r}")
        return v


class QualityJudge(SpecModel):
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
    calibration: JudgeCalibration | None = Field(
        None, description="Labelled pairs the judge is checked against before it may gate."
    )
    min_pairs: int = Field(
        10, ge=1, description="Scored pairs before the judge's decision may stop early (once "
        "the loss share's interval lies on one side of `maxLossShare`)."
    )
    max_calls: int | None = Field(
        None, ge=2, description="Judge requests a run may send, calibration included (two per "
        "pair); spent before a decision, the gate is Inconclusive. Default: no limit (two per "
        "labelled pair and per prompt at most)."
    )

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://[^\s/]+", v):
            raise ValueError(f"expected an http:// or https:// URL, got {v!r}")
        return v


class QualityGate(SpecModel):
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


class Hooks(SpecModel):
    enabled: bool = Field(
        False, description="Annotate each step's AnalysisRun as an Argo CD PostSync hook."
    )
    delete_policy: Literal["BeforeHookCreation", "HookSucceeded", "HookFailed"] = Field(
        "BeforeHookCreation", description="argocd.argoproj.io/hook-delete-policy."
    )


class CustomMetric(SpecModel):
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


class Experiment(SpecModel):
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
    cohorts: Literal["weight", "preview"] = Field(
        "weight", description="How users are assigned: `weight` (the step's random split) or "
        "`preview` (the users who carry spec.traffic.preview's header or cookie value see the "
        "candidate, everyone else the stable: the step's weight is 0, and each user keeps "
        "their cohort whatever the provider)."
    )
    cohort_share: float | None = Field(
        None, gt=0, lt=1, description="With cohorts `preview`: the share of the units (users or "
        "requests) expected to carry the value; sizes the sample as the weight does otherwise."
    )


# kube-prometheus-stack's Prometheus selects PodMonitors labelled `release: <Helm release>`
# (podMonitorSelectorNilUsesHelmValues: true, the chart default); docs/analysis.md.
DEFAULT_MONITOR_LABELS = {"release": "kube-prometheus-stack"}

GATE_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}$")


class Analysis(SpecModel):
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


