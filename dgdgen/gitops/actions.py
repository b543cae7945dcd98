"""Promotion as commits: render into a Git work tree, and move a rollout through its plan with
exactly one commit per action.

The recorded state lives in the rendered directory's index (:mod:`dgdgen.gitops.tree`): the
current plan state, the state it came from (which decides the sync waves), and the gate results.
Every action that writes runs in a writing session (:mod:`dgdgen.gitops.transaction`):

1. it takes the repository's writer lock, finishes or discards an interrupted earlier write, and
   refuses when the rollout's directory changed in Git after the command started;
2. it refuses on a dirty work tree, an unknown or impossible step, or a gate not recorded as
   passed;
3. it re-renders and commits only that directory, with a clear message — the commit first, the
   work tree after it;
4. optionally it pushes (a push the remote rejects takes the commit back).

Why one module: every action below is the same writing session with its own few lines —
the refusals (held, dirty, gate not passed), the commit subject and body, and the hand-off to
:mod:`dgdgen.gitops.transaction` are shared; the index, the tree and the transaction live in
their own modules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import TYPE_CHECKING

from dgdgen.errors import DgdgenError, InputError, Location
from dgdgen.gitops import argocd, lock, repo, transaction, tree
from dgdgen.gitops.index import GATE_RESULTS, INDEX, MAX_HOLD_TEXT, GateResult, Hold, Index
from dgdgen.gitops.target import (
    Outcome,
    Target,
    current,
    index_of,
    recorded,
    same_generations,
    state_files,
    state_of,
)

if TYPE_CHECKING:
    from dgdgen.cluster.transitions import State
    from dgdgen.plan import PlanStep


class GateRefused(DgdgenError):
    """A promotion refused because the step's gate is not recorded as passed."""

    exit_code = 1


class Held(InputError):
    """A promotion or cleanup refused because the rollout is paused (``dgdgen pause``). Its own
    exit code, 4: the rollout workflow waits on it (and retries) instead of failing."""

    exit_code = 4


def render_into(t: Target, selector: int | str | None, *, force: bool = False,
                commit: bool = False, init: bool = False, validate: bool = True) -> Outcome:
    """``dgdgen render SPEC --into PATH``: the recorded state (the baseline when nothing is
    recorded), or the state ``selector`` (recorded as the new current state)."""
    notes: list[str] = []
    if init and t.top is None:
        t = Target(t.prepared, t.into, repo.init(t.into, t.prepared.loaded.spec.spec.gitops.branch))
        notes.append(f"initialised a Git repository in {t.into}")
    if commit and t.top is None:
        raise InputError("not inside a Git work tree", location=Location(t.into),
                         hint="pass --init to create one, or drop --commit")
    author = t.prepared.loaded.spec.spec.gitops.commit_author
    intent = f"render --into --step {selector}" if selector is not None else "render --into"
    with transaction.writing(t.into, t.top, t.premise, intent, author) as session:
        notes.extend(session.notes)
        if session.finished is not None:
            return _finished(t, session.finished, notes)
        if commit:
            assert t.top is not None
            repo.require_clean(t.top)
        idx = recorded(t)
        same = idx is not None and same_generations(t, idx)
        gates = dict(idx.gates) if idx is not None and same else {}
        if idx is not None and selector is not None and (
                idx.step in ("rollback", "cleanup")
                or t.prepared.state(selector).kind == "baseline"):
            gates = {}  # a new rollout starts: the results of the last one judged other pods
        if selector is None:
            if idx is not None and same:
                state = state_of(t, idx.step)
                previous = state_of(t, idx.previous)
            else:
                state, previous = t.prepared.plan.steps[0], None
        else:
            state = t.prepared.state(selector)
            previous = state_of(t, idx.step) if idx is not None and same else None
            if previous is not None and previous.label == state.label:
                previous = state_of(t, idx.previous) if idx is not None else None
        assert state is not None
        hold = idx.hold if idx is not None else None
        if idx is not None and hold is not None and selector is not None \
                and state.kind == "step" and (
                    not same or state.index > (state_of(t, idx.step) or state).index):
            _refuse_held(t, hold, f"render {_title(state)}")
        files = state_files(t.prepared, state, previous, validate=validate)
        _invariants(t, previous, state, files)
        subject = _subject(t, f"render {_title(state)}")
        message = subject + "\n\n" + _describe(t, state) + _trailers(t, state)
        change, sha = session.write(files, index_of(t, state, previous, gates, hold),
                                    message=message,
                                    subject=subject, force=force, commit=commit)
    return Outcome(message, state, change, sha, notes=tuple(notes))


