"""``python -m dgdgen.analysis.quality_gate``: exit codes for bad input and for no answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dgdgen.analysis.quality_gate", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_bad_prompt_set_is_exit_2_with_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a"}\n{"promt": "b"}\n')
    r = _run("--prompts", str(f), "--stable", "http://127.0.0.1:9", "--candidate",
             "http://127.0.0.1:9", "--model", "m", "--scorer", "exact")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{f}:2: promt: unknown key" in r.stderr


def test_unreachable_generations_are_errors_and_inconclusive(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "a", "reference": "x"}\n' * 3)
    r = _run("--prompts", str(f), "--stable", "http://127.0.0.1:9", "--candidate",
             "http://127.0.0.1:9", "--model", "m", "--scorer", "exact", "--timeout", "2")
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.startswith("Inconclusive: 0 scored pairs") and "3 errors of 3" in r.stdout
