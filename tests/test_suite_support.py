"""The suite's own scheduling and time limit (tests/conftest.py, tests/suite_support.py), run on
a small suite of its own in a scratch folder, with the real conftest and pytest-xdist: a test past
the limit fails unless marked `long` with a docstring that says why, named tests run in one
process, and the tests sharing a module-scoped fixture share one worker and one set-up."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import suite_support
from gen_support import REPO

CONFTEST = f"""
import sys
sys.path.insert(0, {str(REPO / "tests")!r})
exec(compile(open({str(REPO / "tests" / "conftest.py")!r}).read(), "conftest.py", "exec"))
"""

TIMING = '''
import time

import pytest


def test_quick():
    pass


def test_slow():
    # 2 s of CPU, past the 1 s limit the run sets. The time counted leaves out what the test
    # waited for a CPU, never what it ran: a test that only slept 4 s passed the check twice in
    # CI-like runs (its run-queue wait read 3 s or more: docs/performance.md), one that runs
    # cannot
    start = time.process_time()
    while time.process_time() - start < 2:
        pass


@pytest.mark.long
def test_slow_marked():
    """Long: sleeps past the limit on purpose."""
    time.sleep(1.5)


@pytest.mark.long
def test_marked_without_a_reason():
    """Says nothing about its time."""
'''

SHARED = '''
import os

import pytest


@pytest.fixture(scope="module")
def once():
    with open(os.environ["SETUPS"], "a") as fh:
        fh.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")


@pytest.mark.parametrize("n", range(6))
def test_shares(once, n):
    pass


@pytest.mark.parametrize("n", range(6))
def test_alone(n):
    pass
'''


def _suite(tmp: Path) -> Path:
    (tmp / "conftest.py").write_text(CONFTEST)
    (tmp / "test_timing.py").write_text(TIMING)
    (tmp / "test_shared.py").write_text(SHARED)
    return tmp


def _run(tmp: Path, *args: str, **extra_env: str) -> tuple[dict[str, str], str]:
    """Outcome by test name (from JUnit XML), and the output."""
    xml = tmp / "out.xml"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k != "DGDGEN_REQUIRE_COMPONENTS"}  # ours, if a worker
    env.update(DGDGEN_TEST_LIMIT_SECONDS="1", SETUPS=str(tmp / "setups"), **extra_env)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp),
         "--junitxml", str(xml), *args], cwd=tmp, env=env, capture_output=True, text=True,
        timeout=300, check=False)
    outcomes = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        outcomes[case.get("name", "")] = "failed" if failed else "passed"
    return outcomes, done.stdout + done.stderr


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_test_past_the_limit_fails_unless_marked_long_with_a_reason(
        tmp_path: Path, workers: str) -> None:
    _suite(tmp_path)
    outcomes, out = _run(tmp_path, "-n", workers, "test_timing.py")
    assert outcomes == {"test_quick": "passed", "test_slow": "failed",
                        "test_slow_marked": "passed",
                        "test_marked_without_a_reason": "failed"}, out
    assert "past the suite's limit of 1 s" in out
    assert "without a docstring saying why" in out


def test_named_tests_run_in_one_process_and_a_folder_on_workers(tmp_path: Path) -> None:
    _suite(tmp_path)
    outcomes, out = _run(tmp_path, "test_shared.py::test_shares")
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 6, out
    assert (tmp_path / "setups").read_text() == "main\n", out
    (tmp_path / "setups").unlink()
    outcomes, out = _run(tmp_path, "test_shared.py")
    assert set(outcomes.values()) == {"passed"} and len(outcomes) == 12, out
    # on the workers, and the module-scoped fixture set up once: its tests went to one worker
    [worker] = (tmp_path / "setups").read_text().split()
    assert worker.startswith("gw"), out
    (tmp_path / "setups").unlink()
    _, out = _run(tmp_path, "-p", "no:xdist", "test_shared.py")
    assert (tmp_path / "setups").read_text() == "main\n", out


@pytest.mark.parametrize(("limit", "wanted", "workers"), [
    ("128\n", 4, 2),  # Linux's default: two rehearsals of four frontends each fit, three do not
    ("1024\n", 4, 4),
    ("20\n", 4, 1),  # never none
    ("1024\n", 1, 1),  # never more than asked
])
def test_workers_fit_the_machines_inotify_budget(tmp_path: Path, limit: str, wanted: int,
                                                  workers: int) -> None:
    budget = tmp_path / "max_user_instances"
    budget.write_text(limit)
    assert suite_support.workers_within_inotify(wanted, str(budget)) == (workers, int(limit))
    assert suite_support.workers_within_inotify(wanted, str(tmp_path / "absent")) == (wanted, 0)


HEAVY = '''
import os
import time

import pytest


def _record(kind, name, seconds):
    start = time.time()
    time.sleep(seconds)
    with open(os.environ["INTERVALS"], "a") as fh:
        fh.write(f"{kind} {name} {start} {time.time()}\\n")


@pytest.mark.slow
@pytest.mark.parametrize("n", range(7))
def test_heavy(n):
    _record("heavy", n, 0.8)  # under the 1 s limit the run sets


@pytest.mark.parametrize("n", range(60))
def test_light(n):
    _record("light", n, 0.05)
'''


def test_a_fifth_worker_computes_while_four_heavy_tests_wait(tmp_path: Path) -> None:
    """Five workers: no more than HEAVY_AT_ONCE heavy tests run at once while light ones are
    left, and light tests run while the heavy ones do."""
    assert suite_support.HEAVY_AT_ONCE == 4
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_heavy.py").write_text(HEAVY)
    intervals = tmp_path / "intervals"
    outcomes, out = _run(tmp_path, "-n", "5", "test_heavy.py", INTERVALS=str(intervals))
    assert len(outcomes) == 67 and set(outcomes.values()) == {"passed"}, out
    rows = [line.split() for line in intervals.read_text().splitlines()]
    heavy = [(float(a), float(b)) for kind, _, a, b in rows if kind == "heavy"]
    light = [(float(a), float(b)) for kind, _, a, b in rows if kind == "light"]
    # the most heavy tests running at any one start of a heavy test (all five workers start
    # together, once every collection is in: without the limit, five heavy tests run at once)
    at_once = max(sum(1 for a, b in heavy if a <= start < b) for start, _ in heavy)
    assert at_once <= suite_support.HEAVY_AT_ONCE, (at_once, heavy)
    # and light tests ran while heavy ones did
    assert any(a <= start < b for start, _ in light for a, b in heavy), (light, heavy)