def _finished(t: Target, done: transaction.Finished, notes: list[str]) -> Outcome:
    """The outcome of a rerun whose own interrupted command had committed: it only finished
    writing that commit's files (exactly one step, as the interrupted command meant)."""
    _idx, state, _prev = current(t)
    return Outcome(done.message, state, tree.Change((), (), ()), done.commit,
                   notes=(*notes, done.note))


# --------------------------------------------------------------------------- moves


def _title(state: PlanStep) -> str:
    if state.kind == "baseline":
        return "step 0 (baseline)"
    if state.kind == "step":
        return f"step {state.index}"
    if state.kind == "rollback-step":
        return state.label
    return state.kind


def _weights(state: PlanStep) -> str:
    s, c = state.stable, state.candidate
    parts = []
    if s.present:
        parts.append(f"{s.revision} {s.weight}%")
    if c.present:
        parts.append(f"{c.revision} {c.weight}%")
    return " / ".join(parts)


def _subject(t: Target, what: str) -> str:
    return f"{t.prepared.plan.rollout}: {what}"


def _describe(t: Target, state: PlanStep) -> str:
    from dgdgen.pipeline.report import replicas_text

    p = t.prepared
    lines = [f"traffic: {_weights(state)}"]
    for role, gen in (("stable", state.stable), ("candidate", state.candidate)):
        lines.append(f"{role} {gen.revision}: {replicas_text(p, gen)}")
    return "\n".join(lines) + "\n"


def _trailers(t: Target, state: PlanStep) -> str:
    return f"\nDgdgen-Rollout: {t.prepared.plan.rollout}\nDgdgen-Step: {state.label}\n"


def _unknown(t: Target, selector: object) -> str:
    from dgdgen.plan.prepared import unknown_state

    return unknown_state(t.prepared.plan, selector, t.prepared.loaded.path)


def _gate_of(idx: Index, state: PlanStep) -> GateResult | None:
    return idx.gates.get(state.label)


def _require_gate(t: Target, idx: Index, state: PlanStep, action: str,
                  skip_reason: str | None = None) -> str | None:
    """Refuse unless the current step's gate is recorded as passed; describe it else. A gate
    that is not recorded refuses too: leaving a gated step without its result would move traffic
    on a judgement nobody made. ``skip_reason`` (``--skip-gate --reason``) is the explicit,
    recorded override: the caller writes it into a commit trailer."""
    if not state.gate:
        return None
    res = _gate_of(idx, state)
    if res is not None and res.result == "passed":
        return f"gate {state.gate} of {_title(state)}: passed"
    recorded_as = "not recorded" if res is None else f"recorded as {res.result}" + (
        f" ({res.message})" if res.message else "")
    if skip_reason is not None:
        return f"gate {state.gate} of {_title(state)}: skipped ({recorded_as}): {skip_reason}"
    raise GateRefused(
        f"{t.rel}: refusing to {action}: gate {state.gate!r} of {_title(state)} is {recorded_as}"
        + ("; record its result with `dgdgen gate`" if res is None else
           "; roll back with `dgdgen rollback`, or record a new result with `dgdgen gate`")
        + ", or override with --skip-gate --reason TEXT (recorded in the commit)"
    )


def _skip_reason(reason: str | None) -> str | None:
    """The override's reason, one line (it becomes a commit trailer)."""
    if reason is None:
        return None
    text = " ".join(_text_arg(reason, "--reason").split())
    if not text:
        raise InputError("--skip-gate needs a non-empty --reason (it is recorded in the commit)")
    return text


def _text_arg(value: str, flag: str) -> str:
    """A free-text argument that goes into a commit: UTF-8 text (a command line can carry bytes
    that are not), without NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{flag}: not UTF-8 text: {value!r}") from None
    if "\0" in value:
        raise InputError(f"{flag}: holds a NUL character")
    return value


def _overridden(idx: Index, state: PlanStep, skip: str | None) -> list[str]:
    """The trailer value for the current step's gate when ``--skip-gate`` overrode it."""
    res = _gate_of(idx, state)
    if skip is None or not state.gate or (res is not None and res.result == "passed"):
        return []
    result = "not recorded" if res is None else res.result
    return [f"{state.gate} of {_title(state)} ({result}): {skip}"]


