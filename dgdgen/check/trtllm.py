"""TRT-LLM's effective engine arguments, as the checker compares them.

A TRT-LLM worker's engine settings come from four places, later ones winning: the CLI flags that
are engine keys (:data:`dgdgen.check.flags.TRTLLM_CLI_ENGINE_KEYS`), the ``--extra-engine-args``
YAML file (read when it lies in a mounted ConfigMap among the checked files), the
``--override-engine-args`` JSON, and ``--trtllm.<path>`` overrides. Each becomes an
``engine:<dotted key>`` :class:`~dgdgen.check.cmdline.Setting` that keeps the field path of the
flag it came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from dgdgen.check.cmdline import Setting
from dgdgen.check.flags import TRTLLM_CLI_ENGINE_KEYS
from dgdgen.check.podenv import mounted_file
from dgdgen.errors import InputError
from dgdgen.model.dgdpod import ComponentPod, scalar_text
from dgdgen.yamlio import load_documents_fast


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """The leaves of nested mappings as (dotted key, value); an empty mapping is a leaf."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


def resolve_engine_file(pod: ComponentPod, path: str,
                        configmaps: Mapping[str, Mapping[str, str]]) -> str | None:
    """The text of an ``--extra-engine-args`` file when it comes from a ConfigMap among the checked
    files (the TRT-LLM multinode example mounts `nvidia-config` at /workspace/)."""
    m = mounted_file(pod, path, configmaps)
    return m.text if m is not None else None


def engine_file_data(text: str, name: str) -> dict[str, Any] | None:
    """An engine-args YAML file (from a ConfigMap) as a mapping, or None when it is not one.
    Read by the one loader with limits: a bomb, a recursive alias or a custom tag in a ConfigMap
    leaves the file unresolved instead of stalling or crashing the checker."""
    try:
        docs = load_documents_fast(text, name)
    except InputError:
        return None
    data = docs[0].data if len(docs) == 1 else None
    return data if isinstance(data, dict) else None


def engine_settings(flags: Mapping[str, Setting], raw: list[tuple[str, Setting]],
                    pod: ComponentPod, configmaps: Mapping[str, Mapping[str, str]]
                    ) -> tuple[dict[str, Setting], bool]:
    """The ``engine:<key>`` settings of a TRT-LLM worker (``flags``: its canonical flags,
    ``raw``: every flag as written), and whether the ``--extra-engine-args`` file was read."""
    engine: dict[str, Setting] = {}
    for flag, key in TRTLLM_CLI_ENGINE_KEYS.items():
        s = flags.get(flag)
        if s is not None:
            engine["engine:" + key] = s
    resolved = False
    file_setting = flags.get("--extra-engine-args")
    if file_setting is not None and file_setting.value:
        text = resolve_engine_file(pod, file_setting.value, configmaps)
        if text is not None:
            data = engine_file_data(text, file_setting.value)
            if data is not None:
                resolved = True
                for key, value in flatten(data):
                    engine["engine:" + key] = Setting(scalar_text(value), file_setting.path,
                                                      "engine-file", key, file_setting.offset)
    override = flags.get("--override-engine-args")
    if override is not None:
        try:
            data = json.loads(override.value)
        except ValueError:
            data = None
        if isinstance(data, dict):
            for key, value in flatten(data):
                engine["engine:" + key] = Setting(scalar_text(value), override.path,
                                                  "engine-override", key, override.offset)
        else:
            engine["engine:<override>"] = override
    for flag, s in raw:
        if flag.startswith("--trtllm."):
            engine["engine:" + flag[len("--trtllm."):]] = Setting(
                s.value, s.path, "engine-override", flag, s.offset)
    return engine, resolved
