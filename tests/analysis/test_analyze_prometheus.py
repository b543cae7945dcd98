"""`dgdgen analyze` against a real Prometheus server on loopback, over TSDB blocks made with
`promtool tsdb create-blocks-from openmetrics` from synthetic Dynamo metrics."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from analysis_support import EXAMPLE
from analysis.synth import MINUTES, scenario
from gen_support import run_cli

PROMETHEUS, PROMTOOL = shutil.which("prometheus"), shutil.which("promtool")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None, reason="Debian prometheus package missing")

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z; fixed so the blocks are the same on every run
# One scenario per rollout name, so the three share one server.
CASES = {"healthy": ("Successful", 0), "ttft-50pct-worse": ("Failed", 1),
         "no-traffic": ("Inconclusive", 3)}


def _openmetrics(prepared) -> str:  # type: ignore[no-untyped-def]
    st = prepared.plan.state(2)
    lines = []
    for case in CASES:
        series = scenario(case, prepared.loaded.spec.metadata.namespace, f"r-{case}",
                          st.stable.revision, st.candidate.revision)
        for key, values in sorted(series.items()):
            for minute, v in enumerate(values):
                lines.append(f"{key} {v} {T0 + 60 * minute}")
    return "\n".join(lines) + "\n# EOF\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def prometheus(prepared, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("prom")
    (tmp / "data.om").write_text(_openmetrics(prepared))
    data = tmp / "tsdb"
    subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(tmp / "data.om"),
                    str(data)], check=True, capture_output=True, timeout=60)
    (tmp / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
        stdout=subprocess.DEVNULL, stderr=(tmp / "prometheus.log").open("w"),
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("prometheus did not become ready:\n"
                            + (tmp / "prometheus.log").read_text()[-2000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _spec_for(case: str, tmp: Path) -> Path:
    """The example spec under another rollout name (the series of one scenario)."""
    text = EXAMPLE.read_text().replace("name: qwen-vllm", f"name: r-{case}", 1)
    shutil.copy(EXAMPLE.parent / "dgd.yaml", tmp / "dgd.yaml")  # dgd: stays inside the folder
    path = tmp / f"{case}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_analyze_verdict_and_exit_code(prometheus: str, tmp_path: Path, case: str) -> None:
    verdict, code = CASES[case]
    at = str(T0 + 60 * MINUTES)
    r = run_cli("analyze", str(_spec_for(case, tmp_path)), "--step", "2", "--prometheus",
                prometheus, "--time", at, "--format", "json")
    assert r.returncode == code, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["phase"] == verdict
    phases = {m["metric"]: m["phase"] for m in out["metrics"]}
    if case == "ttft-50pct-worse":
        assert phases["ttft-p95-vs-stable"] == "Failed"
    if case == "no-traffic":
        assert phases["requests"] == "Inconclusive"
    table = run_cli("analyze", str(_spec_for(case, tmp_path)), "--step", "2", "--prometheus",
                    prometheus, "--time", at)
    assert table.returncode == code
    assert f"verdict: {verdict}" in table.stdout
    # a gate that did not pass names, on its verdict line, each metric that did not, with its
    # figure and threshold (the JSON's metrics, formatted by dgdgen/analysis/gateline.py)
    last = table.stdout.rstrip().splitlines()[-1]
    bad = [m for m in out["metrics"] if m["phase"] not in ("Successful", "Skipped")]
    if verdict == "Successful":
        assert last == "verdict: Successful" and not bad
    else:
        assert bad and last.startswith(f"verdict: {verdict} — ")
        for m in bad:
            assert f"{m['metric']} {m['phase']}: " in last, last
    if case == "ttft-50pct-worse":
        [row] = [m for m in bad if m["metric"] == "ttft-p95-vs-stable"]
        shown = "[" + ", ".join(f"{float(v):.6g}" for v in row["value"]) + "]"
        assert f"ttft-p95-vs-stable Failed: {shown} (pass if " in last, last
    if case == "no-traffic":
        assert "requests Inconclusive: " in last, last


def test_unreachable_prometheus_is_exit_2(tmp_path: Path) -> None:
    r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus",
                f"http://127.0.0.1:{_free_port()}")
    assert r.returncode == 2
    assert "cannot query" in r.stderr and "Traceback" not in r.stderr


def test_prometheus_address_must_be_an_http_url() -> None:
    r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", "prometheus:9090")
    assert r.returncode == 2
    assert "http:// or https:// URL" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("case", ["healthy", "ttft-50pct-worse"])
def test_analyze_records_the_gate_in_git(prometheus: str, tmp_path: Path, case: str) -> None:
    """`analyze --record` commits the verdict as the step's gate result; a failed gate stops
    `promote` (real git, real Prometheus)."""
    spec = str(_spec_for(case, tmp_path))
    into = str(tmp_path / "repo" / "deploy")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    for argv in (["render", spec, "--into", into, "--init"], ["promote", spec, "--into", into],
                 ["gate", spec, "--into", into, "--result", "passed"],
                 ["promote", spec, "--into", into]):
        r = run_cli(*argv, env=env)
        assert r.returncode == 0, (argv, r.stderr)
    r = run_cli("analyze", spec, "--step", "2", "--prometheus", prometheus,
                "--time", str(T0 + 60 * MINUTES), "--record", into, env=env)
    verdict, code = CASES[case]
    assert r.returncode == code, r.stderr
    log = subprocess.run(["git", "-C", into, "log", "-1", "--format=%B"], capture_output=True,
                         text=True, check=True).stdout
    expected = "passed" if case == "healthy" else "failed"
    assert expected in log and f"dgdgen analyze: {verdict}" in log
    subject = log.splitlines()[0]
    if case != "healthy":  # the commit (and the console) say what failed on the line itself
        assert ": failed (dgdgen analyze: Failed — " in subject, subject
        assert "ttft-p95-vs-stable Failed: " in subject and "pass if" in subject, subject
        assert "ttft-p95-vs-stable Failed: " in r.stderr
    status = json.loads(run_cli("status", spec, "--into", into, "--format", "json").stdout)
    assert expected in json.dumps(status)
    promote = run_cli("promote", spec, "--into", into, env=env)
    assert promote.returncode == (0 if case == "healthy" else 1), promote.stderr


def test_record_is_refused_before_prometheus_is_asked(tmp_path: Path) -> None:
    # no Prometheus listens on this port: the refusal must come from the --record target first
    url = f"http://127.0.0.1:{_free_port()}"
    r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", url,
                "--record", str(tmp_path / "not-a-repo"))
    assert r.returncode == 2 and "not inside a Git work tree" in r.stderr
