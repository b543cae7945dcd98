"""Regenerate schemas/rollout-spec.schema.json from the pydantic model:
``python -m dgdgen.spec.schemagen`` (a test fails when the committed file is stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def generate() -> str:
    from dgdgen.spec import json_schema

    return json.dumps(json_schema(), indent=2, sort_keys=False) + "\n"


def main() -> int:
    # the checkout this module is in: dgdgen/spec/schemagen.py → the repository root
    target = Path(__file__).resolve().parents[2] / "schemas" / "rollout-spec.schema.json"
    target.write_text(generate(), encoding="utf-8")
    sys.stdout.write(f"wrote {target}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
