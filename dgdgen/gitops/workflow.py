"""The Argo Workflows ``WorkflowTemplate`` that drives a rollout in-cluster, built with hera
(facts/argo.md §5: maintained, Argo Workflows 4 models, camelCase output; the frozen
``argo-workflows`` package is avoided). hera is imported lazily: it is the ``argo`` extra.

For each step of the plan the workflow

1. **promotes**: a container with dgdgen and git clones the repository, runs
   ``dgdgen promote --to N --push`` and outputs the new commit id;
2. **waits for Argo CD**: patches the Application with the refresh annotation and waits until it
   is Synced *at that commit* and Healthy (label-selector conditions over JSON paths, not expr —
   facts/argo.md §5; Degraded or a failed sync operation fails the step). The DGD health check
   makes "Healthy" mean the new workers are ready;
3. **analyses**: creates the step's AnalysisRun (metrics inlined, ``generateName``) and waits for
   its phase — Successful passes; Failed, Error and Inconclusive fail (never a pass on too little
   data). Skipped when ``analysis.hooks.enabled`` renders the run as a PostSync hook: the sync
   then already waited for it;
4. **bakes**: a ``suspend`` for the step's pause.

An exit handler rolls back (``dgdgen rollback --push``) when the workflow did not succeed, and the
last step is followed by ``dgdgen cleanup`` when ``gitops.workflow.cleanup`` is on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen import yamlio
from dgdgen.gitops import argocd

if TYPE_CHECKING:
    from dgdgen.pipeline import Prepared
    from dgdgen.plan import PlanStep

CLONE_DIR = "/home/dgdgen/repo"

# One script for every Git action. It is idempotent (a retried pod whose push already landed
# finds the repository at the target state and just reports the commit), and it never uses
# `|| true` on the action itself, so a refused promotion fails the step.
PROMOTE_SCRIPT = r"""set -eu
git config --global credential.helper \
  '!f() { echo "username=${GIT_USERNAME:-git}"; echo "password=${GIT_PASSWORD:-}"; }; f'
git config --global user.name "${GIT_AUTHOR:-dgdgen}"
git config --global user.email "${GIT_EMAIL:-dgdgen@localhost}"
git clone --quiet --branch "$BRANCH" "$REPO" "$CLONE"
cd "$CLONE"
at=$(dgdgen status "$SPEC" --into "$INTO" --format json \
     | python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])') || at=unknown
case "$ACTION" in
  promote)
    want=$(printf 'step-%02d' "$TO")
    if [ "$at" != "$want" ]; then dgdgen promote "$SPEC" --into "$INTO" --to "$TO" --push; fi ;;
  cleanup)
    if [ "$at" != cleanup ]; then dgdgen cleanup "$SPEC" --into "$INTO" --push; fi ;;
  rollback)
    case "$at" in
      rollback|cleanup|step-00) echo "nothing to roll back ($at)" ;;
      *) dgdgen rollback "$SPEC" --into "$INTO" --push ;;
    esac ;;