def _skip_trailers(notes: list[str]) -> list[str]:
    return [f"Dgdgen-Skip-Gate: {n}" for n in notes]


def _experiment_trailers(idx: Index, state: PlanStep) -> list[str]:
    """The decision of an experiment step (`dgdgen experiment --record`), carried by the commit
    that promotes or rolls back from it."""
    from dgdgen.analysis.gates import EXPERIMENT

    res = _gate_of(idx, state)
    if state.gate != EXPERIMENT or res is None or not res.message:
        return []
    return ["Dgdgen-Experiment: " + " ".join(res.message.split())]


def _move(t: Target, s: transaction.Session, idx: Index, frm: PlanStep, to: PlanStep,
          subject: str, extra: list[str], push: bool, trailers: list[str] | None = None
          ) -> Outcome:
    assert t.top is not None
    files = state_files(t.prepared, to, frm)
    warned = _invariants(t, frm, to, files, refuse=to.kind not in ("rollback", "rollback-step"))
    body = [f"{_title(frm)} → {_title(to)}", _describe(t, to).rstrip("\n"), *extra]
    message = _subject(t, subject) + "\n\n" + "\n".join(body) + "\n" + _trailers(t, to) \
        + "".join(f"{x}\n" for x in trailers or [])
    parent = s.base
    change, sha = s.write(files, index_of(t, to, frm, dict(idx.gates), idx.hold), message=message,
                          subject=_subject(t, subject))
    pushed = _push(t, sha, subject, undo_to=parent if sha else None) if push else None
    synced = argocd.manual_sync_note(
        t.prepared, sha, pushed=bool(pushed), step=to.index if to.kind == "step" else None,
        all_at_once=to.kind in ("rollback", "rollback-step")) if sha else None
    return Outcome(message, to, change, sha, pushed,
                   notes=(*s.notes, *warned, *([synced] if synced else [])))


def _invariants(t: Target, frm: PlanStep | None, to: PlanStep, files: dict[str, str], *,
                refuse: bool = True) -> list[str]:
    """Check the move from ``frm`` to ``to`` as a cluster would run it (docs/invariants.md):
    an error refuses it (exit 1, nothing written) — except on the way back, where refusing would
    keep the traffic where it fails: there every finding is a note. Returns the notes."""
    from dgdgen.cluster.check import InvariantBroken, check_move, require
    from dgdgen.cluster.transitions import read_state

    def state(label: str, texts: dict[str, str]) -> State:
        return read_state(label, [(os.path.join(t.rel, r), x) for r, x in sorted(texts.items())
                                  if r.endswith((".yaml", ".yml"))])

    new = state(to.label, files)
    old = None
    if frm is not None:
        label = frm.label if frm.label != to.label else f"{frm.label} (as committed)"
        old = state(label, state_files(t.prepared, frm, None, validate=False))
    findings = check_move(old, new, t.rel)
    try:
        warnings = require(findings)
    except InvariantBroken as exc:
        if refuse:
            raise
        warnings = exc.findings
    return [f"{f.file}:{f.line}: {f.code} {f.slug}: {f.message}" for f in warnings]


def _writing(t: Target, intent: str) -> contextlib.AbstractContextManager[transaction.Session]:
    """The writing session of a promotion command (see :mod:`dgdgen.gitops.transaction`)."""
    if t.top is None:
        raise InputError("not inside a Git work tree", location=Location(t.into),
                         hint="promotions are commits; see `dgdgen render --into PATH --init`")
    return transaction.writing(t.into, t.top, t.premise, intent,
                               t.prepared.loaded.spec.spec.gitops.commit_author)


# --------------------------------------------------------------------------- pushing


