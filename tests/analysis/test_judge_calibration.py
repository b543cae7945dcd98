"""The calibrated judge, against the STAND-IN judge over HTTP on loopback.

No LLM runs here: the judge is ``dgdgen.rehearse.judge`` (a real HTTP server whose verdict is
"the answer that contains the prompt's reference wins", wrong on a seeded share of requests
below ``--accuracy 1``), and the two generations are small loopback servers that answer each
prompt with a fixed text. The prompts and the labelled pairs are the bundled example of
docs/analysis.md (docs/examples/judge/), so the documented files are the ones proven.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest
from gen_support import REPO, run_cli
from http_support import Handler

from dgdgen.analysis import quality_gate
from dgdgen.analysis.quality import judge_messages
from dgdgen.rehearse.judge import FINGERPRINT, MODEL, StandInJudgeServer, load_references, verdict

EXAMPLE = REPO / "docs" / "examples" / "judge"
PROMPTS = EXAMPLE / "prompts.jsonl"
CALIBRATION = EXAMPLE / "calibration.jsonl"
REFERENCES = load_references(PROMPTS)
ORDER = list(REFERENCES)  # the prompt set's order
LABELLED = 20  # pairs in the calibration set: 40 judge calls
S = TypeVar("S", bound=ThreadingHTTPServer)


@contextmanager
def stand_in(accuracy: float = 1.0, seed: int = 0) -> Iterator[StandInJudgeServer]:
    """The stand-in judge on a free loopback port, served from a thread of this process."""
    with running(StandInJudgeServer(("127.0.0.1", 0), REFERENCES, accuracy=accuracy,
                                    seed=seed)) as server:
        yield server


@contextmanager
def running(server: S) -> Iterator[S]:
    """``server`` served from a thread for the block (polling for shutdown every 20 ms, not
    the default 500: three servers a test)."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def right(prompt: str) -> str:
    return f"The answer is {REFERENCES[prompt]}."


def wrong(prompt: str) -> str:
    return "I am not sure."


@contextmanager
def generation(answer: Callable[[str], str]) -> Iterator[type[Handler]]:
    """A frontend that answers each prompt with ``answer(prompt)``; counts its requests."""

    class Frontend(Handler):
        asked: ClassVar[list[str]] = []
        url: ClassVar[str] = ""

        def do_POST(self) -> None:
            prompt = self.read_json()["messages"][0]["content"]
            type(self).asked.append(prompt)
            self.reply_json({"choices": [{"message": {"role": "assistant",
                                                      "content": answer(prompt)},
                                          "finish_reason": "stop"}],
                             "usage": {"completion_tokens": 5}})

    with running(ThreadingHTTPServer(("127.0.0.1", 0), Frontend)) as server:
        Frontend.url = f"http://127.0.0.1:{server.server_address[1]}"
        yield Frontend


RUBRIC = "Prefer the answer that is correct."  # the example's, so the stand-in's draws match


