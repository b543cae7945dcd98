"""What one YAML input may cost and hold, checked before any parser builds it.

:class:`Limits` (set once by the CLI) caps a file's size, its nesting depth, its aliases and the
nodes alias expansion may add. :func:`check_limits` is one linear pass over libyaml's events that
refuses, before either parser builds anything, nesting deeper than the bound, more aliases than
the bound, alias bombs, recursive aliases and tags other than the plain YAML types; a cheap scan
of the text (:func:`_may_exceed`) leaves that pass out where it cannot find anything. The bounds
every loader applies to a scalar as it reads it live here too: an integer fits in 64 bits, a
string is Unicode text, and a memo of scalars stays bounded (docs/robustness.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dgdgen.errors import InputError, Location


@dataclass(frozen=True)
class Limits:
    """What one YAML input may cost. The defaults are far above any real DGD or rollout spec
    (the largest upstream DGD is a few kB, nested about 12 levels, with no aliases)."""

    max_bytes: int = 8 * 1024 * 1024
    max_depth: int = 64
    max_aliases: int = 1000
    max_alias_nodes: int = 100_000  # nodes alias expansion may add to one document
    # the largest stream ruamel.yaml reads where libyaml cannot (load_documents): its worst
    # cost, about 1.5 s of CPU and 60 MB, is what the rest of a command costs
    max_ruamel_bytes: int = 64 * 1024


_limits = Limits()


def set_limits(limits: Limits) -> None:
    """Set the limits for every later load (the CLI does this once, from --max-input-size)."""
    global _limits
    _limits = limits


def get_limits() -> Limits:
    return _limits


def parse_size(text: str) -> int:
    """``8M`` / ``512k`` / ``1G`` / ``1048576`` → bytes (binary multiples)."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)(i?[bB])?\s*", text)
    if not m:
        raise ValueError(f"not a size: {text!r} (expected e.g. 8M, 512k, 1G)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]


def size_error(size: int, file: str) -> InputError:
    return InputError(
        f"input is {size} bytes, over the limit of {_limits.max_bytes} bytes for one YAML file",
        location=Location(file),
        hint="raise it with --max-input-size if the file is meant to be this large",
    )


PLAIN_TAGS = {
    "tag:yaml.org,2002:" + t: t for t in ("str", "int", "float", "bool", "null", "timestamp")
}
_COLLECTION_TAGS = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


def shown_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag


def mark_position(mark: Any) -> tuple[int, int]:
    """The 1-based (line, column) of a parser's mark (PyYAML and ruamel.yaml count from 0)."""
    return mark.line + 1, mark.column + 1


def too_deep(location: Location) -> InputError:
    """The one refusal of nesting over the limit, whichever pass or parser meets it first."""
    return InputError(f"nested more than {_limits.max_depth} levels deep", location=location)


# Kubernetes reads an integer into an int64 (apimachinery's JSON and YAML decoding; the CRD
# schemas' int32/int64 formats are narrower still), so a wider one is refused where it is read,
# at its field. Python reads any width, but converts at most 4,300 digits between text and int
# (sys.int_info.default_max_str_digits) and a long text costs quadratic time: the text is checked
# before Python reads it, and a value never leaves a loader unbounded.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1


class BadScalar(Exception):
    """A scalar that is refused (its message), raised where it is read and turned into an error
    at its field by the walk that knows the field."""


# What the constructors of the plain YAML types (PyYAML's and ruamel.yaml's) raise for a text
# that their resolver took for the type, or that a tag names, but that holds no value of it:
# `2024-13-45` and `2001-02-30 25:61:61` look like timestamps (datetime refuses them), `0b_`
# and `0x_` like integers without a digit, `._` like a float, `+99:00` is no time zone,
# `!!bool maybe` is no boolean. Every loader reads a typed scalar through
# :func:`unreadable_scalar` at this one boundary, so a scalar either has its value or is refused
# at its field (docs/robustness.md, "Reading YAML").
UNREADABLE_SCALAR = (ValueError, KeyError, AttributeError, IndexError, OverflowError, TypeError)

_TYPE_WORDS = {"int": "integer", "float": "floating-point number", "bool": "boolean",
               "null": "null", "timestamp": "timestamp"}


def unreadable_scalar(tag: str, text: str, exc: BaseException, *, tagged: bool) -> BadScalar:
    """The refusal of a scalar whose type's constructor raised ``exc`` on its text: which type
    it was read as, why it is not one where the reason is worded for people (a date's), and how
    to mean a string instead (``tagged``: a tag asked for the type, so the tag is to go)."""
    what = _TYPE_WORDS.get(tag.removeprefix("tag:yaml.org,2002:"), shown_tag(tag))
    shown = repr(text) if len(text) <= 40 else f"a scalar of {len(text):,} characters"
    why = f": {exc}" if what == "timestamp" and isinstance(exc, ValueError) and str(exc) else ""
    if tagged:
        return BadScalar(f"{shown} is not a valid {shown_tag(tag)}{why} (write a valid value, "
                         "or remove the tag)")
    article = "an" if what[0] in "aeiou" else "a"
    return BadScalar(f"{shown} is not a valid {what}{why} (unquoted, YAML reads this spelling "
                     f"as {article} {what}; quote it to keep it a string)")


def int_text_fits(text: str) -> bool:
    """Whether an integer's text may hold a 64-bit value (binary needs 64 digits at most)."""
    digits = text.replace("_", "").lstrip("+-")
    if digits[:2] in ("0x", "0o", "0b", "0X", "0O", "0B"):
        digits = digits[2:]
    return len(digits.lstrip("0")) <= 64


def int_range_error(text: str) -> BadScalar:
    shown = text if len(text) <= 40 else f"an integer of {len(text):,} characters"
    return BadScalar(f"{shown} does not fit in a 64-bit integer (out of range: Kubernetes reads "
                      f"integers from {INT_MIN} to {INT_MAX})")


def bounded_int(value: int, text: str | None = None) -> int:
    """``value`` when it fits in 64 bits, else the refusal (``text``: as written)."""
    if INT_MIN <= value <= INT_MAX:
        return value
    raise int_range_error(text if text is not None else str(value))


def not_text(value: str) -> BadScalar | None:
    """The refusal of a string that is not Unicode text: a lone UTF-16 surrogate, which only an
    escape can write (``"\\ud800"``, half of a JSON-style pair), cannot be encoded in UTF-8 and
    Kubernetes' YAML reader refuses it."""
    if value.isascii():
        return None
    for c in value:
        if 0xD800 <= ord(c) <= 0xDFFF:
            return BadScalar(surrogate_message(f"\\u{ord(c):04x}"))
    return None


def surrogate_message(escape: str) -> str:
    return (f"{escape} is half of a UTF-16 surrogate pair, not a character: the string cannot be "
            "encoded in UTF-8 (write the character itself, or its \\U escape of 8 hex digits)")


def remember(cache: dict[Any, Any], key: Any, value: Any, text: str) -> None:
    """Keep a scalar's reading in a memo: only for short scalars (they repeat: keys, enums; long
    ones rarely), and the memo is emptied when full, so a long-lived process cannot grow it."""
    if len(text) <= 256:
        if len(cache) >= 65536:
            cache.clear()
        cache[key] = value


def _starts_a_node(text: str, indicator: str) -> bool:
    """Whether ``indicator`` (``*`` of an alias, ``!`` of a tag) appears where a node can start:
    at a line's start or after ``- ``, ``? ``, ``: ``, ``[``, ``{``, ``,`` — not in the middle of
    a scalar (``a && !isNaN(x)``). An over-estimate is harmless (the event pass then runs)."""
    i = text.find(indicator)
    while i != -1:
        j = i - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        following = text[i + 1: i + 2]
        if (j < 0 or text[j] in "\n\r-?:,[{") and following and following not in " \t\r\n,]}=":
            return True
        i = text.find(indicator, i + 1)
    return False


# an anchor that begins a word, then a tag (`key: &a !!binary ...`: a node's properties come in
# either order), which _starts_a_node does not see; the literal `&` first keeps the search at C
# speed, and only an anchor that begins a word is tried, so it stays linear in the text's size
_ANCHORED_TAG = re.compile(r"&(?<![^ \t\r\n,\[\]{}]&)[^ \t\r\n,\[\]{}]+[ \t]+!")


def _tag_after_anchor(text: str) -> bool:
    """Whether an anchor followed by a tag stands where a node can start (as in
    :func:`_starts_a_node`: not ``a && !isNaN(x)``)."""
    for m in _ANCHORED_TAG.finditer(text):
        j = m.start() - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        if j < 0 or text[j] in "\n\r-?:,[{":
            return True
    return False


def _may_exceed(text: str) -> bool:
    """False when ``text`` certainly has no alias and no tag, so the event pass can be skipped:
    the loaders build from libyaml's events and check the depth as they go, at the same line and
    column (dgdgen.yamlio.events.Builder, dgdgen.yamlio.yaml11._packed11), and libyaml's own
    bound on open flow collections reads as the same refusal (dgdgen.yamlio.errors). Nothing
    composes with libyaml's C composer, which recurses on the C stack (20,000 levels compose,
    50,000 crash), but ruamel.yaml's path, after the complete event pass. Counting the text's
    possible depth here sent every long file of flow lists through a second parse: 8 MB of
    `[]` cost twice the reading itself."""
    if _starts_a_node(text, "*") or _starts_a_node(text, "!"):
        return True
    return "&" in text and "!" in text and _tag_after_anchor(text)


def check_limits(text: str, file: str, *, always: bool = True) -> bool:
    """Refuse ``text`` before any parser builds it when it is too large, too deep, an alias bomb,
    holds a recursive alias or a tag outside the plain YAML types. One pass over libyaml's
    events (iterative: no recursion, whatever the depth); time and memory linear in the size.
    Syntax errors are left to the loader, which reports them with their position. Returns
    whether the event pass ran (with ``always=False`` it is skipped where it cannot find
    anything)."""
    if len(text) > _limits.max_bytes:
        raise size_error(len(text), file)
    if not always and not _may_exceed(text):
        return False
    import yaml
    from yaml import events as ev

    lim = _limits
    resolver: Any = yaml.resolver.Resolver()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)

    def fail(message: str, mark: Any, hint: str | None = None) -> InputError:
        return InputError(message, location=Location(file, *mark_position(mark)), hint=hint)

    try:
        depth = aliases = added = 0
        stack: list[list[Any]] = []  # [anchor, expanded size] of each open collection
        sizes: dict[str, int] = {}
        open_anchors: set[str] = set()
        while loader.check_event():
            e = loader.get_event()
            if isinstance(e, ev.DocumentStartEvent):
                depth = aliases = added = 0
                sizes.clear()
            elif isinstance(e, ev.CollectionStartEvent):
                if e.tag not in (None, "!") and e.tag not in _COLLECTION_TAGS:
                    raise fail(f"unsupported YAML tag {shown_tag(e.tag)}", e.start_mark,
                               "only plain YAML mappings, lists and scalars are read")
                depth += 1
                if depth > lim.max_depth:
                    raise too_deep(Location(file, *mark_position(e.start_mark)))
                stack.append([e.anchor, 1])
                if e.anchor:
                    open_anchors.add(e.anchor)
            elif isinstance(e, ev.CollectionEndEvent):
                anchor, size = stack.pop()
                depth -= 1
                if anchor:
                    sizes[anchor] = size
                    open_anchors.discard(anchor)
                if stack:
                    stack[-1][1] += size
            elif isinstance(e, ev.ScalarEvent):
                if e.tag not in (None, "!"):
                    kind = PLAIN_TAGS.get(e.tag)
                    if kind is None:
                        raise fail(f"unsupported YAML tag {shown_tag(e.tag)}", e.start_mark,
                                   "only plain YAML mappings, lists and scalars are read")
                    got = resolver.resolve(yaml.ScalarNode, e.value, (True, False))
                    if kind != "str" and got != e.tag and not (
                        kind == "float" and got == "tag:yaml.org,2002:int"
                    ):
                        raise fail(f"{e.value!r} is not a valid {shown_tag(e.tag)}",
                                   e.start_mark)
                if e.anchor:
                    sizes[e.anchor] = 1
                if stack:
                    stack[-1][1] += 1
            elif isinstance(e, ev.AliasEvent):
                if e.anchor in open_anchors:
                    raise fail(f"recursive alias *{e.anchor} (it refers to a node that "
                               "contains it)", e.start_mark)
                aliases += 1
                if aliases > lim.max_aliases:
                    raise fail(f"more than {lim.max_aliases} aliases in one document",
                               e.start_mark)
                size = sizes.get(e.anchor or "", 1)
                added += size
                if added > lim.max_alias_nodes:
                    raise fail(
                        f"aliases expand to more than {lim.max_alias_nodes} nodes "
                        "(an alias bomb?)", e.start_mark,
                    )
                if stack:
                    stack[-1][1] += size
    except yaml.YAMLError as exc:
        # the libyaml in PyYAML 6.0.4's wheels (0.2.6) refuses more than 1,000 open flow
        # collections while it scans ahead for a simple key, before the events above reach the
        # bound: the same refusal
        mark = getattr(exc, "problem_mark", None)
        if "maximum nesting depth" in str(getattr(exc, "problem", "")) and mark is not None:
            raise too_deep(Location(file, *mark_position(mark))) from None
        return True  # a syntax error: the loader itself reports it, with its position
    finally:
        loader.dispose()
    return True
