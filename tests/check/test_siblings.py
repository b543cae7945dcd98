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


def test_dgd101_without_a_namespace_reads_every_dgd_sibling(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    keys, parsed = _run(tmp_path, {
        "nons.yaml": dgd_text("qwen-canary", None),
        "prod.yaml": dgd_text("qwen-prod", "prod"),
        "cm.yaml": CONFIGMAP,
    }, monkeypatch, namespace=None)
    assert keys == ["qwen-canary"]
    assert parsed == ["nons.yaml", "prod.yaml"]


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
