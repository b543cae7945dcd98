"""The canary probe: a Job (Argo Rollouts ``job`` provider) that sends a few fixed prompts with
temperature 0 to the candidate frontend's OpenAI-compatible API and fails on an HTTP error or a
reply that does not match. The script is plain python3 standard library, passed with ``-c`` so
any Python image works."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SCRIPT = r'''
import json, os, sys, urllib.request

url = os.environ["PROBE_URL"].rstrip("/")
match = os.environ.get("PROBE_MATCH", "exact")
max_tokens = int(os.environ.get("PROBE_MAX_TOKENS", "32"))
prompts = json.loads(os.environ["PROBE_PROMPTS"])
timeout = float(os.environ.get("PROBE_TIMEOUT", "120"))
thinking = os.environ.get("PROBE_THINKING", "false") == "true"


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
        body = {
            "model": model, "temperature": 0, "seed": 0, "max_tokens": max_tokens,
            "stream": False, "messages": [{"role": "user", "content": case["prompt"]}],
        }
        if not thinking:
            # no reasoning preamble before the answer (the chat template's enable_thinking)
            body["chat_template_kwargs"] = {"enable_thinking": False}
        reply = call("/v1/chat/completions", body)
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


# The Pod Security Standards' "restricted" profile: non-root, no privilege escalation, every
# capability dropped, the runtime's default seccomp profile. The python image's default user is
# root, so a numeric non-root user is given (nobody); the script writes nothing.
RESTRICTED_POD = {
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "runAsGroup": 65534,
    "seccompProfile": {"type": "RuntimeDefault"},
}
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
# One python3 process sending a few small requests.
RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"},
             "limits": {"cpu": "500m", "memory": "256Mi"}}


_PLAIN_HEADERS = 'headers={"Content-Type": "application/json"}'
# With a preview (spec.traffic.preview) the probe calls the public entry point and sends the
# preview's header (or cookie) with every request, so the route takes it to the candidate.
_PREVIEW_HEADERS = ('headers={"Content-Type": "application/json", '
                    '**json.loads(os.environ.get("PROBE_HEADERS", "{}"))}')
assert SCRIPT.count(_PLAIN_HEADERS) == 1


def job_provider(probe: Any, url_arg: str,
                 headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``provider.job`` of the probe metric (``probe`` is :class:`dgdgen.spec.Probe`); with
    ``headers`` (a preview's), sent with every request."""
    script = SCRIPT if headers is None else SCRIPT.replace(_PLAIN_HEADERS, _PREVIEW_HEADERS)
    env = [
        {"name": "PROBE_URL", "value": url_arg},
        {"name": "PROBE_MATCH", "value": probe.match},
        {"name": "PROBE_MAX_TOKENS", "value": str(probe.max_tokens)},
        # Dynamo 1.6.1 reads `chat_template_kwargs` (alias of its `chat_template_args`) into the
        # chat template (ai-dynamo 1.6.1, dynamo/frontend/prepost.py; Dynamo issue #8636).
        {"name": "PROBE_THINKING", "value": "true" if probe.thinking else "false"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
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
    if headers is not None:
        env.append({"name": "PROBE_HEADERS", "value": json.dumps(dict(headers),
                                                                 sort_keys=True)})
    return {
        "job": {
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": 600,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "automountServiceAccountToken": False,
                        "securityContext": dict(RESTRICTED_POD),
                        "containers": [
                            {
                                "name": "probe",
                                "image": probe.image,
                                "command": ["python3", "-c", script],
                                "env": env,
                                "resources": {k: dict(v) for k, v in RESOURCES.items()},
                                "securityContext": dict(RESTRICTED_CONTAINER),
                            }
                        ],
                    }
                },
            }
        }
    }
