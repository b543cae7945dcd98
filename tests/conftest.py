"""Suite-wide: under CI (`DGDGEN_REQUIRE_COMPONENTS=1`, set by `.ci/run`, which installs them) a
test skipped for a missing real component — haproxy, promtool, prometheus, Lua, git, pre-commit,
hera, kubernetes-validate, rsvg-convert — fails instead, so a proof can never pass by not
running. Every skip fails there: the data the tests read is in the repository
(tests/data/upstream/), so no skip is expected for want of it.

Property tests (hypothesis) draw the same examples on every run — derandomized, no example
database — so a suite that passed passes again on the same code, in CI and for a user;
`DGDGEN_EXPLORE=1 pytest …` draws new examples instead (and keeps any failure it finds in
`.hypothesis/` to replay). `tests/test_fuzz.py` has its own seed (`DGDGEN_FUZZ_SEED`).

How the suite spends its time (docs/performance.md, "The test suite"):

* **In parallel by default.** A plain `pytest` runs on pytest-xdist workers (`WORKERS`, more than
  the two CPUs CI has: many tests wait on real processes and scaled clocks), tests handed out one
  at a time in the order below, a module's tests that share a fixture together
  (suite_support.GroupScheduling), no more than four heavy ones at once while a light one is
  left. Naming single tests (`pytest tests/x.py::t`) runs them in this
  process, as do `-n 0` and `-p no:xdist`.
* **Slow tests first.** The waiting proofs (the docs run, rehearsals, the runtime probes, tests
  marked `long`) start at once and overlap with the tests that compute, instead of forming a tail.
* **A module-scoped fixture is paid once.** The tests of a module that share a module- or
  class-scoped fixture (a runtime started once, a built wheel, the docs run's one scratch
  checkout) run on one worker, in their order (an `xdist_group` mark).
* **No test past 120 s** (set-up and call, less the time it waited for a CPU others held) unless
  marked `@pytest.mark.long` with a docstring that says why it needs that long
  (tests/suite_support.py; tests/test_suite_support.py shows the check failing).
"""

from __future__ import annotations

import os

import pytest
import suite_support
from hypothesis import settings

settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile("explore" if os.environ.get("DGDGEN_EXPLORE") == "1" else "fixed")

# Workers when none are asked for. Five on two CPUs: one follows the docs (the longest chain of
# waits, ~11 min), three start with the rehearsals, and the fifth computes while those four wait
# (suite_support.HEAVY_AT_ONCE: no more heavy tests at once while a light one is left); then
# all five fill the CPUs. docs/performance.md has the runs this was chosen from.
WORKERS = 5


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Parallel unless told otherwise: before pytest-xdist reads ``-n``, give it our default when
    the command line gave none (pyproject's addopts cannot: `-p no:xdist` would then fail on an
    unknown `-n`), and our scheduling when it gave no other."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return  # xdist disabled, or this is a worker (which sees -n unset)
    opt = config.option
    if opt.collectonly or opt.usepdb or getattr(opt, "tx", None):
        return
    if opt.numprocesses is None:
        named = [a for a in config.args if not a.startswith("-")]
        # named tests: starting workers would cost more than they save
        if named and all("::" in a for a in named):
            opt.numprocesses = 0
        else:  # no more rehearsals at once than the machine's inotify budget holds
            opt.numprocesses, limit = suite_support.workers_within_inotify(WORKERS)
            if opt.numprocesses < WORKERS:
                config.issue_config_time_warning(pytest.PytestConfigWarning(
                    f"fs.inotify.max_user_instances is {limit}: {opt.numprocesses} workers, not "
                    f"{WORKERS} (each Dynamo frontend holds 10; `sysctl -w "
                    "fs.inotify.max_user_instances=1024` lifts it, docs/performance.md)"),
                    stacklevel=2)
    if opt.numprocesses and opt.dist == "no":
        opt.dist = "load"  # a distribution; _Schedule's hook makes the scheduler
        config.pluginmanager.register(_Schedule(config), "dgdgen-schedule")


class _Schedule:
    """The controller's side of the scheduling (tests/suite_support.py); registered only with
    pytest-xdist, whose hooks these are."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @property
    def groups(self) -> str:
        """The file the workers write the groups to, in this run's temp folder."""
        factory: pytest.TempPathFactory = self.config._tmp_path_factory  # type: ignore[attr-defined]
        return str(factory.getbasetemp() / "xdist-groups.json")

    def pytest_configure_node(self, node) -> None:  # type: ignore[no-untyped-def]
        node.workerinput[suite_support.GROUPS_KEY] = self.groups

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):  # type: ignore[no-untyped-def]
        return suite_support.scheduler(config, log, self.groups)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suite_support.check_long_marks(items)
    suite_support.group_shared_fixtures(items)
    items[:] = suite_support.slow_first(items)
    suite_support.write_groups(config, items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    suite_support.start_clock(item)


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[-1]) if isinstance(longrepr, tuple) else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    suite_support.check_duration(item, report)
    if not report.skipped or os.environ.get("DGDGEN_REQUIRE_COMPONENTS") != "1":
        return
    reason = _reason(report)
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
    reason = _reason(report)
    report.outcome = "failed"
    report.longrepr = f"skipped under DGDGEN_REQUIRE_COMPONENTS=1: {reason}"
