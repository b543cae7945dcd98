"""DGD206 runtime-upgrade-skips-minor."""

from __future__ import annotations

from collections.abc import Iterator

from dgdgen.check.context import Context, DgdPair
from dgdgen.check.facts import ComponentFacts, DgdFacts
from dgdgen.check.findings import Finding, Severity
from dgdgen.check.headline import images
from dgdgen.check.releases import ImageRelease, image_release, skipped
from dgdgen.check.rules import RuleMeta
from dgdgen.model.dgd import Role

# The short consequence a headline carries, and the long text the report prints once per run
# (Finding.explanation): the layers a reporter may show or hide.
SHORT = "Dynamo supports an upgrade only within a minor release or to the adjacent one"
LONG = (
    "the v1.7.0 release page: upgrade within a minor or to the adjacent minor only. A skipped "
    "minor's operator, CRDs and frontend↔worker protocol changes are never applied in between, "
    "and during the roll the frontend (replaced in place, never hash-isolated) serves workers "
    "of the other runtime — a pairing no release is tested with (Dynamo documents only an N-2 "
    "frontend/worker window, #13886)")
SKEW_SHORT = "the frontend and workers would run non-adjacent minor releases during the roll"
# The headlines' consequence, in a few words (the texts above stay whole in the details).
HEADLINE = "an upgrade path Dynamo does not support"
SKEW_HEADLINE = "a frontend and workers two minors apart serve together during the roll"

RULE = RuleMeta(
    code="DGD206",
    slug="runtime-upgrade-skips-minor",
    severity=Severity.ERROR,
    summary="A runtime image change skips a Dynamo minor release, or leaves the frontend and "
            "the workers on non-adjacent minors while the DGD rolls.",
    rationale=(
        "Dynamo supports upgrades within a minor release or to the adjacent minor only (v1.7.0 "
        "release page, \"upgrade path\"). A runtime image bump 1.5.x → 1.7.x passes over 1.6: "
        "what 1.6 migrates (CRD storage versions, operator defaults, the card and the "
        "frontend↔worker protocol) never runs, and an in-place roll replaces the frontend in "
        "place while old and new workers serve, so at some moment a frontend of one release "
        "routes to workers two minors away. The release is read from the image tag of images "
        "whose repository path names Dynamo (nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.7.0, "
        "dynamo-frontend:1.6.1; a component's runtimeVersionOverride wins); a tag that names no "
        "version (latest, a digest, a branch) is not guessed at: the run says once that it "
        "could not check, as an info finding that fails nothing at the default --fail-on."
    ),
    remediation=(
        "Go through the adjacent minor: roll to a 1.(N+1).x image first, let it settle, then to "
        "the next — each as a gated rollout (`dgdgen plan` / `render`), never two minors in one "
        "edit. Keep the frontend and the workers within one minor of each other at every step."
    ),
    help="go one minor at a time, each a gated rollout (`dgdgen plan`)",
)


def _label(c: ComponentFacts, r: ImageRelease) -> str:
    return f"{c.image or c.runtime_version_override or '?'} (Dynamo {r.text})"


def _release(c: ComponentFacts) -> ImageRelease:
    return image_release(c.image, c.runtime_version_override)


def _location(pair: DgdPair, c: ComponentFacts) -> tuple[int | None, int | None]:
    path = (c.container_path + ("image",)) if c.container_path is not None and c.image \
        else c.path
    loc = pair.head.dgd.location(path)
    return loc.line, loc.column


def _side_releases(d: DgdFacts, role: str) -> dict[tuple[int, int], ComponentFacts]:
    """The Dynamo minors the frontends (``role`` "frontend") or the workers of ``d`` run."""
    out: dict[tuple[int, int], ComponentFacts] = {}
    for c in d.components.values():
        if (c.role is Role.FRONTEND) != (role == "frontend") or not (
                c.role is Role.FRONTEND or c.is_worker):
            continue
        r = _release(c)
        if r.minor is not None:
            out.setdefault(r.minor, c)
    return out


