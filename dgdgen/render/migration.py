"""Request migration on the frontends dgdgen renders, and what protects each shrink of a serving
generation.

A generation that still serves part of the traffic and loses workers (a step's shrink, a
rollback step, the operator's roll) stops them with SIGTERM. A Dynamo 1.6.1 worker unregisters
its endpoint at once and finishes what it holds (:mod:`dgdgen.render.grace`), but a frontend that routed
a request to it just before it saw the unregistration gets no answer from the worker and returns
HTTP 503 "no backend worker available" — unless it may migrate the request to another worker.
The frontend does so only with a migration limit above 0 (``--migration-limit`` /
``DYN_MIGRATION_LIMIT``, a frontend flag in 1.6.1: ``dynamo/frontend/frontend_args.py``; "enables
migration after worker disconnects, response timeouts, incomplete streams"). Measured against
the real 1.6.1 frontend and mocker (docs/rehearse.md): one 503 per stopped worker under load
without it, none with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgdgen.model.dgd import Dgd

ENV = "DYN_MIGRATION_LIMIT"
FLAG = "--migration-limit"
# Each migration moves the request to another worker; 3 covers a request routed to a stopping
# worker, then to a second one stopping in the same shrink, with one to spare (the value
# DGD106 suggests).
LIMIT = 3


def _value(text: str | None) -> int:
    try:
        return int(text) if text is not None else 0
    except ValueError:
        return 1  # a templated value: taken as set on purpose


def frontend_limits(d: Dgd) -> dict[str, int]:
    """Each frontend's effective migration limit (flag beats environment; unset: 0)."""
    from dgdgen.check.facts import dgd_facts

    out = {}
    for fe in dgd_facts(d).frontends():
        s = fe.flags.get(FLAG)
        out[fe.name] = _value(s.value if s is not None else None)
    return out


def unprotected(d: Dgd) -> list[str]:
    """Frontends of ``d`` that never migrate a request."""
    return [name for name, n in frontend_limits(d).items() if n <= 0]


def apply(d: Dgd, only: set[str] | None = None) -> None:
    """Give every frontend of ``d`` (those in ``only``, when given) without a migration limit
    ``DYN_MIGRATION_LIMIT`` = :data:`LIMIT` in its main container's environment. The environment,
    not an argument: a frontend that runs the image's own command has no args, and args written
    there would replace that command. A limit already set is kept."""
    for name in unprotected(d):
        if only is not None and name not in only:
            continue
        main = d.main_container(name, create=True)
        assert main is not None
        env = main.setdefault("env", [])
        env[:] = [e for e in env if not (isinstance(e, dict) and e.get("name") == ENV)]
        env.append({"name": ENV, "value": str(LIMIT)})
    d.refresh()
