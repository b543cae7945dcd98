"""The checker's in-place rules (DGD201–DGD203) as a Kubernetes ValidatingAdmissionPolicy.

spec (options) → :func:`build` (policy + binding, plain documents) → :func:`violations`
(upstream schema and API-server checks) → YAML. :mod:`dgdgen.policy.evaluate` runs the policy's
CEL for one UPDATE the way the API server would; :mod:`dgdgen.policy.typecheck` type-checks it.
See docs/policy.md.
"""

from __future__ import annotations

from dgdgen.policy.build import ACTIONS, DEFAULT_NAME, FAILURE_POLICIES, Options, build
from dgdgen.policy.cel import ESCAPE_ANNOTATION
from dgdgen.policy.schema import violations

__all__ = ["ACTIONS", "DEFAULT_NAME", "ESCAPE_ANNOTATION", "FAILURE_POLICIES", "Options", "build",
           "violations"]
