"""The rehearsal's pod server (dgdgen.runtime.podserver): a process started as a fork of it is
what `python -m MODULE` started with `subprocess.Popen(start_new_session=True)` is — its own
session and process group, exactly its environment, its working folder and temp folder, its
command line, only its log open, the entry module imported afresh, its exit code or the signal
that ended it — and the real Dynamo frontend and mocker serve as forks of it."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest
from rehearse_support import require_runtime, short_workdir
from test_forkserver import DISPOSITION, in_a_fork, start_as

from dgdgen.runtime.podserver import PodProcess, PodServer

PROBE = """
import json, os, signal, sys, tempfile, time
import dgdgen_pod_lib
# module-level code of the entry module: it runs in every fork, never in the server
dgdgen_pod_lib.imports += 1
""" + DISPOSITION + """

if __name__ == "__main__":
    import atexit
    atexit.register(lambda: open(os.environ["PROBE_OUT"] + ".atexit", "w").close())
    with open(os.environ["PROBE_OUT"], "w") as fh:
        json.dump({
            "pid": os.getpid(), "sid": os.getsid(0), "pgid": os.getpgid(0), "cwd": os.getcwd(),
            "env": dict(os.environ), "argv": sys.argv, "tmp": tempfile.gettempdir(),
            "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
            "cmdline": open("/proc/self/cmdline", "rb").read().decode().replace("\\0", " ").strip(),
            "imports": dgdgen_pod_lib.imports, "lib_loaded_in": dgdgen_pod_lib.loaded_in,
            "sigint": disposition(signal.SIGINT), "sigterm": disposition(signal.SIGTERM),
            "sighup": disposition(signal.SIGHUP),
            "mask": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
            "stdin": sys.stdin.read(),
            "caller_only": "dgdgen_caller_only" in sys.modules,
            "proc_environ": sorted(k.split(b"=")[0].decode() for k in
                                   open("/proc/self/environ", "rb").read().split(b"\\0") if k),
            "rss_kb": int(next(l for l in open("/proc/self/status")
                               if l.startswith("VmRSS:")).split()[1]),
        }, fh)
    print("to stdout", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    if os.environ.get("PROBE_SLEEP"):
        time.sleep(float(os.environ["PROBE_SLEEP"]))
    sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""
LIB = "import os\nimports = 0\nloaded_in = os.getpid()\n"


def _lib(tmp: Path) -> Path:
    pkg = tmp / "lib"
    pkg.mkdir()
    (pkg / "dgdgen_pod_probe.py").write_text(PROBE)
    (pkg / "dgdgen_pod_lib.py").write_text(LIB)
    return pkg


def _start(server: PodServer | None, pkg: Path, work: Path, name: str, argv: tuple[str, ...] = (
        "a", "b c"), **env: str) -> tuple[Any, Path, Path]:
    out, log = work / f"{name}.json", work / f"{name}.log"
    # LC_ALL: a fresh interpreter in the C locale would add LC_CTYPE to its environment (PEP 538);
    # the rehearsal's processes inherit the caller's locale variables either way
    full = {"PATH": os.environ["PATH"], "PYTHONPATH": str(pkg), "TMPDIR": str(work),
            "LC_ALL": "C.UTF-8", "PROBE_OUT": str(out), **env}
    with open(log, "wb") as fh:
        if server is None:
            proc: Any = subprocess.Popen(
                [sys.executable, "-m", "dgdgen_pod_probe", *argv], env=full, cwd=work,
                stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                start_new_session=True)
        else:
            proc = server.spawn("dgdgen_pod_probe", list(argv), cwd=work, env=full,
                                log=fh.fileno())
    return proc, out, log


def _wait_for_probe(out: Path) -> None:
    """Until the probe has written ``out`` (it then sleeps), at most 30 s: its log says why not."""
    deadline = time.monotonic() + 30
    while not out.exists():
        log = out.with_suffix(".log")
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.02)


