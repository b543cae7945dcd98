"""How the suite is scheduled and kept fast (used by tests/conftest.py; docs/performance.md,
"The test suite").

* ``slow_first``: the order tests are handed to the xdist workers — chains of long tests first
  (a module whose tests share one long set-up, such as the docs run), then the other tests marked
  ``long``, then the waiting proofs (``rehearse``, ``runtime``, ``slow``), then the rest; pytest's
  own order within each rank.
* ``group_shared_fixtures``: tests sharing a module-, class- or package-scoped fixture run on one
  worker (an ``xdist_group`` mark), so the fixture is set up once, not once per worker that gets
  one. ``GroupScheduling`` hands the groups out: pytest-xdist's own ``--dist loadgroup`` renames a
  grouped test's node id, which pytest 9.2 no longer lets it do, so the groups reach the
  controller in a file the workers write at collection (``write_groups``).
* ``check_duration``: a test whose set-up and call take more than ``LIMIT_SECONDS`` (less the time
  its process waited for a CPU others held) fails unless it is marked ``@pytest.mark.long`` — and
  a test marked so needs a docstring that says why it needs that long (``check_long_marks``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

LIMIT_SECONDS = 120.0
LIMIT_ENV = "DGDGEN_TEST_LIMIT_SECONDS"  # a lower limit, for the test of the check itself
WAITING_MARKS = ("rehearse", "runtime", "slow")

_setup_seconds = pytest.StashKey[float]()
_wait_at_start = pytest.StashKey[float]()
_problem = pytest.StashKey[str]()


def limit_seconds() -> float:
    return float(os.environ.get(LIMIT_ENV) or LIMIT_SECONDS)


def _long_doc(item: pytest.Item) -> str:
    """The docstring that must say why ``item`` is long: its function's when the mark is the
    test's own (or its parameter's), else its class's or module's, where the mark was set."""
    if any(m.name == "long" for m in item.own_markers):
        holders = [getattr(item, "obj", None)]
    else:
        holders = [getattr(item, "cls", None), getattr(item, "module", None)]
    return " ".join((getattr(h, "__doc__", None) or "") for h in holders if h is not None)


def check_long_marks(items: list[pytest.Item]) -> None:
    """A test marked ``long`` must say why in the docstring where the mark is — in words that
    include "long" — or it fails at set-up."""
    for item in items:
        if item.get_closest_marker("long") is None:
            continue
        if "long" not in _long_doc(item).lower():
            item.stash[_problem] = (
                "marked @pytest.mark.long without a docstring saying why it needs that long (the "
                "docstring of the function, or of the module or class where the mark is set, "
                "says so in words that include \"long\")")


def _shared_scope_key(item: pytest.Item) -> str | None:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    module = item.nodeid.split("::", 1)[0]
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        if not defs:
            continue
        scope = defs[-1].scope
        if scope in ("module", "class"):
            return module
        if scope == "package":
            return os.path.dirname(module) or module
    return None


def group_shared_fixtures(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        key = _shared_scope_key(item)
        if key is not None:
            item.add_marker(pytest.mark.xdist_group(key))


def _group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def _minutes(item: pytest.Item) -> float:
    mark = item.get_closest_marker("long")
    return float(mark.kwargs.get("minutes", 3)) if mark is not None else 0.0


def slow_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """Chains of long tests (a group holding one) first, then other long tests, each the longest
    first by their marks' ``minutes``; then the waiting proofs; then the rest."""
    group_minutes: dict[str, float] = {}
    for item in items:
        group = _group(item)
        if group is not None:
            group_minutes[group] = max(group_minutes.get(group, 0.0), _minutes(item))

    def key(item: pytest.Item) -> tuple[int, float]:
        group = _group(item)
        if group is not None and group_minutes[group] > 0:
            return 0, -group_minutes[group]
        if item.get_closest_marker("long") is not None:
            return 1, -_minutes(item)
        if waits(item):
            return 2, 0.0
        return 3, 0.0

    return sorted(items, key=key)  # stable: pytest's order within a rank


def waits(item: pytest.Item) -> bool:
    """A proof that waits on real processes and scaled clocks (its marks say so)."""
    return any(item.get_closest_marker(m) is not None for m in WAITING_MARKS)


def _cpu_wait() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU another process held
    (/proc/thread-self/schedstat; 0 where there is none)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def check_duration(item: pytest.Item, report: pytest.TestReport) -> None:
    """Called from pytest_runtest_makereport with each phase's report. The time counted is the
    set-up's and the call's, less what the test process spent waiting for a CPU held by others
    (a busy machine, the other workers): on an overloaded machine a quick test is not "long"."""
    if report.when == "setup":
        item.stash[_setup_seconds] = report.duration
        problem = item.stash.get(_problem, None)
        if problem is not None and report.passed:
            report.outcome = "failed"
            report.longrepr = problem
        return
    if report.when != "call" or not report.passed:
        return
    took = item.stash.get(_setup_seconds, 0.0) + report.duration
    waited = _cpu_wait() - item.stash.get(_wait_at_start, 0.0)
    limit = limit_seconds()
    if took - waited > limit and item.get_closest_marker("long") is None:
        report.outcome = "failed"
        report.longrepr = (
            f"took {took:.0f} s (set-up and call; {waited:.0f} s of it waiting for a CPU), past "
            f"the suite's limit of {limit:.0f} s: make it faster, or mark it @pytest.mark.long "
            "with a docstring that says why it needs that long (tests/suite_support.py)")


def start_clock(item: pytest.Item) -> None:
    """Called before the test's set-up."""
    item.stash[_wait_at_start] = _cpu_wait()


GROUPS_KEY = "dgdgen_groups"  # the workerinput entry naming the groups file


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: the group of each grouped test, for the controller's GroupScheduling. Every
    worker collects the same tests and writes the same file; each replaces it whole."""
    path = getattr(config, "workerinput", {}).get(GROUPS_KEY)
    if path is None:
        return
    groups = {item.nodeid: group for item in items if (group := _group(item)) is not None}
    tmp = f"{path}.{os.getpid()}"
    Path(tmp).write_text(json.dumps(groups), encoding="utf-8")
    os.replace(tmp, path)


def scheduler(config: pytest.Config, log: Any, path: str) -> Any:
    """pytest-xdist's scope scheduling with a scope per test, or per group for grouped tests, in
    collection order (``slow_first``), one unit at a time as workers run low."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # read once, when the collections are in
                self.groups = json.loads(Path(path).read_text(encoding="utf-8"))
            group = self.groups.get(nodeid)
            return nodeid if group is None else f"group {group}"

    config.option.loadscopereorder = False  # keep the collection's order
    return GroupScheduling(config, log)
