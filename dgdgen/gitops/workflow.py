"""The Argo Workflows ``WorkflowTemplate`` that drives a rollout in-cluster, built with hera
(argoproj-labs/hera 7.1.0: maintained, Argo Workflows 4 models, camelCase output; the frozen
``argo-workflows`` package is avoided). hera is imported lazily: it is the ``argo`` extra.

For each step of the plan the workflow

1. **promotes**: a container with dgdgen and git clones the repository, runs
   ``dgdgen promote --to N --push`` and outputs the new commit id (``promote`` refuses unless the
   gate of the step being left is recorded as passed — step 4 below records it). While the
   rollout is held (``dgdgen pause``: promote exits 4) the container waits, pulling the branch
   every ``HOLD_POLL`` seconds, and promotes once ``dgdgen resume`` removed the hold — it
   neither fails nor rolls back;
2. **moves each cluster wave** (:func:`argocd.waves`: the one Application, or the
   ``gitops.clusters`` by wave, the canary first). Where Argo CD does not sync by itself — two or
   more clusters, or ``autoSync: false`` — it first asks Argo CD to sync that wave's
   Applications at the commit (``argocd_api sync``). Then it **waits** on each Application of
   the wave through the Argo CD API (:mod:`dgdgen.gitops.argocd_api`) until the sync
   *operation* of that commit has Succeeded, the app is Synced at it and Healthy. Degraded, or
   the operation Failed / Error, fails the step. With ``analysis.hooks.enabled`` the step's
   PostSync AnalysisRun is part of that operation and its phase is read as well: Successful
   passes; Failed, Error and Inconclusive fail (never a pass on too little data). The DGD
   health check makes "Healthy" mean ready == desired replicas;
3. **analyses** (without hooks): creates the step's AnalysisRun (metrics inlined,
   ``generateName``) and waits for its phase with the same verdicts — with ``gitops.clusters``
   one run per cluster of the wave, side by side, each matching its own cluster label. Only
   when every run of a wave is Successful (for a gate a person judges: once resumed) does the
   next wave move, so a canary that fails its gate fails the step before any other cluster
   runs the commit;
4. **records the gate** as passed in Git (``dgdgen gate``) — a gated step without analysis first
   waits for a person (``argo resume``): a gate nobody judged is never passed; an A/B
   experiment step waits too, and then requires the decision that ``dgdgen experiment --record``
   recorded to be passed (anything else fails the workflow, which rolls back);
5. **bakes**: a ``suspend`` for the step's pause.

An exit handler rolls back when the workflow did not succeed: it terminates every running sync
operation of the rollout's Applications first (a PostSync analysis or a wave waiting for a broken
generation would otherwise hold the rollback commit back), commits ``dgdgen rollback --push``,
and waits for that commit to be synced and Healthy (no analysis) — synced to every cluster at
once, all waves: the way back is to the state every cluster ran before. The last step is
followed by ``dgdgen cleanup`` (moved wave by wave) when ``gitops.workflow.cleanup`` is on.

The workflow's pods touch Argo CD only through its API, with the token of an account limited to
``applications, get|sync`` on these Applications (:func:`argocd.argocd_rbac_cm_patch`); their
Kubernetes service account can create and read AnalysisRuns, nothing else
(:mod:`dgdgen.gitops.rbac`). Every container runs restricted: non-root, no privilege escalation,
no capabilities, RuntimeDefault seccomp, a read-only root file system (HOME and /tmp are
emptyDirs), with requests and a memory limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen import yamlio
from dgdgen.analysis.gates import EXPERIMENT
from dgdgen.gitops import argocd
from dgdgen.render.analysis import LABEL_CLUSTER

if TYPE_CHECKING:
    from dgdgen.plan import PlanStep
    from dgdgen.plan.prepared import Prepared

HOME = "/home/dgdgen"
CLONE_DIR = f"{HOME}/repo"
UID = 999  # the promotion image's user (argo/Dockerfile)
# Sized from `dgdgen promote` on the examples (docs/performance.md): the render of one state with
# validation against the vendored schemas stays well under the limit.
RESOURCES = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}}

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
status=$(dgdgen status "$SPEC" --into "$INTO" --format json) || status='{}'
field() { printf '%s' "$status" | python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
at=$(field 'print(d.get("step", "unknown"))')
# A rollout held by `dgdgen pause` makes promote and cleanup exit 4: wait for `dgdgen resume`
# (poll the branch) instead of failing, which would roll back. Any other refusal fails the step.
held() {
  rc=0; "$@" || rc=$?
  while [ "$rc" -eq 4 ]; do
    echo "held: waiting for dgdgen resume (next look in ${HOLD_POLL:-60}s)" >&2
    sleep "${HOLD_POLL:-60}"
    git fetch --quiet origin "$BRANCH" && git reset --quiet --hard FETCH_HEAD
    rc=0; "$@" || rc=$?
  done
  return "$rc"
}
case "$ACTION" in
  promote)
    want=$(printf 'step-%02d' "$TO")
    if [ "$at" != "$want" ]; then held dgdgen promote "$SPEC" --into "$INTO" --to "$TO" --push; fi ;;
  gate)
    want=$(printf 'step-%02d' "$TO")
    if [ "$at" != "$want" ]; then echo "the rollout is at $at, not $want" >&2; exit 1; fi
    result=$(field 'print((d.get("gate") or {}).get("result", ""))')
    if [ "$result" != passed ]; then
      dgdgen gate "$SPEC" --into "$INTO" --step "$TO" --result passed --message "$MESSAGE" --push
    fi ;;
  require-gate)
    want=$(printf 'step-%02d' "$TO")
    if [ "$at" != "$want" ]; then echo "the rollout is at $at, not $want" >&2; exit 1; fi
    result=$(field 'print((d.get("gate") or {}).get("result", "not recorded"))')
    if [ "$result" != passed ]; then
      echo "the experiment of $want is $result: record its decision with dgdgen experiment --record before resuming" >&2
      exit 1
    fi ;;
  cleanup)
    if [ "$at" != cleanup ]; then held dgdgen cleanup "$SPEC" --into "$INTO" --push; fi ;;
  rollback)
    case "$at" in
      cleanup|step-00)
        # nothing was committed: the exit handler's wait has nothing to wait for
        echo "nothing to roll back ($at)"
        echo none > "${COMMIT_FILE:-/tmp/commit}"; exit 0 ;;
      rollback) echo "already rolled back (a retried pod)" ;;
      *)
        # A running sync (a PostSync analysis, a wave waiting for a generation that never gets
        # Healthy) would hold the rollback commit back: stop it first (best effort).
        if [ -n "${APPS:-}" ]; then python3 -m dgdgen.gitops.argocd_api terminate --app "$APPS"; fi
        dgdgen rollback "$SPEC" --into "$INTO" --push ;;
    esac ;;
esac
git rev-parse HEAD > "${COMMIT_FILE:-/tmp/commit}"
"""

