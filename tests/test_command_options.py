"""Commands take only options that act there: `schema` reads no file, `verify` reads YAML files
but no spec (so `--max-input-size` applies and `--allow-outside-paths` would do nothing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _dgdgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dgdgen", *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )


def test_schema_refuses_options_that_do_nothing() -> None:
    for opt in (["--allow-outside-paths"], ["--max-input-size", "1K"]):
        r = _dgdgen("schema", *opt)
        assert r.returncode == 2 and "unrecognized arguments" in r.stderr, (opt, r.stderr)
    assert _dgdgen("schema").returncode == 0


def test_verify_honours_max_input_size_and_refuses_allow_outside_paths(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 3000 + "\n", encoding="utf-8")
    r = _dgdgen("verify", "--max-input-size", "1K", str(big))
    assert r.returncode == 2 and "over the limit of 1024 bytes" in r.stderr, r.stderr
    r = _dgdgen("verify", "--allow-outside-paths", str(big))
    assert r.returncode == 2 and "unrecognized arguments: --allow-outside-paths" in r.stderr