def _push(t: Target, sha: str | None, subject: str, *, undo_to: str | None = None) -> str:
    """Push, never forced. A push the remote rejects because its branch moved (someone else
    pushed) takes the new commit ``sha`` back (when ``undo_to``, its parent, is given): the
    step it records was decided on a state that is no longer the remote's. Any other failure
    keeps the commit and says exactly how to push it: a failed push must never leave a commit
    nobody knows about (a retry would promote past its gate)."""
    assert t.top is not None
    g = t.prepared.loaded.spec.spec.gitops
    where = f"{g.remote} {('HEAD:refs/heads/' + g.branch) if g.branch else 'HEAD'}"
    lock.pause_point("push")
    try:
        return repo.push(t.top, g.remote, g.branch)
    except repo.PushRejected as exc:
        if undo_to is not None and sha is not None:
            repo.undo(t.top, sha, undo_to)
            raise InputError(
                f"nothing was pushed: {g.remote} {exc}: its branch holds commits this one does "
                f"not (someone else pushed); the local commit {sha[:12]} ({subject}) was taken "
                "back, so the directory is as it was",
                hint="pull, check `dgdgen status`, then run the command again if it still "
                "applies",
            ) from None
        raise InputError(
            f"the push of {(sha or 'HEAD')[:12]} ({subject}) was rejected: {exc}",
            hint="pull (or rebase) first, then run the command again",
        ) from None
    except (repo.GitError, InputError) as exc:
        raise InputError(
            f"committed {(sha or 'HEAD')[:12]} ({subject}) in {t.top}, but the push failed: "
            f"{exc}",
            hint=f"the commit is only local: push it with `git -C {t.top} push {where}`, or run "
            "the same command with --push again: it pushes that commit and goes no further",
        ) from None


def _push_pending(t: Target, idx: Index, state: PlanStep) -> Outcome | None:
    """With --push, before moving forward: commits of this rollout that an earlier, failed
    push left local are pushed, and nothing else is done — the step they hold has not been
    synced, so its gate cannot have been judged."""
    assert t.top is not None
    g = t.prepared.loaded.spec.spec.gitops
    try:
        pending = repo.unpushed(t.top, g.remote, g.branch, t.into)
    except repo.GitError as exc:
        raise InputError(f"cannot compare with the remote {g.remote!r} before pushing: {exc}",
                         hint="fix the remote, then run the command again") from None
    if pending is None:
        raise InputError(
            f"{t.rel}: the remote {g.remote!r} has commits this branch does not; refusing to "
            "move the rollout on top of a stale branch",
            hint="pull (or rebase) first, then run the command again",
        )
    if not pending or state.index == 0:
        return None  # the baseline is what runs today: it goes out with the next commit
    remote_index = repo.remote_file(t.top, g.remote, g.branch, os.path.join(t.into, INDEX))
    where = f"{g.remote}:{t.rel}/{INDEX}"
    if remote_index is not None and Index.parse(remote_index, where).step == idx.step:
        # the remote already runs this step: what is local records its gate, and goes out
        # with the move
        return None
    pushed = _push(t, pending[-1], "the unpushed commits")
    message = (f"pushed {len(pending)} earlier commit(s) that were only local "
               f"({', '.join(c[:12] for c in pending)}); {_title(state)} is now on {pushed}. "
               "Not moving further: wait for it to sync and for its gate, then run the command "
               "again\n")
    return Outcome(message, state, tree.Change((), (), ()), None, pushed)


def _prepare_move(t: Target) -> tuple[Index, PlanStep]:
    """Inside the writing session: the work tree must be clean, the recorded state known."""
    assert t.top is not None
    repo.require_clean(t.top)
    idx, state, _prev = current(t)
    return idx, state


def _terminal(t: Target, state: PlanStep, action: str) -> None:
    if state.kind in ("rollback", "cleanup"):
        raise InputError(
            f"{t.rel}: cannot {action}: the rollout is finished ({state.kind})",
            hint="to roll out a new change, edit the spec and run "
            f"`dgdgen render SPEC --into {t.rel} --step 0 --commit`",
        )
    if state.kind == "rollback-step" and action != "roll back":
        raise InputError(
            f"{t.rel}: cannot {action}: a rollback is in progress ({state.label})",
            hint=f"finish it with `dgdgen rollback SPEC --into {t.rel}` (one state per commit)",
        )


def promote(t: Target, to: int | None = None, *, push: bool = False,
            skip_gate: str | None = None) -> Outcome:
    """Move forward. Refuses (:class:`GateRefused`) unless the gate of the step being left is
    recorded as passed, and never jumps over a gated step; ``skip_gate`` (a reason) overrides
    both and is recorded as ``Dgdgen-Skip-Gate`` trailers."""
    skip = _skip_reason(skip_gate)
    intent = f"promote --to {to}" + (f" --skip-gate --reason {skip}" if skip else "")
    with _writing(t, intent) as s:
        if s.finished is not None:
            return _finished(t, s.finished, s.notes)
        return _promote(t, s, to, push, skip)