def gate(tmp: Path, judge: StandInJudgeServer, stable: Any, candidate: Any, *extra: str,
         calibration: Path | None = CALIBRATION) -> tuple[int, str]:
    """``python -m dgdgen.analysis.quality_gate --scorer judge``, in this process."""
    rubric = tmp / "rubric.txt"
    rubric.write_text(RUBRIC)
    argv = ["--prompts", str(PROMPTS), "--stable", stable.url, "--candidate", candidate.url,
            "--model", "m", "--scorer", "judge", "--judge-url", judge.url,
            "--judge-model", "judge-model", "--rubric-file", str(rubric),
            "--effect", "0.25", "--timeout", "5", *extra]
    if calibration is not None:
        argv += ["--calibration", str(calibration)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = quality_gate.main(argv)
    return code, out.getvalue()


def worse_mostly(prompt: str) -> str:
    # right on one prompt of six (a tie with the stable), wrong on the others (a loss)
    return right(prompt) if ORDER.index(prompt) % 6 == 5 else wrong(prompt)


# -- the gate -------------------------------------------------------------------------------

def test_an_accurate_judge_passes_calibration_and_fails_a_worse_candidate_early(
        tmp_path: Path) -> None:
    with stand_in() as judge, generation(right) as s, generation(worse_mostly) as c:
        code, out = gate(tmp_path, judge, s, c)
    assert code == 1, out
    first, last = out.splitlines()[0], out.splitlines()[-1]
    assert first.startswith("calibration: judge agreement 1.00 (20 of 20 labelled pairs), 95% "
                            "interval [0.84, 1.00], lower bound >= minAgreement 0.8")
    assert "precision 1.00 (8 of 8 called), recall 1.00 (8 of 8 labelled)" in first
    assert "position consistency 1.00 (20 of 20)" in first
    # 10 losses and the tie at prompt 6: the loss share's interval clears 0.5 after 11 prompts
    assert last.startswith("Failed: 0 wins, 10 losses, 1 ties; loss share 10/10 decided"), last
    assert "> maxLossShare 0.5, stopped after 11 of 30 prompts" in last
    assert last.endswith("62 judge calls, no budget")
    assert judge.answered == 2 * LABELLED + 2 * 11 < 2 * LABELLED + 2 * len(ORDER)
    assert len(s.asked) == len(c.asked) == 11  # the generations were not asked further either


def test_an_accurate_judge_passes_an_equal_candidate(tmp_path: Path) -> None:
    """Every pair a tie: nothing settles the loss share, the sign test passes all 30."""
    with stand_in() as judge, generation(right) as s, generation(right) as c:
        code, out = gate(tmp_path, judge, s, c)
    assert code == 0, out
    last = out.splitlines()[-1]
    assert last.startswith("Successful: 0 wins, 0 losses, 30 ties; sign test p=1")
    assert "loss share 0/0 decided" in last and "100 judge calls, no budget" in last


def test_a_better_candidate_passes_early(tmp_path: Path) -> None:
    with stand_in() as judge, generation(wrong) as s, generation(right) as c:
        code, out = gate(tmp_path, judge, s, c, "--min-pairs", "10")
    assert code == 0, out
    last = out.splitlines()[-1]
    assert "< maxLossShare 0.5, stopped after 10 of 30 prompts" in last, last
    assert judge.answered == 2 * LABELLED + 20


def test_a_coin_flip_judge_makes_the_gate_inconclusive_with_its_agreement(tmp_path: Path) -> None:
    """The judge agrees with 9 of 20 labels: it may not gate, whatever the candidate; the
    generations are never asked."""
    for candidate in (right, worse_mostly):
        with stand_in(accuracy=0.5) as judge, generation(right) as s, \
                generation(candidate) as c:
            code, out = gate(tmp_path, judge, s, c)
        assert code == 3, out
        last = out.splitlines()[-1]
        assert last == ("Inconclusive: judge agreement 0.45 (9 of 20 labelled pairs), 95% "
                        "interval [0.26, 0.66], lower bound 0.26 < minAgreement 0.8: the judge "
                        "may not gate; 40 judge calls, no budget")
        assert "position consistency 0.40 (8 of 20)" in out
        assert s.asked == c.asked == []


def test_min_agreement_is_the_threshold(tmp_path: Path) -> None:
    with stand_in(accuracy=0.5) as judge, generation(right) as s, generation(right) as c:
        code, out = gate(tmp_path, judge, s, c, "--min-agreement", "0.25")
    assert code == 0, out
    assert "lower bound >= minAgreement 0.25" in out


def test_the_budget_stops_the_run_and_says_so(tmp_path: Path) -> None:
    # calibration 40 calls, then 5 pairs: an equal candidate never settles early
    with stand_in() as judge, generation(right) as s, generation(right) as c:
        code, out = gate(tmp_path, judge, s, c, "--max-calls", "51")
    assert code == 3, out
    last = out.splitlines()[-1]
    assert last.startswith("Inconclusive: judge-call budget spent (50 judge calls of 51) after "
                           "5 of 30 prompts, no decision: loss share 0/0 decided"), last
    assert judge.answered == 50 and len(s.asked) == 5
    # spent inside the calibration: it stops there and the judge may not gate
    with stand_in() as judge, generation(right) as s, generation(right) as c:
        code, out = gate(tmp_path, judge, s, c, "--max-calls", "20")
    assert code == 3, out
    assert out.splitlines()[-1].startswith(
        "Inconclusive: judge calibration stopped by the judge-call budget after 10 of 20 "
        "labelled pairs (20 calls)")
    assert judge.answered == 20 and s.asked == []


def test_judge_errors_in_calibration_are_disagreements(tmp_path: Path) -> None:
    """A stand-in that knows none of the prompts refuses every request (HTTP 422)."""
    with running(StandInJudgeServer(("127.0.0.1", 0), {"another prompt": "x"})) as server, \
            generation(right) as s, generation(right) as c:
        code, out = gate(tmp_path, server, s, c)
    assert code == 3 and "judge agreement 0.00 (0 of 20 labelled pairs)" in out
    assert "20 errors; 20 judge calls" in out  # one call per pair: it stops at the failure


# -- the stand-in judge ---------------------------------------------------------------------

def _body(prompt: str, first: str, second: str) -> dict[str, Any]:
    return {"model": "judge", "messages": judge_messages("r", prompt, first, second)}


def test_stand_in_verdicts_and_determinism() -> None:
    p = ORDER[0]  # Paris
    assert verdict(_body(p, right(p), wrong(p)), REFERENCES, accuracy=1, seed=0) == "A"
    assert verdict(_body(p, wrong(p), right(p)), REFERENCES, accuracy=1, seed=0) == "B"
    assert verdict(_body(p, right(p), right(p)), REFERENCES, accuracy=1, seed=0) == "TIE"
    assert verdict(_body(p, "no", "nope"), REFERENCES, accuracy=1, seed=0) == "TIE"
    assert verdict(_body("unknown prompt", "a", "b"), REFERENCES, accuracy=1, seed=0) is None
    assert verdict({"messages": [{"role": "user", "content": "hi"}]}, REFERENCES, accuracy=1,
                   seed=0) is None
    bodies = [_body(p, right(p), f"wrong {i}") for i in range(2000)]
    said = [verdict(b, REFERENCES, accuracy=0.6, seed=3) for b in bodies]
    assert said == [verdict(b, REFERENCES, accuracy=0.6, seed=3) for b in bodies]
    assert 0.56 < said.count("A") / len(said) < 0.64  # wrong on about 40 %
    assert set(said) == {"A", "B", "TIE"}
    assert said != [verdict(b, REFERENCES, accuracy=0.6, seed=4) for b in bodies]
    assert all(verdict(b, REFERENCES, accuracy=0, seed=3) != "A" for b in bodies[:200])


def _request(url: str, data: bytes | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_stand_in_server_says_what_it_is_bounds_requests_and_stops_cleanly() -> None:
    """``python -m dgdgen.rehearse.judge`` as a process: it names itself a stand-in in every
    response, refuses what is not a judge request and a body over 1 MiB, stops on SIGTERM."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dgdgen.rehearse.judge", "--port", "0", "--references",
         str(PROMPTS), "--accuracy", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("stand-in judge (not a model) on http://127.0.0.1:"), line
        url = line.split(" on ", 1)[1].split(":", 2)
        base = ":".join(url[:2]) + ":" + url[2].split(":")[0]
        code, models = _request(base + "/v1/models")
        assert code == 200 and models["data"][0]["id"] == MODEL
        p = ORDER[1]
        code, reply = _request(base + "/v1/chat/completions",
                               json.dumps(_body(p, wrong(p), right(p))).encode())
        assert code == 200 and reply["choices"][0]["message"]["content"] == "B"
        assert reply["model"] == MODEL and reply["system_fingerprint"] == FINGERPRINT
        assert "not a model" in FINGERPRINT
        code, err = _request(base + "/v1/chat/completions",
                             json.dumps(_body("unknown", "a", "b")).encode())
        assert code == 422 and "stand-in" in err["error"]["message"]
        # a body announced over 1 MiB is refused before it is read
        host, port = base.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("Content-Length", str((1 << 20) + 1))
        conn.endheaders()
        assert conn.getresponse().status == 413
        conn.close()
        code, _ = _request(base + "/v1/chat/completions", b"not json")
        assert code == 400
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_stand_in_refuses_a_bad_references_file(tmp_path: Path) -> None:
    bad = tmp_path / "refs.jsonl"
    bad.write_text('{"prompt": "a", "reference": "x"}\n{"prompt": 1}\n')
    r = subprocess.run([sys.executable, "-m", "dgdgen.rehearse.judge", "--port", "0",
                        "--references", str(bad)], capture_output=True, text=True, timeout=30,
                       check=False)
    assert r.returncode == 2 and f"{bad}:2" in r.stderr and "Traceback" not in r.stderr


# -- the spec, validate and analyze --calibrate -----------------------------------------------

def _copy_example(tmp: Path, calibration: str | None = None) -> Path:
    (tmp / ".git").mkdir()  # the repository the files must stay inside
    for name in ("prompts.jsonl", "calibration.jsonl"):
        shutil.copy(EXAMPLE / name, tmp / name)
    shutil.copy(REPO / "examples" / "vllm-agg-blue-green" / "dgd.yaml", tmp / "dgd.yaml")
    text = (EXAMPLE / "rollout.yaml").read_text()
    text = text.replace("../../../examples/vllm-agg-blue-green/dgd.yaml", "dgd.yaml")
    (tmp / "rollout.yaml").write_text(text)
    if calibration is not None:
        (tmp / "calibration.jsonl").write_text(calibration)
    return tmp / "rollout.yaml"


GOOD = '{"prompt": "p", "stable": "a", "candidate": "b", "label": "tie"}\n'


def dgdgen(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command line in this process (the subprocess round trip costs a second a run)."""
    from dgdgen.cli import main

    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("line", "says"), [
    ('{"prompt": "p", "stable": "a", "candidate": "b", "label": "better"}', "label: expected one"),
    ('{"prompt": "p", "stable": "a", "candidate": "b"}', "label: missing"),
    ('{"prompt": "p", "stable": "a", "candidate": 3, "label": "tie"}', ("candidate: expected a "
     "string")),
    ('{"prompt": "p", "stable": "a", "candidate": "b", "label": "tie", "why": "x"}',
     "why: unknown key"),
    ('{"prompt": "", "stable": "a", "candidate": "b", "label": "tie"}', ("prompt: expected a "
     "non-empty")),
    ('{"prompt": "p", ', "not JSON"),
    ('["p"]', "expected a JSON object"),
])
def test_a_bad_calibration_line_is_reported_at_its_file_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, says: str) -> None:
    """At the boundary, in the command that reads it: the gate exits 2 at file:line, before
    anything is asked (nothing listens on port 9)."""
    f = tmp_path / "calibration.jsonl"
    f.write_text(GOOD + "\n" + line + "\n")
    code = quality_gate.main([
        "--prompts", str(PROMPTS), "--stable", "http://127.0.0.1:9", "--candidate",
        "http://127.0.0.1:9", "--model", "m", "--scorer", "judge", "--calibration", str(f)])
    err = capsys.readouterr().err
    assert code == 2 and f"{f}:3" in err and says in err, err


