"""The canary probe: a Job (Argo Rollouts ``job`` provider) that sends a few fixed prompts with
temperature 0 to the candidate frontend's OpenAI-compatible API and fails on an HTTP error or a
reply that does not match. The script is plain python3 standard library, passed with ``-c`` so
any Python image works."""

from __future__ import annotations

import json
from typing import Any

SCRIPT = r'''
import json, os, sys, urllib.request

url = os.environ["PROBE_URL"].rstrip("/")
match = os.environ.get("PROBE_MATCH", "exact")
max_tokens = int(os.environ.get("PROBE_MAX_TOKENS", "32"))
prompts = json.loads(os.environ["PROBE_PROMPTS"])
timeout = float(os.environ.get("PROBE_TIMEOUT", "120"))


def call(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)


model = os.environ.get("PROBE_MODEL") or call("/v1/models")["data"][0]["id"]
failed = 0
for i, case in enumerate(prompts):
    try:
        reply = call("/v1/chat/completions", {
            "model": model, "temperature": 0, "seed": 0, "max_tokens": max_tokens,
            "stream": False, "messages": [{"role": "user", "content": case["prompt"]}],
        })
        got = (reply["choices"][0]["message"]["content"] or "").strip()
    except Exception as exc:  # any transport or shape error fails the probe
        print(f"prompt {i}: error: {exc}")
        failed += 1
        continue
    want = case["expected"].strip()
    ok = {"exact": got == want, "prefix": got.startswith(want), "contains": want in got}[match]
    print(f"prompt {i}: {'ok' if ok else 'MISMATCH'}: expected {want!r}, got {got!r}")
    failed += not ok
sys.exit(1 if failed else 0)
'''.strip() + "\n"


def job_provider(probe: Any, url_arg: str) -> dict[str, Any]:
    """The ``provider.job`` of the probe metric (``probe`` is :class:`dgdgen.spec.Probe`)."""
    env = [
        {"name": "PROBE_URL", "value": url_arg},
        {"name": "PROBE_MATCH", "value": probe.match},
        {"name": "PROBE_MAX_TOKENS", "value": str(probe.max_tokens)},
        {
            "name": "PROBE_PROMPTS",
            "value": json.dumps(
                [{"prompt": p.prompt, "expected": p.expected} for p in probe.prompts],
                sort_keys=True,
            ),
        },
    ]
    if probe.model:
        env.insert(1, {"name": "PROBE_MODEL", "value": probe.model})
    return {
        "job": {
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": 600,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "probe",
                                "image": probe.image,
                                "command": ["python3", "-c", SCRIPT],
                                "env": env,
                            }
                        ],
                    }
                },
            }
        }
    }