def _promote(t: Target, s: transaction.Session, to: int | None, push: bool, skip: str | None
             ) -> Outcome:
    idx, state = _prepare_move(t)
    _terminal(t, state, "promote")
    if idx.hold is not None:
        _refuse_held(t, idx.hold, "promote")
    pending = _push_pending(t, idx, state) if push else None
    if pending is not None:
        return pending
    last = len(t.prepared.plan.steps) - 1
    if to is None:
        if state.index >= last:
            raise InputError(
                f"{t.rel} is at the last step ({state.index}); run `dgdgen cleanup` to remove "
                "the old generation"
            )
        to = state.index + 1
    if to < 0 or to > last:
        raise InputError(_unknown(t, to))
    if to <= state.index:
        raise InputError(
            f"{t.rel} is at step {state.index}; promotion only moves forward (to "
            f"{state.index + 1}..{last})" if state.index < last else
            f"{t.rel} is at the last step; promotion only moves forward",
            hint="use `dgdgen rollback` to return all traffic to the stable generation",
        )
    gate = _require_gate(t, idx, state, f"promote to step {to}", skip)
    target = t.prepared.plan.steps[to]
    extra = [gate] if gate else []
    skipped = [st for st in t.prepared.plan.steps[state.index + 1:to] if st.gate]
    if skipped and skip is None:
        raise GateRefused(
            f"{t.rel}: refusing to promote to step {to}: it jumps over "
            + ", ".join(f"gate {st.gate!r} of step {st.index}" for st in skipped)
            + ", which would never be evaluated; promote one step at a time, or override with "
            "--skip-gate --reason TEXT (recorded in the commit)"
        )
    notes = _overridden(idx, state, skip)
    if skipped:
        extra.append("skipped gates: " + ", ".join(f"{st.gate} of step {st.index}"
                                                    for st in skipped) + f": {skip}")
        notes += [f"{st.gate} of step {st.index} (jumped over): {skip}" for st in skipped]
    nxt = t.prepared.plan.steps[to + 1] if to < last else None
    if nxt is not None:
        extra.append(f"next: step {nxt.index} at {nxt.candidate.weight}%"
                     + (f", after the gate {target.gate}" if target.gate else ""))
    else:
        extra.append("next: cleanup" + (f", after the gate {target.gate}" if target.gate else ""))
    subject = f"promote to step {to} ({target.candidate.revision} at {target.candidate.weight}%)"
    return _move(t, s, idx, state, target, subject, extra, push,
                 _skip_trailers(notes) + _experiment_trailers(idx, state))


def rollback(t: Target, *, push: bool = False) -> Outcome:
    with _writing(t, "rollback") as s:
        if s.finished is not None:
            return _finished(t, s.finished, s.notes)
        return _rollback(t, s, push)


def _rollback(t: Target, s: transaction.Session, push: bool) -> Outcome:
    idx, state = _prepare_move(t)
    _terminal(t, state, "roll back")
    if state.kind == "baseline":
        raise InputError(f"{t.rel} is at the baseline: there is nothing to roll back")
    # A rollback walks the steps backwards, one state per commit, so that every transition stays
    # within the surge budget (plan.rollback_from); each `dgdgen rollback` commits the next one.
    path = t.prepared.plan.rollback_from(state.index)
    target = path[0]
    extra = []
    res = _gate_of(idx, state)
    if res is not None:
        extra.append(f"gate {res.gate} of {_title(state)}: {res.result}"
                     + (f" ({res.message})" if res.message else ""))
    if target.kind == "rollback-step":
        subject = (f"roll back towards {target.stable.revision}: {target.label}, step "
                   f"{target.index}'s replicas (from {_title(state)})")
        extra.append(f"rollback continues: {len(path) - 1} more state(s); run `dgdgen rollback` "
                     "again once this one is Synced and Healthy")
    else:
        subject = f"roll back to {target.stable.revision} (from {_title(state)})"
    out = _move(t, s, idx, state, target, subject, extra, push, _experiment_trailers(idx, state))
    if t.prepared.loaded.spec.spec.analysis.hooks.enabled:
        from dgdgen.gitops.argocd import app_names

        # Argo CD starts no new sync while one runs, and a PostSync AnalysisRun keeps the
        # step's sync running for the whole analysis: stop it so the rollback applies now.
        apps = app_names(t.prepared)
        out = dataclasses.replace(out, notes=(*out.notes,
            "analysis hooks: a running PostSync AnalysisRun holds Argo CD's sync, and this "
            "commit syncs only after it; stop it now with "
            + " and ".join(f"`argocd app terminate-op {a}`" for a in apps)
            + " (the rollout workflow does this itself)",))
    return out