def test_validate_reports_a_bad_calibration_line(tmp_path: Path) -> None:
    """``dgdgen validate`` (a real process) reads the calibration set like the prompt set."""
    spec = _copy_example(tmp_path, GOOD + '{"prompt": "p", "label": "tie"}\n')
    r = run_cli("validate", str(spec))
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{tmp_path / 'calibration.jsonl'}:2: stable: missing" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_missing_or_empty_calibration_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _copy_example(tmp_path, "\n")
    code, _, err = dgdgen(capsys, "validate", str(spec))
    assert code == 2 and "the calibration set has no labelled pairs" in err
    (tmp_path / "calibration.jsonl").unlink()
    code, _, err = dgdgen(capsys, "validate", str(spec))
    assert code == 2 and "cannot read the calibration set" in err
    assert "spec.analysis.quality.judge.calibration.pairs" in err
    line = next(i for i, t in enumerate(spec.read_text().splitlines(), 1) if "pairs:" in t)
    assert f"rollout.yaml:{line}" in err


def test_the_rendered_job_carries_the_calibration() -> None:
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.render.analysis import render

    p = prepare(str(EXAMPLE / "rollout.yaml"))
    objs = [m.obj for m in render(p, p.plan.state(1))]
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    assert cm["data"]["calibration.jsonl"] == CALIBRATION.read_text()
    run = next(o for o in objs if o["kind"] == "AnalysisRun")
    cmd = run["spec"]["metrics"][0]["provider"]["job"]["spec"]["template"]["spec"][
        "containers"][0]["command"]
    joined = " ".join(cmd)
    assert "--calibration /etc/dgdgen/quality/calibration.jsonl --min-agreement 0.8" in joined
    assert "--min-pairs 10 --max-calls 100" in joined


