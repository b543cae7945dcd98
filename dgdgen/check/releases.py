"""The Dynamo releases dgdgen knows, which one it assumes when none is given, and what each says
about a rollout beyond its flag tables: how its facts were established (run here, or read from
source), its engine pins, what the frontend's health endpoints answer and what request
migration does.

Every table that is keyed by release (:mod:`dgdgen.check.flags`, :mod:`dgdgen.check.inplace`,
the spec's ``spec.dynamo.version``, the rehearsal's in-place model, the cluster model) takes its
releases from :data:`RELEASES`; a test keeps each table complete.

**The default release** (:data:`DEFAULT`) is the newest release whose runtime dgdgen has run:
1.6. Its consequences (what the frontend does with a checksum change, with an incomplete
disaggregated generation, with a stopped worker) are measured on the 1.6.1 frontend and mocker
(docs/checker.md, docs/rehearse.md). 1.7 is GA (tag ``v1.7.0``, commit ``1a96a04``,
2026-11-23), but PyPI stops at 1.6.1, so its facts are from its release notes, its docs and
source read at commits that are not the tag — "source, not run" — and a cluster reaches 1.7
only through 1.6 (upgrades go within a minor or to the adjacent one: the v1.7.0 release page).
Every report names the release it assumed; ``--dynamo-version 1.7`` (``check.dynamo-version``
in ``.dgdgen.yaml``, ``spec.dynamo.version`` in a rollout spec) selects 1.7. When a 1.7 runtime
can be run and its facts are measured, :data:`VERIFIED` gains it and the default moves with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from dgdgen.errors import InputError

RELEASES: tuple[str, ...] = ("1.3", "1.4", "1.5", "1.6", "1.7")
NEWEST = RELEASES[-1]
# Releases whose runtime dgdgen has run (the wheels it tests against: dgdgen.runtime).
VERIFIED: tuple[str, ...] = ("1.6",)
DEFAULT = VERIFIED[-1]

DEFAULT_WHY = (
    f"the default is {DEFAULT}, the newest release whose runtime dgdgen has run; "
    f"{NEWEST}'s facts are from its source and release notes (not run)")


@lru_cache(maxsize=64)
def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


def normalize_release(value: str | None) -> str:
    """``1.6``, ``1.6.1``, ``v1.7.0`` → a release of :data:`RELEASES`; None → :data:`DEFAULT`;
    unknown → InputError."""
    if value is None:
        return DEFAULT
    text = value.strip().lstrip("vV")
    parts = text.split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].split("-")[0].isdigit():
        major_minor = f"{int(parts[0])}.{int(parts[1].split('-')[0])}"
        if major_minor in RELEASES:
            return major_minor
    raise InputError(
        f"unknown Dynamo version {value!r}",
        hint=f"dgdgen knows {', '.join(RELEASES)}; {DEFAULT_WHY}",
    )


@dataclass(frozen=True)
class Release:
    """What one release says about a rollout, beside the flag tables."""

    version: str
    verified: str  # how its facts were established: "run" or "source"
    engines: tuple[tuple[str, str], ...]  # (engine, pinned version), () when not recorded
    # What the frontend's /health answers (its readiness probe on the operator's default), and
    # whether a frontend with no worker for its model passes it.
    health: str
    health_ready_without_workers: bool
    # The per-model gate dgdgen's rendered frontends and HAProxy check (dgdgen.render.frontends).
    model_ready_path: str
    # What --migration-limit > 0 does.
    migration: str
    sources: str

    @property
    def from_source(self) -> bool:
        return self.verified == "source"


_READY = "/v1/models/{model}/ready"
_HEALTH_16 = (
    "`/health` answers 200 with zero workers and lists the discovered endpoints and instances "
    "(measured on the 1.6.1 frontend, docs/traffic.md \"Frontend readiness and resources\")")
_MIGRATION_16 = (
    "the frontend re-sends a request whose worker disconnects, times out or cuts its stream to "
    "another worker (ai-dynamo 1.6.1 dynamo/frontend/frontend_args.py --migration-limit; "
    "measured: one 503 per worker stopped under load without it, none with it, dgdgen.render.migration)")

RELEASE_FACTS: dict[str, Release] = {
    "1.3": Release("1.3", "source", (), _HEALTH_16, True, _READY, _MIGRATION_16,
                   "flag tables from upstream PRs (dgdgen.check.flags)"),
    "1.4": Release("1.4", "source",
                   (("vLLM", "0.26.0"), ("SGLang", "0.5.16"), ("TRT-LLM", "1.3.0rc22")),
                   _HEALTH_16, True, _READY, _MIGRATION_16,
                   "Dynamo's compatibility page; upstream PRs (dgdgen.check.flags)"),
    "1.5": Release("1.5", "source",
                   (("vLLM", "0.28.0"), ("SGLang", "0.5.18"), ("TRT-LLM", "1.3.0rc25")),
                   _HEALTH_16, True, _READY, _MIGRATION_16,
                   "Dynamo's compatibility page; upstream main of 2026-08-21"),
    "1.6": Release("1.6", "run",
                   (("vLLM", "0.31.0"), ("SGLang", "0.5.21"), ("TRT-LLM", "1.3.0rc29")),
                   _HEALTH_16, True, _READY, _MIGRATION_16,
                   "the PyPI wheels ai-dynamo 1.6.1 / ai-dynamo-runtime 1.6.1, run here "
                   "(tests/check/test_runtime_truth.py, tests/check/test_runtime_needs.py, "
                   "tests/rehearse)"),
    # 1.7: the v1.7.0 release notes (engine pins, in-flight migration, upgrade path), the
    # v1.7.0 DGD reference (Grove strategy, dgdgen.check.inplace) and health-checks page;
    # lib/llm/src/http/service/health.rs at 0ab2b3f52fdb5bc39da3c907bf258302ec0e67bd (untagged,
    # newer than 1.6.1): /health is 503 only while the frontend shuts down or its initial model
    # discovery has not completed, never for a model without workers. Source, not run.
    "1.7": Release("1.7", "source",
                   (("vLLM", "0.33.0"), ("SGLang", "0.5.23"), ("TRT-LLM", "1.4.0rc2")),
                   "`/health` reports the frontend's own readiness (503 until its initial model "
                   "discovery completes or while it shuts down; `?instances=true` adds the "
                   "endpoints and instances 1.6 listed by default) and still answers 200 with "
                   "no worker for a model; `/live` 503 `shutting_down` while draining; paths "
                   "overridable by DYN_HTTP_SVC_HEALTH_PATH / DYN_HTTP_SVC_LIVE_PATH (source, "
                   "not run)", True, _READY,
                   "the frontend also migrates eligible in-flight requests to another worker "
                   "when a worker goes (v1.7.0 release notes; source, not run)",
                   "v1.7.0 release notes, DGD reference and health-checks page; source read at "
                   "untagged commits (the tag is 1a96a04); not run: PyPI stops at 1.6.1"),
}


def facts(release: str) -> Release:
    return RELEASE_FACTS[release]


def from_source(release: str) -> bool:
    """Whether ``release`` is newer than every release dgdgen has run: its facts are read from
    its source and release notes ahead of a runtime (older releases' facts come from the
    upstream history their table rows cite, and are not marked)."""
    return release_key(release) > release_key(VERIFIED[-1])


def source_note(release: str) -> str:
    """A short note for messages and reports on a release whose facts are from source."""
    if not from_source(release):
        return ""
    return f"Dynamo {release}: from its source and release notes, not run"


def engine_pins(release: str) -> str:
    pins = RELEASE_FACTS[release].engines
    return ", ".join(f"{e} {v}" for e, v in pins) if pins else "not recorded"


# --------------------------------------------------------------------------- image versions

# An image whose repository path names Dynamo (nvcr.io/nvidia/ai-dynamo/vllm-runtime,
# .../sglang-runtime, .../tensorrtllm-runtime, dynamo-frontend, a mirror under .../ai-dynamo/...):
# its tag is the Dynamo release it ships. Other images' tags name their own versions (a vLLM
# build's 0.9.2 is not Dynamo 0.9), so they are not read.
_DYNAMO_REPO = re.compile(r"dynamo", re.IGNORECASE)
# A tag naming a release: 1.7.0, v1.6.1, 1.7.0-cuda13, 1.6.1.post1 — a version first, then
# anything that does not continue the number.
_TAG = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?![\d])")


@dataclass(frozen=True)
class ImageRelease:
    """What an image reference says about the Dynamo release it runs."""

    dynamo: bool  # its repository path names Dynamo
    minor: tuple[int, int] | None  # (major, minor) its tag names; None: the tag names none

    @property
    def text(self) -> str:
        return f"{self.minor[0]}.{self.minor[1]}" if self.minor else "?"


def image_release(image: str | None, override: str | None = None) -> ImageRelease:
    """The Dynamo release an image runs: ``override`` (a component's declared
    ``runtimeVersionOverride``) when it names one, else the tag of an image whose repository
    path names Dynamo. Tolerant: a digest, ``latest``, a branch name or no tag is no version."""
    if override is not None:
        m = _TAG.match(override.strip())
        if m:
            return ImageRelease(True, (int(m[1]), int(m[2])))
    if not image:
        return ImageRelease(False, None)
    ref = image.strip().split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    repo, tag = (ref.rsplit(":", 1) if ":" in last else (ref, ""))
    if not _DYNAMO_REPO.search(repo):
        return ImageRelease(False, None)
    m = _TAG.match(tag)
    return ImageRelease(True, (int(m[1]), int(m[2])) if m else None)


def skipped(a: tuple[int, int], b: tuple[int, int]) -> str | None:
    """The minor releases a move from ``a`` to ``b`` (either way) passes over, or None when it
    stays within a minor or goes to the adjacent one. Across a major (``0.9`` → ``1.0``) the
    last minor of the old major is not known here: only the new major's minors before ``b`` are
    counted (``0.9`` → ``1.2`` skips 1.0–1.1)."""
    lo, hi = sorted((a, b))
    if lo[0] == hi[0]:
        if hi[1] - lo[1] <= 1:
            return None
        first, last = (lo[0], lo[1] + 1), (hi[0], hi[1] - 1)
    else:
        if hi[1] == 0:
            return None
        first, last = (hi[0], 0), (hi[0], hi[1] - 1)
    one = f"{first[0]}.{first[1]}"
    return one if first == last else f"{one}–{last[0]}.{last[1]}"
