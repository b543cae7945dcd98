"""A YAML parser's refusal as an :class:`~dgdgen.errors.InputError`, in the same words whichever
parser met it (libyaml through PyYAML, or ruamel.yaml): at its line and column, with what
libyaml leaves out put back (the character it cannot read, the field of a bad escape, the
``%YAML`` version it refuses), and an error raised where the file is not known placed in it.
"""

from __future__ import annotations

import re
from typing import Any

from dgdgen.errors import InputError, Location
from dgdgen.yamlio.doc import FieldPath
from dgdgen.yamlio.limits import mark_position, surrogate_message, too_deep


def from_yaml_error(exc: Exception, file: str, text: str | None = None) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    # libyaml says "found character that cannot start any token" without the character that the
    # pure-Python parsers name; put it back so both loaders report the same thing.
    index = getattr(mark, "index", None)
    if (text is not None and isinstance(index, int) and 0 <= index < len(text)
            and problem.startswith("found character that ")):
        problem = f"found character {text[index]!r} that " + problem[len("found character that "):]
    context = getattr(exc, "context", None)
    message = f"malformed YAML: {problem}"
    if context:
        message += f" ({context})"
    location = Location(file)
    position = getattr(exc, "position", None)  # a reader error: a character offset, no mark
    if mark is not None:
        location = Location(file, *mark_position(mark))
    elif isinstance(position, int) and text is not None:
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        location = Location(file, line, column)
    if "maximum nesting depth" in problem:  # libyaml's own bound (1,000), met before ours
        return too_deep(location)
    if problem.startswith("found incompatible YAML document") and text is not None:
        return version_error(text, file) or InputError(message, location=location)
    if problem == "found invalid Unicode character escape code" and text is not None:
        return _escape_error(text, file, location, index)
    if type(exc).__name__ == "DuplicateKeyError":
        # ruamel's words for what the libyaml loaders say (dgdgen.yamlio.events.Builder): one
        # message from both
        dup = re.match(r'found duplicate key "(.*)" with value', problem, re.DOTALL)
        if dup:
            return InputError(f"duplicate key {dup[1]!r}", location=location)
    return InputError(message, location=location)


_DIRECTIVE = re.compile(r"^%YAML[ \t]+([^ \t\r\n#]*)", re.MULTILINE)


def version_error(text: str, file: str) -> InputError | None:
    """The refusal of a ``%YAML`` directive other than 1.1 and 1.2, at its line (libyaml says
    "incompatible YAML document"; ruamel.yaml failed an assertion)."""
    for m in _DIRECTIVE.finditer(text):
        if m[1] not in ("1.1", "1.2"):
            return InputError(
                f"unsupported YAML version {m[1]!r} (%YAML directive): only 1.1 and 1.2 are read",
                location=Location(file, text.count("\n", 0, m.start()) + 1, 1),
                hint="remove the directive: YAML 1.2 is read by default")
    return None


_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})")


def _escape_error(text: str, file: str, location: Location, index: Any) -> InputError:
    """libyaml's "found invalid Unicode character escape code", as ruamel.yaml's path reports a
    string that is not text: the escape, why, and the field it was in."""
    escape, code = "a \\u or \\U escape", -1
    start = text.rfind("\\", 0, index + 1) if isinstance(index, int) else -1
    m = _ESCAPE.match(text, start) if start >= 0 else None
    if m:
        escape, code = m[0], int(m[0][2:], 16)  # noqa: FURB166 - \\u is no int() prefix
    if 0xD800 <= code <= 0xDFFF:
        message = surrogate_message(escape)
    else:
        message = f"{escape} is not a Unicode character (the last one is U+10FFFF)"
    return InputError(message, location=location, field=_path_before_error(text))


def _path_before_error(text: str) -> FieldPath:
    """The field libyaml was reading when it met a syntax error: the key (or list item) whose
    value it had begun. One pass over the events before the error (linear, no node built)."""
    import yaml
    from yaml import events as ev

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    stack: list[list[Any]] = []  # per open collection: [a mapping?, key or index, in a value?]

    def node_done() -> None:  # the node being read in the innermost collection has ended
        if stack:
            if stack[-1][0]:
                stack[-1][2] = not stack[-1][2]
            else:
                stack[-1][1] += 1

    try:
        while loader.check_event():
            e = loader.get_event()
            if isinstance(e, (ev.ScalarEvent, ev.AliasEvent, ev.CollectionStartEvent)):
                if stack and stack[-1][0] and not stack[-1][2]:  # a key
                    stack[-1][1] = e.value if isinstance(e, ev.ScalarEvent) else "?"
                if isinstance(e, ev.CollectionStartEvent):
                    mapping = isinstance(e, ev.MappingStartEvent)
                    stack.append([mapping, None if mapping else 0, False])
                else:
                    node_done()
            elif isinstance(e, ev.CollectionEndEvent):
                stack.pop()
                node_done()
            elif isinstance(e, ev.DocumentStartEvent):
                stack.clear()
    except yaml.YAMLError:
        pass
    finally:
        loader.dispose()
    path: list[str | int] = []
    for mapping, key, in_value in stack:
        if mapping and not in_value:
            break
        path.append(key)
    return tuple(path)


def in_file(exc: InputError, file: str) -> InputError:
    """``exc`` (raised where the file is not known) located in ``file``."""
    if exc.location is not None and not exc.location.file:
        exc.location = Location(file, exc.location.line, exc.location.column)
    elif exc.location is None:
        exc.location = Location(file)
    return exc


def syntax_error(text: str, file: str) -> InputError | None:
    """libyaml's syntax error of ``text``, if it has one (events only: nothing is built); the
    parser's own exception is its ``__cause__``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        while loader.check_event():
            loader.get_event()
    except yaml.YAMLError as exc:
        error = from_yaml_error(exc, file, text)
        error.__cause__ = exc
        return error
    finally:
        loader.dispose()
    return None
