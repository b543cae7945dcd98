"""A rehearsal leaves nothing behind, however it ends: no process and no file of it remain after
SIGTERM, Ctrl-C (SIGINT to its process group, as a terminal sends it) or SIGKILL (after which the
next run, or `dgdgen rehearse --clean`, removes its folder); the same for the runtime helpers the
tests and the checker use (HAProxy, Prometheus and Dynamo processes started through
`dgdgen.runtime.netns.run_isolated`) when the process that started them is SIGKILLed.

Each run gets a private TMPDIR of its own; the processes of the run under test are found by it —
every process the rehearsal starts carries a TMPDIR inside it (its own, or the rehearsal's
private folder within it) — so no other process on the machine is looked at twice, let alone
killed. Waits poll a condition with a deadline of 15 s, the bound the project promises; none
sleeps a fixed time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from rehearse_support import REPO, require_runtime

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

SPEC = REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"
GONE_WITHIN = 15.0


def _environ(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return {}
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def processes_of(tmp: Path) -> dict[int, str]:
    """Every live process whose TMPDIR lies in ``tmp`` (zombies do not count: they hold nothing
    but a process-table slot until their parent reads them), pid → command line."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid == os.getpid():
            continue
        if not _environ(pid).get("TMPDIR", "").startswith(str(tmp)):
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if state != "Z":
            out[pid] = cmd
    return out


def kill_all(tmp: Path) -> None:
    """SIGKILL what :func:`processes_of` finds (one may end between the look and the kill)."""
    for pid in processes_of(tmp):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for(what: str, check: Callable[[], object], timeout: float) -> object:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)


def private_tmp() -> Path:
    # short: HAProxy's sockets must fit in 97 bytes under it (dgdgen.rehearse.proxy.socket_dir)
    return Path(tempfile.mkdtemp(prefix="lo-", dir="/tmp"))


def start_rehearsal(tmp: Path, work: Path) -> tuple[subprocess.Popen[bytes], Path]:
    err = work / "stderr.txt"
    env = {**os.environ, "TMPDIR": str(tmp)}
    with open(err, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dgdgen", "rehearse", str(SPEC), "--report",
             str(work / "report"), "--time-scale", "0.05", "--rate", "10",
             "--min-requests", "10"],
            cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=fh, stderr=fh,
            start_new_session=True)  # its own process group: the test's Ctrl-C goes to it alone
    return proc, err


def mid_step(proc: subprocess.Popen[bytes], err: Path, tmp: Path) -> dict[int, str]:
    """Wait until the rehearsal is in step 1's bake (both generations' processes, HAProxy and
    Prometheus running); the processes of the run then."""
    def baking() -> bool:
        assert proc.poll() is None, err.read_text()
        return "[step-01] bake" in err.read_text()

    wait_for("step 1's bake", baking, 300)
    procs = processes_of(tmp)
    commands = " ".join(procs.values())
    for part in ("dynamo.frontend", "dynamo.mocker", "haproxy", "prometheus"):
        assert part in commands, (part, procs)
    return procs


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C", "SIGKILL"])
def test_a_stopped_rehearsal_leaves_no_process_and_no_file(how: str, tmp_path: Path) -> None:
    require_runtime()
    tmp = private_tmp()
    try:
        proc, err = start_rehearsal(tmp, tmp_path)
        try:
            running = mid_step(proc, err, tmp)
            assert len(running) >= 10, running  # rehearsal, 8 Dynamo processes, proxy, Prometheus
            if how == "SIGTERM":
                proc.send_signal(signal.SIGTERM)
            elif how == "Ctrl-C":
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.kill()
            code = proc.wait(GONE_WITHIN)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert code == {"SIGTERM": 143, "Ctrl-C": 130, "SIGKILL": -9}[how], err.read_text()
        wait_for("every process of the rehearsal gone", lambda: not processes_of(tmp),
                 GONE_WITHIN)
        left = sorted(p.name for p in tmp.iterdir())
        if how == "SIGKILL":
            # nothing ran to remove its folder: the next run, or --clean, does
            assert len(left) == 1 and left[0].startswith("dgdgen-rehearse-"), left
            r = subprocess.run([sys.executable, "-m", "dgdgen", "rehearse", "--clean"],
                               env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True,
                               text=True, check=False)
            assert r.returncode == 0, r.stderr
            assert f"removed {tmp / left[0]}" in r.stdout
            left = sorted(p.name for p in tmp.iterdir())
        assert left == [], left
    finally:
        kill_all(tmp)  # only if the assertions above failed
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def test_a_running_rehearsals_folder_is_not_swept(tmp_path: Path) -> None:
    """--clean removes only folders whose owner is gone: a live rehearsal's stays."""
    require_runtime()
    tmp = private_tmp()
    try:
        proc, err = start_rehearsal(tmp, tmp_path)
        try:
            mid_step(proc, err, tmp)
            r = subprocess.run([sys.executable, "-m", "dgdgen", "rehearse", "--clean"],
                               env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True,
                               text=True, check=False)
            assert r.returncode == 0 and r.stdout == "", r
            assert [p.name[:16] for p in tmp.iterdir()] == ["dgdgen-rehearse-"]
            assert proc.poll() is None
            proc.send_signal(signal.SIGTERM)
            proc.wait(GONE_WITHIN)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        wait_for("every process of the rehearsal gone", lambda: not processes_of(tmp),
                 GONE_WITHIN)
        assert list(tmp.iterdir()) == []
    finally:
        kill_all(tmp)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


