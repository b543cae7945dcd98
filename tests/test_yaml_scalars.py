"""Every YAML implicit type, read by both YAML readers: a value, or one refusal at its line —
never an exception out of a constructor (docs/robustness.md, "Reading YAML").

A scalar that a resolver takes for a type (or a tag names) but whose text holds no value of it —
``2024-13-45``, ``2001-02-30 25:61:61``, ``0b_``, ``+99:00`` as a time zone — made PyYAML's and
ruamel.yaml's constructors raise ValueError / IndexError, which `check` and `diff` reported as
an internal error (exit 70). Each row below is read where a scalar can stand (a value, a key, a
list item, a flow key, inside a collection key, after an alias sends the YAML 1.2 reader to
ruamel.yaml, under a merge key) by the checker's YAML 1.1 reader and the YAML 1.2 reader of specs
and `verify`.
"""

from __future__ import annotations

import math
import re

import pytest
from hostile_support import EXAMPLE, cli

from dgdgen import yamlio
from dgdgen.errors import InputError

# (scalar, the YAML 1.1 reading, the YAML 1.2 reading); a reading is a value, or REFUSED
REFUSED = object()
ROWS: list[tuple[str, object, object]] = [
    # timestamps: out of range (the class), and the edges that hold
    ("2024-13-45", REFUSED, REFUSED),
    ("2001-02-30 25:61:61", REFUSED, REFUSED),
    ("2001-02-30", REFUSED, REFUSED),
    ("2001-12-14 24:00:00", REFUSED, REFUSED),
    ("0000-01-01", REFUSED, REFUSED),
    ("2001-12-14t21:59:43.10+99:00", REFUSED, REFUSED),
    ("2001-12-14 21:59:43.10 -5", "2001-12-14T21:59:43.100000-05:00",
     "2001-12-14T21:59:43.100000-05:00"),
    ("9999-12-31t23:59:59.999999-23:59", "9999-12-31T23:59:59.999999-23:59",
     "9999-12-31T23:59:59.999999-23:59"),
    ("2001-12-14", "2001-12-14", "2001-12-14"),
    # integers: no digit after the prefix, octal, binary, hex, sexagesimal (1.1 only)
    ("0b_", REFUSED, REFUSED),
    ("-0b_", REFUSED, REFUSED),
    ("0x_", REFUSED, REFUSED),
    ("0o_", "0o_", REFUSED),
    ("0777", 511, 777),
    ("0o17", "0o17", 15),
    ("0b101", 5, 5),
    ("0x1F", 31, 31),
    ("190:20:30", 685230, "190:20:30"),
    ("0b", "0b", "0b"),
    # floats: no digit, sexagesimal, infinities and NaN
    ("._", "._", REFUSED),
    ("-._", "-._", REFUSED),
    ("1:30.5", 90.5, "1:30.5"),
    (".inf", math.inf, math.inf),
    ("-.INF", -math.inf, -math.inf),
    ("1e99999", "1e99999", math.inf),
    # booleans: YAML 1.1's yes/no/on/off, and the spellings neither reads as one
    ("yes", True, "yes"),
    ("No", False, "No"),
    ("ON", True, "ON"),
    ("off", False, "off"),
    ("oFF", "oFF", "oFF"),
    ("y", "y", "y"),
    ("~", None, None),
    # explicitly tagged: a text the tag's type cannot read
    ("!!float 0b1", REFUSED, REFUSED),
    ("!!int 0b_", REFUSED, REFUSED),
    ("!!timestamp 2024-13-45", REFUSED, REFUSED),
    ("!!bool maybe", REFUSED, REFUSED),
    ("!!int x", REFUSED, REFUSED),
    ("!!float 1", 1.0, 1.0),
]
IDS = [re.sub(r"\W", "_", s) for s, _, _ in ROWS]


def _read(reader: str, text: str) -> list[object]:
    load = yamlio.load_documents_fast if reader == "1.1" else yamlio.load_documents
    return [d.data for d in load(text, "t.yaml")]


def _same(got: object, want: object) -> bool:
    if isinstance(want, float) and isinstance(got, float) and math.isinf(want):
        return got == want
    return type(got) is type(want) and got == want


