"""docs/performance.md's size of the suite is what pytest collects (it said 1,263 long after the
suite had grown past 1,700)."""

from __future__ import annotations

import re
import subprocess
import sys

from gen_support import REPO

CLAIM = re.compile(r"The whole suite now collects about ([\d,]+) tests")


def test_the_documented_number_of_tests_is_what_pytest_collects() -> None:
    """Within 10 %: the figure is "about", and a test added since does not make it false."""
    m = CLAIM.search((REPO / "docs" / "performance.md").read_text(encoding="utf-8"))
    assert m, "docs/performance.md no longer says how many tests the suite collects"
    documented = int(m.group(1).replace(",", ""))
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.MULTILINE)
    assert found, done.stdout[-500:]
    collected = int(found.group(1))
    assert abs(collected - documented) <= documented // 10, (
        f"docs/performance.md says about {documented:,} tests; pytest collects {collected:,}")
