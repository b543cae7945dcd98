"""The CEL of the admission policy: expressions that read a DGD (``object`` / ``oldObject``, in
either served version) into normalised component records, and the rule lists built on them.

Each stage is one policy variable (``variables.<name>``), so no sub-expression is written twice
in a way the API server would evaluate twice. Records are maps with the fields named below; a
component's ``flags`` are strings ``--flag=value`` with the flag spelled canonically (aliases and
``_`` → ``-`` as :func:`dgdgen.check.cmdline.canonical_flag`) and the value normalised (trimmed,
JSON without blanks, booleans in lower case), environment ``DYN_*`` variables first and command
line after, as the backends read them (ai-dynamo 1.6.1 ``add_argument``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from dgdgen.model.generation import ANN_BASE_NAME, ANN_REVISION
from dgdgen.policy.tables import (
    ALIASES_KEY,
    Key,
    aliases,
    env_flags,
    env_prefixes,
    multi_valued,
    shells,
    split_names,
)

ESCAPE_ANNOTATION = "dgdgen.dev/allow-in-place-change"
WORKER_ROLES = ("aggregated", "prefill", "decode")
SERVING_ROLES = (*WORKER_ROLES, "frontend")
_NUMBER = r"^-[0-9][0-9.eE+-]*$"
EMPTY = '""'
# Separators of the command line joined into one string (stage 4 ``segs``): before a flag word,
# after every word. Control characters no argument of a DGD carries.
_FLAG_SEP = "\u001e"
_WORD_SEP = "\u001f"
# Numbers compare by value, as classify.py ``_norm`` compares them (`0.90` is `0.9`).
_DECIMAL = r"^-?[0-9]+([.][0-9]*)?$"


def lit(value: object) -> str:
    """A CEL literal (strings in double quotes, JSON escapes are valid CEL escapes)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(lit(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def _field(obj: str, name: str, default: str) -> str:
    return f"(has({obj}.{name}) ? {obj}.{name} : {default})"


def _ann(obj: str, key: str) -> str:
    """``obj``'s annotation ``key``, or ``""``."""
    return (f"(has({obj}.metadata.annotations) && {lit(key)} in {obj}.metadata.annotations"
            f" ? {obj}.metadata.annotations[{lit(key)}] : \"\")")


# --------------------------------------------------------------------------- component records


def raw_components(obj: str) -> str:
    """Stage 0: name, type, sub-type, main container (a list of 0 or 1), env, runtime override."""
    beta = (
        f"{obj}.spec.components.map(c, {{"
        f"\"name\": c.name, \"type\": {_field('c', 'type', EMPTY)}, \"sub\": \"\", "
        f"\"main\": has(c.podTemplate) && has(c.podTemplate.spec) && "
        f"has(c.podTemplate.spec.containers) ? c.podTemplate.spec.containers.filter(k, "
        f"has(k.name) && k.name == \"main\") : [], "
        f"\"env\": {_field(obj + '.spec', 'env', '[]')}, "
        f"\"rvo\": has(c.runtimeVersionOverride) ? string(c.runtimeVersionOverride) : \"\"}})"
    )
    s = f"{obj}.spec.services[n]"
    alpha = (
        f"{obj}.spec.services.map(n, {{"
        f"\"name\": n, \"type\": {_field(s, 'componentType', EMPTY)}, "
        f"\"sub\": {_field(s, 'subComponentType', EMPTY)}, "
        f"\"main\": has({s}.extraPodSpec) && has({s}.extraPodSpec.mainContainer) ? "
        f"[{s}.extraPodSpec.mainContainer] : [], "
        f"\"env\": {_field(obj + '.spec', 'envs', '[]')} + {_field(s, 'envs', '[]')}, "
        f"\"rvo\": has({s}.runtimeVersionOverride) ? string({s}.runtimeVersionOverride) : \"\"}})"
    )
    return (f"{obj}.apiVersion == \"nvidia.com/v1alpha1\" ? "
            f"(has({obj}.spec.services) ? {alpha} : []) : "
            f"(has({obj}.spec.components) ? {beta} : [])")


def commands(prev: str) -> str:
    """Stage 1: image, the whole argv (command + args) and env of the main container."""
    m = "c.main[0]"
    return (
        f"{prev}.map(c, {{\"name\": c.name, \"type\": c.type, \"sub\": c.sub, \"rvo\": c.rvo, "
        f"\"image\": size(c.main) > 0 && has({m}.image) ? {m}.image : \"\", "
        f"\"argv\": size(c.main) > 0 ? {_field(m, 'command', '[]')} + {_field(m, 'args', '[]')}"
        f" : [], "
        f"\"env\": c.env + (size(c.main) > 0 && has({m}.env) ? {m}.env : [])}})"
    )


def scripts(prev: str) -> str:
    """Stage 2: a ``sh -c SCRIPT`` command line gives its SCRIPT (cmdline.py ``command_tokens``)."""
    cflags = "c.argv.filter(a, a.startsWith(\"-\") && !a.startsWith(\"--\") && a.contains(\"c\"))"
    shell = f"size(c.argv) > 1 && c.argv[0] in {lit(list(shells()))}"
    script = (f"{shell} && size({cflags}) > 0 && c.argv.indexOf({cflags}[0]) + 1 < size(c.argv)"
              f" ? [c.argv[c.argv.indexOf({cflags}[0]) + 1]] : []")
    return (f"{prev}.map(c, {{\"name\": c.name, \"type\": c.type, \"sub\": c.sub, "
            f"\"rvo\": c.rvo, \"image\": c.image, \"env\": c.env, \"argv\": c.argv, "
            f"\"script\": {script}}})")


def tokens(prev: str) -> str:
    """Stage 3: the words of the command line (a shell script split on blanks, continuations
    joined, quotes dropped) and the backend its program names."""
    words = ("c.script[0].replace(\"\\\\\\n\", \" \").replace(\"\\n\", \" \")"
             ".replace(\"\\t\", \" \").split(\" \").filter(w, w != \"\")"
             ".map(w, w.replace(\"\\\"\", \"\").replace(\"'\", \"\"))")
    toks = f"(size(c.script) > 0 ? {words} : c.argv)"
    backend = " : ".join(f"{toks}.exists(w, w == \"dynamo.{b}\") ? \"{b}\""
                         for b in ("vllm", "sglang", "trtllm")) + " : \"\""
    return (f"{prev}.map(c, {{\"name\": c.name, \"type\": c.type, \"sub\": c.sub, "
            f"\"rvo\": c.rvo, \"image\": c.image, \"env\": c.env, \"tokens\": {toks}, "
            f"\"backend\": {backend}}})")


def dgd_backend(obj: str, prev: str) -> str:
    """The DGD's backend: ``spec.backendFramework``, else the first component's program."""
    return (f"has({obj}.spec.backendFramework) && {obj}.spec.backendFramework in "
            f"[\"vllm\", \"sglang\", \"trtllm\"] ? {obj}.spec.backendFramework : "
            f"({prev}.exists(c, c.backend != \"\") ? "
            f"{prev}.filter(c, c.backend != \"\")[0].backend : \"\")")


def _value_from(v: str) -> str:
    """An env ``valueFrom`` as text: the referenced Secret / ConfigMap key, field or resource
    (the checker compares the whole ``valueFrom`` as JSON)."""
    def ref(kind: str, field: str, key: str) -> str:
        f = f"{v}.{field}"
        return (f"has({f}) ? \"{kind}:\" + (has({f}.name) ? {f}.name : \"\") + \"/\" + "
                f"(has({f}.{key}) ? {f}.{key} : \"\") : ")
    return ("(" + ref("secret", "secretKeyRef", "key") + ref("configmap", "configMapKeyRef", "key")
            + f"has({v}.fieldRef) && has({v}.fieldRef.fieldPath) ? "
            + f"\"field:\" + {v}.fieldRef.fieldPath : "
            + f"has({v}.resourceFieldRef) && has({v}.resourceFieldRef.resource) ? "
            + f"\"resource:\" + {v}.resourceFieldRef.resource : \"valueFrom\")")


def positions(prev: str, backend_var: str) -> str:
    """Stage 4: the effective backend (a worker without its own takes the DGD's), the flag
    words of the command line (``fw``), and the command line cut into segments that each start
    with a flag word (``segs``: the words before the first flag, then per flag word the flag
    and the words up to the next flag, for multi-valued flags)."""
    t = "c.tokens"
    is_flag = f"w.startsWith(\"-\") && size(w) > 1 && !w.matches({lit(_NUMBER)})"
    fw = f"{t}.filter(w, {is_flag})"
    segs = (f"{t}.map(w, ({is_flag} ? {lit(_FLAG_SEP)} : \"\") + w + {lit(_WORD_SEP)})"
            f".join(\"\").split({lit(_FLAG_SEP)})")
    b = "c.backend != \"\" ? c.backend : " + backend_var
    return (f"{prev}.map(c, {{\"name\": c.name, \"type\": c.type, \"sub\": c.sub, "
            f"\"rvo\": c.rvo, \"image\": c.image, \"env\": c.env, \"tokens\": {t}, "
            f"\"backend\": {b}, \"fw\": {fw}, \"segs\": {segs}}})")


def raw_flags(prev: str) -> str:
    """Stage 5: every flag as a pair [name as written, value]: ``--flag=value``,
    ``--flag value``, ``--flag v1 v2`` (a multi-valued flag: the words up to the next flag,
    joined by one space, of its last occurrence), a bare boolean flag (``true``), and DYN_*
    environment variables (first: the command line wins; cmdline.py ``env_flag``: the backend's
    own prefixes stripped, another backend's variables ignored, variables named unlike their
    flag mapped to it)."""
    t = "c.tokens"
    nxt = f"{t}[x[1]]"
    b = "c.backend"
    multi = lit(multi_valued())
    dashed = ("(x[0].startsWith(\"--\") ? \"--\" + x[0].substring(2).replace(\"_\", \"-\") : "
              "x[0])")
    is_multi = f"{b} in {multi} && {dashed} in {multi}[{b}]"
    # x: [flag word, position of the word after its last occurrence (the backends' parsers
    # keep the last value of a repeated flag), its segment (segs[0] precedes the first flag)]
    last_seg = "c.segs[x[2]]"
    multi_value = (f"{last_seg}.substring(size(x[0]) + 1).replace({lit(_WORD_SEP)}, \" \")"
                   f".trim()")
    value = (f"x[0].startsWith(\"--\") && x[0].contains(\"=\") ? "
             f"x[0].substring(x[0].indexOf(\"=\") + 1) : "
             f"({is_multi} ? {multi_value} : "
             f"(x[1] < size({t}) && (!{nxt}.startsWith(\"-\") || "
             f"{nxt}.matches({lit(_NUMBER)})) ? {nxt} : \"true\"))")
    name = ("x[0].startsWith(\"--\") && x[0].contains(\"=\") ? "
            "x[0].substring(0, x[0].indexOf(\"=\")) : x[0]")
    at = "c.fw.map(w, [w, c.tokens.lastIndexOf(w) + 1, c.fw.lastIndexOf(w) + 1])"
    cli = f"{at}.map(x, [{name}, {value}, \"cli\"])"
    prefixes = env_prefixes()
    named = env_flags()
    own = f"({b} in {lit(prefixes)} ? {lit(prefixes)}[{b}] : [])"
    rest = "e.name.substring(4)"
    every = lit(sorted({p for ps in prefixes.values() for p in ps}))
    mine = f"{own}.filter(p, {rest}.startsWith(p))"
    env_ok = (f"has(e.name) && e.name.startsWith(\"DYN_\") && (e.name in {lit(named)} || "
              f"size({mine}) > 0 || !{every}.exists(p, {rest}.startsWith(p)))")
    env_name = (f"e.name in {lit(named)} ? {lit(named)}[e.name] : "
                f"\"--\" + (size({mine}) > 0 ? {rest}.substring(size({mine}[0])) : {rest})"
                f".lowerAscii().replace(\"_\", \"-\")")
    env_value = (f"has(e.value) ? string(e.value) : "
                 f"(has(e.valueFrom) ? {_value_from('e.valueFrom')} : \"\")")
    env = f"c.env.filter(e, {env_ok}).map(e, [{env_name}, {env_value}, \"env\"])"
    return (f"{prev}.map(c, {{\"name\": c.name, \"type\": c.type, \"sub\": c.sub, "
            f"\"rvo\": c.rvo, \"image\": c.image, \"backend\": c.backend, "
            f"\"pairs\": {env} + {cli}}})")


def _keep(extra: str) -> str:
    return (f"\"name\": c.name, \"type\": c.type, \"sub\": c.sub, \"rvo\": c.rvo, "
            f"\"image\": c.image, \"backend\": c.backend, {extra}")


def spelled(prev: str) -> str:
    """Stage 6: flag names with ``_`` → ``-`` (``--trtllm.<path>`` keeps its dots and
    underscores), ``--no-x`` → ``--x`` = ``false`` (TRT-LLM's ``--no-trtllm…`` flags keep their
    name), values trimmed, JSON without blanks, booleans in lower case."""
    n0 = "x[0]"
    dashed = (f"({n0}.startsWith(\"--trtllm.\") || !{n0}.startsWith(\"--\") ? {n0} : "
              f"\"--\" + {n0}.substring(2).replace(\"_\", \"-\"))")
    named = f"c.pairs.map(x, [{dashed}, x[1].trim(), x[2]])"
    return f"{prev}.map(c, {{{_keep(chr(34) + 'named' + chr(34) + ': ' + named)}}})"


def _normalised_literal(value: str) -> str:
    """A CEL expression of ``value`` normalised as stage 7 normalises a flag's value (the same
    CEL functions, so every engine gives both sides the same text)."""
    if value.lower() in ("true", "false"):
        return lit(value.lower())
    if re.fullmatch(_DECIMAL, value):
        return f"string(double({lit(value)}))"
    return lit(value)


def normalised(prev: str, aliases_var: str) -> str:
    """Stage 7: values as the checker compares them (classify.py ``_norm``): JSON without
    blanks, booleans in lower case, decimal numbers by value; flag names canonical (the
    aliases every process accepts and the backend's own, as
    :func:`dgdgen.check.cmdline.canonical_flag`). Each entry keeps its source (env / cli)."""
    neg = "x[0].startsWith(\"--no-\") && !x[0].startsWith(\"--no-trtllm\")"
    v = "x[1]"
    value = (f"{v}.startsWith(\"{{\") || {v}.startsWith(\"[\") ? "
             f"{v}.replace(\" \", \"\").replace(\"\\n\", \"\") : "
             f"({v}.lowerAscii() in [\"true\", \"false\"] ? {v}.lowerAscii() : "
             f"({v}.matches({lit(_DECIMAL)}) ? string(double({v})) : {v}))")
    al = aliases_var
    canon = f"(c.backend in {al} && x[0] in {al}[c.backend] ? {al}[c.backend][x[0]] : x[0])"
    pairs = (f"c.named.map(x, {neg} ? [\"--\" + x[0].substring(5), \"false\", x[2]] : "
             f"[x[0], {value}, x[2]]).map(x, [{canon}, x[1], x[2]])")
    return f"{prev}.map(c, {{{_keep(chr(34) + 'norm' + chr(34) + ': ' + pairs)}}})"


def effective(prev: str) -> str:
    """Stage 8: the effective entries: a variable that a command-line flag of the same name
    overrides is dropped (facts.py ``component_facts``: environment first, command line after);
    each entry gets the words of a vLLM / SGLang ``--served-model-name`` (split on blanks and
    commas: the first is the served name, the others the card's aliases), else ``[]``."""
    names = f"c.backend in {lit(split_names())} && x[0] == \"--served-model-name\""
    parts = ("x[1].replace(\",\", \" \").replace(\"\\t\", \" \").replace(\"\\n\", \" \")"
             ".split(\" \").filter(w, w != \"\")")
    eff = ("c.norm.filter(x, x[2] == \"cli\" || "
           "!c.norm.exists(y, y[2] == \"cli\" && y[0] == x[0]))"
           f".map(x, [x[0], x[1], x[2], {names} ? {parts} : []])")
    return f"{prev}.map(c, {{{_keep(chr(34) + 'norm' + chr(34) + ': c.norm, ' + chr(34) + 'eff' + chr(34) + ': ' + eff)}}})"


def flags(prev: str) -> str:
    """Stage 9: ``--flag=value`` strings of the effective flags (a vLLM / SGLang
    ``--served-model-name`` as the served name and its aliases; ``--is-prefill-worker`` is
    ``--disaggregation-mode prefill``, #6483) and the component's role (dgd.py ``_role``)."""
    canon = "x[0]"
    entry = (f"{canon} == \"--is-prefill-worker\" ? (x[1] == \"false\" ? "
             f"\"--is-prefill-worker=false\" : \"--disaggregation-mode=prefill\") : "
             f"{canon} + \"=\" + x[1]")
    served = "size(x[3]) > 0 ? \"--served-model-name=\" + x[3][0] : "
    extra = (f"c.eff.filter(x, size(x[3]) > 1).map(x, "
             f"{lit(ALIASES_KEY + '=')} + x[3].join(\" \").substring(size(x[3][0]) + 1))")
    fl = f"c.eff.map(x, {served}{entry}) + {extra}"
    mode = ("c.norm.exists(x, (x[0] == \"--disaggregation-mode\" && x[1].lowerAscii() == "
            "\"{m}\") || ({m2}))")
    prefill = mode.format(m="prefill", m2="x[0] == \"--is-prefill-worker\" && x[1] != \"false\"")
    decode = mode.format(m="decode", m2="false")
    role = (f"c.type == \"frontend\" ? \"frontend\" : c.type in [\"prefill\", \"decode\"] ? "
            f"c.type : c.type == \"worker\" ? (c.sub in [\"prefill\", \"decode\"] ? c.sub : "
            f"{prefill} ? \"prefill\" : {decode} ? \"decode\" : \"aggregated\") : \"other\"")
    return (f"{prev}.map(c, {{\"name\": c.name, \"role\": {role}, \"rvo\": c.rvo, "
            f"\"image\": c.image, \"backend\": c.backend, \"flags\": {fl}}})")


def aliases_map() -> str:
    return lit(aliases())


# --------------------------------------------------------------------------- pairs and rules


def unmatched(side: str, other: str) -> str:
    """Components of ``side`` with no component of the same name in ``other``."""
    return f"{side}.filter(c, !{other}.exists(o, o.name == c.name))"


def pairs(new: str, old: str, new_only: str, old_only: str) -> str:
    """Components present in both revisions, paired by name; then a renamed component, paired
    by its role when exactly one component of that role is left on each side (classify.py
    ``_pair_components``)."""
    by_name = (f"{new}.filter(n, {old}.exists(o, o.name == n.name))"
               f".map(n, {{\"n\": n, \"o\": {old}.filter(o, o.name == n.name)[0]}})")
    by_role = (f"{new_only}.filter(n, size({new_only}.filter(m, m.role == n.role)) == 1 && "
               f"size({old_only}.filter(o, o.role == n.role)) == 1)"
               f".map(n, {{\"n\": n, \"o\": {old_only}.filter(o, o.role == n.role)[0]}})")
    return f"{by_name} + {by_role}"


def disaggregated(new: str, old: str) -> str:
    return (f"{new}.exists(c, c.role in [\"prefill\", \"decode\"]) || "
            f"{old}.exists(c, c.role in [\"prefill\", \"decode\"])")


def _worker(p: str = "p") -> str:
    return f"({p}.n.role in {lit(list(WORKER_ROLES))} || {p}.o.role in {lit(list(WORKER_ROLES))})"


def changed(pairs_var: str) -> str:
    """Worker pairs whose flags differ, with the differing entries (either side) in ``diff``."""
    diff = ("p.o.flags.filter(x, !(x in p.n.flags)) + p.n.flags.filter(x, !(x in p.o.flags))")
    return (f"{pairs_var}.filter(p, {_worker()} && p.o.flags != p.n.flags)"
            f".map(p, {{\"name\": p.n.name, \"backend\": p.n.backend, \"diff\": {diff}, "
            f"\"every\": p.o.flags + p.n.flags}})")


def key_list(key: Key, changed_var: str) -> str:
    """The messages of the components whose value of ``key`` changes."""
    parts: list[str] = []
    for m in key.matches:
        cond = f"p.diff.exists(x, x.startsWith({lit(m.prefix)}))"
        if m.mention is not None:
            cond += (f" && p.every.exists(x, x.startsWith({lit(m.prefix)}) && "
                     f"x.contains({lit(m.mention)}))")
        parts.append(f"({cond})")
    backends = f"p.backend in {lit(list(key.backends))}"
    if key.both_sides:
        # classify.py ``_classified``: a value on one side only is assumed to change (DGD205), not
        # denied. Set on both sides, the old and the new entry are both among `every` (one on
        # each side; an entry equal on both sides is not in `diff`).
        entry = " || ".join(
            f"x.startsWith({lit(m.prefix)})"
            + (f" && x.contains({lit(m.mention)})" if m.mention is not None else "")
            for m in key.matches)
        backends += f" && size(p.every.filter(x, {entry})) >= 2"
    if key.model_default:
        # classify.py ``_served_name_is_default``: one name, set on one side only, equal to the
        # model path, which is the same on both sides (its entry once on each side).
        # A model entry in `every` but not in `diff` is the same on both sides. Linear scans
        # only (no nested comprehension): the estimated cost stays within the API server's.
        name = key.label + "="
        mine = f"p.every.filter(x, x.startsWith({lit(name)}))"
        value = f"{mine}[0].substring({len(name)})"
        same = " || ".join(f"(({lit(f)} + {value}) in p.every && !(({lit(f)} + {value}) in "
                           f"p.diff))" for f in ("--model=", "--model-path="))
        backends += (f" && !(p.backend in {lit(list(key.model_default))} && size({mine}) == 1"
                     f" && ({same}))")
    if key.default is not None:
        # classify.py ``_classified``: set on one side only to the engine's default, nothing
        # changes (flags.Input.defaults)
        name = key.label + "="
        mine = f"p.every.filter(x, x.startsWith({lit(name)}))"
        backends += (f" && !(size({mine}) == 1 && "
                     f"{mine}[0] == {lit(name)} + {_normalised_literal(key.default)})")
    if key.requires is not None and "=" in key.requires:
        # classify.py ``_either``: the flag is set to this value on the old or the new side
        flag, value = key.requires.split("=", 1)
        backends += f" && ({lit(flag + '=')} + {_normalised_literal(value)}) in p.every"
    elif key.requires is not None:
        # classify.py ``_either``: the flag is set (not to false) on the old or the new side
        req = key.requires + "="
        backends += (f" && p.every.exists(x, x.startsWith({lit(req)}) && "
                     f"x != {lit(req + 'false')})")
    msg = f"{key.label} changes {key.what}"
    return (f"{changed_var}.filter(p, {backends} && ({' || '.join(parts)}))"
            f".map(p, p.name + {lit(': ' + msg)})")


def structural_list(pairs_var: str) -> str:
    """Role and backend changes of a worker (classify.py ``_component_changes``)."""
    role = (f"{pairs_var}.filter(p, {_worker()} && p.n.role != p.o.role)"
            f".map(p, p.n.name + \": role \" + p.o.role + \" → \" + p.n.role + "
            f"\" changes worker_type\")")
    backend = (f"{pairs_var}.filter(p, {_worker()} && p.n.backend != p.o.backend && "
               f"p.n.backend != \"\" && p.o.backend != \"\")"
               f".map(p, p.n.name + \": backend \" + p.o.backend + \" → \" + p.n.backend)")
    return f"{role} + {backend}"


def runtime_list(pairs_var: str) -> str:
    serving = lit(list(SERVING_ROLES))
    cond = f"(p.n.role in {serving} || p.o.role in {serving})"
    image = (f"{pairs_var}.filter(p, {cond} && p.n.image != p.o.image)"
             f".map(p, p.n.name + \": image \" + (p.o.image == \"\" ? \"(unset)\" : p.o.image) + "
             f"\" → \" + (p.n.image == \"\" ? \"(unset)\" : p.n.image))")
    rvo = (f"{pairs_var}.filter(p, {cond} && p.n.rvo != p.o.rvo)"
           f".map(p, p.n.name + \": runtimeVersionOverride changes\")")
    return f"{image} + {rvo}"


def concat(lists: Sequence[str]) -> str:
    """``a + b + c + d`` as a balanced tree ``((a + b) + (c + d))``: parsers bound the nesting
    depth (cel-cpp's default is 32), and a left-deep chain of 60 lists would exceed it."""
    if not lists:
        return "[]"
    if len(lists) == 1:
        return lists[0]
    mid = len(lists) // 2
    return f"({concat(lists[:mid])} + {concat(lists[mid:])})"


def escape_hatch() -> str:
    """The escape hatch is honoured when this update sets the annotation to a non-empty reason
    that the stored object did not already carry: each in-place change needs its own reason."""
    new, old = _ann("object", ESCAPE_ANNOTATION), _ann("oldObject", ESCAPE_ANNOTATION)
    return f"{new}.trim() != \"\" && {new} != {old}"


def generation_beside() -> str:
    """classify.py ``_generation_beside``: the object is another dgdgen generation of the same
    DGD (same base name, another revision): dgdgen's bookkeeping, never denied."""
    head_base = _ann("object", ANN_BASE_NAME)
    old_base = (f"({_ann('oldObject', ANN_BASE_NAME)} != \"\" ? "
                f"{_ann('oldObject', ANN_BASE_NAME)} : oldObject.metadata.name)")
    return (f"{head_base} != \"\" && {head_base} == {old_base} && "
            f"{_ann('object', ANN_REVISION)} != {_ann('oldObject', ANN_REVISION)}")