esac
git rev-parse HEAD > "${COMMIT_FILE:-/tmp/commit}"
"""


def _gitops(prepared: Prepared) -> Any:
    return prepared.loaded.spec.spec.gitops


def _analysis_runs(prepared: Prepared, state: PlanStep) -> list[dict[str, Any]]:
    """The step's standalone AnalysisRun (``generateName``: creatable once per attempt), unless
    the runs are Argo CD PostSync hooks — then the sync already waited for it."""
    from dgdgen.render.analysis import analysis_run

    if prepared.loaded.spec.spec.analysis.hooks.enabled or state.kind != "step":
        return []
    run = analysis_run(prepared, state.index, hook=False)
    return [run] if run is not None else []


def _app_manifest(prepared: Prepared) -> str:
    g = _gitops(prepared)
    return yamlio.dump({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": prepared.plan.rollout,
            "namespace": g.argocd_namespace,
            "annotations": {"argocd.argoproj.io/refresh": "normal"},
        },
    })


def workflow_template(prepared: Prepared) -> dict[str, Any]:
    from hera.workflows import (
        Container,
        Env,
        Parameter,
        Resource,
        Steps,
        Suspend,
        WorkflowTemplate,
    )
    from hera.workflows import models as m

    g = _gitops(prepared)
    plan = prepared.plan
    ns = prepared.loaded.spec.metadata.namespace
    secret = g.workflow.git_secret

    def secret_env(name: str, key: str) -> m.EnvVar:
        return m.EnvVar(name=name, value_from=m.EnvVarSource(
            secret_key_ref=m.SecretKeySelector(name=secret, key=key, optional=True)))

    author_env: list[Env] = []
    if g.commit_author:
        name, _, email = g.commit_author.partition(" <")
        author_env = [Env(name="GIT_AUTHOR", value=name), Env(name="GIT_EMAIL", value=email[:-1])]

    with WorkflowTemplate(
        name=f"{plan.rollout}-rollout",
        namespace=ns,
        labels={"app.kubernetes.io/managed-by": "dgdgen", "dgdgen.dev/rollout": plan.rollout},
        entrypoint="rollout",
        on_exit="on-exit",
        service_account_name=g.workflow.service_account_name,
        arguments=[
            Parameter(name="repo", value=argocd._repo_url(prepared)),
            Parameter(name="branch", value=g.branch or "main"),
            Parameter(name="spec", value=argocd.spec_repo_path(prepared)),
            Parameter(name="into", value=argocd.rendered_path(prepared)),
        ],
    ) as wt:
        git_action = Container(
            name="git-action",
            image=g.workflow.image,
            command=["sh", "-c"],
            args=[PROMOTE_SCRIPT],
            inputs=[Parameter(name="action"), Parameter(name="to", default="0")],
            outputs=[Parameter(name="commit", value_from=m.ValueFrom(path="/tmp/commit"))],
            env=[
                Env(name="ACTION", value="{{inputs.parameters.action}}"),
                Env(name="TO", value="{{inputs.parameters.to}}"),
                Env(name="REPO", value="{{workflow.parameters.repo}}"),
                Env(name="BRANCH", value="{{workflow.parameters.branch}}"),
                Env(name="SPEC", value="{{workflow.parameters.spec}}"),
                Env(name="INTO", value="{{workflow.parameters.into}}"),
                Env(name="CLONE", value=CLONE_DIR),
                *author_env,
                secret_env("GIT_USERNAME", "username"),
                secret_env("GIT_PASSWORD", "password"),
            ],
            retry_strategy=m.RetryStrategy(
                limit=m.IntOrString(3), retry_policy="OnFailure",
                backoff=m.Backoff(duration="10s", factor=m.IntOrString(2),
                                  max_duration="2m"),
            ),
        )
        wait_synced = Resource(
            name="wait-synced",
            inputs=[Parameter(name="revision")],
            action="patch",
            merge_strategy="merge",  # strategic merge does not work on custom resources
            manifest=_app_manifest(prepared),
            success_condition=(
                "status.sync.status == Synced,status.health.status == Healthy,"
                "status.sync.revision == {{inputs.parameters.revision}}"
            ),
            failure_condition="status.health.status == Degraded",
            timeout="2h",
        )
        bake = Suspend(name="bake", inputs=[Parameter(name="duration")],
                       duration="{{inputs.parameters.duration}}")
        analyses: dict[int, list[Resource]] = {}
        for state in plan.steps[1:]:
            if not state.gate:
                continue
            for k, run in enumerate(_analysis_runs(prepared, state)):
                analyses.setdefault(state.index, []).append(Resource(
                    name=f"analysis-step-{state.index}-{k}",
                    action="create",
                    manifest=yamlio.dump(run),
                    # label-selector syntax over JSON paths (facts/argo.md §1.7, §5)
                    success_condition="status.phase == Successful",
                    failure_condition="status.phase in (Failed,Error,Inconclusive)",
                ))

        with Steps(name="rollout"):
            for state in plan.steps[1:]:
                i = state.index
                git_action(name=f"step-{i}-promote",
                           arguments={"action": "promote", "to": str(i)})
                wait_synced(name=f"step-{i}-synced", arguments={
                    "revision": f"{{{{steps.step-{i}-promote.outputs.parameters.commit}}}}"})
                for k, res in enumerate(analyses.get(i, [])):
                    res(name=f"step-{i}-analysis-{k}")
                if state.pause_seconds:
                    bake(name=f"step-{i}-bake",
                         arguments={"duration": str(state.pause_seconds)})
            if g.workflow.cleanup:
                git_action(name="cleanup", arguments={"action": "cleanup"})
                wait_synced(name="cleanup-synced", arguments={
                    "revision": "{{steps.cleanup.outputs.parameters.commit}}"})

        with Steps(name="on-exit"):
            git_action(name="rollback", arguments={"action": "rollback"},
                       when="{{workflow.status}} != Succeeded")
    out: dict[str, Any] = wt.to_dict()
    return out
