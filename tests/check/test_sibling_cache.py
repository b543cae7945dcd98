"""The sibling-facts cache (dgdgen/check/siblings.py): what DGD101 and RTE302 read from the files
next to a checked file, kept between runs by the SHA-256 of each file's bytes.

Every test runs the real loader and the real rules on real files; the findings of a run with the
cache are compared with those of a run without it, never with a list written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dgdgen import cache as cache_mod
from dgdgen.check import engine, siblings, sources
from dgdgen.check.context import FileInput
from dgdgen.check.findings import Finding
from dgdgen.yamlio import Document, load_documents_fast

REPO = Path(__file__).resolve().parents[2]
DGD = (REPO / "tests" / "check" / "corpus" / "vllm-replicas-only" / "new.yaml").read_text()
RULES = ("DGD101", "RTE302")


def dgd_text(name: str, namespace: str | None, *, kind: str = "DynamoGraphDeployment") -> str:
    meta = f"metadata:\n  name: {name}\n" + (f"  namespace: {namespace}\n" if namespace else "")
    text = DGD.replace("metadata:\n  name: vllm-v1-disagg-router\n", meta)
    return text.replace("kind: DynamoGraphDeployment", f"kind: {kind}")


def route(*refs: tuple[str, str, int]) -> str:
    lines = "".join(
        (f"    - kind: {kind}\n      name: {name}\n      weight: {weight}\n"
         + ("      group: inference.networking.k8s.io\n" if kind == "InferencePool" else ""))
        for kind, name, weight in refs)
    return ("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: r\n"
            "spec:\n  rules:\n  - backendRefs:\n" + lines)


def make_folder(root: Path, namespace: str | None, tag: str = "") -> list[Path]:
    """A folder with a checked DGD `qwen` (in ``namespace``) and a checked route, next to the odd
    siblings of tests/check/test_siblings.py and more; returns the checked files. ``tag``
    makes the siblings' bytes differ from another folder's."""
    root.mkdir(parents=True)
    ns = namespace or ""
    files = {
        "qwen.yaml": dgd_text("qwen", namespace),
        "route.yaml": route(("Service", "svc-present", 10), ("Service", "missing", 5),
                            ("Service", "qwen-canary-frontend", 1),
                            ("Service", "qwen-broken-frontend", 1),
                            ("Service", "odd", 1), ("Service", "cafe", 1),
                            ("InferencePool", "pool-present", 1),
                            ("InferencePool", "pool-missing", 1)),
        "canary.yaml": dgd_text("qwen-canary", namespace),
        "escaped.yaml": dgd_text("qwen-escaped", namespace,
                                 kind='"Dynamo\\x47raphDeployment"'),
        "anchored.yaml": (dgd_text("qwen-anchored", f"&ns {ns}") + "# *ns\n") if namespace
        else dgd_text("qwen-anchored", None),
        "hex.yaml": dgd_text("qwen-hex", '"\\x331"'),
        "intns.yaml": dgd_text("qwen-int", "0x1f"),
        "other-ns.yaml": dgd_text("qwen2", "staging"),
        "broken.yaml": ("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\n"
                        "metadata:\n  name: qwen-broken\nspec:\n  services: []\n"),
        "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: qwen-canary-cm\n",
        "svc.yaml": ("apiVersion: v1\nkind: Service\nmetadata: {name: svc-present}\n---\n"
                     "---\napiVersion: inference.networking.k8s.io/v1\nkind: InferencePool\n"
                     "metadata: {name: pool-present}\n"),
        "odd.yaml": "apiVersion: v1\nkind: Service\nmetadata: [odd]\n",
        "syntax.yaml": "kind: Service\nmetadata: {name: [\n",
    }
    for name, text in files.items():
        (root / name).write_text(text + (f"# {tag}\n" if tag else ""))
    (root / "latin1.yaml").write_bytes(b"kind: Service\nmetadata: {name: caf\xe9}\n"
                                       + tag.encode())
    return [root / "qwen.yaml", root / "route.yaml"]


class Run:
    """The findings of DGD101 and RTE302 on the checked files, and the sibling files parsed."""

    def __init__(self, checked: list[Path], cache: siblings.FactsCache | None,
                 monkeypatch: pytest.MonkeyPatch) -> None:
        parsed: list[str] = []

        def counting(text: str, file: str) -> list[Document]:
            parsed.append(Path(file).name)
            return load_documents_fast(text, file)

        files = [FileInput(str(p), load_documents_fast(p.read_text(), str(p))) for p in checked]
        with monkeypatch.context() as m:
            m.setattr(sources, "load_documents_fast", counting)
            loader = sources.sibling_loader([str(p) for p in checked], cache)
            report = engine.run(files, engine.Options(select=RULES), loader)
        self.findings: list[Finding] = report.findings
        self.parsed = sorted(parsed)


def uncached(checked: list[Path], monkeypatch: pytest.MonkeyPatch) -> Run:
    return Run(checked, siblings.FactsCache(None), monkeypatch)


def digests(folder: Path) -> set[str]:
    return {siblings.digest(p.read_bytes()) for p in folder.iterdir()
            if p.name not in ("qwen.yaml", "route.yaml")}


def entries(path: Path) -> dict[str, list[list[object]]]:
    data = json.loads(path.read_text())
    assert data["stamp"] == siblings.FactsCache(None)._stamp
    out: dict[str, list[list[object]]] = data["entries"]
    return out


@pytest.mark.parametrize("namespace", ["prod", None, '"31"'])
def test_same_findings_with_and_without_the_cache(tmp_path: Path, namespace: str | None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    checked = make_folder(tmp_path / "repo", namespace)
    path = tmp_path / "cache.json"
    plain = uncached(checked, monkeypatch)
    cold = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    warm = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    # The folder exercises both rules: something found, by each
    assert {f.code for f in plain.findings} == set(RULES)
    assert cold.findings == plain.findings
    assert warm.findings == plain.findings
    # the cold run parsed what the pre-filter let through; the warm one nothing at all
    assert cold.parsed == plain.parsed and cold.parsed
    assert warm.parsed == []


def test_a_changed_sibling_is_read_again_even_with_the_same_size_and_mtime(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checked = make_folder(tmp_path / "repo", "prod")
    path = tmp_path / "cache.json"
    Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    canary = tmp_path / "repo" / "canary.yaml"
    before = os.stat(canary)
    text = canary.read_text()
    new = text.replace("name: qwen-canary\n", "name: xwen-canary\n")
    assert new != text and len(new) == len(text)
    canary.write_text(new)
    os.utime(canary, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(canary).st_size == before.st_size
    after = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    assert after.parsed == ["canary.yaml"]
    assert after.findings == uncached(checked, monkeypatch).findings
    # the old content's finding is gone: the new bytes were read, not the cached facts
    assert "qwen-canary" not in {f.key for f in after.findings}


def _valid_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    other = make_folder(tmp_path / "seed", "prod")
    path = tmp_path / "seed.json"
    Run(other, siblings.FactsCache(str(path)), monkeypatch)
    return path.read_bytes()


BAD = {
    "empty": lambda valid: b"",
    "not json": lambda valid: b"{not json",
    "truncated": lambda valid: valid[: len(valid) // 2],
    "binary": lambda valid: b"\x00\xff\xfe" * 50,
    "a list": lambda valid: b"[1, 2]",
    "foreign": lambda valid: json.dumps({"version": 3, "files": {"a": 1}}).encode(),
    "bad fact": lambda valid: valid.replace(b'["Service","svc-present",null,[]]',
                                            b'["Service",7,null,[]]'),
    "bad entries": lambda valid: valid.replace(b'"entries":{', b'"entries":{"x":5,', 1),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_corrupt_or_foreign_cache_is_ignored_and_rewritten(tmp_path: Path, case: str,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    valid = _valid_cache(tmp_path, monkeypatch)
    bad = BAD[case](valid)
    assert bad != valid
    checked = make_folder(tmp_path / "repo", "prod")
    path = tmp_path / "cache.json"
    path.write_bytes(bad)
    run = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    plain = uncached(checked, monkeypatch)
    assert run.findings == plain.findings
    assert run.parsed == plain.parsed  # nothing was taken from the bad file
    fresh = tmp_path / "fresh.json"
    Run(checked, siblings.FactsCache(str(fresh)), monkeypatch)
    assert entries(path) == entries(fresh)  # rewritten whole


def _poisoned(tmp_path: Path, checked: list[Path], monkeypatch: pytest.MonkeyPatch,
              stamp_change: tuple[str, object] | None) -> Path:
    """A cache in which the conflicting sibling `qwen-canary` is recorded under another name."""
    path = tmp_path / "cache.json"
    Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    data = json.loads(path.read_text())
    key = siblings.digest((tmp_path / "repo" / "canary.yaml").read_bytes())
    data["entries"][key] = [["DynamoGraphDeployment", "unrelated", "prod", []]]
    if stamp_change is not None:
        data["stamp"][stamp_change[0]] = stamp_change[1]
    path.write_text(json.dumps(data))
    return path


def test_cached_facts_are_what_the_rules_read(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    checked = make_folder(tmp_path / "repo", "prod")
    path = _poisoned(tmp_path, checked, monkeypatch, None)
    plain = uncached(checked, monkeypatch)
    run = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    assert "qwen-canary" in {f.key for f in plain.findings}
    assert "qwen-canary" not in {f.key for f in run.findings}  # the cache entry was used


@pytest.mark.parametrize(("field", "value"), [
    ("format", siblings.CACHE_FORMAT + 1), ("dgdgen", "0.0.0"), ("pyyaml", "0.0"),
    ("limits", [1, 2, 3]), ("libyaml", None)])
def test_a_cache_of_another_version_is_ignored(tmp_path: Path, field: str, value: object,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    checked = make_folder(tmp_path / "repo", "prod")
    path = _poisoned(tmp_path, checked, monkeypatch, (field, value))
    run = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    assert run.findings == uncached(checked, monkeypatch).findings
    assert "canary.yaml" in run.parsed
    assert entries(path)  # rewritten under this version's stamp


def test_the_cache_is_bounded_and_keeps_this_runs_files_first(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    a = make_folder(tmp_path / "a", "prod", tag="a")
    b = make_folder(tmp_path / "b", "prod", tag="b")
    path = tmp_path / "cache.json"
    Run(a, siblings.FactsCache(str(path)), monkeypatch)
    seen_a = set(entries(path))
    Run(b, siblings.FactsCache(str(path)), monkeypatch)
    order = list(entries(path))
    seen_b = set(order) - seen_a
    assert seen_a and seen_b and set(order) == seen_a | seen_b
    assert set(order[:len(seen_b)]) == seen_b  # this run's entries first
    # With room for fewer entries, those of the files not seen in the run go first
    monkeypatch.setattr(siblings, "MAX_ENTRIES", len(seen_b))
    c = make_folder(tmp_path / "c", "prod", tag="b")  # the same bytes as b: nothing new...
    (tmp_path / "c" / "cm.yaml").write_text("kind: ConfigMap\n# new\n")  # ...but this file
    Run(c, siblings.FactsCache(str(path)), monkeypatch)
    kept = set(entries(path))
    assert len(kept) == len(seen_b)
    assert kept <= digests(tmp_path / "c")
    assert not kept & (seen_a - seen_b)


def test_an_interrupted_write_leaves_the_old_cache_whole(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    path = cache_dir / siblings.CACHE_FILE
    Run(make_folder(tmp_path / "a", "prod", tag="a"), siblings.FactsCache(str(path)),
        monkeypatch)
    before = path.read_bytes()

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    checked = make_folder(tmp_path / "b", "prod", tag="b")
    fc = siblings.FactsCache(str(path))
    with monkeypatch.context() as m:
        m.setattr(cache_mod.os, "replace", refuse)
        loaded = sources.sibling_loader([str(p) for p in checked], fc)(str(checked[0]))
    assert loaded  # the run itself went on
    assert path.read_bytes() == before
    assert sorted(os.listdir(cache_dir)) == [siblings.CACHE_FILE]  # no temporary file left


CONCURRENT = """\
import sys
from dgdgen.cli import main
sys.exit(main(["check", "--select", "DGD101", "--select", "RTE302", "--format", "json",
               *sys.argv[1:]]))
