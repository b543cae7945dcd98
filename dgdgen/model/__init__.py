"""The DGD model: a DynamoGraphDeployment as dgdgen reads it, and what is derived from it
without a rollout spec's steps — its typed components (dgdpod), the stable and candidate
generations, the GPUs an engine's parallelism needs, and the names of the objects rendered for a
generation. Below the checker, the planner and the renderer, which all read it
(docs/architecture.md)."""
