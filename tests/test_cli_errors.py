"""One error format for every command: `dgdgen CMD: error: …` on stderr, one line per problem,
each ending in a newline, exit 2 — for usage errors (argparse) and for bad input alike. The
commands and their required arguments are read from the parser, so a new command is covered."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from dgdgen.cli import COMMANDS, build_parser
from gen_support import run_cli


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _invocations() -> list[tuple[str, list[str]]]:
    """(command as errors name it, argv) for every command and sub-action, with every required argument filled in
    and every input file missing."""
    out = []
    for name, parser in _subparsers(build_parser()).items():
        actions = _subparsers(parser)
        for action, sub in (actions.items() if actions else [("", parser)]):
            argv = [name] + ([action] if action else [])
            for a in sub._actions:
                if isinstance(a, argparse._SubParsersAction) or not (a.required or not a.option_strings):
                    continue
                if a.nargs == 0 or isinstance(a, argparse._HelpAction):
                    continue
                value = (str(next(iter(a.choices))) if a.choices else
                         "1" if a.dest == "step" else "missing.yaml")
                argv += ([a.option_strings[-1]] if a.option_strings else []) + [value]
            out.append((f"{name} {action}".strip(), argv))
    return out


INVOCATIONS = _invocations()


def _assert_one_format(command: str, stderr: str) -> None:
    assert stderr.endswith("\n"), repr(stderr)
    lines = [ln for ln in stderr.splitlines() if not ln.startswith(("usage:", " "))]
    assert lines, stderr
    for line in lines:
        assert line.startswith(f"dgdgen {command}: error: "), stderr
        assert line.count("error:") == 1, stderr  # never printed twice on one line
    assert len(set(lines)) == len(lines), stderr  # nor twice on two


def test_every_command_is_exercised() -> None:
    assert {name.split()[0] for name, _ in INVOCATIONS} == set(COMMANDS)


@pytest.mark.parametrize(("command", "argv"), INVOCATIONS, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else v)
def test_bad_input_error_format(command: str, argv: list[str], tmp_path: Path) -> None:
    if argv[1:] == [] or argv[1:2] == ["list"]:  # takes no input file: give it a bad option value
        argv = argv + ["--format", "nope"] if "list" in argv else argv + ["nope.yaml"]
    elif len(argv) == len(command.split()):  # a sub-action that needs no input at all
        argv = argv + ["--no-such-option"]
    if argv[:2] == ["rules", "explain"]:
        argv = ["rules", "explain", "NO-SUCH-RULE"]
    result = run_cli(*argv, cwd=tmp_path)
    assert result.returncode == 2, (argv, result.stdout, result.stderr)
    _assert_one_format(command, result.stderr)
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("command", "argv"), INVOCATIONS, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else v)
def test_unknown_option_error_format(command: str, argv: list[str], tmp_path: Path) -> None:
    result = run_cli(*argv, "--no-such-option", cwd=tmp_path)
    assert result.returncode == 2, (argv, result.stdout, result.stderr)
    _assert_one_format(command, result.stderr)
    assert re.search(rf"^usage: dgdgen {command}\b", result.stderr, re.M), result.stderr


def test_several_problems_give_one_prefixed_line_each(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [\n")
    result = run_cli("validate", str(tmp_path / "missing.yaml"), str(bad), cwd=tmp_path)
    assert result.returncode == 2
    _assert_one_format("validate", result.stderr)
    assert len(result.stderr.splitlines()) == 2


def test_malformed_yaml_names_the_character_in_check_as_in_validate(tmp_path: Path) -> None:
    bad = tmp_path / "dgd.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: @x\n")
    messages = []
    for command in ("validate", "check", "verify"):
        result = run_cli(command, str(bad), cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        _assert_one_format(command, result.stderr)
        messages.append(result.stderr.split("malformed YAML: ", 1)[1])
    assert "found character '@' that cannot start any token" in messages[1]
    assert len(set(messages)) == 1, messages


def _all_parsers() -> list[argparse.ArgumentParser]:
    out = []
    for parser in _subparsers(build_parser()).values():
        out.append(parser)
        out.extend(_subparsers(parser).values())
    return out


@pytest.mark.parametrize("parser", _all_parsers(), ids=lambda p: p.prog)
def test_every_command_and_option_is_described(parser: argparse.ArgumentParser) -> None:
    assert parser.description and len(parser.description) > 40, parser.prog
    undocumented = [a.dest for a in parser._actions
                    if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert undocumented == [], f"{parser.prog}: options without help: {undocumented}"


def test_a_multi_line_git_error_keeps_the_format(tmp_path: Path) -> None:
    spec = str(Path(__file__).resolve().parents[1] / "examples" / "vllm-disagg-block-size"
               / "rollout.yaml")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    into = str(tmp_path / "deploy")
    assert run_cli("render", spec, "--into", into, "--init", env=env).returncode == 0
    result = run_cli("promote", spec, "--into", into, "--push", env=env)  # no origin remote
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) > 1  # git's own lines come along
    _assert_one_format("promote", result.stderr)
    assert not any(line.strip() == "dgdgen promote: error:" for line in result.stderr.splitlines())
