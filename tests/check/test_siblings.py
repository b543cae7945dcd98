"""The textual pre-filter of sibling files: the cross-file rules (DGD101, RTE302) parse only the
siblings that can hold what they look for, and still find everything they found before."""

from __future__ import annotations

from pathlib import Path

import pytest

from dgdgen.check import engine, sources
from dgdgen.check.context import FileInput
from dgdgen.yamlio import Document, load_documents_fast

REPO = Path(__file__).resolve().parents[2]
DGD = (REPO / "tests" / "check" / "corpus" / "vllm-replicas-only" / "new.yaml").read_text()


def dgd_text(name: str, namespace: str | None, *, kind: str = "DynamoGraphDeployment") -> str:
    meta = f"metadata:\n  name: {name}\n" + (f"  namespace: {namespace}\n" if namespace else "")
    text = DGD.replace("metadata:\n  name: vllm-v1-disagg-router\n", meta)
    return text.replace("kind: DynamoGraphDeployment", f"kind: {kind}")


CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: qwen-canary-cm\n  namespace: prod\n"


@pytest.mark.parametrize(("text", "group", "expected"), [
    ("kind: DynamoGraphDeployment\n", ["DynamoGraphDeployment"], True),
    ("kind: dynamographdeployment\n", ["DynamoGraphDeployment"], True),
    ("kind: ConfigMap\n", ["DynamoGraphDeployment"], False),
    ("kind: ConfigMap\n", ["Service", "ConfigMap"], True),
    ('kind: "Dynamo\\x47raphDeployment"\n', ["DynamoGraphDeployment"], True),
    ("namespace: prod\n", ["staging", "prod"], True),
])
def test_could_contain(text: str, group: list[str], expected: bool) -> None:
    assert sources.could_contain(text, group) is expected


def _run(tmp_path: Path, siblings: dict[str, str], monkeypatch: pytest.MonkeyPatch,
         namespace: str | None = "prod") -> tuple[list[str], list[str]]:
    """DGD101 on qwen.yaml (DGD `qwen` in ``namespace``): the keys of its findings and the
    sibling files that were parsed."""
    checked = tmp_path / "qwen.yaml"
    checked.write_text(dgd_text("qwen", namespace))
    for name, text in siblings.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setenv("DGDGEN_CACHE_DIR", "")  # what this run parses, not an earlier one
    parsed: list[str] = []

    def counting(text: str, file: str) -> list[Document]:
        parsed.append(Path(file).name)
        return load_documents_fast(text, file)

    monkeypatch.setattr(sources, "load_documents_fast", counting)
    head = load_documents_fast(checked.read_text(), str(checked))
    report = engine.run([FileInput(str(checked), head)], engine.Options(select=("DGD101",)),
                        sources.sibling_loader([str(checked)]))
    return sorted(f.key for f in report.findings), sorted(parsed)


