"""A finding's headline: what changed, in a few characters (STYLE.md principle 12 — say it
short, then deep). The whole change (every value, its reason and source) stays in the finding's
details and the verdict's ``changes``; here values are clipped so that one headline fits a
terminal line whatever a flag holds (a JSON connector config, a long image reference)."""

from __future__ import annotations

from dgdgen.check.classify import Change

VALUE_WIDTH = 24  # characters of one value in a headline (clipped with "…")
_BREAKS = frozenset('/"\',: =')  # where a value's words end


def clip(text: str, width: int = VALUE_WIDTH) -> str:
    """``text`` on one line, at most ``width`` characters (the middle elided: a value's ends
    tell most — a JSON's connector name, an image's tag)."""
    one = " ".join(text.split())
    if len(one) <= width:
        return one
    head = (width - 1) // 2
    return one[:head] + "…" + one[len(one) - (width - 1 - head):]


def _value(value: str | None) -> str:
    return "(unset)" if value is None else clip(value)


def _values(old: str | None, new: str | None) -> str:
    """``old→new``, each clipped around where the two differ: two long JSON configs that differ
    in their connector show the connectors, not their common ends."""
    if old is None or new is None or (len(old) <= VALUE_WIDTH and len(new) <= VALUE_WIDTH):
        return f"{_value(old)}→{_value(new)}"
    o, n = " ".join(old.split()), " ".join(new.split())
    start = 0
    while start < min(len(o), len(n)) and o[start] == n[start]:
        start += 1
    end = 0
    while end < min(len(o), len(n)) - start and o[-1 - end] == n[-1 - end]:
        end += 1
    def around(text: str) -> str:
        # the differing part, widened to the word it sits in (a path segment, a JSON value)
        lo, hi = start, len(text) - end
        while lo > 0 and text[lo - 1] not in _BREAKS and start - lo < 8:
            lo -= 1
        while hi < len(text) and text[hi] not in _BREAKS and hi - (len(text) - end) < 16:
            hi += 1
        part = text[lo:hi]
        if len(part) > VALUE_WIDTH:
            return ("…" if lo > 0 else "") + part[:VALUE_WIDTH - 1] + "…"
        return ("…" if lo > 0 else "") + part + ("…" if hi < len(text) else "")

    return f"{around(o)}→{around(n)}"


def images(old: str | None, new: str | None) -> str:
    """Two image references, shown by what differs: the tag (or digest) alone when the
    repository is the same."""
    if old is not None and new is not None:
        o_repo, o_sep, o_tag = old.rpartition("@" if "@" in old else ":")
        n_repo, n_sep, n_tag = new.rpartition("@" if "@" in new else ":")
        if o_sep and n_sep and o_repo == n_repo and "/" not in o_tag + n_tag:
            return f"image {o_sep}{clip(o_tag)}→{n_sep}{clip(n_tag)}"
    return f"image {_values(old, new)}"


def what_changed(change: Change) -> str:
    """``VllmPrefillWorker --kv-cache-dtype (unset)→fp8``: the component and the change."""
    field = change.field
    if field == "image":
        what = images(change.old, change.new)
    elif field.startswith("env:"):
        what = f"env {field[4:]} {_values(change.old, change.new)}"
    elif field == "served-model":  # a worker component removed with the last of its model
        what = f"removed, the last worker of {_value(change.old)}"
    elif field == "component":
        what = "added" if change.old is None else "removed"
    else:
        label = field.removeprefix("engine:")
        what = f"{label} {_values(change.old, change.new)}"
    return f"{change.component} {what}"