def _run_all(pkg: Path, work: Path, via_server: bool, ignore: bool) -> dict[str, Any]:
    """In a single-threaded fork: the probe run to its end, with an exit code, and stopped by
    SIGTERM and by SIGKILL; what each saw and how it ended. ``ignore``: started as `nohup` or a
    script's background job starts a command, SIGINT and SIGHUP ignored; else both default."""
    start_as(ignore)
    sys.path.insert(0, str(pkg))
    # what the caller holds (a module, 64 MB written to): a fork of the server holds none of it
    sys.modules["dgdgen_caller_only"] = types.ModuleType("dgdgen_caller_only")
    ballast = bytearray(b"\x01") * (64 << 20)
    # an exit hook of the process the server forks from: no fork may run it
    atexit.register(lambda: (work / "inherited-hook-ran").touch())
    server = PodServer({"PATH": os.environ["PATH"], "SERVER_ONLY": "1"},
                       preload=("dgdgen_pod_lib", "dgdgen_pod_probe", "setproctitle"),
                       entries=("dgdgen_pod_probe",)) if via_server else None
    try:
        if server is not None:
            assert server.pid, "the server did not start"
        seen: dict[str, Any] = {}
        for name, env in (("plain", {}), ("exit3", {"PROBE_EXIT": "3"})):
            proc, out, log = _start(server, pkg, work / "a" if name == "plain" else work / "b",
                                    name, **env)
            code = proc.wait(60)
            seen[name] = {"code": code, "poll": proc.poll(), "seen": json.loads(out.read_text()),
                          "log": log.read_text(), "type": type(proc).__name__,
                          "own_hook_ran": Path(f"{out}.atexit").exists()}
        for name, sig in (("term", signal.SIGTERM), ("kill", signal.SIGKILL)):
            proc, out, log = _start(server, pkg, work / "a", name, PROBE_SLEEP="60")
            deadline = time.monotonic() + 30
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            try:
                proc.wait(0.2)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
            running = proc.poll() is None
            os.killpg(proc.pid, sig)
            seen[name] = {"timed_out": timed_out, "running": running, "code": proc.wait(30)}
        # closing the server kills what still runs
        if server is not None:
            proc, out, _ = _start(server, pkg, work / "a", "left", PROBE_SLEEP="60")
            _wait_for_probe(out)
            left = proc.pid
            server.close()
            seen["left"] = {"code": proc.poll(), "gone": not Path(f"/proc/{left}").exists()}
        seen["inherited_hook_ran"] = (work / "inherited-hook-ran").exists()
        seen["ballast"] = len(ballast)
        return seen
    finally:
        if server is not None:
            server.close()


@pytest.mark.parametrize("ignore", [False, True], ids=["default-signals", "nohup"])
def test_a_pod_is_what_a_fresh_interpreter_is(tmp_path: Path, ignore: bool) -> None:
    """Whatever the signals its starter ignores: a suite started with SIGINT ignored (a
    script's background job) once saw the fork with Python's handler and the fresh one
    ignoring it."""
    pkg = _lib(tmp_path)
    results = {}
    for via in (False, True):
        work = tmp_path / ("server" if via else "fresh")
        (work / "a").mkdir(parents=True)
        (work / "b").mkdir()
        results[via] = in_a_fork(_run_all, pkg, work, via, ignore)
    fresh, forked = results[False], results[True]
    assert forked["plain"]["type"] == "PodProcess" and fresh["plain"]["type"] == "Popen"
    for name in ("plain", "exit3"):
        f, s = fresh[name], forked[name]
        assert (f["code"], f["poll"]) == (s["code"], s["poll"]) == ((0, 0) if name == "plain"
                                                                    else (3, 3))
        assert f["log"] == s["log"] == "to stdout\nto stderr\n"
        assert f["own_hook_ran"] and s["own_hook_ran"]  # the interpreter's exit, hooks and all
        # the two runs' folders differ by name only
        fs = json.loads(json.dumps(f["seen"]).replace("/fresh/", "/server/"))
        ss = s["seen"]
        for seen in (fs, ss):
            assert seen["sid"] == seen["pgid"] == seen["pid"]  # a session of its own
            assert seen["argv"][1:] == ["a", "b c"]
            # the standard streams, and nothing else but the probe's own file and listing
            assert seen["fds"] == [0, 1, 2, 3, 4]
            assert seen["stdin"] == ""
        # the same environment (nothing of the server's: SERVER_ONLY), folders, command line,
        # signal handling, and the entry module imported afresh in the fork
        for key in ("env", "tmp", "argv", "sigint", "sigterm", "sighup", "mask", "imports",
                    "caller_only"):
            assert fs[key] == ss[key], key
        # /proc/PID/environ: a fresh one's reads as its own environment, a fork's as the one the
        # server started in (its command line is written where the server's was, never there)
        assert "PROBE_OUT" in fs["proc_environ"]
        assert ss["proc_environ"] == ["PATH", "SERVER_ONLY"]
        # nothing of the caller's memory: the server is a fresh interpreter, not a fork of it
        assert not ss["caller_only"]
        assert ss["rss_kb"] < fs["rss_kb"] + forked["ballast"] // 2048, (ss["rss_kb"],
                                                                        fs["rss_kb"])
        assert (ss["sigint"], ss["sighup"]) == (
            ("ignored", "ignored") if ignore
            else ("<built-in function default_int_handler>", "default"))
        assert "SERVER_ONLY" not in ss["env"] and ss["imports"] == 1
        assert fs["cwd"] == ss["cwd"]
        assert fs["cmdline"].endswith("-m dgdgen_pod_probe a b c")
        assert ss["cmdline"] == f"{sys.executable} -m dgdgen_pod_probe a b c"
        # the library was imported by the server, not by the fork
        assert ss["lib_loaded_in"] != ss["pid"] and fs["lib_loaded_in"] == fs["pid"]
    for name, sig in (("term", signal.SIGTERM), ("kill", signal.SIGKILL)):
        assert fresh[name] == forked[name] == {"timed_out": True, "running": True,
                                               "code": -sig}, name
    assert forked["left"] == {"code": -signal.SIGKILL, "gone": True}
    assert not forked["inherited_hook_ran"] and not fresh["inherited_hook_ran"]


