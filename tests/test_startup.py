"""What a spec command imports: the start-up work `dgdgen validate` skips (docs/performance.md),
and proof that skipping it changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"


def _python(code: str, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    full.update(env)
    return subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, check=True, env=full, cwd=REPO).stdout.strip()


def test_validate_imports_neither_ruamel_nor_the_plugin_scan() -> None:
    code = (
        "import json, sys\n"
        "from dgdgen.cli import main\n"
        f"assert main(['validate', '-q', {str(SPEC)!r}]) == 0\n"
        "print(json.dumps([m for m in ('ruamel.yaml', 'importlib.metadata') "
        "if m in sys.modules]))\n"
    )
    assert json.loads(_python(code)) == []


def test_the_stand_in_loader_answers_as_pydantics_own() -> None:
    # pydantic's own loader, plugins disabled as the CLI disables them: no plugin.
    own = ("import json, sys; from pydantic.plugin._loader import get_plugins; "
           "print(json.dumps([len(list(get_plugins())), 'importlib.metadata' in sys.modules]))")
    assert json.loads(_python(own, PYDANTIC_DISABLE_PLUGINS="__all__")) == [0, True]
    # The CLI's stand-in: the same answer, without importing importlib.metadata.
    stand_in = ("import json, sys; from dgdgen import cli; cli._no_plugin_loader(); "
                "from pydantic.plugin._loader import get_plugins; "
                "from pydantic import BaseModel\n"
                "class M(BaseModel):\n    x: int\n"
                "M.model_validate({'x': 1})\n"
                "print(json.dumps([len(list(get_plugins())),\n"
                "                  'importlib.metadata' in sys.modules]))")
    assert json.loads(_python(stand_in, PYDANTIC_DISABLE_PLUGINS="__all__")) == [0, False]


def test_a_named_plugin_list_keeps_pydantics_loader() -> None:
    code = ("import sys; from dgdgen import cli; cli._no_plugin_loader(); "
            "import pydantic.plugin._loader as loader; "
            "print(hasattr(loader, 'PYDANTIC_ENTRY_POINT_GROUP'))")
    assert _python(code, PYDANTIC_DISABLE_PLUGINS="some-plugin") == "True"
    assert _python(code) == "True"