def check(ctx: Context) -> Iterator[Finding]:
    unreadable: list[tuple[DgdPair, ComponentFacts, tuple[str | None, str | None]]] = []
    for pair in ctx.dgds:
        h = pair.head
        bumped = False
        if pair.base is not None and (pair.verdict is None or pair.verdict.in_place):
            for name, new in h.components.items():
                old = pair.base.components.get(name)
                if old is None or (old.image == new.image and old.runtime_version_override
                                   == new.runtime_version_override):
                    continue
                if not (new.role is Role.FRONTEND or new.is_worker):
                    continue
                ro, rn = _release(old), _release(new)
                if ro.minor is None or rn.minor is None:
                    if ro.dynamo or rn.dynamo:
                        unreadable.append((pair, new, (old.image, new.image)))
                    continue
                gap = skipped(ro.minor, rn.minor)
                if gap is None:
                    continue
                bumped = True
                line, col = _location(pair, new)
                yield RULE.finding(
                    file=h.file, line=line, column=col, object=h.object, component=name,
                    key=f"skip\x1f{name}\x1f{ro.text}\x1f{rn.text}",
                    message=f"{name} {images(old.image, new.image)} skips Dynamo {gap}: "
                            f"{HEADLINE}",
                    details=f"{name}: image {_label(old, ro)} → {_label(new, rn)} skips "
                            f"Dynamo {gap}: {SHORT} — {LONG}",
                    explanation=LONG)
        if bumped:
            continue  # the skew below follows from the same bump: one finding says it
        # Frontend and workers during the roll: the frontend is replaced in place while old
        # and new workers serve, so every frontend minor (base or head) meets every worker
        # minor (base or head); without a base, the head's own pairing.
        sides = [h] if pair.base is None or (pair.verdict is not None
                                             and not pair.verdict.in_place) else [pair.base, h]
        fronts: dict[tuple[int, int], ComponentFacts] = {}
        workers: dict[tuple[int, int], ComponentFacts] = {}
        for d in sides:
            for k, c in _side_releases(d, "frontend").items():
                fronts.setdefault(k, c)
            for k, c in _side_releases(d, "worker").items():
                workers.setdefault(k, c)
        worst = None
        for fm, fc in sorted(fronts.items()):
            for wm, wc in sorted(workers.items()):
                gap = skipped(fm, wm)
                if gap is not None and (worst is None or abs(fm[1] - wm[1]) > worst[0]):
                    worst = (abs(fm[1] - wm[1]), fc, wc, gap)
        if worst is None:
            continue
        _, fc, wc, gap = worst
        at = h.components.get(fc.name) or h.components.get(wc.name) or fc
        line, col = _location(pair, at)
        yield RULE.finding(
            file=h.file, line=line, column=col, object=h.object, component=at.name,
            key=f"skew\x1f{fc.name}\x1f{wc.name}",
            message=f"{fc.name} on Dynamo {_release(fc).text}, {wc.name} on "
                    f"{_release(wc).text} (skipping {gap}): {SKEW_HEADLINE}",
            details=f"frontend {fc.name} {_label(fc, _release(fc))} and worker {wc.name} "
                    f"{_label(wc, _release(wc))}: {SKEW_SHORT} (Dynamo {gap} between them): "
                    f"{SHORT} — {LONG}",
            explanation=LONG)
    if unreadable:
        # Said once per run: a tag that names no version is not guessed at.
        pair, c, what = unreadable[0]
        more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
        line, col = _location(pair, c)
        yield Finding(
            file=pair.head.file, line=line or 1, column=col or 1, code=RULE.code,
            slug=RULE.slug, severity=Severity.INFO, object=pair.head.object, component=c.name,
            key="unreadable", remediation="tag runtime images with their Dynamo release "
            "(e.g. vllm-runtime:1.7.0), or set the component's runtimeVersionOverride",
            message=f"{c.name} {images(*what)}{more}: no Dynamo release in the tag, so a "
                    "skipped minor cannot be checked",
            details=f"{c.name}: image {what[0]} → {what[1]}{more}: the tag names no Dynamo "
                    "release, so whether the change skips a minor cannot be checked",
            help="tag runtime images with their Dynamo release, or set runtimeVersionOverride")
