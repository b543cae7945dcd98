"""A stream on a worker killed when its termination grace period runs out, against the real
Dynamo 1.6.1 frontend and mocker: with the frontend's request migration it continues on another
worker and the client sees one whole stream; without it the stream is cut. This is what makes a
stable worker's short grace period (30 s by default, shorter than a long request) safe on a step
that stops stable workers while the stable serves (dgdgen.render.migration, plan notes,
docs/rehearse.md "Shrinking a generation that still serves").

The processes run in a private network namespace (dgdgen.runtime.netns.run_isolated).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest
from rehearse_support import require_runtime, short_workdir

pytestmark = [pytest.mark.slow, pytest.mark.rehearse]

NS = "inference-kill"
MODEL = "tiny"
TOKENS = 60  # several seconds at the slowed-down mocker's pace below
KILL_AFTER = 2.0  # s into the stream


def _observe(migration_limit: int) -> dict[str, Any]:
    from dgdgen.render import migration
    from dgdgen.runtime import client
    from dgdgen.runtime.model import make_model_dir
    from dgdgen.runtime.procs import LocalDynamo

    with short_workdir("dgdgen-kill-") as work:
        model_dir = make_model_dir(work / "model")
        args = ["--model-path", str(model_dir), "--model-name", MODEL, "--block-size", "16",
                "--speedup-ratio", "0.05"]
        got: dict[str, Any] = {}
        with LocalDynamo(work) as rt:
            env = {migration.ENV: str(migration_limit)} if migration_limit else {}
            fe = rt.frontend(NS, env=env)
            w1 = rt.mocker(NS, args, name="w1")
            rt.wait_frontend_up(fe)
            rt.wait_worker_ready(w1)
            rt.wait_model_ready(fe, MODEL, workers=1)

            def stream() -> None:
                got["outcome"] = client.request(fe.port, MODEL, stream=True, max_tokens=TOKENS,
                                                timeout=120)

            t = threading.Thread(target=stream)
            t.start()
            # a second worker the stream can move to, up before the first one is killed
            w2 = rt.mocker(NS, args, name="w2")
            rt.wait_worker_ready(w2)
            rt.wait_model_ready(fe, MODEL, workers=2)
            time.sleep(KILL_AFTER)
            assert t.is_alive(), "the stream ended before the kill"
            os.killpg(w1.popen.pid, signal.SIGKILL)  # the grace period ran out
            t.join(130)
            rt.procs.remove(w1)
        o = got["outcome"]
        return {"ok": o.ok, "truncated": o.truncated, "tokens": o.tokens, "error": o.error,
                "status": o.status}


@pytest.mark.parametrize("limit", [0, 3])
def test_a_stream_on_a_killed_worker_migrates_only_with_a_limit(limit: int) -> None:
    require_runtime()
    from dgdgen.runtime.netns import run_isolated

    seen = run_isolated(_observe, limit, timeout=300)
    if limit:
        assert seen["ok"] and not seen["truncated"] and seen["tokens"] == TOKENS, seen
    else:
        assert not seen["ok"] or seen["truncated"] or seen["tokens"] < TOKENS, seen