# Start a sync of one cluster wave's Applications at the commit (Applications that do not sync
# by themselves: argocd.syncs_automatically).
SYNC_SCRIPT = r"""set -eu
exec python3 -m dgdgen.gitops.argocd_api sync --app "$APPS" --revision "$REVISION" \
  --timeout "$TIMEOUT"
"""

# Wait for one commit on one Application (and its PostSync AnalysisRun, when RUN is set).
WAIT_SCRIPT = r"""set -eu
set -- wait --app "$APP" --revision "$REVISION" --timeout "$TIMEOUT"
if [ -n "$RUN" ]; then set -- "$@" --analysis-run "$RUN" --namespace "$RUN_NAMESPACE"; fi
exec python3 -m dgdgen.gitops.argocd_api "$@"
"""


def _gitops(prepared: Prepared) -> Any:
    return prepared.loaded.spec.spec.gitops


def _analysis_runs(prepared: Prepared, state: PlanStep) -> list[dict[str, Any]]:
    """The step's standalone AnalysisRuns (``generateName``: creatable once per attempt), one
    per ``gitops.clusters`` entry, unless the run is an Argo CD PostSync hook — then the wait step
    reads the hook's phase (hooks with several clusters are refused: dgdgen.analysis.gates)."""
    from dgdgen.render.analysis import analysis_runs

    if prepared.loaded.spec.spec.analysis.hooks.enabled or state.kind != "step":
        return []
    return analysis_runs(prepared, state.index, hook=False)


def _run_suffix(run: dict[str, Any], k: int) -> str:
    """``-<cluster>`` for a cluster's run, else ``-<k>``."""
    return "-" + str(run["metadata"]["labels"].get(LABEL_CLUSTER, k))


