"""Suite-wide: under CI (`DGDGEN_REQUIRE_COMPONENTS=1`, set by `.ci/run`, which installs them) a
test skipped for a missing real component — haproxy, promtool, prometheus, Lua, git, pre-commit,
hera, kubernetes-validate, rsvg-convert — fails instead, so a proof can never pass by not
running. Every skip fails there: the data the tests read is in the repository
(tests/data/upstream/), so no skip is expected for want of it.

Property tests (hypothesis) draw the same examples on every run — derandomized, no example
database — so a suite that passed passes again on the same code, in CI and for a user;
`DGDGEN_EXPLORE=1 pytest …` draws new examples instead (and keeps any failure it finds in
`.hypothesis/` to replay). `tests/test_fuzz.py` has its own seed (`DGDGEN_FUZZ_SEED`)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile("explore" if os.environ.get("DGDGEN_EXPLORE") == "1" else "fixed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("DGDGEN_REQUIRE_COMPONENTS") != "1":
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"skipped under DGDGEN_REQUIRE_COMPONENTS=1: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    """The same for a whole module skipped at import (``pytest.skip(allow_module_level=True)``,
    e.g. the runtime-backed tests without the ai-dynamo wheels)."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("DGDGEN_REQUIRE_COMPONENTS") != "1":
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if any(word in reason for word in _ALLOWED):
        return
    report.outcome = "failed"
    report.longrepr = f"skipped under DGDGEN_REQUIRE_COMPONENTS=1: {reason}"
