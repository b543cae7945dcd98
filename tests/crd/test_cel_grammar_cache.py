"""cel-python's CEL grammar is analysed once and kept by lark in dgdgen's cache directory; a
missing, disabled or damaged cache only costs the rebuild, never a wrong parse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
from dgdgen.crd import cel
program = cel.compile_rule("self.replicas >= 2 && self.name.startsWith('q')")
ok = cel.evaluate(program, {"self": cel.to_cel({"replicas": 3, "name": "qwen"}, None)})
bad = cel.evaluate(program, {"self": cel.to_cel({"replicas": 1, "name": "qwen"}, None)})
print(cel.is_true(ok), cel.is_true(bad), cel.parser_cache_path())
"""


def _run(cache: str | None, **extra: str) -> str:
    env = {**os.environ, **extra}
    env.pop("DGDGEN_CACHE_DIR", None)
    if cache is not None:
        env["DGDGEN_CACHE_DIR"] = cache
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, check=True)
    assert proc.stderr == ""
    return proc.stdout.strip()


def test_grammar_cache_is_written_then_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = cache / "cel-grammar.lark-cache"
    assert _run(str(cache)) == f"True False {path}"
    assert path.is_file() and path.stat().st_size > 10_000
    written = path.stat().st_mtime_ns
    assert _run(str(cache)) == f"True False {path}"
    assert path.stat().st_mtime_ns == written  # read, not rebuilt


def test_damaged_cache_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "cel-grammar.lark-cache"
    path.write_bytes(b"not a lark cache\n")
    assert _run(str(tmp_path)) == f"True False {path}"
    assert path.read_bytes() != b"not a lark cache\n"


def test_cache_in_xdg_cache_home_or_disabled(tmp_path: Path) -> None:
    path = tmp_path / "dgdgen" / "cel-grammar.lark-cache"
    assert _run("", XDG_CACHE_HOME=str(tmp_path)) == "True False None"
    assert not (tmp_path / "dgdgen").exists()
    assert _run(None, XDG_CACHE_HOME=str(tmp_path)) == f"True False {path}"
    assert path.is_file()
