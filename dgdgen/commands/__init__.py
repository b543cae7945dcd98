"""Subcommands of the CLI: one module each (see :mod:`dgdgen.cli`)."""
