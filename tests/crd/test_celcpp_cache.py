"""The cache of compiled cel-cpp programs (dgdgen/crd/celcpp.py, ProgramCache): a program read
back is the program compiled, for every rule the fast path takes; a damaged, foreign or stale
file or entry is compiled again and replaced; nothing is written with caching disabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dgdgen import crd
from dgdgen.crd import catalog, celcpp, overlays

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"
ENV = celcpp._environment()
pytestmark = pytest.mark.skipif(ENV is None, reason="cel-expr-python is not installed")


def _taken() -> list[tuple[str, bool]]:
    """(rule, optionalOldSelf) of every vendored rule the fast path takes."""
    found = set()
    for api_version, kind in catalog.kinds():
        for with_overlays in ((), tuple(overlays.available())):
            schema = crd._schema(api_version, kind, with_overlays)
            assert schema is not None
            found |= {(rule["rule"], bool(rule.get("optionalOldSelf")))
                      for _, rule in crd._rules(schema, "")}
    return sorted(r for r in found if celcpp.takes(*r))


def _text(source: str, optional: bool) -> str:
    return celcpp._OPTIONAL_WRAPPER.format(source) if optional else source


def _outcome(expression: Any, data: dict[str, Any]) -> Any:
    try:
        result = expression.eval(data=data)
        return (result.type().name(), repr(result.value()))
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return ("error", type(exc).__name__)


def test_every_taken_rule_reads_back_as_compiled(tmp_path: Path) -> None:
    rules = _taken()
    assert len(rules) > 50
    path = tmp_path / "programs.json"
    first = celcpp.ProgramCache(str(path))
    compiled = {r: ENV.compile(_text(*r)) for r in rules}
    for r, expression in compiled.items():
        first.store(_text(*r), expression)
    first.save()
    again = celcpp.ProgramCache(str(path))
    values: list[Any] = [None, 0, 1, "", "a", [], [1, 2], {}, {"name": "a"}, {"a": {"b": 1}}]
    for r, expression in compiled.items():
        back = again.load(ENV, _text(*r))
        assert back is not None, r
        for value in values:
            data = {"self": value, "oldSelf": value, "dgdgenHasOldSelf": True,
                    "dgdgenOldSelf": value}
            assert _outcome(back, data) == _outcome(expression, data), (r, value)


def test_a_damaged_entry_is_compiled_again_and_replaced(tmp_path: Path) -> None:
    path = tmp_path / "programs.json"
    cache = celcpp.ProgramCache(str(path))
    cache.store("self.size() > 0", ENV.compile("self.size() > 0"))
    cache.save()
    data = json.loads(path.read_text())
    data["entries"]["self.size() > 0"] = "bm90IGEgcHJvZ3JhbQ=="  # base64 of "not a program"
    path.write_text(json.dumps(data))
    damaged = celcpp.ProgramCache(str(path))
    assert damaged.load(ENV, "self.size() > 0") is None
    damaged.save()  # the damaged entry is dropped
    assert "self.size() > 0" not in json.loads(path.read_text())["entries"]


@pytest.mark.parametrize("content", [
    b"", b"{", b"[]", b'{"stamp": [0, 1, 2], "entries": {}}', b'{"entries": {"a": 1}}',
    b"\xff\xfe", b'{"stamp": null, "entries": []}',
])
def test_an_unusable_file_is_ignored_and_replaced(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "programs.json"
    path.write_bytes(content)
    cache = celcpp.ProgramCache(str(path))
    assert cache.load(ENV, "self > 0") is None
    cache.save()
    data = json.loads(path.read_text())
    assert data == {"stamp": celcpp._program_stamp(), "entries": {}}


def _validate(cache_dir: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DGDGEN_CACHE_DIR": cache_dir}
    return subprocess.run([sys.executable, "-m", "dgdgen", "validate", str(SPEC)],
                          capture_output=True, text=True, env=env, cwd=REPO)


def test_validate_fills_the_cache_once_and_then_reads_it(tmp_path: Path) -> None:
    first = _validate(str(tmp_path))
    path = tmp_path / celcpp.PROGRAM_CACHE_FILE
    stored = json.loads(path.read_text())
    assert stored["stamp"] == celcpp._program_stamp() and len(stored["entries"]) > 10
    mtime = path.stat().st_mtime_ns
    second = _validate(str(tmp_path))
    assert (second.returncode, second.stdout, second.stderr) == (
        first.returncode, first.stdout, first.stderr) == (0, second.stdout, second.stderr)
    assert path.stat().st_mtime_ns == mtime  # nothing new: not written again


def test_verify_reports_the_same_with_programs_read_back(tmp_path: Path) -> None:
    """Every DGD of the checker corpus and every rendered example, verified with programs
    compiled (an empty cache) and then read back: the same report, violations included."""
    import yaml

    dgd = yaml.safe_load((REPO / "examples" / "vllm-disagg-v1beta1-worker-group" / "dgd.yaml")
                         .read_text())
    dgd["spec"]["components"].append(dgd["spec"]["components"][0])  # a CEL rule fails
    invalid = tmp_path / "invalid" / "duplicate-component.yaml"
    invalid.parent.mkdir()
    invalid.write_text(yaml.safe_dump(dgd))
    paths = [str(REPO / "tests" / "check" / "corpus"), str(invalid.parent),
             *map(str, sorted(REPO.glob("examples/*/rendered")))]
    env = {**os.environ, "DGDGEN_CACHE_DIR": str(tmp_path / "cache")}

    def verify() -> tuple[int, str, str]:
        r = subprocess.run([sys.executable, "-m", "dgdgen", "verify", "--skip-unknown-kinds",
                            *paths], capture_output=True, text=True, env=env, cwd=REPO)
        return r.returncode, r.stdout, r.stderr

    cold = verify()
    stored = json.loads((tmp_path / "cache" / celcpp.PROGRAM_CACHE_FILE).read_text())
    assert len(stored["entries"]) > 30
    assert verify() == cold
    assert "duplicate-component.yaml" in cold[1]  # a rule that does not hold is reported


def test_nothing_is_written_with_caching_disabled(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "DGDGEN_CACHE_DIR": "", "HOME": str(home),
           "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    r = subprocess.run([sys.executable, "-m", "dgdgen", "validate", str(SPEC)],
                       capture_output=True, text=True, env=env, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert not home.exists() and not (tmp_path / "xdg").exists()
