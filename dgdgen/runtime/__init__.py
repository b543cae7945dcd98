"""A local Dynamo runtime: the real Dynamo frontend and mocker engine as processes on this machine.

The rehearsal (``dgdgen rehearse``) and the checker's runtime-backed tests play the operator's part
with it: every rendered frontend and worker becomes a local process, in a private network
namespace that has only loopback. It needs the ``rehearse`` extra (the ``ai-dynamo`` wheels) and
root (or CAP_SYS_ADMIN) for the network namespace; both are checked here, with the reason.

Observed behaviour this relies on is recorded in ``docs/rehearse.md`` (Dynamo 1.6.1, frontend +
mocker, file discovery, TCP request plane).

Standard library only at import time.
"""

from __future__ import annotations

import importlib.util

from dgdgen.errors import DgdgenError

#: The Dynamo release the rehearsal and the runtime-backed tests were built against.
DYNAMO_VERSION = "1.6.1"

INSTALL_HINT = (
    "install the extra with `pip install 'dgdgen[rehearse]'` and then the Dynamo wheels without "
    f"their unreachable simulator dependency: `pip install --no-deps ai-dynamo=={DYNAMO_VERSION} "
    f"ai-dynamo-runtime=={DYNAMO_VERSION}` (docs/rehearse.md)"
)


class MissingExtra(DgdgenError):
    """The Dynamo runtime is not installed: a usage problem, exit 2."""

    exit_code = 2


class RuntimeUnavailable(DgdgenError):
    """The runtime is installed but cannot run here (no network namespace, no haproxy …): exit 3."""

    exit_code = 3


def missing() -> str | None:
    """Why the Dynamo runtime cannot be imported, or None when it can."""
    for module in ("dynamo.frontend", "dynamo.mocker", "tokenizers"):
        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            return f"the Python module {module!r} (ai-dynamo {DYNAMO_VERSION}) is not installed"
    return None


def available() -> bool:
    return missing() is None


def require() -> None:
    """Raise :class:`MissingExtra` naming the extra when the runtime is not installed."""
    reason = missing()
    if reason is not None:
        raise MissingExtra(f"{reason}; {INSTALL_HINT}")