HELPERS = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from dgdgen.runtime.netns import run_isolated

    def serve(work):
        from dgdgen.rehearse.prometheus import Prometheus
        from dgdgen.rehearse.proxy import Proxy
        from dgdgen.runtime.model import make_model_dir
        from dgdgen.runtime.procs import LocalDynamo

        work = Path(work)
        rt = LocalDynamo(work / "dynamo")
        fe = rt.frontend("inference-leftovers")
        rt.mocker("inference-leftovers", ["--model-path", str(make_model_dir(work / "model")),
                                          "--model-name", "tiny"])
        rt.wait_frontend_up(fe)
        proxy = Proxy(work)
        proxy.apply(proxy.stand_in([("fe", 1, [fe.port])]))
        prom = Prometheus(work, time_scale=0.05)
        prom.configure([], [("inference", p) for p in rt.procs], [])
        print("serving", flush=True)
        time.sleep(3600)

    run_isolated(serve, sys.argv[1], timeout=3600)
""")


def test_the_runtime_helpers_end_with_the_process_that_started_them(tmp_path: Path) -> None:
    """HAProxy, Prometheus and the Dynamo processes started inside run_isolated (each in its own
    session, out of reach of a process-group kill) end when the caller is SIGKILLed."""
    require_runtime()
    tmp = private_tmp()
    try:
        env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
        out = tmp_path / "out.txt"
        with open(out, "wb") as fh:
            # the work folder inside the private TMPDIR: LocalDynamo gives its processes a
            # temp folder of their own in it (work/dynamo/tmp), found there by processes_of
            proc = subprocess.Popen([sys.executable, "-c", HELPERS, str(tmp / "work")],
                                    env=env, stdout=fh, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        try:
            wait_for("the helpers serving", lambda: proc.poll() is None
                     and "serving" in out.read_text() or proc.poll() is not None, 300)
            assert proc.poll() is None, out.read_text()
            commands = " ".join(processes_of(tmp).values())
            for part in ("dynamo.frontend", "dynamo.mocker", "haproxy", "prometheus"):
                assert part in commands, (part, commands)
            proc.kill()
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        wait_for("every helper process gone", lambda: not processes_of(tmp), GONE_WITHIN)
    finally:
        kill_all(tmp)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def test_the_dynamo_processes_leave_nothing_in_the_temp_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Dynamo 1.6.1 frontend and worker writes a logging configuration (tmpXXXXXXXX.json) to
    its temp folder and never removes it; LocalDynamo gives them a temp folder of its own, removed
    with them. (The suite left about 400 such files in /tmp a run before.)"""
    require_runtime()
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    work = tmp_path / "work"
    with LocalDynamo(work) as rt:
        fe = rt.frontend("inference-tmp")
        w = rt.mocker("inference-tmp", ["--model-path", str(make_model_dir(work / "model")),
                                        "--model-name", "tiny"])
        rt.wait_frontend_up(fe)
        rt.wait_worker_ready(w)
        written = sorted(p.name for p in rt.tmp.iterdir())
        # what the processes wrote is in LocalDynamo's own temp folder, not the caller's
        assert any(n.startswith("tmp") and n.endswith(".json") for n in written), written
    assert list(tmp.iterdir()) == []
    assert not rt.tmp.exists()
