"""How much a reader reads per finding: the default text output of `dgdgen diff` on the in-place
single-flag edits of tests/check/single_flag_edits.py (every backend, aggregated and
disaggregated, each on the hashed and the shared worker layout and on Grove), against the same
findings' whole text in `--format json` (`details`).

    python benchmarks/bench_finding_length.py [--worst N]

Per run: characters of the whole text output (every line, the summary included) divided by its
findings, and the longest line. Prints Markdown; docs/checker.md ("Reading a finding") quotes
it. `--worst N` also prints the N runs that spend the most per finding.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "check"))

from single_flag_edits import LAYOUTS, Case, cases

from dgdgen.cli import main as cli


@dataclass(frozen=True)
class Run:
    case: Case
    layout: str
    text: str
    report: dict[str, object]

    @property
    def findings(self) -> list[dict[str, object]]:
        found = self.report["findings"]
        assert isinstance(found, list)
        return found

    @property
    def per_finding(self) -> float:
        return len(self.text) / len(self.findings)

    @property
    def longest_line(self) -> int:
        return max(len(line) for line in self.text.splitlines())


def _diff(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli(["diff", *argv, "--fail-on", "never", "--color", "never"])
    return out.getvalue()


def run_all() -> list[Run]:
    """Every case on every layout (in a scratch folder: the head DGD at the relative path a
    repository would hold it, as the text report prints it)."""
    runs = []
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            for case in cases():
                Path(case.path).parent.mkdir(parents=True, exist_ok=True)
                Path("base.yaml").write_text(case.old)
                Path(case.path).write_text(case.new)
                for layout, options in LAYOUTS.items():
                    text = _diff("base.yaml", case.path, *options)
                    report = json.loads(_diff("base.yaml", case.path, *options,
                                              "--format", "json"))
                    runs.append(Run(case, layout, text, report))
        finally:
            os.chdir(here)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worst", type=int, default=0)
    args = parser.parse_args()
    runs = run_all()
    with_findings = [r for r in runs if r.findings]
    per = [r.per_finding for r in with_findings]
    longest = [r.longest_line for r in runs]
    # (a report from before findings had `details` held the whole text in `message`)
    details = [len(str(f.get("details", f["message"]))) for r in with_findings for f in r.findings]
    findings = sum(len(r.findings) for r in with_findings)
    print(f"{len(runs)} runs of `dgdgen diff` ({len(cases())} edits × {len(LAYOUTS)} layouts), "
          f"{len(with_findings)} with findings, {findings} findings")
    print()
    print("| measure | mean | median | max |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| text characters per finding (whole output / findings) | {statistics.mean(per):.0f} "
          f"| {statistics.median(per):.0f} | {max(per):.0f} |")
    print(f"| longest line of a run | {statistics.mean(longest):.0f} | "
          f"{statistics.median(longest):.0f} | {max(longest)} |")
    print(f"| JSON `details` of a finding | {statistics.mean(details):.0f} | "
          f"{statistics.median(details):.0f} | {max(details)} |")
    if args.worst:
        for r in sorted(with_findings, key=lambda r: -r.per_finding)[:args.worst]:
            print(f"\n--- {r.case.id} [{r.layout}] {r.per_finding:.0f} per finding\n{r.text}")


if __name__ == "__main__":
    main()
