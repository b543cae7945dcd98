"""Mutation fuzzing of every dgdgen command over every kind of input it reads.

    python benchmarks/fuzz_commands.py [--cases 10000] [--seed 1] [--save DIR] [--only KIND ...]

Each case takes a valid input of the repository — a rollout spec and its DGD (every example), a
DGD pair of the checker's corpus (ConfigMaps with engine arguments among them), a rendered tree,
a Prometheus answer, a quality gate's prompt set, an experiment's samples, the deploy
repository's index — mutates it (line edits with hostile scalars, values replaced in the parsed
document, bytes that are not UTF-8, truncation), and runs the command that reads it, in this
process (the CLI's ``main``, as `dgdgen` runs it), in a folder of its own. The contract, per case:

* the exit code is one the command documents: 0, 1, 2, 3 (and 4, a held rollout, for promote
  and cleanup) — never 70 (an internal error);
* no traceback and no "internal error" on stderr;
* at most 10 s of CPU (the case's own and its Git processes'; a case that hangs is stopped after
  120 s) and 500 MB (the peak resident set the case would have as a `dgdgen` process of its own:
  what it adds to this process's, on top of a fresh process's — the interpreter and the CLI's
  imports, measured once; in a pytest worker that ran other tests first, this process can hold
  500 MB before any case);
* `render -o` and `argo -o` write nothing on exit 2.

A case that breaks it is printed, and with --save kept as a folder (`case.json`: the command
line, the kind, the seed, what broke; the input files beside it) to be copied into
tests/data/fuzz/, where tests/test_fuzz_reproducers.py runs every one. The run ends with the
counts: cases per kind and command, exit codes, the slowest case and the highest peak.
tests/test_fuzz_commands.py runs a seeded slice of this in the suite (`run(cases=..., seed=...)`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
CORPUS = REPO / "tests" / "check" / "corpus"

TIME_LIMIT = 10.0  # seconds of CPU per case (this process and the processes it waits for)
# a case that waits this long without using the CPU (a read that blocks) has hung: this
# machine is shared, so wall time measures the neighbours as much as the case
WALL_LIMIT = 120.0
MEMORY_LIMIT_MB = 500.0  # peak resident set of a case as a process of its own
# what each command may exit with (its --help); every other command: 0, 1, 2
EXIT_CODES: dict[str, frozenset[int]] = {
    "analyze": frozenset({0, 1, 2, 3}),
    "experiment": frozenset({0, 1, 2, 3}),
    "promote": frozenset({0, 1, 2, 4}),
    "cleanup": frozenset({0, 1, 2, 4}),
}
DEFAULT_CODES = frozenset({0, 1, 2})

# Scalars and fragments that have broken YAML readers and models before (docs/robustness.md):
# numbers past 64 bits, YAML 1.1 spellings, timestamps out of range, tags, anchors and aliases,
# control and non-ASCII characters, paths out of the folder, flow collections.
HOSTILE = [
    "0", "-1", "1", "2", "99999999999999999999", "-9223372036854775809", "1e309", "-.inf",
    ".nan", "0x1F", "0o17", "0b_", "0x_", "._", "0777", "190:20:30", "1:30.5", "true", "yes",
    "no", "on", "off", "null", "~", "''", '""', "[]", "{}", "[1, 2]", "{a: 1}", "[[[[[[]]]]]]",
    "2024-13-45", "2001-02-30 25:61:61", "2001-12-14t21:59:43.10+99:00", "2001-12-14",
    "0000-01-01", "!custom 5", "!!int x", "!!bool maybe", "!!float 0b1", "!!binary aGk=",
    "!!str 5", "!!timestamp 2024-13-45", "!!python/object:os.system x", "&a x", "*a",
    "*nowhere", "&loop [*loop]", "<<: {x: 1}", "<<", "=", "? [a]", "'\u00b2'", '"\\u0000"',
    '"\\ud800"', '"\\t"', "|\n  text", "x" * 300, "../../../../etc/passwd", "/dev/zero",
    "\U0001f4a5", "'a: b'", "- x", ": x", "'--model'", "2Gi", "'1'", "1.5", "-0", "1_000",
    "\u2028", "\x85", "\ufeff", "\x00", "\t", "%YAML 1.1", "---", "...",
]
VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2**63, -(2**63) - 1, 2**70, 1.5, float("inf"), float("nan"),
    "", "x", "two", "x" * 300, "2024-13-45", "../x", "/dev/zero", "\u2028", [], {}, [None],
    {"a": None}, [[[]]], {"": 1}, ["--model", "x"],
]


@dataclass
class Case:
    """One input and the command that reads it: ``args`` name the files of ``files`` (paths
    relative to the case's folder, which is the working directory)."""

    kind: str
    args: list[str]
    files: dict[str, bytes]
    git: bool = False  # the folder is a Git repository with everything committed
    prometheus: bytes | None = None  # what the stand-in Prometheus answers every query with
    status: int = 200
    outputs: tuple[str, ...] = ()  # folders that must not appear on exit 2


@dataclass
class Result:
    code: int
    err: str
    seconds: float
    peak_mb: float
    broken: list[str] = field(default_factory=list)
    out: str = ""


# --------------------------------------------------------------------------- mutations


def mutate_lines(rng: random.Random, text: str) -> str:
    """One to three line edits: a value replaced by a hostile scalar, a line deleted, doubled,
    indented, dedented, truncated there, a key renamed, a fragment inserted."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        line = lines[i]
        op = rng.choice(["value", "value", "value", "delete", "duplicate", "indent", "dedent",
                         "junk", "truncate", "key"])
        value = rng.choice(HOSTILE)
        if op == "value":
            m = re.match(r"^(\s*(?:- )?[^:#\s][^:#]*:)\s", line + " ")
            if m:
                lines[i] = m.group(1) + " " + value
            elif line.lstrip().startswith("- "):
                lines[i] = line[: len(line) - len(line.lstrip())] + "- " + value
            else:
                lines[i] = line + value
        elif op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "indent":
            lines[i] = "  " + line
        elif op == "dedent":
            lines[i] = line.removeprefix("  ")
        elif op == "junk":
            at = rng.randint(0, len(line))
            lines[i] = line[:at] + value + line[at:]
        elif op == "truncate":
            lines = lines[:i]
        else:
            lines[i] = re.sub(r"^(\s*(?:- )?)[A-Za-z]+",
                              functools.partial(_renamed, key="x" + value[:5]), line)
    return "\n".join(lines)


def _renamed(m: re.Match[str], key: str) -> str:
    """A matched line's indent (and list dash) with ``key`` for its key."""
    return m.group(1) + key


def _paths(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, path + (i,))


def _mutate_data(rng: random.Random, data: Any) -> Any:
    """A value somewhere replaced (by a hostile value, or a copy of another part of the data),
    removed, or given an extra unknown field."""
    paths = list(_paths(data))
    if not paths:
        return rng.choice(VALUES)
    for _ in range(rng.randint(1, 2)):
        path = rng.choice(paths)
        parent = data
        try:
            for part in path[:-1]:
                parent = parent[part]
            op = rng.random()
            current = parent[path[-1]]
            if op < 0.25 and isinstance(current, (bool, int, float, str)):
                parent[path[-1]] = _tweaked(rng, current)  # a plausible value: past the shape
            elif op < 0.4 and isinstance(parent, dict):
                del parent[path[-1]]
            elif op < 0.47 and isinstance(parent, dict):
                parent[rng.choice(["x", "unknownField", "", "0"])] = rng.choice(VALUES)
            elif op < 0.6:
                other = rng.choice(paths)
                value = data
                for part in other:
                    value = value[part]
                parent[path[-1]] = json.loads(json.dumps(value))
            else:
                parent[path[-1]] = json.loads(json.dumps(rng.choice(VALUES)))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return data


# values a field of dgdgen's inputs takes (steps, gates, states, revisions, sizes, flags)
PLAUSIBLE = ["step-00", "step-01", "step-03", "step-99", "baseline", "rollback", "rollback-01",
             "cleanup", "passed", "failed", "inconclusive", "stable", "candidate", "v060",
             "v070", "1m", "0s", "100%", "50%", "slo", "experiment", "haproxy", "none",
             "--block-size", "--model", "prefill", "decode", "frontend", "worker", "main"]


def _tweaked(rng: random.Random, value: bool | float | str) -> Any:
    """A value of the same type near ``value``, or another plausible one."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, 0, -value, value * 2, 1, 100, 101, 256])
    if isinstance(value, float):
        return rng.choice([value * 2, -value, 0.0, 1e-9, 1.0, 100.0])
    if rng.random() < 0.6:
        return rng.choice(PLAUSIBLE)
    at = rng.randint(0, len(value))
    return value[:at] + rng.choice(["", "x", "-", "0", " ", "/", "."]) + value[at + 1:]


def mutate_yaml(rng: random.Random, text: str) -> str:
    """Line edits, or a value replaced in the parsed documents (dumped again with PyYAML)."""
    import yaml

    if rng.random() < 0.5:
        return mutate_lines(rng, text)
    try:
        docs = [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader)]
    except yaml.YAMLError:
        return mutate_lines(rng, text)
    if not docs:
        return mutate_lines(rng, text)
    i = rng.randrange(len(docs))
    docs[i] = _mutate_data(rng, docs[i])
    try:
        return str(yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=rng.random() < 0.5))
    except (yaml.YAMLError, ValueError, TypeError):
        return mutate_lines(rng, text)


def mutate_json(rng: random.Random, text: str) -> str:
    """A value replaced in the parsed JSON, or the text edited, truncated or replaced."""
    op = rng.random()
    if op < 0.6:
        try:
            return json.dumps(_mutate_data(rng, json.loads(text)), allow_nan=True)
        except ValueError:
            pass
    if op < 0.75:
        return text[: rng.randrange(len(text) + 1)]
    if op < 0.85:
        return json.dumps(rng.choice(VALUES))
    return mutate_lines(rng, text)


def mutate_jsonl(rng: random.Random, text: str) -> str:
    """One line of a JSON Lines file mutated as JSON, removed, doubled or made blank; or the
    file's lines edited as text."""
    lines = text.split("\n")
    if rng.random() < 0.2 or not lines:
        return mutate_lines(rng, text)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.random()
        if op < 0.6:
            lines[i] = mutate_json(rng, lines[i]) if lines[i].strip() else json.dumps(
                rng.choice(VALUES))
        elif op < 0.75:
            del lines[i]
        elif op < 0.85:
            lines.insert(i, lines[i])
        else:
            lines[i] = rng.choice(["", " ", "{", "[]", "null", "{}", "\x00", "#"])
        if not lines:
            break
    return "\n".join(lines)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Bytes that are not UTF-8, NULs or a truncation, somewhere in the file."""
    at = rng.randint(0, len(data))
    op = rng.random()
    if op < 0.4:
        return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf",
                                       b"\r", b"\x1b[2J"]) + data[at:]
    if op < 0.6:
        return data[:at]
    if op < 0.8:
        return b""
    return data[:at] + data[at:][::-1][:64] + data[at:]


def mutated(rng: random.Random, data: bytes, how: Callable[[random.Random, str], str]) -> bytes:
    """``data`` mutated as text by ``how`` (nine times in ten) or as bytes."""
    if rng.random() < 0.1:
        return mutate_bytes(rng, data)
    return how(rng, data.decode("utf-8")).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- the inputs


def _read(folder: Path, skip: tuple[str, ...] = ("rendered",)) -> dict[str, bytes]:
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and rel.parts[0] not in skip:
            out[str(rel)] = p.read_bytes()
    return out


class Inputs:
    """The valid inputs the cases start from, read once."""

    def __init__(self, work: Path) -> None:
        self.examples = {p.parent.name: _read(p.parent)
                         for p in sorted(EXAMPLES.glob("*/rollout.yaml"))}
        self.pairs = [(p.name, (p / "old.yaml").read_bytes(), (p / "new.yaml").read_bytes())
                      for p in sorted(CORPUS.iterdir()) if (p / "new.yaml").is_file()]
        self.configmaps = [pair for pair in self.pairs
                           if b"kind: ConfigMap" in pair[1] + pair[2]]
        self.rendered = {name: {rel: data for rel, data in _read(EXAMPLES / name / "rendered",
                                                                  skip=()).items()
                                if rel.startswith(("step-01/", "step-02/", "baseline/",
                                                   "rollback/"))}
                         for name in ("vllm-agg-auto", "vllm-disagg-image-bump",
                                      "sglang-disagg-v1beta1-partition")}
        self.prompts = self.examples["trtllm-disagg-v1beta1"]
        self.experiment = self._experiment()
        self.index = self._deploy(work)

    def _experiment(self) -> dict[str, bytes]:
        files = dict(self.examples["vllm-disagg-image-bump"])
        text = files["rollout.yaml"].decode()
        head, _, _ = text.partition("  steps:\n")
        rest = text[text.index("  traffic:\n"):]
        text = (head + "  steps:\n    - weight: 50\n      gate: experiment\n    - weight: 100\n"
                + rest + "    experiment:\n      metric: user rating 1-5\n"
                "      minimumDetectableEffect: 0.5\n      better: higher\n")
        files["rollout.yaml"] = text.encode()
        rng = random.Random(0)
        lines = [json.dumps({"generation": g, "value": rng.randint(1, 5)})
                 for g in ("stable", "candidate") for _ in range(60)]
        files["samples.jsonl"] = ("\n".join(lines) + "\n").encode()
        return files

    def _deploy(self, work: Path) -> dict[str, bytes]:
        """The image-bump example rendered into `deploy/` at step 1 (its index records it)."""
        from dgdgen.cli import main

        folder = work / "deploy-template"
        folder.mkdir()
        for rel, data in self.examples["vllm-disagg-image-bump"].items():
            (folder / rel).write_bytes(data)
        with _in(folder), _quiet():
            for args in (["render", "rollout.yaml", "--into", "deploy", "--init"],
                         ["promote", "rollout.yaml", "--into", "deploy"]):
                code = main(args)
                assert code == 0, (args, code)
        return {rel: data for rel, data in _read(folder).items() if ".git/" not in rel
                and not rel.startswith(".git")}


# --------------------------------------------------------------------------- the cases


def make_case(rng: random.Random, inputs: Inputs) -> Case:
    kind = rng.choices(list(KINDS), weights=[w for w, _ in KINDS.values()])[0]
    return KINDS[kind][1](rng, inputs)


def _spec_case(rng: random.Random, inputs: Inputs) -> Case:
    name = rng.choice(sorted(inputs.examples))
    files = dict(inputs.examples[name])
    files["rollout.yaml"] = mutated(rng, files["rollout.yaml"], mutate_yaml)
    command = rng.choice(["validate", "validate", "plan", "plan", "render", "traffic", "argo",
                          "plan-formats"])
    if command == "render":
        return Case("spec", ["render", "rollout.yaml", "-o", "out"], files, outputs=("out",))
    if command == "traffic":
        if rng.random() < 0.5:
            return Case("spec", ["traffic", "show", "rollout.yaml"], files)
        return Case("spec", ["traffic", "config", "rollout.yaml", "--step", "1"], files)
    if command == "argo":
        return Case("spec", ["argo", "rollout.yaml", "-o", "argo-out"], files,
                    outputs=("argo-out",))
    if command == "plan-formats":
        fmt = rng.choice(["json", "markdown", "svg"])
        return Case("spec", ["plan", "rollout.yaml", "--format", fmt, "-o", "plan.out"], files)
    return Case("spec", [command, "rollout.yaml"], files)


def _stable_dgd_case(rng: random.Random, inputs: Inputs) -> Case:
    name = rng.choice(sorted(inputs.examples))
    files = dict(inputs.examples[name])
    files["dgd.yaml"] = mutated(rng, files["dgd.yaml"], mutate_yaml)
    command = rng.choice(["validate", "plan", "check", "verify"])
    path = "rollout.yaml" if command in ("validate", "plan") else "dgd.yaml"
    return Case("stable DGD", [command, path], files)


def _pair_case(rng: random.Random, inputs: Inputs, kind: str = "DGD pair") -> Case:
    pairs = inputs.configmaps if kind == "ConfigMap" else inputs.pairs
    _, old, new = rng.choice(pairs)
    if rng.random() < 0.3:
        old = mutated(rng, old, mutate_yaml)
    new = mutated(rng, new, mutate_yaml)
    fmt = ["--format", rng.choice(["text", "json", "sarif", "github", "junit"])]
    files = {"base.yaml": old, "head.yaml": new}
    op = rng.random()
    if op < 0.45:
        return Case(kind, ["diff", *fmt, "base.yaml", "head.yaml"], files)
    if op < 0.9:
        return Case(kind, ["check", *fmt, "head.yaml"], files)
    # the admission policy's CEL on the UPDATE base -> head, as the API server would run it
    return Case(kind, ["policy", "test", "base.yaml", "head.yaml"], files)


def _configmap_case(rng: random.Random, inputs: Inputs) -> Case:
    return _pair_case(rng, inputs, "ConfigMap")


def _rendered_case(rng: random.Random, inputs: Inputs) -> Case:
    name = rng.choice(sorted(inputs.rendered))
    tree = {f"tree/{rel}": data for rel, data in inputs.rendered[name].items()}
    yaml_files = sorted(rel for rel in tree if rel.endswith(".yaml"))
    for _ in range(rng.randint(1, 2)):
        rel = rng.choice(yaml_files)
        tree[rel] = mutated(rng, tree[rel], mutate_yaml)
    return Case("rendered tree", ["verify", "tree"], tree)


# A Prometheus answer as the stand-in serves it: a vector of one sample, the shape of every
# query of the gates (docs/analysis.md)
PROM_ANSWER = json.dumps({"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"model": "qwen"}, "value": [1700000000.0, "0.25"]}]}})


def _prometheus_case(rng: random.Random, inputs: Inputs) -> Case:
    files = dict(inputs.examples["vllm-disagg-image-bump"])
    answer = mutated(rng, PROM_ANSWER.encode(), mutate_json)
    status = rng.choice([200] * 8 + [400, 422, 500, 503])
    args = ["analyze", "rollout.yaml", "--step", rng.choice(["1", "2"]), "--prometheus",
            "{prometheus}", "--time", "1700000000"]
    if rng.random() < 0.5:
        args += ["--format", "json"]
    return Case("Prometheus answer", args, files, prometheus=answer, status=status)


def _prompts_case(rng: random.Random, inputs: Inputs) -> Case:
    files = dict(inputs.prompts)
    files["quality-prompts.jsonl"] = mutated(rng, files["quality-prompts.jsonl"], mutate_jsonl)
    command = rng.choice(["validate", "validate", "render"])
    if command == "render":
        return Case("prompt set", ["render", "rollout.yaml", "-o", "out", "--step", "1"], files,
                    outputs=("out",))
    return Case("prompt set", ["validate", "rollout.yaml"], files)


def _samples_case(rng: random.Random, inputs: Inputs) -> Case:
    files = dict(inputs.experiment)
    files["samples.jsonl"] = mutated(rng, files["samples.jsonl"], mutate_jsonl)
    args = ["experiment", "rollout.yaml", "--samples", "samples.jsonl"]
    if rng.random() < 0.3:
        args += ["--format", "json"]
    return Case("experiment samples", args, files)


def _index_case(rng: random.Random, inputs: Inputs) -> Case:
    files = dict(inputs.index)
    index = "deploy/.dgdgen-index"
    files[index] = mutated(rng, files[index], mutate_json)
    if rng.random() < 0.2:  # a rendered file of the directory edited too
        rel = rng.choice(sorted(r for r in files if r.startswith("deploy/")
                                and r.endswith(".yaml")))
        files[rel] = mutated(rng, files[rel], mutate_yaml)
    command = rng.choice(["status", "status", "explain", "history", "promote", "gate",
                          "rollback", "cleanup", "pause", "resume", "render-check"])
    extra = {"gate": ["--result", rng.choice(["passed", "failed", "inconclusive"])],
             "pause": ["--reason", "fuzz"]}.get(command, [])
    if command == "render-check":
        args = ["render", "rollout.yaml", "--into", "deploy", "--check"]
    elif command == "status" and rng.random() < 0.3:
        # the DGDs as the cluster returns them (`kubectl get dgd -o yaml`), mutated instead
        live = files["deploy/dynamographdeployment-vllm-disagg.yaml"]
        files["live.yaml"] = mutated(rng, live, mutate_yaml)
        args = ["status", "rollout.yaml", "--into", "deploy", "--live", "live.yaml"]
    else:
        args = [command, "rollout.yaml", "--into", "deploy", *extra]
        if command in ("status", "explain", "history") and rng.random() < 0.4:
            args += ["--format", "json"]
    return Case("deploy index", args, files, git=rng.random() < 0.6)


# kind -> (weight, maker)
KINDS: dict[str, tuple[float, Callable[[random.Random, Inputs], Case]]] = {
    "spec": (25, _spec_case),
    "stable DGD": (12, _stable_dgd_case),
    "DGD pair": (20, _pair_case),
    "ConfigMap": (8, _configmap_case),
    "rendered tree": (8, _rendered_case),
    "Prometheus answer": (8, _prometheus_case),
    "prompt set": (6, _prompts_case),
    "experiment samples": (6, _samples_case),
    "deploy index": (7, _index_case),
}


# --------------------------------------------------------------------------- running


class _Timeout(BaseException):
    """Raised in the case's thread at its time limit (not an Exception: nothing catches it)."""


class _Stopped(BaseException):
    """SIGTERM: the run ends, its temporary folder and stand-in Prometheus removed."""


@contextlib.contextmanager
def _in(folder: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(old)


@contextlib.contextmanager
def _quiet() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process, and of the processes it waited for."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _peak_reset() -> None:
    """Reset this process's peak resident set (Linux: /proc/self/clear_refs, value 5)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _peak_mb() -> float:
    return _status_mb("VmHWM:")


def _status_mb(field_name: str) -> float:
    """A size from /proc/self/status (VmHWM: the peak resident set, VmRSS: the current one)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field_name):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# A fresh interpreter that imported every dgdgen module (the most of dgdgen any command loads)
_FRESH_PROBE = """
import importlib, pkgutil, dgdgen
for m in pkgutil.walk_packages(dgdgen.__path__, "dgdgen."):
    try:
        if not m.name.endswith("__main__"):
            importlib.import_module(m.name)
    except Exception:  # an optional extra not installed: what no command here can load
        pass
print(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmRSS:")))
"""


@functools.cache
def _fresh_mb() -> float:
    """The resident set of a fresh `dgdgen` process with all of dgdgen imported (55 MB here);
    0 when it cannot be measured."""
    probe = _FRESH_PROBE
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=False, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    return int(done.stdout.strip()) / 1024 if done.returncode == 0 else 0.0


def _case_peak_mb(before: float) -> float:
    """The peak a case would have as a process of its own: what it added to this process's
    resident set, on top of a fresh `dgdgen` process's. The process running the cases may be
    larger than a fresh one (a pytest worker that ran other tests first holds their modules and
    caches: 505 MB before a case, in one `.ci/run` here); a library a case imports lazily counts with the
    first case that imports it in this process."""
    return min(before, _fresh_mb() or before) + max(0.0, _peak_mb() - before)


class _Prometheus:
    """A stand-in Prometheus on a free loopback port: every request gets the current answer."""

    def __init__(self) -> None:
        self.body = b""
        self.status = 200
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def _git_commit_all(folder: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "fuzz case", "--no-verify")


def write_case(case: Case, folder: Path) -> None:
    for rel, data in case.files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if case.git:
        _git_commit_all(folder)


def run_case(case: Case, folder: Path, prometheus: _Prometheus | None) -> Result:
    """Run ``case`` in ``folder`` (written first) with the CLI's ``main``; the contract's
    breaches in ``broken``."""
    from dgdgen.cli import main

    write_case(case, folder)
    args = list(case.args)
    if case.prometheus is not None:
        assert prometheus is not None
        prometheus.body, prometheus.status = case.prometheus, case.status
        args = [prometheus.url if a == "{prometheus}" else a for a in args]

    def expire(signum: int, frame: Any) -> None:
        raise _Timeout

    timed_out = False
    previous = {sig: signal.signal(sig, expire) for sig in (signal.SIGALRM, signal.SIGPROF)}
    _peak_reset()
    before = _status_mb("VmRSS:")
    start, children = _cpu()
    code = -1
    with _in(folder), _quiet() as (out, err):
        signal.setitimer(signal.ITIMER_PROF, TIME_LIMIT)  # CPU time of this process
        signal.setitimer(signal.ITIMER_REAL, WALL_LIMIT)
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except _Timeout:
            timed_out = True
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    end, children_end = _cpu()
    seconds = (end - start) + (children_end - children)
    result = Result(code, err.getvalue(), seconds, _case_peak_mb(before),
                    out=out.getvalue()[-4000:])
    command = args[0]
    if timed_out or seconds > TIME_LIMIT:
        result.broken.append(f"ran past {TIME_LIMIT:.0f} s of CPU (or hung {WALL_LIMIT:.0f} s)")
    elif code not in EXIT_CODES.get(command, DEFAULT_CODES):
        result.broken.append(f"exit {code}")
    if "Traceback" in result.err or "internal error" in result.err:
        result.broken.append("traceback / internal error")
    if result.peak_mb > MEMORY_LIMIT_MB:
        result.broken.append(f"peak {result.peak_mb:.0f} MB")
    if code == 2:
        for name in case.outputs:
            if (folder / name).exists():
                result.broken.append(f"{name}/ written on exit 2")
    return result


def save_case(case: Case, result: Result, directory: Path, n: int, seed: int) -> Path:
    """Keep a breaking case as a folder: case.json and the input files."""
    name = f"{n:05d}-{re.sub(r'[^a-z]+', '-', case.kind.lower())}-{case.args[0]}"
    folder = directory / name
    folder.mkdir(parents=True)
    files = {}
    for rel, data in case.files.items():
        try:
            data.decode("utf-8")
            files[rel] = {"path": rel}
            (folder / "files" / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / "files" / rel).write_bytes(data)
        except UnicodeDecodeError:
            files[rel] = {"base64": base64.b64encode(data).decode()}
    (folder / "case.json").write_text(json.dumps({
        "kind": case.kind, "args": case.args, "git": case.git, "seed": seed, "case": n,
        "prometheus": None if case.prometheus is None else
        base64.b64encode(case.prometheus).decode(), "status": case.status,
        "outputs": list(case.outputs), "files": files, "broke": result.broken,
        "exit": result.code, "stderr": result.err[-2000:]}, indent=1) + "\n")
    return folder


def load_case(folder: Path) -> Case:
    """A case kept by :func:`save_case` (or written by hand in its format)."""
    kept = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    files = {rel: (folder / "files" / where["path"]).read_bytes() if "path" in where
             else base64.b64decode(where["base64"]) for rel, where in kept["files"].items()}
    answer = kept.get("prometheus")
    return Case(kept["kind"], kept["args"], files, git=kept.get("git", False),
                prometheus=None if answer is None else base64.b64decode(answer),
                status=kept.get("status", 200), outputs=tuple(kept.get("outputs", ())))


@dataclass
class Summary:
    cases: int = 0
    seconds: float = 0.0
    codes: Counter[int] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    commands: Counter[str] = field(default_factory=Counter)
    failures: list[tuple[int, Case, Result]] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")
    peak: tuple[float, str] = (0.0, "")


@contextlib.contextmanager
def isolated_environment(work: Path) -> Iterator[None]:
    """A HOME, cache folder and Git identity of the run's own, restored afterwards."""
    keys = {"HOME": str(work / "home"), "DGDGEN_CACHE_DIR": str(work / "cache"),
            "GIT_CONFIG_GLOBAL": str(work / "home" / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "fuzz", "GIT_AUTHOR_EMAIL": "fuzz@localhost",
            "GIT_COMMITTER_NAME": "fuzz", "GIT_COMMITTER_EMAIL": "fuzz@localhost"}
    (work / "home").mkdir(exist_ok=True)
    (work / "home" / ".gitconfig").write_text(
        "[user]\n\tname = fuzz\n\temail = fuzz@localhost\n[init]\n\tdefaultBranch = main\n")
    old = {k: os.environ.get(k) for k in keys}
    os.environ.update(keys)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(cases: int, seed: int, *, save: Path | None = None, only: tuple[str, ...] = (),
        progress: Callable[[str], None] | None = None) -> Summary:
    """``cases`` cases drawn from ``seed`` (the same cases for the same seed and code)."""
    summary = Summary()
    rng = random.Random(seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dgdgen-fuzz-") as tmp:
        work = Path(tmp)
        with isolated_environment(work):
            inputs = Inputs(work)
            prometheus = _Prometheus()
            try:
                for n in range(cases):
                    case = make_case(rng, inputs)
                    while only and case.kind not in only:
                        case = make_case(rng, inputs)
                    folder = work / f"case-{n}"
                    folder.mkdir()
                    result = run_case(case, folder, prometheus)
                    shutil.rmtree(folder, ignore_errors=True)
                    summary.cases += 1
                    summary.codes[result.code] += 1
                    summary.kinds[case.kind] += 1
                    summary.commands[case.args[0]] += 1
                    label = f"{case.kind}: {' '.join(case.args)}"
                    summary.slowest = max(summary.slowest, (result.seconds, label))
                    summary.peak = max(summary.peak, (result.peak_mb, label))
                    if result.broken:
                        summary.failures.append((n, case, result))
                        if save is not None:
                            save_case(case, result, save, n, seed)
                        if progress is not None:
                            progress(f"case {n} ({label}): {', '.join(result.broken)}\n"
                                     f"{result.err[-800:]}")
                    if progress is not None and (n + 1) % 500 == 0:
                        progress(f"{n + 1} cases, {len(summary.failures)} broke, "
                                 f"{time.monotonic() - started:.0f} s")
            finally:
                prometheus.close()
    summary.seconds = time.monotonic() - started
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--save", type=Path, help="keep each breaking case in a folder here")
    ap.add_argument("--only", nargs="*", default=[], choices=sorted(KINDS), metavar="KIND")
    args = ap.parse_args()
    import resource

    def stop(signum: int, frame: Any) -> None:
        raise _Stopped

    signal.signal(signal.SIGTERM, stop)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    try:
        summary = run(args.cases, args.seed, save=args.save, only=tuple(args.only),
                      progress=lambda s: print(s, file=sys.stderr, flush=True))
    except (_Stopped, KeyboardInterrupt):
        print("stopped", file=sys.stderr)
        return 130
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime + cpu1.ru_stime - cpu0.ru_stime
           + kids.ru_utime + kids.ru_stime)
    print(f"cases: {summary.cases} (seed {args.seed}), {summary.seconds:.0f} s wall, "
          f"{cpu:.0f} s CPU (git included)")
    print("exit codes: " + ", ".join(f"{c}: {n}" for c, n in sorted(summary.codes.items())))
    print("kinds: " + ", ".join(f"{k}: {n}" for k, n in summary.kinds.most_common()))
    print("commands: " + ", ".join(f"{k}: {n}" for k, n in summary.commands.most_common()))
    print(f"slowest: {summary.slowest[0]:.2f} s of CPU ({summary.slowest[1]})")
    print(f"highest peak: {summary.peak[0]:.0f} MB ({summary.peak[1]})")
    print(f"broke the contract: {len(summary.failures)}")
    for n, case, result in summary.failures:
        print(f"  case {n}: {case.kind}: {' '.join(case.args)}: {', '.join(result.broken)}")
    return 1 if summary.failures else 0


if __name__ == "__main__":
    sys.exit(main())
