"""The command line as a user meets it: help, schema, plan formats, and the installed wheel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gen_support import EXAMPLES, REPO, run_cli


@pytest.mark.parametrize("words", [("--help",), ("-h", "validate"), ("--help", "check", "x")])
def test_help_lists_commands(words: tuple[str, ...]) -> None:
    from dgdgen.cli import COMMANDS

    r = run_cli(*words)
    assert r.returncode == 0
    listed = [line.split()[0] for line in r.stdout.splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == list(COMMANDS)  # every command, even with one named after the help flag
    assert "exit codes" in r.stdout


@pytest.mark.parametrize("cmd", ["validate", "plan", "render", "schema", "verify"])
def test_subcommand_help(cmd: str) -> None:
    r = run_cli(cmd, "--help")
    assert r.returncode == 0 and "usage: dgdgen " + cmd in r.stdout


def test_usage_error_exits_2() -> None:
    r = run_cli("plan")
    assert r.returncode == 2 and "usage:" in r.stderr
    assert run_cli("no-such-command").returncode == 2


def test_help_does_not_import_heavy_libraries() -> None:
    code = ("import sys; from dgdgen.cli import build_parser; build_parser(); "
            "heavy = [m for m in ('pydantic', 'jsonschema', 'celpy', 'ruamel.yaml', 'jinja2') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_schema_is_current_and_printed() -> None:
    from dgdgen.spec.schemagen import generate

    committed = (REPO / "schemas" / "rollout-spec.schema.json").read_text()
    assert committed == generate(), "run `python -m dgdgen.spec.schemagen` and commit the schema"
    r = run_cli("schema")
    assert r.returncode == 0 and json.loads(r.stdout)["title"] == "RolloutSpec"


def test_examples_validate_against_the_published_schema() -> None:
    import jsonschema

    from dgdgen import yamlio

    schema = json.loads((REPO / "schemas" / "rollout-spec.schema.json").read_text())
    for ex in EXAMPLES:
        (doc,) = yamlio.load_file(str(ex / "rollout.yaml"))
        jsonschema.validate(doc.data, schema)


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_plan_formats(fmt: str) -> None:
    r = run_cli("plan", str(EXAMPLES[0] / "rollout.yaml"), "--format", fmt)
    assert r.returncode == 0, r.stderr
    if fmt == "json":
        data = json.loads(r.stdout)
        assert data["steps"][0]["kind"] == "baseline" and data["rollback"]["kind"] == "rollback"
    if fmt == "markdown":
        assert "```mermaid" in r.stdout and "xychart-beta" in r.stdout
    if fmt == "table":
        assert "rollback" in r.stdout and "cleanup" in r.stdout


def test_validate_all_examples() -> None:
    r = run_cli("validate", *[str(e / "rollout.yaml") for e in EXAMPLES])
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ok: ") == len(EXAMPLES)


def test_installed_wheel_behaves_like_the_checkout(tmp_path: Path) -> None:
    """Build the wheel, run it from outside the checkout, compare with the golden tree."""
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(wheel_dir), str(REPO)],
        check=True, capture_output=True, text=True,
    )
    (wheel,) = wheel_dir.glob("dgdgen-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "dgdgen/_data/schemas/rollout-spec.schema.json" in names
        assert any(n.startswith("dgdgen/_data/schemas/crds/") for n in names)
        zf.extractall(site)
    example = REPO / "examples" / "vllm-disagg-image-bump"
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    r = subprocess.run(
        [sys.executable, "-c", "import dgdgen, sys; assert 'site' in dgdgen.__file__, dgdgen.__file__;"
         "from dgdgen.cli import main; sys.exit(main(sys.argv[1:]))",
         "render", str(example / "rollout.yaml"), "-o", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )
    assert r.returncode == 0, r.stderr
    golden = example / "rendered"
    for f in golden.rglob("*"):
        if f.is_file():
            assert (out / f.relative_to(golden)).read_bytes() == f.read_bytes()


_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "twenty-one", "twenty-two", "twenty-three", "twenty-four",
)
_NUMBERS = {w: n for n, w in enumerate(_WORDS)}


def test_performance_doc_counts_the_commands_the_parser_registers() -> None:
    """docs/performance.md states how many commands `--help` builds; the figure must be today's."""
    import argparse

    from dgdgen.cli import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    registered = len(sub.choices)
    text = (REPO / "docs" / "performance.md").read_text()
    total = re.findall(r"\(([a-z-]+) commands registered\)", text)
    others = re.findall(r"the other ([a-z-]+) subparsers", text)
    assert total and others, "docs/performance.md no longer states the command count"
    assert [_NUMBERS[w] for w in total] == [registered] * len(total)
    assert [_NUMBERS[w] for w in others] == [registered - 1] * len(others)