def test_analyze_calibrate_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(EXAMPLE / "rollout.yaml")
    with stand_in() as judge:
        r = run_cli("analyze", spec, "--calibrate", "--judge-url", judge.url)  # a real process
    assert r.returncode == 0, r.stdout + r.stderr
    assert "agreement                    1.00 (20 of 20)" in r.stdout
    assert "interval                     [0.84, 1.00] (95% Wilson)" in r.stdout
    assert "precision (candidate worse)  1.00 (8 of 8)" in r.stdout
    assert "recall (candidate worse)     1.00 (8 of 8)" in r.stdout
    assert "position consistency         1.00 (20 of 20)" in r.stdout
    assert "judge calls                  40 of maxCalls 100" in r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("would gate: judge agreement 1.00")
    with stand_in(accuracy=0.5) as judge:
        code, out, err = dgdgen(capsys, "analyze", spec, "--calibrate", "--judge-url",
                                judge.url, "-f", "json")
    assert code == 1, out + err
    got = json.loads(out)
    assert got["agreement"] == 0.45 and got["passed"] is False and got["calls"] == 40
    assert got["interval"] == pytest.approx([0.2582, 0.6579], abs=1e-4)
    assert got["positionConsistency"] == 0.4 and got["minAgreement"] == 0.8
    # no calibration set in the spec, --calibrate with --step, no --step: bad input
    code, _, err = dgdgen(capsys, "analyze", "examples/vllm-agg-blue-green/rollout.yaml",
                          "--calibrate")
    assert code == 2 and "no judge calibration set" in err
    code, _, err = dgdgen(capsys, "analyze", spec, "--calibrate", "--step", "1")
    assert code == 2 and "--calibrate runs the judge's calibration alone" in err
    code, _, err = dgdgen(capsys, "analyze", spec)
    assert code == 2 and "--step N is required" in err


