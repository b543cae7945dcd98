"""``dgdgen rehearse``: a whole rollout, step by step, against the real Dynamo runtime.

The data flow: the rollout spec is copied, with its durations scaled, into a scratch Git
repository (:mod:`.scale`); the GitOps commands a workflow runs render and move it (``render
--into``, ``analyze --record``, ``promote``, ``rollback``, ``cleanup``); after each commit the
local "cluster" (:mod:`.cluster`) applies the committed tree wave by wave — DGDs become Dynamo
frontend and mocker processes, the traffic objects a real HAProxy (:mod:`.proxy`), the
PodMonitors a real Prometheus' scrape configuration (:mod:`.prometheus`) — while a bounded load
(:mod:`.load`) streams requests through the proxy. :mod:`.report` turns what was observed into
Markdown, JSON and an SVG chart. ``docs/rehearse.md`` says what this proves and what it cannot.
"""
