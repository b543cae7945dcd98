"""Prometheus' answer is untrusted input: `dgdgen analyze` against a real loopback HTTP server that
answers what a hostile or broken server would — the wrong JSON shape, nesting too deep, a number
wider than Python reads, a body that never ends, one byte at a time — and a malformed address.
Each ends as a measurement Error (exit 1) or an unreachable Prometheus (exit 2), never an
internal error (exit 70), and never runs longer than --prometheus-timeout or reads more than
--prometheus-max-bytes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
from analysis_support import EXAMPLE
from gen_support import run_cli
from http_support import Handler, serving

from dgdgen.analysis import prom

GOOD = {"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {}, "value": [1767225600, "0.25"]}]}}


def _bodies() -> dict[str, tuple[bytes, str]]:
    def doc(value: object) -> bytes:
        return json.dumps(value).encode()

    def data(result_type: str, result: object) -> bytes:
        return doc({"status": "success", "data": {"resultType": result_type, "result": result}})

    return {
        "list": (doc([1, 2]), "not an object"),
        "data-list": (doc({"status": "success", "data": []}), "without a data object"),
        "status-list": (doc({"status": ["success"], "error": {"x": 1}}), "error"),
        "vector-of-numbers": (data("vector", [1, 2]), "not a list of samples"),
        "vector-dict": (data("vector", {"value": [1, "2"]}), "not a list of samples"),
        "value-string": (data("vector", [{"value": "0.5"}]), "not [time, \"number\"]"),
        "value-object": (data("vector", [{"value": [1, {"a": 1}]}]), "not [time, \"number\"]"),
        "value-number": (data("vector", [{"value": [1, 0.5]}]), "not [time, \"number\"]"),
        "value-junk": (data("vector", [{"value": [1, "fast"]}]), "whose value is not a number: \"fast\""),
        "scalar-short": (data("scalar", [1]), "not [time, \"number\"]"),
        "matrix-values": (data("matrix", [{"values": "x"}]), "not a list of series"),
        "result-type-list": (data(["vector"], []), "not supported"),  # type: ignore[arg-type]
        "deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        "wide-int": (b'{"status": "success", "data": ' + b"9" * 5000 + b"}", "not JSON"),
        "not-json": (b"<html>proxy error</html>", "not JSON"),
        "not-utf8": (b'{"status": "\xff"}', "not JSON"),
    }


BODIES = _bodies()


@dataclass
class Seen:
    """What the server did: bytes it sent, and whether it was still sending when the client
    went away (so the client, not the server, ended the answer)."""

    sent: int = 0
    cut_off: threading.Event = field(default_factory=threading.Event)


@contextmanager
def answering(body: bytes) -> Iterator[str]:
    class H(Handler):
        def do_GET(self) -> None:
            self.reply(body, 200, "application/json")

    with serving(H) as url:
        yield url


@contextmanager
def dripping(where: str, seen: Seen, *, gap: float = 0.05, total: int = 100_000
             ) -> Iterator[str]:
    """A server that sends its answer one byte every ``gap`` seconds (``head``: from the status
    line on; ``body``: after whole headers), ``total`` bytes: minutes, unless the client ends
    it."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % total

    class H(Handler):
        def do_GET(self) -> None:
            data = head + b" " * total if where == "head" else b" " * total
            if where == "body":
                self.wfile.write(head)
                self.wfile.flush()
            try:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    seen.sent += 1
                    time.sleep(gap)
            except OSError:  # the client shut the connection
                seen.cut_off.set()

    with serving(H) as url:
        yield url


@contextmanager
def flooding(seen: Seen, size: int, *, declared: bool) -> Iterator[str]:
    """A server that streams ``size`` bytes of answer (with or without Content-Length)."""

    class H(Handler):
        protocol_version = "HTTP/1.0"  # without a length, the answer ends when the server closes

        def do_GET(self) -> None:
            self.send_response(200)
            if declared:
                self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b" " * (1 << 16)
            try:
                while seen.sent < size:
                    self.wfile.write(chunk)
                    seen.sent += len(chunk)
            except OSError:
                seen.cut_off.set()

    with serving(H) as url:
        yield url


@pytest.mark.parametrize("shape", sorted(BODIES))
def test_answer_of_the_wrong_shape_is_a_measurement_error(shape: str) -> None:
    body, says = BODIES[shape]
    with answering(body) as url, pytest.raises(prom.PromError) as err:
        prom.query(url, "up")
    assert not err.value.unreachable
    assert says in str(err.value), str(err.value)


def test_the_right_shape_reads() -> None:
    with answering(json.dumps(GOOD).encode()) as url:
        assert prom.query(url, "up") == [0.25]


@pytest.mark.parametrize("shape", ["deep", "value-object", "wide-int"])
def test_analyze_says_error_not_internal_error(shape: str) -> None:
    with answering(BODIES[shape][0]) as url:
        r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Error" in r.stdout and BODIES[shape][1] in r.stdout
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


@pytest.mark.parametrize("url", ["http://[::1", "http://[::1]:99999999", "http://",
                                 "http://exa mple.invalid:90/"])
def test_malformed_address_is_bad_input(url: str) -> None:
    r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", url)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert url in r.stderr or "URL" in r.stderr


@pytest.mark.parametrize("where", ["head", "body"])
def test_a_dripping_server_cannot_outlast_the_deadline(where: str) -> None:
    """One byte every 50 ms would take 100,000 x 50 ms, well over an hour: the deadline (1 s)
    ends the query, as a shut socket the server notices, and the command says why."""
    seen = Seen()
    with dripping(where, seen) as url:
        r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", url,
                    "--prometheus-timeout", "1")
        assert seen.cut_off.wait(30), "the server was never cut off"
    assert r.returncode == 2, r.stdout + r.stderr
    assert "did not answer within 1 s (--prometheus-timeout)" in r.stderr
    assert "Traceback" not in r.stderr
    assert 0 < seen.sent < 100_000


def test_the_deadline_is_a_library_guarantee_too() -> None:
    seen = Seen()
    with dripping("body", seen) as url:
        with pytest.raises(prom.PromError) as err:
            prom.query(url, "up", deadline=prom.Deadline.after(0.5))
        assert seen.cut_off.wait(30)
    assert err.value.unreachable and "within 0.5 s" in str(err.value)


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "until-close"])
def test_an_answer_over_the_size_limit_is_not_read_whole(declared: bool) -> None:
    """400 MB offered; the client reads at most the limit (1 MiB here) and hangs up: the server
    gets rid of the limit plus what the sockets' buffers take, nowhere near 400 MB."""
    seen = Seen()
    with flooding(seen, 400 * 1024 * 1024, declared=declared) as url:
        r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", url,
                    "--prometheus-max-bytes", "1M")
        assert seen.cut_off.wait(30)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "more than 1048576 bytes (--prometheus-max-bytes)" in r.stdout
    assert seen.sent < 64 * 1024 * 1024


@pytest.mark.parametrize(("option", "value"), [("--prometheus-timeout", "0"),
                                               ("--prometheus-timeout", "nan"),
                                               ("--prometheus-max-bytes", "lots")])
def test_limit_options_are_checked(option: str, value: str) -> None:
    r = run_cli("analyze", str(EXAMPLE), "--step", "1", "--prometheus", "http://127.0.0.1:9",
                option, value)
    assert r.returncode == 2 and option in r.stderr, r.stderr