def test_dgd101_reads_only_dgd_siblings_of_the_namespace(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    keys, parsed = _run(tmp_path, {
        "canary.yaml": dgd_text("qwen-canary", "prod"),
        "escaped.yaml": dgd_text("qwen-escaped", "prod", kind='"Dynamo\\x47raphDeployment"'),
        "anchored.yaml": dgd_text("qwen-anchored", "&ns prod") + "# *ns\n",
        "other-ns.yaml": dgd_text("qwen2", "staging"),
        "cm.yaml": CONFIGMAP,
    }, monkeypatch)
    # The conflicting siblings are found, the one spelt with an escape too ...
    assert keys == ["qwen-anchored", "qwen-canary", "qwen-escaped"]
    # ... and the ConfigMap and the DGD of another namespace were never parsed.
    assert parsed == ["anchored.yaml", "canary.yaml", "escaped.yaml"]


def test_dgd101_without_a_namespace_reads_the_dgd_siblings_without_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys, parsed = _run(tmp_path, {
        "nons.yaml": dgd_text("qwen-canary", None),
        "prod.yaml": dgd_text("qwen-prod", "prod"),
        # Heads that prove nothing: a second document may be in no namespace, an alias may
        # stand for anything.
        "two.yaml": dgd_text("qwen-two", "prod") + "---\n" + dgd_text("qwen-second", None),
        "alias.yaml": dgd_text("qwen-alias", "*ns").replace("kind:", "x: &ns prod\nkind:", 1),
        "cm.yaml": CONFIGMAP,
    }, monkeypatch, namespace=None)
    assert keys == ["qwen-canary", "qwen-second"]
    # The DGD whose head says `namespace: prod` is not parsed: it cannot conflict.
    assert parsed == ["alias.yaml", "nons.yaml", "two.yaml"]


def test_dgd101_namespace_read_from_another_spelling(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # `namespace: "\x331"` is the string "31" spelled with an escape: the same namespace as the
    # checked DGD's "31", though the text "31" is nowhere in the sibling. (An integer namespace
    # such as `0x1f` is no longer read as one: the typed boundary refuses it.)
    keys, parsed = _run(tmp_path, {
        "hex.yaml": dgd_text("qwen-canary", '"\\x331"'),
        "cm.yaml": CONFIGMAP,
    }, monkeypatch, namespace='"31"')
    assert keys == ["qwen-canary"]
    assert parsed == ["hex.yaml"]


def test_rte302_skips_a_sibling_service_whose_metadata_is_not_a_mapping(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The odd sibling is left out (it used to crash RTE302 with an AttributeError): the route's
    findings are those of the folder without it."""
    monkeypatch.setenv("DGDGEN_CACHE_DIR", "")
    checked = tmp_path / "route.yaml"
    checked.write_text(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: r\n"
        "spec:\n  rules:\n  - backendRefs:\n    - {kind: Service, name: odd, weight: 1}\n"
        "    - {kind: Service, name: ok, weight: 1}\n")
    (tmp_path / "ok.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: ok}\n")

    def keys() -> list[str]:
        head = load_documents_fast(checked.read_text(), str(checked))
        report = engine.run([FileInput(str(checked), head)],
                            engine.Options(select=("RTE302",)),
                            sources.sibling_loader([str(checked)]))
        return sorted(f.key for f in report.findings)

    without = keys()
    (tmp_path / "odd.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: [odd]\n")
    assert keys() == without == ["Service/odd"]


def _variants(text: str) -> list[str]:
    """Texts that differ from ``text`` where :func:`siblings.head_namespace` must look closely:
    another document, a second or tagged or typed namespace, aliases, merge keys, the metadata
    late or twice, flow style."""
    meta = "\nmetadata:\n"
    if meta not in text:
        return []
    out = [
        text + "---\n" + text.replace("  namespace:", "  # namespace:"),
        text + "...\n",
        text.replace(meta, meta + "  namespace: other\n", 1),
        text.replace(meta, meta + "  namespace: !!str tagged\n", 1),
        text.replace(meta, meta + "  namespace: yes\n", 1),
        text.replace(meta, meta + "  namespace: 0x1f\n", 1),
        text.replace(meta, meta + '  namespace: "quoted"\n', 1),
        text.replace(meta, meta + "  namespace: *a\n", 1).replace("kind:", "x: &a anchored\nkind:",
                                                                 1),
        text.replace(meta, "\nbase: &m {namespace: merged}\n<<: *m\nmetadata:\n", 1),
        text.replace(meta, "\nmetadata: &m\n", 1) + "again: *m\n",
        text + "metadata: {name: late, namespace: late}\n",
        text.replace(meta, "\nmetadata: {namespace: flow,\n  name: flow}\nold:\n", 1),
    ]
    return out


def test_head_namespace_never_contradicts_the_full_parse() -> None:
    """Every YAML file of the repository, and variants of those with a metadata mapping: when
    the head names a namespace, every object the full parse finds is in it."""
    from dgdgen.check import siblings
    from dgdgen.errors import InputError

    texts = []
    for path in sorted(REPO.glob("**/*.yaml")):
        if ".venv" in path.parts or ".git" in path.parts:
            continue
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            continue
    texts += [dgd_text("qwen", ns) for ns in ("prod", None, '"p\\x72od"', "'prod'")]
    texts += [v for t in list(texts) for v in _variants(t)]
    proved = 0
    for text in texts:
        ns = siblings.head_namespace(text)
        if ns is None:
            continue
        proved += 1
        try:
            facts = siblings.facts_of(load_documents_fast(text, "f.yaml"))
        except InputError:
            facts = []
        assert all(f[2] == ns for f in facts), (ns, facts, text[:300])
    assert proved > 200  # the check is not vacuous: many heads do name their namespace


@pytest.mark.parametrize(("text", "expected"), [
    ("kind: X\nmetadata:\n  name: a\n  namespace: prod\nspec: {}\n", "prod"),
    ("---\nmetadata: {namespace: 'prod'}\n", "prod"),
    ("spec:\n  x: [1, {metadata: {namespace: no}}]\nmetadata:\n  namespace: prod\n", "prod"),
    ("metadata:\n  name: a\n", None),
    ("metadata:\n  namespace: prod\n---\nmetadata:\n  name: b\n", None),
    ("metadata:\n  namespace: prod\n  namespace: dev\n", None),
    ("metadata:\n  namespace: !!str prod\n", None),
    ("metadata:\n  namespace: true\n", None),
    ("metadata:\n  namespace: 0x1f\n", None),
    ("<<: {metadata: {namespace: a}}\nmetadata:\n  namespace: prod\n", None),
    ("metadata:\n  <<: {namespace: a}\n  namespace: prod\n", None),
    ("x: &m {namespace: a}\nmetadata: *m\n", None),
    ("metadata:\n  namespace: *n\n", None),
    ("- metadata:\n    namespace: prod\n", None),
    ("metadata: [namespace, prod]\n", None),
    ("metadata:\n  namespace: [prod\n", None),
    ("", None),
])
def test_head_namespace(text: str, expected: str | None) -> None:
    from dgdgen.check import siblings

    assert siblings.head_namespace(text) == expected
