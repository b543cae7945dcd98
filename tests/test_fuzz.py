"""Fuzzing the boundaries (hypothesis): mutated rollout specs, mutated stable DGDs, mutated DGD
pairs for `diff`/`check`, and random output-path layouts for the tree writer. Whatever the input:

* the exit code is 0, 1 or 2 — never 70 (a defect) and never a traceback;
* an exit-2 message names an input file, with its line where the input has one;
* nothing is written on error (the output folder does not appear; a layout is left as it was).

By default 2,640 inputs in all (600 specs, 400 stable DGDs, 700 DGD pairs, 300 pod-field
reshapes, 40 renders, 600 output layouts), about four minutes on two cores; ``DGDGEN_FUZZ_SCALE`` multiplies every count.
The documented longer run (docs/robustness.md) is
``DGDGEN_FUZZ_SCALE=5 DGDGEN_FUZZ_SEED=N pytest tests/test_fuzz.py``: 11,700 inputs. Without a
seed the runs are derandomized, so CI is reproducible; with one, each seed explores anew.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hostile_support import EXAMPLE, cli, snapshot
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from dgdgen import yamlio
from dgdgen.yamlio import doc as yamldoc
from dgdgen.errors import InputError

SCALE = float(os.environ.get("DGDGEN_FUZZ_SCALE", "1"))
SEED = os.environ.get("DGDGEN_FUZZ_SEED")
ROLLOUT = (EXAMPLE / "rollout.yaml").read_text()
DGD = (EXAMPLE / "dgd.yaml").read_text()
V1BETA1 = next(p for p in sorted((EXAMPLE.parent).glob("*/dgd.yaml"))
               if "nvidia.com/v1beta1" in p.read_text()).read_text()


def fuzz_settings(default: int) -> Any:
    """``default`` examples × DGDGEN_FUZZ_SCALE; derandomized unless DGDGEN_FUZZ_SEED is set."""
    chosen = settings(
        max_examples=max(1, int(default * SCALE)),
        deadline=None,
        derandomize=SEED is None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.filter_too_much, HealthCheck.data_too_large],
        print_blob=True,
    )

    def apply(test: Any) -> Any:
        test = chosen(test)
        return seed(int(SEED))(test) if SEED is not None else test

    return apply


# --------------------------------------------------------------------------- mutations

INTERESTING = [
    "0", "-1", "-2", "1", "2", "99999999999999999999", "1e309", "-.inf", ".nan", "0x1F", "0o17",
    "true", "false", "yes", "no", "on", "null", "~", "''", '""', "[]", "{}", "[1, 2]", "{a: 1}",
    "[[[[[[[[[[]]]]]]]]]]", "!custom 5", "!custom {a: 1}", "!!int x", "!!bool maybe",
    "!!binary aGk=", "!!str 5", "!!float 1", "!!timestamp x", "!!python/object:os.system x",
    "&anchor x", "*anchor", "*nowhere", "&loop [*loop]", "'²'", '"\\u0000"', '"\\t"', "|\n  text",
    "x" * 300, "../../../../../etc/passwd", "/dev/zero", "💥", "'a: b'", "- x", ": x", "? x",
    "'--model'", "2Gi", "'1'", "1.5", "-0", "0.0", "1_000", "2001-12-14", "=", "<<: *anchor",
]

VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=6,
)


@st.composite
def text_mutation(draw: st.DrawFn, text: str) -> str:
    """One to three line-level edits of a YAML text."""
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        op = draw(st.sampled_from(["value", "value", "value", "delete", "duplicate", "indent",
                                   "dedent", "junk", "truncate", "key"]))
        value = draw(st.sampled_from(INTERESTING) | st.text(max_size=8))
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
            at = draw(st.integers(0, len(line)))
            lines[i] = line[:at] + value + line[at:]
        elif op == "truncate":
            lines = lines[:i]
        else:  # a key renamed
            new_key = "x" + value[:5]
            lines[i] = re.sub(r"^(\s*(?:- )?)[A-Za-z]+",
                              lambda m, k=new_key: m.group(1) + k, line)
    return "\n".join(lines)


@st.composite
def data_mutation(draw: st.DrawFn, text: str) -> str:
    """A value somewhere in the document replaced by a random plain value (or removed)."""
    (doc,) = yamlio.load_documents(text, "base.yaml")
    data = doc.data
    paths = [p for p, _ in yamldoc.iter_paths(data) if p]
    path = draw(st.sampled_from(paths))
    parent: Any = data
    for part in path[:-1]:
        parent = parent[part]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(VALUES | st.sampled_from([2**70, -3, "two", True, [], {}]))
    return str(yamlio.dump(data))


def mutated(text: str) -> st.SearchStrategy[str]:
    return st.one_of(text_mutation(text), data_mutation(text))


# --------------------------------------------------------------------------- the invariants

WHOLE_FILE = ("empty file", "not UTF-8", "is a directory", "not a regular file", "holds no",
              "file not found", "not found (resolved", "input is ", "has no DGD named",
              "holds several DGDs", "is a dgdgen rollout spec", "are dgdgen rollout specs")


def assert_contract(r: Any, inputs: tuple[str, ...]) -> None:
    assert r.code in (0, 1, 2), f"exit {r.code}\n{r.err}"
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    if r.code == 2:
        named = [n for n in inputs if n in r.err]
        assert named, f"exit 2 without naming an input ({inputs}):\n{r.err}"
        lined = re.search(r"(" + "|".join(map(re.escape, inputs)) + r"):\d+", r.err)
        assert lined or any(w in r.err for w in WHOLE_FILE), f"no line:\n{r.err}"


@pytest.fixture
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(autouse=True, scope="module")
def _cel_environment_first() -> None:
    """cel-python raises the recursion limit (to 2500) when dgdgen first builds its CEL
    environment in a process; built inside a hypothesis test, hypothesis warns that it will not
    reset the limit. Built here first, on whichever worker runs this module, it never is."""
    from dgdgen.crd.cel import _environment

    _environment()


def _fresh(sandbox: Path) -> Path:
    d = Path(sandbox) / f"case-{len(os.listdir(sandbox))}"
    d.mkdir()
    return d


# --------------------------------------------------------------------------- targets


@fuzz_settings(600)
@given(text=mutated(ROLLOUT))
def test_fuzz_spec(sandbox: Path, text: str) -> None:
    d = _fresh(sandbox)
    (d / "rollout.yaml").write_text(text)
    (d / "dgd.yaml").write_text(DGD)
    r = cli("plan", str(d / "rollout.yaml"))
    assert_contract(r, ("rollout.yaml", "dgd.yaml"))
    shutil.rmtree(d)


@fuzz_settings(400)
@given(text=st.one_of(mutated(DGD), mutated(V1BETA1)))
def test_fuzz_stable_dgd(sandbox: Path, text: str) -> None:
    d = _fresh(sandbox)
    spec = ROLLOUT
    if "v1beta1" in text[:200]:  # the v1beta1 example's own component names
        spec = _spec_for(V1BETA1)
    (d / "rollout.yaml").write_text(spec)
    (d / "dgd.yaml").write_text(text)
    r = cli("plan", str(d / "rollout.yaml"))
    assert_contract(r, ("rollout.yaml", "dgd.yaml"))
    r = cli("check", str(d / "dgd.yaml"))
    assert_contract(r, ("dgd.yaml",))
    shutil.rmtree(d)


@fuzz_settings(700)
@given(old=st.one_of(st.just(DGD), mutated(DGD)), new=mutated(DGD),
       fmt=st.sampled_from(["text", "json", "sarif"]))
def test_fuzz_diff_and_check(sandbox: Path, old: str, new: str, fmt: str) -> None:
    d = _fresh(sandbox)
    (d / "base.yaml").write_text(old)
    (d / "head.yaml").write_text(new)
    r = cli("diff", "--format", fmt, str(d / "base.yaml"), str(d / "head.yaml"))
    assert_contract(r, ("base.yaml", "head.yaml"))
    r = cli("check", "--format", fmt, str(d / "head.yaml"))
    assert_contract(r, ("head.yaml",))
    shutil.rmtree(d)


@fuzz_settings(40)
@given(text=mutated(ROLLOUT))
def test_fuzz_render_writes_nothing_on_error(sandbox: Path, text: str) -> None:
    d = _fresh(sandbox)
    (d / "rollout.yaml").write_text(text)
    (d / "dgd.yaml").write_text(DGD)
    r = cli("render", str(d / "rollout.yaml"), "-o", str(d / "out"))
    assert_contract(r, ("rollout.yaml", "dgd.yaml"))
    if r.code != 0:
        assert sorted(os.listdir(d)) == ["dgd.yaml", "rollout.yaml"], os.listdir(d)
    shutil.rmtree(d)


# --------------------------------------------------------------------------- output paths

KINDS = ["dir", "file", "link-dir", "link-file", "loop", "dangling", "missing", "ro-dir"]
RELS = st.one_of(
    st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}\.yaml", fullmatch=True),
    st.sampled_from(["../x.yaml", "/abs.yaml", "a/../../x.yaml", "a/./b.yaml", ".", "a//b.yaml",
                     "..", "x/..", "", "a", "a/b.yaml", "dir/", ".dgdgen-render", "\0.yaml"]),
)


def _make(layout: Path, kinds: list[str]) -> Path:
    """A chain of path elements of the given kinds under ``layout``; returns the last one.

    The read-only folders lose their write bits only once the whole chain is built, so the same
    layout comes out for root and for any other user (who may not create anything in a folder
    after its ``chmod 0o555``; root may, and then writes into it too).
    """
    (layout / "real-dir").mkdir(exist_ok=True)
    (layout / "real-file").write_text("x")
    cur = layout
    read_only = []
    for i, kind in enumerate(kinds):
        p = cur / f"e{i}"
        if not cur.is_dir():  # a file, a loop or a dangling link: nothing can go under it
            break
        if kind == "dir":
            p.mkdir()
        elif kind == "ro-dir":
            p.mkdir()
            read_only.append(p)
        elif kind == "file":
            p.write_text("precious\n")
        elif kind == "link-dir":
            os.symlink(layout / "real-dir", p)
        elif kind == "link-file":
            os.symlink(layout / "real-file", p)
        elif kind == "loop":
            os.symlink(p.name, p)
        elif kind == "dangling":
            os.symlink(layout / "nowhere", p)
        cur = p
    for p in read_only:
        p.chmod(0o555)
    return cur / "out" if kinds[-1] in ("dir", "ro-dir", "link-dir") else cur


@fuzz_settings(600)
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
       rels=st.lists(RELS, min_size=1, max_size=4), force=st.booleans())
def test_fuzz_output_paths(sandbox: Path, kinds: list[str], rels: list[str],
                           force: bool) -> None:
    from dgdgen.write import MARKER, write_tree

    layout = _fresh(sandbox)
    target = _make(layout, kinds)
    before = snapshot(layout)
    files = {rel: f"{rel}\n" for rel in rels}
    try:
        write_tree(str(target), files, force=force)
    except InputError as exc:
        assert str(exc)
        after = snapshot(layout)
        assert after == before, sorted(set(after) ^ set(before))
    else:
        real = Path(os.path.realpath(target))
        written = {str(p.relative_to(real)) for p in real.rglob("*") if p.is_file()}
        assert written == {os.path.normpath(r) for r in rels} | {MARKER}
        assert str(real).startswith(str(layout))  # never outside the layout
        leftovers = [n for n in os.listdir(real.parent) if ".new-" in n or ".old-" in n]
        assert leftovers == []
    finally:
        for p in layout.rglob("*"):
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(layout)


def _spec_for(dgd_text: str) -> str:
    """The example rollout spec pointed at another DGD: its component names swapped in."""
    (doc,) = [d for d in yamlio.load_documents(dgd_text, "dgd.yaml")
              if d.data.get("kind") == "DynamoGraphDeployment"][:1]
    from dgdgen.model.dgd import parse

    dgd = parse(doc.data, source=doc)
    workers = [c.name for c in dgd.workers()]
    text = ROLLOUT
    for old, new in zip(["VllmDecodeWorker", "VllmPrefillWorker"], workers + workers):
        text = text.replace(old, new)
    return text


# --------------------------------------------------------------------------- pod fields of facts

# The fields the checker's facts read besides the command line: pod volumes and their ConfigMaps,
# the main container's env (values and `valueFrom` references), envFrom and volume mounts, pod
# labels and annotations; a ConfigMap beside the DGD. Each fuzz example gives one of them (or a
# node under it) a random shape.
_POD_ALPHA = {
    "apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
    "metadata": {"name": "pods"},
    "spec": {"envs": [{"name": "DYN_ROUTER_MODE", "value": "kv"}], "services": {"VllmWorker": {
        "componentType": "worker", "replicas": 1,
        "envs": [{"name": "DYN_NAMESPACE_X", "valueFrom": {
            "configMapKeyRef": {"name": "cfg", "key": "k"}}}],
        "extraPodMetadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
        "extraPodSpec": {
            "volumes": [{"name": "tmpl", "configMap": {"name": "cfg",
                                                       "items": [{"key": "k", "path": "p"}]}}],
            "mainContainer": {
                "image": "img:1", "command": ["python3", "-m", "dynamo.vllm"],
                "args": ["--model", "Qwen/Qwen3-0.6B", "--custom-jinja-template", "/etc/t/k"],
                "env": [{"name": "DYN_CUSTOM_JINJA_TEMPLATE", "valueFrom": {
                    "secretKeyRef": {"name": "s", "key": "k"}}}],
                "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "DYN_"}],
                "volumeMounts": [{"name": "tmpl", "mountPath": "/etc/t", "subPath": "k"}]}}}}},
}
_POD_BETA = {
    "apiVersion": "nvidia.com/v1beta1", "kind": "DynamoGraphDeployment",
    "metadata": {"name": "pods"},
    "spec": {"env": [{"name": "DYN_ROUTER_MODE", "value": "kv"}], "components": [{
        "name": "VllmWorker", "type": "worker", "replicas": 1,
        "podTemplate": {
            "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
            "spec": {
                "volumes": [{"name": "tmpl", "configMap": {"name": "cfg"}}],
                "containers": [{
                    "name": "main", "image": "img:1",
                    "command": ["python3", "-m", "dynamo.vllm"],
                    "args": ["--model", "Qwen/Qwen3-0.6B", "--custom-jinja-template", "/etc/t/k"],
                    "env": [{"name": "X", "valueFrom": {
                        "configMapKeyRef": {"name": "cfg", "key": "k"}}}],
                    "envFrom": [{"secretRef": {"name": "s"}}],
                    "volumeMounts": [{"name": "tmpl", "mountPath": "/etc/t"}]}]}}}]},
}
_CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
              "data": {"k": "{{ messages }}"}}
_POD_FIELDS = frozenset({"volumes", "configMap", "items", "env", "envs", "envFrom",
                         "volumeMounts", "valueFrom", "configMapKeyRef", "secretKeyRef",
                         "configMapRef", "secretRef", "labels", "annotations", "metadata",
                         "extraPodMetadata", "data"})


@st.composite
def pod_field_mutation(draw: st.DrawFn) -> tuple[str, str]:
    """(base text, head text): the DGD and its ConfigMap, then one pod field reshaped."""
    import copy

    dgd = copy.deepcopy(draw(st.sampled_from([_POD_ALPHA, _POD_BETA])))
    if draw(st.booleans()):  # TRT-LLM reads its engine-args file from the mounted ConfigMap
        text = yamlio.dump(dgd).replace("dynamo.vllm", "dynamo.trtllm").replace(
            "--custom-jinja-template", "--extra-engine-args")
        dgd = yamlio.load_documents(text, "dgd.yaml")[0].data
    cm = copy.deepcopy(_CONFIGMAP)
    base = yamlio.dump_all([dgd, cm])
    doc = draw(st.sampled_from([dgd, cm]))
    paths = [p for p, _ in yamldoc.iter_paths(doc)
             if p and any(part in _POD_FIELDS for part in p if isinstance(part, str))]
    path = draw(st.sampled_from(paths))
    parent: Any = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = draw(st.sampled_from([[{"name": "cfg"}], ["cfg"], {}, "cfg", 5, None])
                            | VALUES)
    return base, yamlio.dump_all([dgd, cm])


@fuzz_settings(300)
@given(pair=pod_field_mutation(), fmt=st.sampled_from(["text", "json"]))
def test_fuzz_pod_fields_of_the_facts(sandbox: Path, pair: tuple[str, str], fmt: str) -> None:
    d = _fresh(sandbox)
    (d / "base.yaml").write_text(pair[0])
    (d / "head.yaml").write_text(pair[1])
    r = cli("diff", "--format", fmt, str(d / "base.yaml"), str(d / "head.yaml"))
    assert_contract(r, ("base.yaml", "head.yaml"))
    r = cli("check", "--format", fmt, str(d / "head.yaml"))
    assert_contract(r, ("head.yaml",))
    shutil.rmtree(d)
