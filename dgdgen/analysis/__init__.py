"""SLO gates: PromQL queries, sample-size statistics, the expr subset of Argo Rollouts conditions,
gate resolution per plan step, and a small Prometheus client (docs/analysis.md).

Data flow: spec + plan → :func:`dgdgen.analysis.gates.step_gate` (metrics, args, timing of one
gated step) → :mod:`dgdgen.render.analysis` (AnalysisTemplates, AnalysisRuns, PodMonitors) and
``dgdgen analyze`` (the same metrics against a live Prometheus, judged by
:mod:`dgdgen.analysis.expr`).
"""