"""


def test_concurrent_runs_leave_a_valid_cache(tmp_path: Path) -> None:
    def findings(out: bytes) -> list[tuple[str, str]]:
        return sorted((f["code"], f["message"]) for f in json.loads(out)["findings"])

    folders = [make_folder(tmp_path / f"f{i}", "prod", tag=str(i)) for i in range(4)]
    plain = subprocess.run([sys.executable, "-c", CONCURRENT, *map(str, folders[0])],
                           env={**os.environ, "DGDGEN_CACHE_DIR": ""}, capture_output=True,
                           check=False)
    assert plain.returncode == 1 and findings(plain.stdout), plain.stderr
    env = {**os.environ, "DGDGEN_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(3):
        procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, *map(str, checked)],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for checked in folders]
        outs = [p.communicate() for p in procs]
        assert all(p.returncode == 1 for p in procs), outs  # findings, no crash
        assert all(findings(out) == findings(plain.stdout) for out, _ in outs)
        path = tmp_path / "cache" / siblings.CACHE_FILE
        assert entries(path)  # whole and valid after every round
        assert sorted(os.listdir(tmp_path / "cache")) == [siblings.CACHE_FILE]


def test_cache_dir_follows_the_environment(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("DGDGEN_CACHE_DIR", raising=False)
    assert cache_mod.cache_dir() == str(tmp_path / "home" / ".cache" / "dgdgen")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_mod.cache_dir() == str(tmp_path / "xdg" / "dgdgen")
    monkeypatch.setenv("DGDGEN_CACHE_DIR", str(tmp_path / "own"))
    assert cache_mod.cache_dir() == str(tmp_path / "own")
    assert (tmp_path / "own").is_dir()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DGDGEN_CACHE_DIR", str(tmp_path / "file" / "sub"))
    assert cache_mod.cache_dir() is None  # cannot be created: no cache
    monkeypatch.setenv("DGDGEN_CACHE_DIR", "")
    assert cache_mod.cache_dir() is None


def test_an_empty_cache_dir_disables_the_cache(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("DGDGEN_CACHE_DIR", "")
    checked = make_folder(tmp_path / "repo", "prod")
    first = Run(checked, None, monkeypatch)  # the default cache: disabled
    second = Run(checked, None, monkeypatch)
    assert first.parsed and second.parsed == first.parsed
    assert second.findings == first.findings
    assert not (tmp_path / "home").exists() and not (tmp_path / "xdg").exists()
    monkeypatch.setenv("DGDGEN_CACHE_DIR", str(tmp_path / "on"))
    Run(checked, None, monkeypatch)
    assert Run(checked, None, monkeypatch).parsed == []
    assert entries(tmp_path / "on" / siblings.CACHE_FILE)


def test_a_head_namespace_is_kept_and_only_rules_out_that_namespace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sibling skipped because its head proved another namespace is remembered as such: the
    warm run neither parses nor scans it, and a run that looks in that namespace parses it.
    (The DGD alone is checked: RTE302 on the route would read every sibling.)"""
    checked = make_folder(tmp_path / "repo", None)[:1]
    path = tmp_path / "cache.json"
    scanned: list[str] = []
    head_namespace = siblings.head_namespace

    def counting(text: str) -> str | None:
        scanned.append(text)
        return head_namespace(text)

    monkeypatch.setattr(siblings, "head_namespace", counting)
    plain = uncached(checked, monkeypatch)
    cold = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    assert "other-ns.yaml" not in cold.parsed and cold.findings == plain.findings
    other = siblings.digest((tmp_path / "repo" / "other-ns.yaml").read_bytes())
    assert json.loads(path.read_text())["heads"][other] == "staging"
    scanned.clear()
    warm = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    assert (warm.parsed, scanned, warm.findings) == ([], [], plain.findings)
    # The checked DGD moves to `staging`, where the sibling `qwen2` is: it is parsed and found.
    checked[0].write_text(dgd_text("qwen", "staging"))
    moved = Run(checked, siblings.FactsCache(str(path)), monkeypatch)
    assert "other-ns.yaml" in moved.parsed
    assert "qwen2" in {f.key for f in moved.findings if f.code == "DGD101"}
    assert moved.findings == uncached(checked, monkeypatch).findings
