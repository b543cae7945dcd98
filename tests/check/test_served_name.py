"""A change of the model path with no `--served-model-name` also changes the name clients call:
every backend of ai-dynamo 1.6.1 serves the model under its path then (dynamo/vllm/args.py,
dynamo/sglang/args.py, dynamo/trtllm). DGD201 says so — clients of the old name get 404 once
the last old worker goes — and does not when a served name pins it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from dgdgen.check.inplace import RENAME
from dgdgen.cli import main
from worker_support import worker_dgd_text

MODULES = {"vllm": ("dynamo.vllm", "--model"), "sglang": ("dynamo.sglang", "--model-path"),
           "trtllm": ("dynamo.trtllm", "--model")}


def _text(backend: str, model: str, served: str | None) -> str:
    module, flag = MODULES[backend]
    args = [flag, model] + (["--served-model-name", served] if served else [])
    return worker_dgd_text(f"command: [python3, -m, {module}]",
                           f"args: [{', '.join(json.dumps(a) for a in args)}]")


def _dgd201(tmp_path: Path, backend: str, served: str | None) -> list[str]:
    (tmp_path / "old.yaml").write_text(_text(backend, "org/model-a", served))
    (tmp_path / "new.yaml").write_text(_text(backend, "org/model-b", served))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml"), "--format",
              "json"])
    # the whole text (the details): what the change does on the target
    return [f["details"] for f in json.loads(out.getvalue())["findings"]
            if f["code"] == "DGD201"]


@pytest.mark.parametrize("backend", sorted(MODULES))
def test_a_model_change_without_a_served_name_renames_the_model(tmp_path: Path,
                                                                 backend: str) -> None:
    [message] = _dgd201(tmp_path, backend, None)
    assert RENAME in message


@pytest.mark.parametrize("backend", sorted(MODULES))
def test_a_served_name_that_pins_the_name_is_no_rename(tmp_path: Path, backend: str) -> None:
    [message] = _dgd201(tmp_path, backend, "chat")
    assert RENAME not in message and "side by side" in message