def cleanup(t: Target, *, push: bool = False, skip_gate: str | None = None) -> Outcome:
    skip = _skip_reason(skip_gate)
    with _writing(t, "cleanup" + (f" --skip-gate --reason {skip}" if skip else "")) as s:
        if s.finished is not None:
            return _finished(t, s.finished, s.notes)
        return _cleanup(t, s, push, skip)


def _cleanup(t: Target, s: transaction.Session, push: bool, skip: str | None) -> Outcome:
    idx, state = _prepare_move(t)
    _terminal(t, state, "clean up")
    if idx.hold is not None:
        _refuse_held(t, idx.hold, "clean up")
    last = len(t.prepared.plan.steps) - 1
    if state.index != last or state.candidate.weight != 100:
        raise InputError(
            f"{t.rel} is at {_title(state)} ({state.candidate.weight}% on the candidate); "
            f"cleanup removes the old generation only once the candidate carries 100% "
            f"(step {last})"
        )
    pending = _push_pending(t, idx, state) if push else None
    if pending is not None:
        return pending
    gate = _require_gate(t, idx, state, "clean up", skip)
    target = t.prepared.plan.cleanup
    subject = f"clean up: remove {target.stable.revision} ({target.candidate.revision} at 100%)"
    return _move(t, s, idx, state, target, subject, [gate] if gate else [], push,
                 _skip_trailers(_overridden(idx, state, skip)))


def record_gate(t: Target, result: str, *, step: int | None = None, message: str = "",
                push: bool = False) -> Outcome:
    """Record a gate result for the current (or given) step, as one commit."""
    if result not in GATE_RESULTS:
        raise InputError(f"a gate result is one of {', '.join(GATE_RESULTS)}, got {result!r}")
    message = _text_arg(message, "--message")
    with _writing(t, f"gate --result {result} --step {step} --message {message}") as s:
        if s.finished is not None:
            return _finished(t, s.finished, s.notes)
        return _record_gate(t, s, result, step, message, push)


def _record_gate(t: Target, s: transaction.Session, result: str, step: int | None,
                 message: str, push: bool) -> Outcome:
    idx, state = _prepare_move(t)
    _terminal(t, state, "record a gate")
    if step is not None:
        if not 0 <= step < len(t.prepared.plan.steps):
            raise InputError(_unknown(t, step))
        if step != state.index:
            raise InputError(
                f"{t.rel} is at {_title(state)}; a gate result can only be recorded for the "
                "current step"
            )
    if not state.gate:
        raise InputError(f"{_title(state)} has no gate in the spec; nothing to record")
    assert t.top is not None
    gates = dict(idx.gates)
    gates[state.label] = GateResult(state.gate, result, message.strip())
    previous = state_of(t, idx.previous)
    files = state_files(t.prepared, state, previous)
    subject = f"gate {state.gate} of {_title(state)}: {result}"
    if result != "passed" and message.strip():
        # what failed on the line that says so (from `analyze --record`: each metric that did
        # not pass, its figure and threshold; dgdgen/analysis/gateline.py)
        subject += f" ({' '.join(message.split())})"
    body = [message.strip()] if message.strip() else []
    text = _subject(t, subject) + "\n\n" + "\n".join(body + [f"traffic: {_weights(state)}"]) \
        + "\n" + _trailers(t, state)
    parent = s.base
    change, sha = s.write(files, index_of(t, state, previous, gates, idx.hold), message=text,
                          subject=_subject(t, subject))
    pushed = _push(t, sha, subject, undo_to=parent if sha else None) if push else None
    return Outcome(text, state, change, sha, pushed, notes=tuple(s.notes))


# --------------------------------------------------------------------------- holds


