"""The YAML 1.2 plain-scalar resolver kept in dgdgen.yamlio.yaml12 (so that reading a spec does not
import ruamel.yaml) against the one of the installed ruamel.yaml: the same table, and the same
tag for every scalar tried."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver, implicit_resolvers

from dgdgen.yamlio import yaml12

REPO = Path(__file__).resolve().parents[1]


def test_the_table_is_ruamels_yaml_1_2_table() -> None:
    theirs = [(tag, rx.pattern, rx.flags, tuple(first))
              for versions, tag, rx, first in implicit_resolvers if (1, 2) in versions]
    ours = [(tag, re.compile(pattern, flags).pattern, re.compile(pattern, flags).flags, first)
            for tag, pattern, flags, first in yaml12._RESOLVERS12]
    assert ours == theirs


def _scalars() -> set[str]:
    """Scalars of every YAML file in the repository, the corner cases of each resolver, and
    every string of up to three characters over the characters the resolvers look at."""
    found: set[str] = set()
    for path in REPO.glob("**/*.yaml"):
        if ".venv" in path.parts or ".git" in path.parts:
            continue
        for word in re.split(r"[\s:,\[\]{}\"']+", path.read_text(errors="replace")):
            found.add(word)
    found |= {
        "", "~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRUE", "yes", "no",
        "on", "off", "y", "n", "0", "-0", "+0", "007", "0o17", "0o8", "0b101", "0b2", "0x1F",
        "0xg", "1_000", "_1", "1.", ".5", "-.5", "+.5e+3", ".5e3", "1e3", "1E-3", "1.5e", ".inf",
        "-.Inf", "+.INF", ".nan", ".NaN", "-.nan", "190:20:30", "1:30.5", "2001-12-14",
        "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2002-12-14T", "<<", "<",
        "=", "!", "&", "*", "1 ", " 1", "1.0.0", "v1", "1Gi", "16Gi", "100m", "nvidia.com/gpu",
    }
    alphabet = "019_-+.eEoxbtTfFnN~<=!&*: aI"
    for n in (1, 2, 3):
        found.update("".join(p) for p in itertools.product(alphabet, repeat=n))
    return found


def test_every_scalar_gets_ruamels_tag() -> None:
    resolver = VersionedResolver()
    scalars = _scalars()
    assert len(scalars) > 20000
    differ = [(v, yaml12._resolve12(v), str(resolver.resolve(ScalarNode, v, (True, False))))
              for v in sorted(scalars)]
    differ = [d for d in differ if d[1] != d[2]]
    assert not differ, differ[:20]


@pytest.mark.parametrize("value, expected", [
    ("true", (True, True)), ("16", (True, 16)), ("0.5", (True, 0.5)), ("~", (True, None)),
    ("frontend", (True, "frontend")), ("0o17", (False, None)), ("1e3", (False, None)),
])
def test_plain_scalars_read_as_ruamel_reads_them(value: str, expected: tuple) -> None:
    assert yaml12._plain12(value) == expected
