"""Suppressions with a reason: on the object (annotation) or in the config file. A suppressed
finding stays in every report, marked suppressed with its reason; it only stops counting for
``--fail-on``.

Annotation forms (metadata.annotations of the object the finding is about)::

    dgdgen.dev/ignore: "DGD105: dev cluster, a capacity gap is acceptable; DGD102: legacy"
    dgdgen.dev/ignore-DGD105: "dev cluster, a capacity gap is acceptable"

A selector is a code, a slug or a code prefix. An entry without a reason is not applied
(DGD001 reports it).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

ANNOTATION = "dgdgen.dev/ignore"


@dataclass(frozen=True)
class Suppression:
    selector: str
    reason: str
    annotation: str = ANNOTATION  # where it was written (the annotation key), or "config"
    object: str | None = None  # config: fnmatch pattern of the object id
    file: str | None = None  # config: fnmatch pattern of the file


def parse_annotations(annotations: Mapping[str, str]) -> Iterator[Suppression]:
    for key, value in annotations.items():
        if key == ANNOTATION:
            for part in re.split(r"[;\n]", value):
                part = part.strip()
                if not part:
                    continue
                selector, _, reason = part.partition(":")
                yield Suppression(selector.strip(), reason.strip(), key)
        elif key.startswith(ANNOTATION + "-"):
            yield Suppression(key[len(ANNOTATION) + 1:], value.strip(), key)


def applies(s: Suppression, matches_rule: bool, file: str, obj: str) -> bool:
    if not matches_rule or not s.reason:
        return False
    if s.object is not None and not fnmatch.fnmatchcase(obj, s.object):
        return False
    return s.file is None or fnmatch.fnmatchcase(file, s.file)
