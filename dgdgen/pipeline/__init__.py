"""The generator's pipeline: a rollout spec prepared (loaded, planned, its notes made:
:mod:`dgdgen.pipeline.prepare`), its rendered files (:mod:`dgdgen.pipeline.files`) and the
plan's reports as text (:mod:`dgdgen.pipeline.report`) and pictures
(:mod:`dgdgen.pipeline.picture`). It sits above every stage it orchestrates — plan, analysis,
traffic, render — and below the commands, GitOps and the rehearsal (docs/architecture.md)."""