def test_analyze_step_runs_the_rendered_gate_with_the_calibration(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The Done-when of the calibrated judge, through the rendered command: a judge that
    disagrees with its calibration set makes the step's gate Inconclusive with the agreement;
    an accurate one gates (a worse candidate: Failed)."""
    spec = str(EXAMPLE / "rollout.yaml")
    with generation(right) as s, generation(worse_mostly) as c:
        for accuracy, code, phase, says in (
                (0.5, 3, "Inconclusive", ("judge agreement 0.45 (9 of 20 labelled pairs), 95% "
                 "interval [0.26, 0.66], lower bound 0.26 < minAgreement 0.8")),
                (1.0, 1, "Failed", "stopped after 11 of 30 prompts")):
            with stand_in(accuracy=accuracy) as judge:
                got, out, err = dgdgen(capsys, "analyze", spec, "--step", "1", "--stable-url",
                                       s.url, "--candidate-url", c.url, "--judge-url",
                                       judge.url, "-f", "json")
            assert got == code, out + err
            (row,) = json.loads(out)["metrics"]
            assert row["phase"] == phase and says in row["detail"], row


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_analyze_killed_mid_gate_leaves_nothing_in_the_temp_folder(tmp_path: Path,
                                                                   sig: int) -> None:
    """`dgdgen analyze` runs the quality gate in its own process with nothing written: killed
    while the gate waits on an answer (SIGKILL: no clean-up runs; SIGTERM: Python's default,
    none either), its temp folder holds nothing of it. (It wrote the judge's rubric to a
    `dgdgen-quality-*` folder, which a kill left behind.)"""
    asked = threading.Event()
    release = threading.Event()

    def slow(prompt: str) -> str:
        asked.set()
        release.wait(60)
        return right(prompt)

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with generation(right) as s, generation(slow) as c, stand_in() as judge:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dgdgen", "analyze", str(EXAMPLE / "rollout.yaml"), "--step",
             "1", "--stable-url", s.url, "--candidate-url", c.url, "--judge-url", judge.url],
            cwd=REPO, env={**os.environ, "TMPDIR": str(scratch)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert asked.wait(120), "the gate never asked the candidate"
            proc.send_signal(sig)
            assert proc.wait(30) == -sig
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert sorted(p.name for p in scratch.iterdir()) == []
