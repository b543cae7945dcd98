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


# `dgdgen` as the console script runs it (dgdgen.cli.console): after `main` returns, exit
# handlers run, output is flushed and the process ends without the interpreter's teardown.

def _console(*args: str, cwd: Path = REPO, **env: str) -> subprocess.CompletedProcess[bytes]:
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "dgdgen", *args], capture_output=True,
                          env=full, cwd=cwd, check=False)


def test_the_console_exits_with_mains_code_and_all_of_its_output() -> None:
    import contextlib
    import io

    from dgdgen.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["schema"]) == 0
    run = _console("schema")
    assert run.returncode == 0 and run.stderr == b""
    assert run.stdout.decode() == buffer.getvalue() and len(run.stdout) > 40_000
    bad = _console("validate", "-q", "no-such-spec.yaml")
    assert bad.returncode == 2 and b"no-such-spec.yaml" in bad.stderr


def test_the_console_runs_the_exit_handlers(tmp_path: Path) -> None:
    """The compiled cel-cpp programs are saved by an exit handler (crd/celcpp.py): the file
    exists after a run only if the handlers ran."""
    run = _console("validate", "-q", str(SPEC), DGDGEN_CACHE_DIR=str(tmp_path))
    assert run.returncode == 0, run.stderr
    saved = json.loads((tmp_path / "cel-cpp-programs.json").read_text())
    assert saved


def test_the_console_waits_for_a_running_thread(tmp_path: Path) -> None:
    # The thread prints only once the main thread has ended (the interpreter's shutdown stops it
    # before it waits for the other threads): after all of the command's output, however slow
    # the machine, and never if the process ended without waiting for it.
    code = ("import sys, threading\n"
            "def late():\n"
            "    threading.main_thread().join()\n"
            "    print('thread done', flush=True)\n"
            "threading.Thread(target=late).start()\n"
            "sys.argv = ['dgdgen', 'rules', 'list']\n"
            "from dgdgen.cli import console\n"
            "console()\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip().endswith("thread done")


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    """`dgdgen schema | head -c 10`: the pipe (made smaller than the output) closes early; exit
    0 and nothing on stderr, as before the quick exit."""
    import fcntl

    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    proc = subprocess.Popen([sys.executable, "-m", "dgdgen", "schema"], stdout=write,
                            stderr=subprocess.PIPE, cwd=REPO)
    os.close(write)
    assert os.read(read, 10)
    os.close(read)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert err == b""


def test_output_to_a_full_disk_is_one_clear_error() -> None:
    """`dgdgen schema > /dev/full`: exit 2 and the reason once, as for any file system refusal."""
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "dgdgen", "schema"], stdout=full,
                             stderr=subprocess.PIPE, cwd=REPO, check=False)
    assert run.returncode == 2
    assert run.stderr.decode().count("No space left on device") == 1, run.stderr
