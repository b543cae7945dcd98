"""Extracts the admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy(Binding) schemas from
the Kubernetes JSON schemas bundled with the ``kubernetes-validate`` package (strict variant:
unknown fields are errors) into one self-contained file, with every ``$ref`` they reach.

    python schemas/kubernetes/build.py [SCHEMA_DIR]

SCHEMA_DIR defaults to the installed package's ``v1.37.0-local-strict``. The output is committed
with its provenance (SOURCE.md); dgdgen reads only the committed copy.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {
    "ValidatingAdmissionPolicy": "validatingadmissionpolicy-admissionregistration-v1.json",
    "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybinding-admissionregistration-v1.json",
}
PREFIX = "/api/_definitions.json#/$defs/"
LOCAL = "#/$defs/"


def main() -> None:
    if len(sys.argv) > 1:
        src = sys.argv[1]
    else:
        import kubernetes_validate  # type: ignore[import-untyped]

        src = os.path.join(os.path.dirname(kubernetes_validate.__file__),
                           "kubernetes-json-schema", "v1.37.0-local-strict")
    with open(os.path.join(src, "_definitions.json"), encoding="utf-8") as fh:
        defs = json.load(fh)["$defs"]
    needed: dict[str, Any] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith((PREFIX, LOCAL)):
                name = ref.split("/")[-1]
                node["$ref"] = "#/$defs/" + name
                if name not in needed:
                    needed[name] = json.loads(json.dumps(defs[name]))
                    walk(needed[name])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    kinds = {}
    for kind, file in KINDS.items():
        with open(os.path.join(src, file), encoding="utf-8") as fh:
            schema = json.load(fh)
        walk(schema)
        kinds[kind] = schema
    out = {"$schema": "http://json-schema.org/draft-07/schema#",
           "title": "admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and Binding "
                    "(Kubernetes 1.37, strict)",
           "kinds": kinds, "$defs": dict(sorted(needed.items()))}
    with open(os.path.join(HERE, "admissionregistration-v1.schema.json"), "w",
              encoding="utf-8") as fh:
        json.dump(out, fh, indent=1, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main()
