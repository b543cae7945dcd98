"""``python -m dgdgen.analysis.quality_gate``: one quality-gate run, as a Job would run it.

Exit status: 0 Successful, 1 Failed, 3 Inconclusive (never 0: too few scored pairs is not a
pass), 2 bad input. The judge's API key is read from ``DGDGEN_JUDGE_API_KEY`` only (in a
cluster an environment variable filled from a Secret by reference), never from an argument.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dgdgen.analysis.paired import paired_verdict
from dgdgen.analysis.quality import collect, judge_preference
from dgdgen.analysis.scorers import SCORERS, load_prompts, score
from dgdgen.errors import InputError

EXIT = {"Successful": 0, "Failed": 1, "Inconclusive": 3}


def main(argv: list[str] | None = None) -> int:
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
    a = ap.parse_args(argv)
    try:
        prompts = load_prompts(a.prompts)
    except (InputError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.scorer == "judge" and not (a.judge_url and a.judge_model and a.rubric_file):
        print("error: --scorer judge needs --judge-url, --judge-model and --rubric-file",
              file=sys.stderr)
        return 2
    if a.scorer == "regex" and not a.pattern:
        print("error: --scorer regex needs --pattern", file=sys.stderr)
        return 2
    outcomes = collect(prompts, stable_url=a.stable, candidate_url=a.candidate, model=a.model,
                       max_tokens=a.max_tokens, seed=a.seed, timeout=a.timeout)
    pairs: list[tuple[float, float]] = []
    errors = 0
    rubric = a.rubric_file.read_text(encoding="utf-8") if a.scorer == "judge" else ""
    for o in outcomes:
        if o.stable is None or o.candidate is None:
            errors += 1
            continue
        if a.scorer == "judge":
            j = judge_preference(a.judge_url, a.judge_model, rubric, o.prompt.prompt,
                                 o.stable.text, o.candidate.text, seed=a.seed,
                                 api_key=os.environ.get("DGDGEN_JUDGE_API_KEY"),
                                 timeout=a.timeout)
            if j.preference is None:
                errors += 1
                continue
            pairs.append((0.5, j.preference))
            continue
        s = score(a.scorer, o.prompt, o.stable, pattern=a.pattern)
        c = score(a.scorer, o.prompt, o.candidate, pattern=a.pattern)
        if s is not None and c is not None:
            pairs.append((s, c))
    v = paired_verdict(pairs, max_loss_share=a.max_loss_share, effect=a.effect)
    print(f"{v.verdict}: {v.reason}; {errors} errors of {len(prompts)} prompts")
    return EXIT[v.verdict]


if __name__ == "__main__":
    sys.exit(main())