def _hook_run(prepared: Prepared, state: PlanStep) -> str:
    """The name of the step's PostSync AnalysisRun ('' when the step has none)."""
    from dgdgen.render import analysis

    if not prepared.loaded.spec.spec.analysis.hooks.enabled:
        return ""
    for m in analysis.render(prepared, state):
        if m.kind == "AnalysisRun":
            return str(m.obj["metadata"]["name"])
    return ""


def _cluster_of(prepared: Prepared, app: str) -> str | None:
    """The cluster of an ApplicationSet's Application (``<cluster>-<rollout>``), None for the
    one Application."""
    if not prepared.loaded.spec.spec.gitops.clusters:
        return None
    return app.removesuffix("-" + prepared.plan.rollout)


def _wait_name(prepared: Prepared, prefix: str, app: str) -> str:
    """``PREFIX-<cluster>`` for a cluster's Application, ``PREFIX`` for the one Application."""
    cluster = _cluster_of(prepared, app)
    return prefix if cluster is None else f"{prefix}-{cluster}"


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
    w = g.workflow
    plan = prepared.plan
    ns = prepared.loaded.spec.metadata.namespace
    apps = argocd.app_names(prepared)

    def secret_env(name: str, secret: str, key: str, *, optional: bool) -> m.EnvVar:
        return m.EnvVar(name=name, value_from=m.EnvVarSource(
            secret_key_ref=m.SecretKeySelector(name=secret, key=key, optional=optional)))

    author_env: list[Env] = []
    if g.commit_author:
        name, _, email = g.commit_author.partition(" <")
        author_env = [Env(name="GIT_AUTHOR", value=name), Env(name="GIT_EMAIL", value=email[:-1])]
    argocd_env: list[Env | m.EnvVar] = [
        Env(name="ARGOCD_SERVER", value="{{workflow.parameters.argocd-server}}"),
        secret_env("ARGOCD_AUTH_TOKEN", w.argocd_token_secret, "token", optional=False),
    ]

    # Pod Security Standards "restricted" (kubernetes.io/docs/concepts/security/
    # pod-security-standards): non-root, no privilege escalation, all capabilities dropped,
    # RuntimeDefault seccomp; plus a read-only root file system with emptyDirs where git and
    # the executor write.
    seccomp = m.SeccompProfile(type="RuntimeDefault")
    container_security = m.SecurityContext(
        allow_privilege_escalation=False, read_only_root_filesystem=True, run_as_non_root=True,
        run_as_user=UID, run_as_group=UID, capabilities=m.Capabilities(drop=["ALL"]),
        seccomp_profile=seccomp,
    )
    mounts = [m.VolumeMount(name="home", mount_path=HOME), m.VolumeMount(name="tmp",
                                                                          mount_path="/tmp")]
    resources = m.ResourceRequirements(
        requests={k: m.Quantity(v) for k, v in RESOURCES["requests"].items()},
        limits={k: m.Quantity(v) for k, v in RESOURCES["limits"].items()},
    )

    with WorkflowTemplate(
        name=f"{plan.rollout}-rollout",
        namespace=ns,
        labels={"app.kubernetes.io/managed-by": "dgdgen", "dgdgen.dev/rollout": plan.rollout},
        entrypoint="rollout",
        on_exit="on-exit",
        service_account_name=w.service_account_name,
        security_context=m.PodSecurityContext(
            run_as_non_root=True, run_as_user=UID, run_as_group=UID, fs_group=UID,
            seccomp_profile=seccomp,
        ),
        volumes=[m.Volume(name="home", empty_dir=m.EmptyDirVolumeSource(size_limit="2Gi")),
                 m.Volume(name="tmp", empty_dir=m.EmptyDirVolumeSource(size_limit="256Mi"))],
        arguments=[
            Parameter(name="repo", value=argocd._repo_url(prepared)),
            Parameter(name="branch", value=g.branch or "main"),
            Parameter(name="spec", value=argocd.spec_repo_path(prepared)),
            Parameter(name="into", value=argocd.rendered_path(prepared)),
            Parameter(name="argocd-server", value=argocd.argocd_server(prepared)),
        ],
    ) as wt:
        git_action = Container(
            name="git-action",
            image=w.image,
            command=["sh", "-c"],
            args=[PROMOTE_SCRIPT],
            inputs=[Parameter(name="action"), Parameter(name="to", default="0"),
                    Parameter(name="message", default="")],
            outputs=[Parameter(name="commit", value_from=m.ValueFrom(path="/tmp/commit"))],
            env=[
                Env(name="ACTION", value="{{inputs.parameters.action}}"),
                Env(name="TO", value="{{inputs.parameters.to}}"),
                Env(name="MESSAGE", value="{{inputs.parameters.message}}"),
                Env(name="REPO", value="{{workflow.parameters.repo}}"),
                Env(name="BRANCH", value="{{workflow.parameters.branch}}"),
                Env(name="SPEC", value="{{workflow.parameters.spec}}"),
                Env(name="INTO", value="{{workflow.parameters.into}}"),
                Env(name="CLONE", value=CLONE_DIR),
                Env(name="HOME", value=HOME),
                Env(name="APPS", value=",".join(apps)),
                Env(name="HOLD_POLL", value="60"),  # seconds between looks while paused
                *author_env,
                secret_env("GIT_USERNAME", w.git_secret, "username", optional=True),
                secret_env("GIT_PASSWORD", w.git_secret, "password", optional=True),
                *argocd_env,
            ],
            security_context=container_security,
            resources=resources,
            volume_mounts=mounts,
            # Retries cover a lost pod or a push race; the script is idempotent, and a refused
            # promotion fails the same way on every attempt.
            retry_strategy=m.RetryStrategy(
                limit=m.IntOrString(3), retry_policy="OnFailure",
                backoff=m.Backoff(duration="10s", factor=m.IntOrString(2),
                                  max_duration="2m"),
            ),
        )
        wait_synced = Container(
            name="wait-synced",
            image=w.image,
            command=["sh", "-c"],
            args=[WAIT_SCRIPT],
            inputs=[Parameter(name="revision"), Parameter(name="app"),
                    Parameter(name="run", default="")],
            env=[
                Env(name="APP", value="{{inputs.parameters.app}}"),
                Env(name="REVISION", value="{{inputs.parameters.revision}}"),
                Env(name="RUN", value="{{inputs.parameters.run}}"),
                Env(name="RUN_NAMESPACE", value=ns),
                Env(name="TIMEOUT", value=w.wait_timeout),
                Env(name="HOME", value=HOME),
                *argocd_env,
            ],
            security_context=container_security,
            resources=resources,
            volume_mounts=mounts,
            # no retry: a failed wait is a verdict (a failed sync or analysis), not an accident
        )
        argocd_sync = Container(
            name="argocd-sync",
            image=w.image,
            command=["sh", "-c"],
            args=[SYNC_SCRIPT],
            inputs=[Parameter(name="revision"), Parameter(name="apps")],
            env=[
                Env(name="APPS", value="{{inputs.parameters.apps}}"),
                Env(name="REVISION", value="{{inputs.parameters.revision}}"),
                Env(name="TIMEOUT", value=w.wait_timeout),
                Env(name="HOME", value=HOME),
                *argocd_env,
            ],
            security_context=container_security,
            resources=resources,
            volume_mounts=mounts,
            # A lost pod is retried: the action never starts a second operation at a commit
            # (argocd_api.sync), so a retry cannot re-run a failed sync or its hooks.
            retry_strategy=m.RetryStrategy(limit=m.IntOrString(2), retry_policy="OnError"),
        ) if not argocd.syncs_automatically(prepared) else None
        bake = Suspend(name="bake", inputs=[Parameter(name="duration")],
                       duration="{{inputs.parameters.duration}}")
        # the step's AnalysisRuns by (step, cluster): a wave runs those of its own clusters
        analyses: dict[tuple[int, str | None], list[Resource]] = {}
        for state in plan.steps[1:]:
            if not state.gate:
                continue
            for k, run in enumerate(_analysis_runs(prepared, state)):
                analyses.setdefault((state.index, run["metadata"]["labels"].get(LABEL_CLUSTER)),
                                    []).append(Resource(
                    name=f"analysis-step-{state.index}{_run_suffix(run, k)}",
                    action="create",
                    manifest=yamlio.dump(run),
                    # label-selector syntax over JSON paths (argo-workflows v4.1.2
                    # workflow/executor/resource.go matchConditions)
                    success_condition="status.phase == Successful",
                    failure_condition="status.phase in (Failed,Error,Inconclusive)",
                ))
        analysed = {i for i, _ in analyses}

        manual = [st for st in plan.steps[1:] if st.gate and st.index not in analysed
                  and not _hook_run(prepared, st)]
        # `argo resume`: a person judged the gate (only where a gate has no analysis)
        approve = Suspend(name="approve") if manual else None

        waves = argocd.waves(prepared)

        def sync(name: str, revision: str, wave: list[str], **kw: Any) -> None:
            if argocd_sync is not None:
                argocd_sync(name=name, arguments={"revision": revision, "apps": ",".join(wave)},
                            **kw)

        def move(prefix: str, revision: str, i: int | None = None, hook_run: str = "",
                 approve_waves: bool = False) -> None:
            """Sync (unless Argo CD does) and wait for each cluster wave in turn; with step
            ``i``, run that wave's AnalysisRuns (and, for a gate a person judges, wait for
            them) before the next wave moves: a canary that fails its gate stops the step
            before any later wave runs the commit."""
            for w, wave in enumerate(waves, 1):
                sync(f"{prefix}-sync" + (f"-wave-{w}" if len(waves) > 1 else ""), revision, wave)
                for app in wave:
                    args = {"revision": revision, "app": app}
                    if i is not None:
                        args["run"] = hook_run
                    wait_synced(name=_wait_name(prepared, f"{prefix}-synced", app),
                                arguments=args)
                if i is None:
                    continue
                runs = [r for app in wave
                        for r in analyses.get((i, _cluster_of(prepared, app)), [])]
                # step-I-analysis-<cluster> (-<k> without clusters)
                names = [f"step-{i}-analysis-" + str(r.name).removeprefix(f"analysis-step-{i}-")
                         for r in runs]
                if len(runs) > 1:
                    # one run per cluster of the wave, measured over the same minutes
                    with rollout.parallel():
                        for res, name in zip(runs, names, strict=True):
                            res(name=name)
                else:
                    for res, name in zip(runs, names, strict=True):
                        res(name=name)
                if approve_waves and w < len(waves):
                    assert approve is not None
                    approve(name=f"step-{i}-approve-wave-{w}")

        with Steps(name="rollout") as rollout:
            for state in plan.steps[1:]:
                i = state.index
                git_action(name=f"step-{i}-promote",
                           arguments={"action": "promote", "to": str(i)})
                hook_run = _hook_run(prepared, state) if state.gate else ""
                runs = i in analysed
                move(f"step-{i}", f"{{{{steps.step-{i}-promote.outputs.parameters.commit}}}}",
                     i, hook_run, approve_waves=bool(state.gate and not runs and not hook_run))
                if state.gate:
                    if runs:
                        message = f"AnalysisRun of step {i} Successful (workflow " \
                            "{{workflow.name}})"
                    elif hook_run:
                        message = f"PostSync AnalysisRun {hook_run} Successful (workflow " \
                            "{{workflow.name}})"
                    else:
                        assert approve is not None
                        approve(name=f"step-{i}-approve")
                        message = "approved with argo resume (workflow {{workflow.name}})"
                    if state.gate == EXPERIMENT:
                        # the decision is recorded by `dgdgen experiment --record`; resuming
                        # never passes it: anything but passed fails the workflow (rollback)
                        git_action(name=f"step-{i}-gate",
                                   arguments={"action": "require-gate", "to": str(i)})
                    else:
                        git_action(name=f"step-{i}-gate", arguments={
                            "action": "gate", "to": str(i), "message": message})
                if state.pause_seconds:
                    bake(name=f"step-{i}-bake",
                         arguments={"duration": str(state.pause_seconds)})
            if g.workflow.cleanup:
                git_action(name="cleanup", arguments={"action": "cleanup"})
                move("cleanup", "{{steps.cleanup.outputs.parameters.commit}}")

        failed = "{{workflow.status}} != Succeeded"
        with Steps(name="on-exit"):
            # A rollback is one commit per state, each Synced and Healthy before the next, so
            # every backward transition stays within the surge budget (plan.rollback_from). The
            # action commits nothing once the rollout is back (a shorter path ends early).
            path = prepared.plan.rollback_from(len(prepared.plan.steps) - 1)
            for k in range(1, len(path) + 1):
                name = "rollback" if k == 1 else f"rollback-{k}"
                git_action(name=name, arguments={"action": "rollback"}, when=failed)
                revision = "{{steps." + name + ".outputs.parameters.commit}}"
                # back to the known-good state in every cluster at once: all waves in one sync
                sync(f"{name}-sync", revision, argocd.app_names(prepared), when=failed)
                for app in argocd.app_names(prepared):
                    wait_synced(name=_wait_name(prepared, f"{name}-synced", app), when=failed,
                                arguments={"revision": revision, "app": app})
    out: dict[str, Any] = wt.to_dict()
    return out
