"""GitOps: render a rollout into a Git work tree, promote and roll back as commits, and the Argo CD
/ Argo Workflows objects that sync and drive it.

* Argo CD sync waves per object come from the step transition at render time
  (:mod:`dgdgen.render.waves`), so `render -o` and the commits carry the same annotations.
* :mod:`dgdgen.gitops.tree` — owned files in a directory, the index, crash-safe writes, drift.
* :mod:`dgdgen.gitops.repo` — the recorded step and gate results, and the git plumbing.
* :mod:`dgdgen.gitops.actions` — status / promote / rollback / cleanup / gate as one commit each.
* :mod:`dgdgen.gitops.argocd` — Application, ApplicationSet, AppProject, ``argocd-cm``.
* :mod:`dgdgen.gitops.workflow` — the Argo Workflows ``WorkflowTemplate`` (built with hera).
"""