def _server_killed(pkg: Path, work: Path) -> dict[str, Any]:
    sys.path.insert(0, str(pkg))
    with PodServer({"PATH": os.environ["PATH"]}, preload=("dgdgen_pod_lib", "setproctitle"),
                   entries=("dgdgen_pod_probe",)) as server:
        proc, out, _ = _start(server, pkg, work, "orphan", PROBE_SLEEP="60")
        _wait_for_probe(out)
        os.kill(server.pid, signal.SIGKILL)
        code = proc.wait(30)  # the server's end is reported as the fork's
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        gone = not Path(f"/proc/{proc.pid}").exists()
        try:
            _start(server, pkg, work, "after")
            error = ""
        except RuntimeError as exc:
            error = str(exc)
    return {"code": code, "gone": gone, "error": error}


def test_a_killed_server_takes_its_forks_with_it(tmp_path: Path) -> None:
    """A fork must not outlive the server it was forked from (leave nothing behind): killed by
    SIGKILL, the server can run no clean-up, and the kernel ends its forks (PR_SET_PDEATHSIG);
    a start after it is a clear error, not a wait."""
    pkg = _lib(tmp_path)
    seen = in_a_fork(_server_killed, pkg, tmp_path)
    assert seen["code"] == -signal.SIGKILL and seen["gone"], seen
    assert seen["error"].startswith("the pod server ended before starting dgdgen_pod_probe"), seen


def _long_command_line(pkg: Path, work: Path) -> dict[str, Any]:
    sys.path.insert(0, str(pkg))
    with PodServer({"PATH": os.environ["PATH"]}, preload=("dgdgen_pod_lib", "setproctitle"),
                   entries=("dgdgen_pod_probe",)) as server:
        proc, out, _ = _start(server, pkg, work, "long", ("x" * 3000, "y"))
        code = proc.wait(60)
    return {"code": code, **json.loads(out.read_text())}


def test_a_long_command_line_reads_whole(tmp_path: Path) -> None:
    """A rehearsal's mocker command lines run to hundreds of characters (a model folder, flags):
    a fork's title is written into the server's command line, which leaves room for 4,096."""
    pkg = _lib(tmp_path)
    seen = in_a_fork(_long_command_line, pkg, tmp_path)
    assert seen["code"] == 0, seen
    assert seen["cmdline"] == f"{sys.executable} -m dgdgen_pod_probe {'x' * 3000} y"
    assert seen["proc_environ"] == ["PATH"]


# a library that writes to the temp folder as it is imported, as Dynamo's logging set-up does
TMPLIB = ("import os, tempfile\n"
          "fd, path = tempfile.mkstemp(suffix='.json')\n"
          "os.close(fd)\n"
          "open(os.environ['TMPLIB_OUT'], 'w').write(path)\n")


def _import_writes(pkg: Path, work: Path) -> dict[str, Any]:
    sys.path.insert(0, str(pkg))
    caller, forks, out = work / "caller", work / "forks", work / "written"
    caller.mkdir()
    forks.mkdir()
    tempfile.tempdir = str(caller)  # a temp folder this process read before: not the forks'
    with PodServer({"PATH": os.environ["PATH"], "TMPDIR": str(forks), "TMPLIB_OUT": str(out)},
                   preload=("dgdgen_pod_tmplib", "dgdgen_pod_lib", "setproctitle"),
                   entries=("dgdgen_pod_probe",)) as server:
        proc, _, _ = _start(server, pkg, work, "p")  # the server has imported by then
        code = proc.wait(60)
    return {"code": code, "written": out.read_text(), "caller": sorted(os.listdir(caller)),
            "forks": sorted(os.listdir(forks))}


