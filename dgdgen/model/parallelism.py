"""How many GPUs an engine's parallelism needs per replica, from its arguments: shared by the
planner (a candidate that changes parallelism must ask for the GPUs with it) and the invariant
CLU102 over rendered DGDs.

An engine with tensor parallelism TP and pipeline parallelism PP needs TP × PP GPUs, times the
data-parallel ranks it runs itself: vLLM's ``--data-parallel-size`` (its local part where
``--data-parallel-size-local`` says), SGLang's ``--dp-size`` unless DP attention shares the TP
GPUs (``--enable-dp-attention``; SGLang 0.5.21 server_args). TRT-LLM's sizes may also come from
an engine config file the arguments name: only what the arguments say is counted.
"""

from __future__ import annotations

from collections.abc import Mapping

from dgdgen.model.dgd import Backend


def _size(flags: Mapping[str, str], *names: str) -> int:
    for name in names:
        raw = flags.get(name)
        if raw is not None:
            try:
                return max(int(raw), 1)
            except ValueError:
                return 1  # a variable: not known here
    return 1


def needed(backend: Backend, flags: Mapping[str, str]) -> int | None:
    """GPUs one replica's engine needs, from its arguments; None when not known here."""
    if backend is Backend.VLLM:
        dp = _size(flags, "--data-parallel-size-local", "--data-parallel-size")
        return _size(flags, "--tensor-parallel-size") * _size(
            flags, "--pipeline-parallel-size") * dp
    if backend is Backend.SGLANG:
        dp = 1 if "--enable-dp-attention" in flags else _size(flags, "--dp-size")
        return _size(flags, "--tp-size") * _size(flags, "--pp-size") * dp
    if backend is Backend.TRTLLM:
        return _size(flags, "--tensor-parallel-size") * _size(flags, "--pipeline-parallel-size")
    return None
