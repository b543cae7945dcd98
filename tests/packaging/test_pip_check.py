"""The documented install is consistent: the `rehearse` extra bounds each package the Dynamo 1.6.1
wheels require exactly as the wheels do, and `pip check` on the environment running the tests
reports nothing but `aisimulate`, the one requirement `--no-deps` leaves out on purpose
(docs/rehearse.md)."""

from __future__ import annotations

import importlib.metadata as md
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = "ai-dynamo 1.6.1 requires aisimulate, which is not installed."
WHEELS = ("ai-dynamo", "ai-dynamo-runtime")


def _installed(name: str) -> bool:
    try:
        md.distribution(name)
    except md.PackageNotFoundError:
        return False
    return True


def _base_requirements(dist: str) -> dict[str, Requirement]:
    """The requirements of ``dist`` outside any extra, for this Python, by name."""
    found = {}
    for text in md.requires(dist) or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            found[req.name.lower()] = req
    return found


def test_the_rehearse_extra_bounds_packages_as_the_dynamo_wheels_do() -> None:
    if not all(map(_installed, WHEELS)):
        pytest.skip("the Dynamo 1.6.1 wheels are not installed (docs/rehearse.md)")
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["rehearse"]
    ours = {r.name.lower(): r for r in map(Requirement, extra)}
    wanted = {**_base_requirements("ai-dynamo"), **_base_requirements("ai-dynamo-runtime")}
    del wanted["ai-dynamo-runtime"], wanted["aisimulate"]  # the wheels themselves; left out
    assert set(wanted) <= set(ours), sorted(set(wanted) - set(ours))
    differ = {n: (str(ours[n].specifier), str(r.specifier)) for n, r in wanted.items()
              if ours[n].specifier != r.specifier}
    assert differ == {}, "the rehearse extra (ours, the wheels')"


def test_pip_check_reports_only_the_package_left_out() -> None:
    done = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True,
                          timeout=120, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    assert lines == ([LEFT_OUT] if _installed("ai-dynamo") else ["No broken requirements found."]), (
        done.stdout + done.stderr)