def test_what_the_imports_write_to_the_temp_folder_goes_with_the_server(tmp_path: Path) -> None:
    """The server imports in a folder of its own inside the forks' TMPDIR (a rehearsal's private
    one: it goes with it even after a SIGKILL), never the caller's, and removes it once imported."""
    pkg = _lib(tmp_path)
    (pkg / "dgdgen_pod_tmplib.py").write_text(TMPLIB)
    seen = in_a_fork(_import_writes, pkg, tmp_path)
    assert seen["code"] == 0, seen
    written = Path(seen["written"])
    assert written.parent.parent == tmp_path / "forks", seen
    assert written.parent.name.startswith("dgdgen-pod-server-"), seen
    assert seen["caller"] == [] and seen["forks"] == [], seen


def _threaded(pkg: Path, work: Path) -> tuple[int, str]:
    sys.path.insert(0, str(pkg))
    sys.path.insert(0, pkg.parent)  # type: ignore[arg-type] # a caller may put a Path there
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        with PodServer({}, preload=("dgdgen_pod_lib",), entries=("dgdgen_pod_probe",)) as server:
            proc, _, log = _start(server, pkg, work, "t")
            return server.pid, f"{type(proc).__name__} {proc.wait(60)} {log.read_text()}"
    finally:
        stop.set()
        t.join()


def _missing(pkg: Path, work: Path) -> tuple[int, str]:
    with PodServer({}, preload=("dgdgen_no_such_module",),
                   entries=("dgdgen_pod_probe",)) as server:
        proc, _, log = _start(server, pkg, work, "m")
        return server.pid, f"{type(proc).__name__} {proc.wait(60)} {log.read_text()}"


def test_a_caller_with_threads_is_served_and_a_server_without_its_imports_is_not(
        tmp_path: Path) -> None:
    """The server is a fresh interpreter, so a caller that runs threads (whose fork could copy a
    lock another thread holds) is served too; a server whose imports fail serves nothing: then
    every process starts as `python -m`, with the same result."""
    pkg = _lib(tmp_path)
    pid, seen = in_a_fork(_threaded, pkg, tmp_path)
    assert pid and seen == "PodProcess 0 to stdout\nto stderr\n"
    assert in_a_fork(_missing, pkg, tmp_path) == (0, "Popen 0 to stdout\nto stderr\n")


def _dynamo_pods() -> dict[str, Any]:
    from dgdgen.runtime.procs import inherited_env

    with short_workdir("dgdgen-pods-") as work:
        # this process (an isolated fork of the test's) and the server share a temp folder
        server_tmp = work / "server-tmp"
        server_tmp.mkdir()
        os.environ["TMPDIR"] = str(server_tmp)
        tempfile.tempdir = None
        seen = _serve_dynamo(work, inherited_env())
        # what Dynamo's imports wrote to the temp folder (its logging set-up's JSON file) went
        # with the server
        seen["left_in_server_tmp"] = sorted(p.name for p in server_tmp.iterdir())
        return seen


def _serve_dynamo(work: Path, env: dict[str, str]) -> dict[str, Any]:
    from dgdgen.runtime.client import request
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo, proc_pids

    with PodServer(env) as pods:
        assert pods.pid
        model_dir = make_model_dir(work / "model")
        with LocalDynamo(work / "rt", pods=pods) as rt:
            fe = rt.frontend("ns")
            w = rt.mocker("ns", ["--model-path", str(model_dir), "--model-name", "m"], name="w")
            rt.wait_frontend_up(fe)
            rt.wait_worker_ready(w)
            rt.wait_model_ready(fe, "m", workers=1)
            outcome = request(fe.port, "m", stream=True, max_tokens=8)
            host = proc_pids([fe.popen.pid, w.popen.pid])  # the PIDs under the host's /proc
            cmd = {p.name: Path(f"/proc/{host[p.popen.pid]}/cmdline").read_bytes().decode()
                   for p in (fe, w)}
            kinds = {type(p.popen).__name__ for p in (fe, w)}
            rt.stop(w)
            code = w.popen.returncode
        return {"ok": outcome.ok, "tokens": outcome.tokens, "cmd": cmd, "kinds": kinds,
                "code": code}


@pytest.mark.runtime
def test_the_dynamo_frontend_and_mocker_serve_as_forks() -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    seen = run_isolated(_dynamo_pods, timeout=120)
    assert seen["kinds"] == {PodProcess.__name__}
    assert seen["ok"] and seen["tokens"] == 8, seen
    assert seen["code"] == 0  # SIGTERM: it stops cleanly, as a fresh one does
    assert any(" -m dynamo.frontend " in c for c in seen["cmd"].values()), seen["cmd"]
    assert any(" -m dynamo.mocker --model-path " in c for c in seen["cmd"].values()), seen["cmd"]
    assert seen["left_in_server_tmp"] == []