@pytest.mark.parametrize(("scalar", "yaml11", "yaml12"), ROWS, ids=IDS)
@pytest.mark.parametrize("reader", ["1.1", "1.2"])
def test_a_scalar_is_read_or_refused_at_its_line(reader: str, scalar: str, yaml11: object,
                                                 yaml12: object) -> None:
    want = yaml11 if reader == "1.1" else yaml12
    aliased = "p: &a 1\nq: *a\n"  # an alias: the YAML 1.2 reader leaves the stream to ruamel.yaml
    places = {  # text, the line the scalar is on, where its value is found
        "value": (f"a: {scalar}\n", 1, lambda d: d["a"]),
        "item": (f"a:\n  - {scalar}\n", 2, lambda d: d["a"][0]),
        "after an alias": (f"{aliased}a: {scalar}\n", 3, lambda d: d["a"]),
        "merged": (f"m: &m {{k: {scalar}}}\na:\n  <<: *m\n", 1, lambda d: d["a"]["k"]),
        "key": (f"? {scalar}\n: v\n", 1, None),
        "flow key": (f"a: {{{scalar}: v}}\n", 1, None),
        "in a key": (f"? [{scalar}]\n: v\n", 1, None),
        "key after an alias": (f"{aliased}? {scalar}\n: v\n", 3, None),
    }
    for place, (text, line, value_of) in places.items():
        if scalar.startswith("!!") and "key" in place:
            continue  # a tagged key: the tag's own checks (tests/test_hostile_input.py)
        try:
            (data,) = _read(reader, text)
        except InputError as exc:
            assert want is REFUSED, (place, str(exc))
            assert str(exc).startswith(f"t.yaml:{line}:"), (place, str(exc))
            written = scalar.split(" ", 1)[1] if scalar.startswith("!!") else scalar
            assert "\n" not in str(exc) and repr(written) in str(exc), str(exc)
            continue
        assert want is not REFUSED or "key" in place, (place, data)
        if value_of is not None:
            assert _same(value_of(data), want), (place, data, want)


@pytest.mark.parametrize("scalar", ["2024-13-45", "2001-02-30 25:61:61", "0b_", "!!float 0b1"])
def test_every_command_that_reads_yaml_refuses_it_with_exit_2(tmp_path, scalar: str) -> None:
    """`check`, `diff`, `verify`, `validate` (the stable DGD and the spec): exit 2 and one
    line naming the file, line and field — not the internal error (exit 70) of before."""
    dgd = (EXAMPLE / "dgd.yaml").read_text()
    bad = dgd.replace("\nmetadata:\n", f"\nmetadata:\n  labels:\n    built: {scalar}\n", 1)
    (tmp_path / "base.yaml").write_text(dgd)
    (tmp_path / "head.yaml").write_text(bad)
    spec = (EXAMPLE / "rollout.yaml").read_text()
    (tmp_path / "rollout.yaml").write_text(spec)
    (tmp_path / "dgd.yaml").write_text(bad)
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "dgd.yaml").write_text(dgd)
    (tmp_path / "spec" / "rollout.yaml").write_text(
        spec.replace("\nmetadata:\n", f"\nmetadata:\n  labels:\n    built: {scalar}\n", 1))
    runs = [
        (("check", str(tmp_path / "head.yaml")), "head.yaml"),
        (("diff", str(tmp_path / "base.yaml"), str(tmp_path / "head.yaml")), "head.yaml"),
        (("verify", str(tmp_path / "head.yaml")), "head.yaml"),
        (("validate", str(tmp_path / "rollout.yaml")), "dgd.yaml"),
        (("validate", str(tmp_path / "spec" / "rollout.yaml")), "rollout.yaml"),
    ]
    for args, file in runs:
        r = cli(*args)
        assert r.code == 2, (args, r.code, r.err)
        lines = [ln for ln in r.err.splitlines() if "error:" in ln]
        assert len(lines) == 1 and re.search(rf"{re.escape(file)}:\d+:\d+: ", lines[0]), r.err
        assert "labels.built" in lines[0] and "Traceback" not in r.err, r.err