def command(t: Target, verb: str, *extra: str) -> str:
    """The command line of ``dgdgen VERB`` on this rollout, as the user would type it."""
    import shlex

    spec = os.path.relpath(t.prepared.loaded.path)
    return " ".join(["dgdgen", verb, shlex.quote(spec), "--into", shlex.quote(t.rel), *extra])


def _refuse_held(t: Target, hold: Hold, action: str) -> None:
    raise Held(
        f"{t.rel}: refusing to {action}: the rollout is paused by {hold.by} since {hold.since}: "
        f"{hold.reason}",
        hint=f"resume it with `{command(t, 'resume')}`; `dgdgen rollback` is never held",
    )


def _one_line(value: str, flag: str) -> str:
    text = " ".join(_text_arg(value, flag).split())
    if not text:
        raise InputError(f"{flag} needs a non-empty text (it is recorded in the commit)")
    if len(text) > MAX_HOLD_TEXT:
        raise InputError(f"{flag}: at most {MAX_HOLD_TEXT} characters, got {len(text)}")
    return text


def _who(t: Target, by: str | None) -> str:
    """Who holds the rollout: ``--by``, else the author the commit gets (the spec's
    ``gitops.commitAuthor``, else git's identity, else dgdgen's fallback)."""
    if by is not None:
        return _one_line(by, "--by")
    assert t.top is not None
    env = repo.identity(t.top, t.prepared.loaded.spec.spec.gitops.commit_author)
    # git's own answer (its environment, then its configuration): the commit's author
    ident = repo.git(t.top, "var", "GIT_AUTHOR_IDENT", env=env).stdout.strip()
    return ident.rsplit(" ", 2)[0]


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pause(t: Target, reason: str, *, by: str | None = None, push: bool = False) -> Outcome:
    """``dgdgen pause``: record a hold in the index, as one commit. ``promote`` and ``cleanup``
    refuse while it is there (:class:`Held`, exit 4); ``rollback`` is never held."""
    why = _one_line(reason, "--reason")
    with _writing(t, f"pause --reason {why}" + (f" --by {by}" if by else "")) as s:
        if s.finished is not None:
            return _finished(t, s.finished, s.notes)
        idx, state = _prepare_move(t)
        if idx.hold is not None:
            h = idx.hold
            raise InputError(
                f"{t.rel} is already paused by {h.by} since {h.since}: {h.reason}",
                hint=f"`{command(t, 'resume')}` first to hold it for another reason")
        hold = Hold(_who(t, by), why, _now())
        subject = f"pause at {_title(state)}: {why}"
        text = _subject(t, subject) + "\n\n" + "\n".join([
            (f"held by {hold.by} since {hold.since}: promote and cleanup refuse until "
            "`dgdgen resume`; rollback is not held"),
            f"traffic: {_weights(state)}"]) + "\n" + _trailers(t, state) \
            + f"Dgdgen-Hold: {hold.by}: {why}\n"
        return _write_index(t, s, idx, state, hold, text, subject, push)


def resume(t: Target, *, push: bool = False) -> Outcome:
    """``dgdgen resume``: remove the hold ``dgdgen pause`` recorded, as one commit."""
    with _writing(t, "resume") as s:
        if s.finished is not None:
            return _finished(t, s.finished, s.notes)
        idx, state = _prepare_move(t)
        h = idx.hold
        if h is None:
            raise InputError(f"{t.rel} is not paused: nothing to resume")
        subject = f"resume at {_title(state)}"
        text = _subject(t, subject) + "\n\n" + "\n".join([
            f"held by {h.by} since {h.since}: {h.reason}",
            f"traffic: {_weights(state)}"]) + "\n" + _trailers(t, state) \
            + f"Dgdgen-Resume: {h.by}: {h.reason}\n"
        return _write_index(t, s, idx, state, None, text, subject, push)


def _write_index(t: Target, s: transaction.Session, idx: Index, state: PlanStep,
                 hold: Hold | None, text: str, subject: str, push: bool) -> Outcome:
    """Commit the same state with another hold (the files do not change)."""
    previous = state_of(t, idx.previous)
    files = state_files(t.prepared, state, previous)
    parent = s.base
    change, sha = s.write(files, index_of(t, state, previous, dict(idx.gates), hold),
                          message=text, subject=_subject(t, subject))
    pushed = _push(t, sha, subject, undo_to=parent if sha else None) if push else None
    return Outcome(text, state, change, sha, pushed, notes=tuple(s.notes))
