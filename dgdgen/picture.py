"""What the pictures (the plan's SVG, the rehearsal charts) share: the colour and the name of
each generation, and how wide a text is, so a label can be placed and a note wrapped without a
layout engine."""

from __future__ import annotations

# A revision named after a colour is drawn in it (a blue/green rollout's "blue" stable and
# "green" candidate); any other revision takes its role's colour.
NAMED_COLOURS = {
    "blue": "#1f6fb4", "green": "#2c9a2c", "red": "#d62728", "orange": "#f58518",
    "purple": "#8a5cc2", "violet": "#8a5cc2", "yellow": "#d9b400", "gold": "#d9b400",
    "teal": "#17a2a2", "cyan": "#17a2a2", "magenta": "#c2409e", "pink": "#e377c2",
    "brown": "#8c564b", "grey": "#7f7f7f", "gray": "#7f7f7f", "black": "#222222",
}
ROLE_COLOURS = {"stable": "#4c78a8", "candidate": "#f58518"}
# lines that are neither generation: the plan, the observed share, gridlines
INK, MUTED, GRID = "#222222", "#666666", "#e4e4e4"
FONT_FAMILY = "DejaVu Sans, Arial, sans-serif"


def generation_colours(stable: str, candidate: str) -> dict[str, str]:
    """``{"stable": colour, "candidate": colour}``: a revision's own colour where its name is
    one, else its role's; two generations never share a colour (both fall back to the roles')."""
    named = {role: NAMED_COLOURS.get(rev.lower()) for role, rev in
             (("stable", stable), ("candidate", candidate))}
    out = {role: named[role] or ROLE_COLOURS[role] for role in named}
    if out["stable"] == out["candidate"]:
        # one named, the other's role colour the same hue: the unnamed takes the other role's
        unnamed = next((r for r in out if named[r] is None), None)
        if unnamed is not None:
            other = "candidate" if unnamed == "stable" else "stable"
            out[unnamed] = ROLE_COLOURS[other]
        if out["stable"] == out["candidate"]:
            out = dict(ROLE_COLOURS)
    return out


def generation_label(role: str, revision: str, generated: bool) -> str:
    """How a picture names a generation, as the spec does: ``stable bs16``; a revision the spec
    does not set is a content hash dgdgen made, and says so: ``candidate (rc33bd73, generated)``."""
    return f"{role} ({revision}, generated)" if generated else f"{role} {revision}"


# Advance per character in em of DejaVu Sans, rounded up by class: narrow punctuation and
# letters, digits and lower case, capitals and wide symbols (bold: about 10 % wider).
_NARROW = frozenset(" !'(),-./:;I[]fijlrt|")
_WIDE = frozenset("%@MWmw—…≤≥→×#+<=>~&")


def text_width(text: str, size: float, bold: bool = False) -> float:
    em = sum(0.42 if ch in _NARROW else 1.0 if ch in _WIDE
             else 0.8 if ch.isupper() else 0.64 for ch in text)
    return em * size * (1.1 if bold else 1.0)


def wrap(text: str, width: float, size: float) -> list[str]:
    """``text`` in lines no wider than ``width`` pixels at ``size``, words kept whole."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_width(f"{lines[-1]} {word}", size) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines
