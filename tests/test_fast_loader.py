"""The checker's loader memoises scalar tag resolution: it must read every scalar exactly as
PyYAML's SafeLoader does, however often the same text comes back, quoted or not."""

from __future__ import annotations

from pathlib import Path

import yaml

from dgdgen import yamlio

REPO = Path(__file__).resolve().parents[1]

SCALARS = ["yes", "No", "on", "OFF", "true", "False", "~", "null", "", "0", "012", "0x1f", "0o17",
           "1_000", "-3", "+7", "1.5", "1e3", "1.0e3", ".inf", "-.Inf", ".nan", "2024-01-02",
           "2001-12-14t21:59:43.10-05:00", "8000", "1Gi", "abc", "3:25:45"]


def _stream() -> str:
    lines = []
    for i, s in enumerate(SCALARS):
        lines.append(f"p{i}: {s}" if s else f"p{i}:")
        lines.append(f"q{i}: '{s}'")
        lines.append(f"d{i}: \"{s}\"")
        lines.append(f"l{i}: [{s}, '{s}']" if s else f"l{i}: []")
    return "\n".join(lines) + "\n"


def test_same_values_as_safe_loader_twice_over() -> None:
    text = _stream()
    expected = yaml.load(text, Loader=yaml.SafeLoader)
    for _ in range(2):  # the second pass is served from the memo
        assert yaml.load(text, Loader=yamlio._fast_loader()) == expected
        (doc,) = yamlio.load_documents_fast(text, "t.yaml")
        assert {k: v for k, v in doc.data.items() if not k.startswith("l")} == {
            k: (v.isoformat() if hasattr(v, "isoformat") else v)
            for k, v in expected.items() if not k.startswith("l")}
    got = yaml.load(text, Loader=yamlio._fast_loader())
    assert got["p0"] is True and got["q0"] == "yes" and got["d0"] == "yes"
    assert got["p11"] == 31 and got["q11"] == "0x1f"


def test_repository_yaml_reads_as_with_safe_loader() -> None:
    files = sorted(REPO.glob("examples/**/*.yaml")) + sorted(REPO.glob("tests/check/corpus/**/*.yaml"))
    assert len(files) > 100
    for f in files:
        text = f.read_text()
        assert list(yaml.load_all(text, Loader=yamlio._fast_loader())) == list(
            yaml.load_all(text, Loader=yaml.CSafeLoader)), f
