"""``dgdgen explain``: one paragraph on where a rollout is, what it waits for, and the one
command that moves it on — from :func:`dgdgen.gitops.status.status` (HEAD's index, drift,
interrupted writes), the hold and the plan. Reads only.

What it waits for, first match wins: an interrupted write (the next writing command finishes or
discards it), uncommitted changes, drift from the recorded step, a hold (``dgdgen pause``), a
rollback in progress, the end, a gate not recorded / failed / inconclusive (for a metrics gate:
what its analysis counts), the step's bake time, and otherwise nothing but the next promotion.
"""

from __future__ import annotations

from dgdgen.gitops.actions import command
from dgdgen.gitops.status import status
from dgdgen.gitops.target import Target


def explain(t: Target) -> tuple[str, str, bool]:
    """The paragraph, the command that moves the rollout on, and whether it is blocked (it
    waits for something other than that command being run)."""
    from dgdgen.pipeline.report import duration_text

    st = status(t)
    s = st.state
    last = len(t.prepared.plan.steps) - 1
    where = {"baseline": f"{st.rollout} is at step 0 of {last} (the baseline)",
             "step": f"{st.rollout} is at step {s.index} of {last}",
             "rollback-step": f"{st.rollout} is rolling back ({s.label})",
             "rollback": f"{st.rollout} is rolled back",
             "cleanup": f"{st.rollout} is cleaned up"}[s.kind]
    where += (f": stable {s.stable.revision} {s.stable.weight}%, candidate "
              f"{s.candidate.revision} {s.candidate.weight}%"
              + (f" (commit {st.head[:12]})" if st.head else " (not committed)"))
    if not st.recorded:
        return ((f"Nothing is rendered in {st.path} yet; {st.rollout} would start at step 0 (the "
                "baseline)."), command(t, "render", "--commit"), False)
    if st.pending:
        return ((f"{where}. It waits for an interrupted write to be cleared: {st.pending}. Any "
                "writing command does it first; re-rendering the recorded step changes nothing "
                "else."), command(t, "render", "--commit"), True)
    if st.uncommitted or st.dirty:
        what = st.uncommitted or ("uncommitted changes: " + ", ".join(st.dirty[:5]))
        return ((f"{where}. It waits for the work tree: {what}; writing commands refuse until "
                "it is committed or discarded."), f"git -C {t.top} status", True)
    if st.drifted:
        return (f"{where}. Its directory differs from a fresh render of {s.label}: "
                + ", ".join(st.drifted[:5]) + "; look at the difference before moving on.",
                command(t, "render", "--check"), True)
    gate = st.gates.get(s.label)
    if st.hold is not None:
        h = st.hold
        held = (f"{where}. It is paused by {h.by} since {h.since}: {h.reason}; promote and "
                "cleanup refuse until it is resumed (a rollback is never held)")
        return held + ".", command(t, "resume"), True
    if s.kind == "rollback-step":
        return ((f"{where}: one state of the rollback path per commit. It waits for this state to "
                "be Synced and Healthy, then for the next rollback commit."),
                command(t, "rollback"), False)
    if s.kind in ("rollback", "cleanup"):
        return ((f"{where}; the rollout is finished and waits for nothing. To roll out a new "
                "change, edit the spec and render its baseline."),
                command(t, "render", "--step", "0", "--commit"), False)
    if s.gate and (gate is None or gate.result != "passed"):
        counted = _counted(t, s.index)
        if gate is None:
            return ((f"{where}. It waits for the gate {s.gate} of step {s.index}, not recorded "
                    f"yet{counted}; record its result once judged."),
                    command(t, "gate", "--result", "passed"), True)
        why = f" ({gate.message})" if gate.message else ""
        return ((f"{where}. The gate {s.gate} of step {s.index} is recorded as {gate.result}{why}"
                f"{counted}: it does not promote; roll back, or record a new result."),
                command(t, "rollback"), True)
    nxt = st.next_state
    assert nxt is not None
    passed = f"; the gate {s.gate} passed" if s.gate else ""
    bake = (f" after the step's bake time of {duration_text(s.pause_seconds)} (the workflow waits "
            "it out; by hand it is yours to keep)") if s.pause_seconds else ""
    if nxt.kind == "cleanup":
        return ((f"{where}{passed}. Nothing holds it: the next move removes the old generation"
                f"{bake}."), command(t, "cleanup"), False)
    return ((f"{where}{passed}. Nothing holds it: the next move is step {nxt.index} (candidate "
            f"{nxt.candidate.weight}%){bake}."), command(t, "promote"), False)


def _counted(t: Target, index: int) -> str:
    """What the step's metrics gate counts before it can pass ('' for a gate a person judges)."""
    from dgdgen.analysis.gates import step_gate
    from dgdgen.pipeline.report import duration_text

    if not t.prepared.loaded.spec.spec.analysis.enabled:
        return ""
    sg = step_gate(t.prepared, t.prepared.plan.steps[index])
    if sg is None:
        return ""
    text = f" (its analysis measures {', '.join(sg.metrics)}"
    if "requests" in sg.metrics:
        text += (f" and is Inconclusive below {sg.min_requests} requests per generation in the "
                 f"{duration_text(sg.window_seconds)} window")
        if sg.min_bake_seconds:
            text += f", about {duration_text(sg.min_bake_seconds)} at the expected rate"
    return text + ")"
