"""dgdgen schema: print the JSON Schema of the rollout spec."""

from __future__ import annotations

import argparse
import sys

COMMON_OPTIONS: tuple[str, ...] = ()  # reads no file
HELP = "print the JSON Schema of the rollout spec (for editors and CI)"
DESCRIPTION = """\
Print the JSON Schema (draft 2020-12) of the DGDRollout spec. The same file ships as
schemas/rollout-spec.schema.json; point your editor's YAML language server at it:

  # yaml-language-server: $schema=https://dgdgen.dev/schemas/rollout-spec.schema.json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from dgdgen.resources import read_text

    sys.stdout.write(read_text("schemas", "rollout-spec.schema.json"))
    return 0
