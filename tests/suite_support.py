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
  controller in a file the workers write at collection (``write_groups``), with the heavy tests
  (marked ``long``, or waiting proofs): no more than ``HEAVY_AT_ONCE`` workers hold one while a
  light test is left.
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

from dgdgen.runtime.procs import INOTIFY_LIMIT_FILE

LIMIT_SECONDS = 120.0
LIMIT_ENV = "DGDGEN_TEST_LIMIT_SECONDS"  # a lower limit, for the test of the check itself
WAITING_MARKS = ("rehearse", "runtime", "slow")
# At most this many heavy tests (the long ones and the waiting proofs: ``heavy``) run at once.
# They wait on real processes and scaled clocks, and four of them left about a seventh of two
# CPUs idle (docs/performance.md, "How it is scheduled"): a worker beyond these four computes
# while they wait, and takes a heavy test only when no light one is left.
HEAVY_AT_ONCE = 4

_setup_seconds = pytest.StashKey[float]()
_wait_at_start = pytest.StashKey[float]()
_problem = pytest.StashKey[str]()


# Each Dynamo 1.6.1 frontend holds 10 inotify instances (its file discovery backend's watches;
# counted in /proc/*/fd during a rehearsal), and Linux caps a user's instances at
# fs.inotify.max_user_instances (128 by default) machine-wide: past it the next frontend exits
# with "Too many open files (os error 24)". A worker runs one test at a time, whose rehearsal
# holds at most four frontends (two generations with two replicas each) and a Prometheus: 41.
INOTIFY_PER_WORKER = 42


def workers_within_inotify(wanted: int, limit_file: str = INOTIFY_LIMIT_FILE) -> tuple[int, int]:
    """The workers the machine's inotify budget allows, at most ``wanted`` and at least one, and
    the budget read (0 where it cannot be read: then ``wanted``)."""
    try:
        with open(limit_file, encoding="ascii") as fh:
            limit = int(fh.read().strip())
    except (OSError, ValueError):
        return wanted, 0
    return max(1, min(wanted, (limit - 8) // INOTIFY_PER_WORKER)), limit


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


def heavy(item: pytest.Item) -> bool:
    """A test marked long, or a waiting proof."""
    return item.get_closest_marker("long") is not None or waits(item)


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
    data = {"groups": groups, "heavy": [item.nodeid for item in items if heavy(item)]}
    tmp = f"{path}.{os.getpid()}"
    Path(tmp).write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp, path)


def scheduler(config: pytest.Config, log: Any, path: str) -> Any:
    """pytest-xdist's scope scheduling with a scope per test, or per group for grouped tests, in
    collection order (``slow_first``), one unit at a time as workers run low; no more than
    ``HEAVY_AT_ONCE`` workers hold heavy units while a light one is left."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        groups: dict[str, str] | None = None
        heavy: frozenset[str] = frozenset()

        def __init__(self, config: pytest.Config, log: Any) -> None:
            super().__init__(config, log)
            self.heavy_of: dict[Any, list[dict[str, bool]]] = {}  # node: its heavy units

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # read once, when the collections are in
                data = json.loads(Path(path).read_text(encoding="utf-8"))
                self.groups, self.heavy = data["groups"], frozenset(data["heavy"])
            group = self.groups.get(nodeid)
            return nodeid if group is None else f"group {group}"

        def _is_heavy(self, unit: dict[str, bool]) -> bool:
            return any(nodeid in self.heavy for nodeid in unit)

        def _heavy_elsewhere(self, node: Any) -> int:
            """Workers other than ``node`` holding a heavy unit not done yet."""
            count = 0
            for other, units in self.heavy_of.items():
                units[:] = [u for u in units if not all(u.values())]
                count += other is not node and bool(units)
            return count

        def _assign_work_unit(self, node: Any) -> None:
            if self._heavy_elsewhere(node) >= HEAVY_AT_ONCE:
                light = next((scope for scope, unit in self.workqueue.items()
                              if not self._is_heavy(unit)), None)
                if light is not None:
                    self.workqueue.move_to_end(light, last=False)
            unit = next(iter(self.workqueue.values()))
            if self._is_heavy(unit):
                self.heavy_of.setdefault(node, []).append(unit)
            super()._assign_work_unit(node)

        def remove_node(self, node: Any) -> Any:
            self.heavy_of.pop(node, None)
            return super().remove_node(node)

    config.option.loadscopereorder = False  # keep the collection's order
    return GroupScheduling(config, log)
