"""One v1beta1 DGD with a single worker component, for the tests that read a worker's flags."""

from __future__ import annotations

from dgdgen.check.facts import ComponentFacts, dgd_facts
from dgdgen.model.dgd import parse
from dgdgen.yamlio import load_documents_fast

_HEAD = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: q}
spec:
  components:
    - name: worker
      type: worker
      podTemplate:
        spec:
          containers:
            - name: main
              image: img:1
"""


def worker_dgd_text(*container: str) -> str:
    """The DGD whose worker's main container has the given YAML lines (command, args, env ...)."""
    return _HEAD + "".join(f"              {line}\n" for line in container)


def worker_component(*container: str) -> ComponentFacts:
    """The facts of the worker whose main container has the given YAML lines."""
    doc = load_documents_fast(worker_dgd_text(*container), "w.yaml")[0]
    return dgd_facts(parse(doc.data, source=doc)).components["worker"]


def shell_worker(command_line: str) -> ComponentFacts:
    """A worker started as ``/bin/sh -c COMMAND_LINE``."""
    return worker_component("command: [/bin/sh, -c]", f'args: ["{command_line}"]')
