"""Run the rules over checked files: files → context → rules → findings (selected, suppressed,
sorted) → a :class:`Report`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType

from dgdgen.check.classify import RiskGrade, assumed_categories
from dgdgen.check.context import (
    Context,
    DgdPair,
    FileInput,
    SiblingLoader,
    annotations_of,
    build,
    object_id,
    roll_of_dgd,
)
from dgdgen.check.findings import ORDER, Finding, Severity
from dgdgen.check.inplace import DEFAULT_RUN_BY, GroveStrategy, RunBy, Target
from dgdgen.check.modelconfig import ModelConfig
from dgdgen.check.releases import DEFAULT
from dgdgen.check.rules.registry import RULES
from dgdgen.check.suppress import Suppression, applies, parse_annotations
from dgdgen.errors import InputError

# The rule whose suppression settles an assumed change (DGD205 derived-default-in-place).
SETTLES = "DGD205"


@dataclass(frozen=True)
class Options:
    release: str = DEFAULT
    run_by: RunBy = DEFAULT_RUN_BY  # how the operator runs the worker pods (check.inplace)
    # Grove DGDs without the nvidia.com/grove-update-strategy annotation (None: the release's).
    grove_strategy: GroveStrategy | None = None
    select: tuple[str, ...] = ()  # empty: every rule
    ignore: tuple[str, ...] = ()
    suppressions: tuple[Suppression, ...] = ()  # from the config file
    # The served model's files (--model-config): settle the defaults engines derive from them.
    model_config: ModelConfig | None = None


@dataclass
class Report:
    findings: list[Finding]
    pairs: list[DgdPair]
    files: list[str]
    release: str
    rules: list[ModuleType] = field(default_factory=list)
    run_by: RunBy = DEFAULT_RUN_BY
    grove_strategy: GroveStrategy | None = None
    # Assumed changes the user settled with a suppression of their DGD205 finding (file,
    # object, component, change key): they no longer count toward the verdict.
    settled: frozenset[tuple[str, str, str, str]] = frozenset()

    @property
    def target(self) -> Target:
        return Target(self.release, self.run_by, self.grove_strategy)

    @property
    def isolation_required(self) -> bool:
        return any(p.verdict is not None and p.verdict.isolation_required for p in self.pairs)

    @property
    def categories(self) -> list[str]:
        out: set[str] = set()
        for p in self.pairs:
            if p.verdict is not None:
                out.update(p.verdict.categories)
        return sorted(out)

    def assumed_of(self, pair: DgdPair) -> tuple[str, ...]:
        """The categories one DGD's verdict assumes (fail safe) and no suppression with a
        reason settled."""
        v = pair.verdict
        if v is None:
            return ()
        open_ = [c for c in v.changes if c.assumed and
                 (pair.head.file, pair.head.object, c.component, c.key) not in self.settled]
        return assumed_categories(open_, v.categories)

    @property
    def assumed(self) -> list[str]:
        """Categories assumed to change where the checker cannot decide (and no change of any
        DGD establishes): isolation is then required, assumed."""
        out: set[str] = set()
        for p in self.pairs:
            out.update(self.assumed_of(p))
        return sorted(out - set(self.categories))

    @property
    def isolation_verdict(self) -> bool:
        """``isolation_required`` as reported: fail safe, true when a change demands
        isolation or is assumed to."""
        return self.isolation_required or bool(self.assumed)

    @property
    def risk(self) -> RiskGrade | None:
        grades = [p.verdict.risk for p in self.pairs if p.verdict is not None]
        return max(grades, key=lambda g: g.rank) if grades else None

    def failing(self, fail_on: Severity | None) -> list[Finding]:
        if fail_on is None:
            return []
        return [f for f in self.findings if not f.suppressed and f.severity.rank >= fail_on.rank]

    def counts(self) -> dict[str, int]:
        active = [f for f in self.findings if not f.suppressed]
        return {
            "error": sum(f.severity is Severity.ERROR for f in active),
            "warning": sum(f.severity is Severity.WARNING for f in active),
            "info": sum(f.severity is Severity.INFO for f in active),
            "suppressed": sum(f.suppressed for f in self.findings),
            "files": len(self.files),
            "dgds": len(self.pairs),
        }

    def to_dict(self) -> dict[str, object]:
        risk = self.risk
        return {
            "tool": "dgdgen",
            "dynamo_version": self.release,
            "workers_run_by": self.run_by.value,
            "worker_namespaces": self.target.namespaces.value,
            "grove_update_strategy": (self.grove_strategy.value if self.grove_strategy
                                      else None),
            "isolation_required": self.isolation_verdict,
            "categories": self.categories,
            "assumed": self.assumed,
            "risk": risk.value if risk is not None else None,
            "summary": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
            "verdicts": [
                {"file": p.head.file, "object": p.head.object,
                 "base_object": p.base.object if p.base is not None else None,
                 **self._verdict_dict(p)}
                for p in self.pairs if p.verdict is not None
            ],
        }

    def _verdict_dict(self, p: DgdPair) -> dict[str, object]:
        assert p.verdict is not None
        out = p.verdict.to_dict()
        assumed = self.assumed_of(p)
        out["assumed"] = list(assumed)
        out["isolation_required"] = p.verdict.isolation_required or bool(assumed)
        # How the operator would replace this DGD's workers if the change were applied in place.
        roll = roll_of_dgd(self.target, p.head)
        s = roll.strategy
        out["update_strategy"] = {
            "name": s.name, "source": roll.strategy_source or None, "replaces": s.replaces,
            "max_surge": s.max_surge, "max_unavailable": s.max_unavailable,
            "prefill_decode_together": s.together, "scaling_blocked": s.scaling_blocked,
            "rolls_before_pods_are_deleted": s.automatic}
        return out


def resolve_selectors(selectors: Sequence[str]) -> None:
    """Every ``--select`` / ``--ignore`` entry must name at least one rule (a typo must not
    silently disable nothing)."""
    for s in selectors:
        if not any(m.RULE.matches(s) for m in RULES.values()):
            raise InputError(f"no rule matches {s!r}",
                             hint="see `dgdgen rules list` for codes and slugs")


def selected(options: Options) -> list[ModuleType]:
    resolve_selectors(options.select + options.ignore)
    out = []
    for module in RULES.values():
        meta = module.RULE
        if options.select and not any(meta.matches(s) for s in options.select):
            continue
        if any(meta.matches(s) for s in options.ignore):
            continue
        out.append(module)
    return out


def run(files: list[FileInput], options: Options,
        sibling_loader: SiblingLoader | None = None) -> Report:
    ctx: Context = build(files, options.release, sibling_loader, options.run_by,
                         options.model_config, options.grove_strategy)
    rules = selected(options)
    findings: list[Finding] = []
    for module in rules:
        findings.extend(module.check(ctx))
    findings = _suppress(findings, files, options.suppressions)
    findings = sorted(set(findings), key=ORDER)
    # A suppression with a reason settles the assumption its DGD205 finding names.
    settled = frozenset((f.file, f.object, f.component or "", f.key) for f in findings
                        if f.code == SETTLES and f.suppressed)
    return Report(findings, ctx.dgds, [f.file for f in files], options.release, rules,
                  options.run_by, options.grove_strategy, settled)


def _suppress(findings: list[Finding], files: list[FileInput],
              config: tuple[Suppression, ...]) -> list[Finding]:
    by_object: dict[tuple[str, str], list[Suppression]] = {}
    for f in files:
        for d in f.head:
            ann = annotations_of(d.data)
            if ann:
                entries = list(parse_annotations(ann))
                if entries:
                    by_object.setdefault((f.file, object_id(d.data)), []).extend(entries)
    out = []
    for finding in findings:
        meta = RULES[finding.code].RULE
        candidates = by_object.get((finding.file, finding.object), []) + list(config)
        if finding.code == "DGD001":  # the complaint about a suppression cannot suppress itself
            candidates = list(config)
        for s in candidates:
            if applies(s, meta.matches(s.selector), finding.file, finding.object):
                where = "annotation" if s.annotation != "config" else "config"
                finding = finding.suppress(f"{s.reason} ({where})")
                break
        out.append(finding)
    return out
