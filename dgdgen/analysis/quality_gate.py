"""``python -m dgdgen.analysis.quality_gate``: one quality-gate run, as a Job would run it.

Exit status: 0 Successful, 1 Failed, 3 Inconclusive (never 0: too few scored pairs is not a
pass), 2 bad input. The judge's API key is read from ``DGDGEN_JUDGE_API_KEY`` only (in a
cluster an environment variable filled from a Secret by reference), never from an argument.

With ``--scorer judge`` the run is sequential: the judge is first calibrated on the labelled
pairs of ``--calibration`` (dgdgen/analysis/calibration.py; below ``--min-agreement`` the run is
Inconclusive before any generation is asked), then each prompt goes to both generations and to
the judge in turn until the loss share's interval settles (dgdgen/analysis/sequential.py) or the
prompts run out (the sign test decides). ``--max-calls`` bounds the judge requests, calibration
included; spent before a decision, the run is Inconclusive and says how far it got.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dgdgen.analysis import sequential
from dgdgen.analysis.calibration import LabelledPair, calibrate, load_pairs
from dgdgen.analysis.paired import paired_verdict
from dgdgen.analysis.quality import Judge, RequestFailed, ask, collect
from dgdgen.analysis.scorers import SCORERS, Prompt, load_prompts, score
from dgdgen.errors import InputError

EXIT = {"Successful": 0, "Failed": 1, "Inconclusive": 3}


def main(argv: list[str] | None = None, *, rubric: str | None = None) -> int:
    """The gate as the rendered Job runs it. ``rubric``: the judge's rubric itself, for a caller
    in this process (``dgdgen analyze``), in place of ``--rubric-file``: nothing is written."""
    ap = argparse.ArgumentParser(prog="python -m dgdgen.analysis.quality_gate")
    ap.add_argument("--prompts", type=Path, required=True)
    ap.add_argument("--stable", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--scorer", choices=(*SCORERS, "judge"), required=True)
    ap.add_argument("--pattern")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-loss-share", type=float, default=0.5)
    ap.add_argument("--effect", type=float, default=0.2)
    ap.add_argument("--judge-url")
    ap.add_argument("--judge-model")
    ap.add_argument("--rubric-file", type=Path)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--calibration", type=Path)
    ap.add_argument("--min-agreement", type=float, default=0.8)
    ap.add_argument("--min-pairs", type=int, default=10)
    ap.add_argument("--max-calls", type=int)
    ap.add_argument("--candidate-header", action="append", default=[], metavar="NAME: VALUE",
                    help="a header sent with every request to the candidate (a preview's, "
                    "when --candidate is the public entry point)")
    a = ap.parse_args(argv)
    candidate_headers: dict[str, str] = {}
    for h in a.candidate_header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            print(f"error: --candidate-header {h!r}: expected NAME: VALUE", file=sys.stderr)
            return 2
        candidate_headers[name.strip()] = value.strip()
    a.candidate_headers = candidate_headers
    try:
        prompts = load_prompts(a.prompts)
        labelled = load_pairs(a.calibration) if a.calibration is not None else None
    except (InputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.scorer == "judge" and not (a.judge_url and a.judge_model
                                    and (a.rubric_file or rubric is not None)):
        print("error: --scorer judge needs --judge-url, --judge-model and --rubric-file",
              file=sys.stderr)
        return 2
    if a.scorer == "regex" and not a.pattern:
        print("error: --scorer regex needs --pattern", file=sys.stderr)
        return 2
    if a.scorer == "judge":
        text = rubric if rubric is not None else a.rubric_file.read_text(encoding="utf-8")
        judge = Judge(a.judge_url, a.judge_model, text,
                      a.seed, api_key=os.environ.get("DGDGEN_JUDGE_API_KEY"),
                      timeout=a.timeout, max_calls=a.max_calls)
        verdict, line = judged_gate(a, prompts, labelled, judge)
        print(line)
        return EXIT[verdict]
    outcomes = collect(prompts, stable_url=a.stable, candidate_url=a.candidate, model=a.model,
                       max_tokens=a.max_tokens, seed=a.seed, timeout=a.timeout,
                       candidate_headers=candidate_headers)
    pairs: list[tuple[float, float]] = []
    errors = 0
    for o in outcomes:
        if o.stable is None or o.candidate is None:
            errors += 1
            continue
        s = score(a.scorer, o.prompt, o.stable, pattern=a.pattern)
        c = score(a.scorer, o.prompt, o.candidate, pattern=a.pattern)
        if s is not None and c is not None:
            pairs.append((s, c))
    v = paired_verdict(pairs, max_loss_share=a.max_loss_share, effect=a.effect)
    print(f"{v.verdict}: {v.reason}; {errors} errors of {len(prompts)} prompts")
    return EXIT[v.verdict]


def judged_gate(
    a: argparse.Namespace, prompts: list[Prompt], labelled: list[LabelledPair] | None,
    judge: Judge,
) -> tuple[str, str]:
    """The judge's run: calibration, then pair after pair until the loss share settles, the
    prompts run out or the budget is spent. The verdict and its one-line report (the last line
    the gate prints: ``dgdgen analyze`` shows it)."""
    if labelled is not None:
        cal = calibrate(judge, labelled, a.min_agreement)
        print(f"calibration: {cal.reason()}; {cal.details()}")
        if not cal.passed:
            return "Inconclusive", f"Inconclusive: {cal.reason()}; {judge.budget()}"
    preferences: list[float] = []
    errors = asked = 0
    last = sequential.look(preferences, pairs=len(prompts), min_pairs=a.min_pairs,
                           max_loss_share=a.max_loss_share)
    for p in prompts:
        if not judge.can_ask():
            return "Inconclusive", (
                f"Inconclusive: judge-call budget spent ({judge.budget()}) after {asked} of "
                f"{len(prompts)} prompts, no decision: {last.describe(a.max_loss_share)}; "
                f"{errors} errors")
        asked += 1
        try:
            s = ask(a.stable, a.model, p.prompt, max_tokens=a.max_tokens, seed=a.seed,
                    timeout=a.timeout)
            c = ask(a.candidate, a.model, p.prompt, max_tokens=a.max_tokens, seed=a.seed,
                    headers=a.candidate_headers,
                    timeout=a.timeout)
        except RequestFailed:
            errors += 1
            continue
        j = judge.prefer(p.prompt, s.text, c.text)
        if j.preference is None:
            errors += 1
            continue
        preferences.append(j.preference)
        last = sequential.look(preferences, pairs=len(prompts), min_pairs=a.min_pairs,
                               max_loss_share=a.max_loss_share)
        if last.verdict is not None:
            wins = last.decided - last.losses
            return last.verdict, (
                f"{last.verdict}: {wins} wins, {last.losses} losses, "
                f"{len(preferences) - last.decided} ties; {last.describe(a.max_loss_share)}, "
                f"stopped after {asked} of {len(prompts)} prompts; {errors} errors of "
                f"{asked} prompts asked; {judge.budget()}")
    v = paired_verdict([(0.5, x) for x in preferences], max_loss_share=a.max_loss_share,
                       effect=a.effect)
    return v.verdict, (
        f"{v.verdict}: {v.reason}; {errors} errors of {len(prompts)} prompts; "
        f"{last.describe(a.max_loss_share)}; {judge.budget()}")


if __name__ == "__main__":
    sys.exit(main())
