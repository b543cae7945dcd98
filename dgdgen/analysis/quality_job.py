"""The quality gate as an Argo Rollouts metric of the ``job`` provider, and its prompt set.

The Job runs ``python -m dgdgen.analysis.quality_gate`` (dgdgen/analysis/quality_gate.py) against
the stable and the candidate frontend Services; the prompt set (and the judge's rubric and
calibration set) come from a ConfigMap mounted read-only, the judge's API key from a Secret by
``secretKeyRef``.

Argo Rollouts' job provider knows two outcomes: the Job succeeded (measurement Successful) or
failed (Failed) (argo-rollouts metricproviders/job/job.go). The gate's exit 3, Inconclusive, is a
failed Job there, so a gate without enough pairs never passes a step; ``dgdgen analyze`` and the
rehearsal report the three outcomes apart.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgdgen.analysis.probe import RESTRICTED_CONTAINER, RESTRICTED_POD
from dgdgen.errors import InputError
from dgdgen.traffic import preview

if TYPE_CHECKING:
    from dgdgen.analysis.calibration import LabelledPair
    from dgdgen.analysis.scorers import Prompt
    from dgdgen.plan.load import LoadedSpec

MOUNT = "/etc/dgdgen/quality"
PROMPTS_KEY = "prompts.jsonl"
RUBRIC_KEY = "rubric.txt"
CALIBRATION_KEY = "calibration.jsonl"
FIELD = ("spec", "analysis", "quality", "prompts")
CALIBRATION_FIELD = ("spec", "analysis", "quality", "judge", "calibration", "pairs")
# One python process sending two requests per prompt (and two judge calls per pair).
RESOURCES = {"requests": {"cpu": "100m", "memory": "128Mi"},
             "limits": {"cpu": "1", "memory": "512Mi"}}


def config_map_name(rollout: str) -> str:
    return f"{rollout}-quality-prompts"


def prompt_path(loaded: LoadedSpec) -> Path:
    """The prompt set's file: relative to the spec file, inside its repository."""
    return _repo_path(loaded, loaded.spec.spec.analysis.quality.prompts, FIELD, "the prompt set")


def _repo_path(loaded: LoadedSpec, rel: str, field: tuple[str, ...], what: str) -> Path:
    from dgdgen.plan import load

    folder = os.path.dirname(os.path.abspath(loaded.path))
    path = os.path.realpath(os.path.join(folder, rel))
    root = load._confinement_root(folder)
    if not load._allow_outside and os.path.commonpath([root, path]) != root:
        raise InputError(
            f"{what} {rel!r} is outside the repository {root}",
            location=loaded.location(field), field=field,
            hint="keep it in the repository (or pass --allow-outside-paths)",
        )
    return Path(path)


def calibration_path(loaded: LoadedSpec) -> Path | None:
    """The judge's calibration set's file (None without one), placed like the prompt set."""
    q = loaded.spec.spec.analysis.quality
    if q is None or q.judge is None or q.judge.calibration is None:
        return None
    return _repo_path(loaded, q.judge.calibration.pairs, CALIBRATION_FIELD,
                      "the calibration set")


def _read_set(path: Path, what: str, loaded: LoadedSpec, field: tuple[str, ...]) -> str:
    """A file the spec names, read as every input is (a regular file, UTF-8, within the size
    limit: a FIFO or /dev/zero named by a pull request must not hang or fill the memory); an
    :class:`InputError` at the spec field when it cannot be."""
    from dgdgen.yamlio import read_text

    try:
        return read_text(str(path))
    except InputError as e:
        raise InputError(f"cannot read {what} {path}: {e.message}",
                         location=loaded.location(field), field=field) from None


def load_calibration_set(loaded: LoadedSpec) -> tuple[str, list[LabelledPair]] | None:
    """The calibration set's text and labelled pairs (None without one); an
    :class:`InputError` at the spec field when it cannot be read, at its line when a line is
    bad."""
    from dgdgen.analysis.calibration import load_pairs

    path = calibration_path(loaded)
    if path is None:
        return None
    text = _read_set(path, "the calibration set", loaded, CALIBRATION_FIELD)
    return text, load_pairs(path, text)


def load_prompt_set(loaded: LoadedSpec) -> tuple[str, list[Prompt]]:
    """The prompt set's text and prompts; an :class:`InputError` at the spec field when it
    cannot be read, at the prompt file's line when a line is bad."""
    from dgdgen.analysis.scorers import REFERENCE_SCORERS, load_prompts

    path = prompt_path(loaded)
    text = _read_set(path, "the prompt set", loaded, FIELD)
    prompts = load_prompts(path, text)
    q = loaded.spec.spec.analysis.quality
    if q.scorer in REFERENCE_SCORERS and not any(p.reference is not None for p in prompts):
        raise InputError(
            f"scorer {q.scorer!r} compares answers with references, and no prompt of the set "
            "has a `reference`", location=loaded.location(FIELD), field=FIELD,
        )
    return text, prompts


def config_map_data(loaded: LoadedSpec) -> dict[str, str]:
    text, _ = load_prompt_set(loaded)
    data = {PROMPTS_KEY: text}
    q = loaded.spec.spec.analysis.quality
    if q.judge is not None:
        data[RUBRIC_KEY] = q.judge.rubric
    calibration = load_calibration_set(loaded)
    if calibration is not None:
        data[CALIBRATION_KEY] = calibration[0]
    return data


def command(q: Any, headers: Mapping[str, str] | None = None) -> list[str]:
    """The gate's command line (the same the rehearsal and ``dgdgen analyze`` run); with
    ``headers`` (a preview's), sent with every request to the candidate."""
    cmd = [
        "python", "-m", "dgdgen.analysis.quality_gate",
        "--prompts", f"{MOUNT}/{PROMPTS_KEY}",
        "--stable", "{{args.stable-url}}",
        "--candidate", "{{args.candidate-url}}",
        "--model", q.model,
        "--scorer", q.scorer,
        "--max-tokens", str(q.max_tokens),
        "--seed", str(q.seed),
        "--max-loss-share", repr(q.max_loss_share),
        "--effect", repr(q.effect),
        "--timeout", str(q.timeout_seconds),
    ]
    if q.pattern is not None:
        cmd += ["--pattern", q.pattern]
    for name, value in sorted((headers or {}).items()):
        cmd += ["--candidate-header", f"{name}: {value}"]
    if q.judge is not None:
        cmd += ["--judge-url", q.judge.url, "--judge-model", q.judge.model,
                "--rubric-file", f"{MOUNT}/{RUBRIC_KEY}", "--min-pairs", str(q.judge.min_pairs)]
        if q.judge.max_calls is not None:
            cmd += ["--max-calls", str(q.judge.max_calls)]
        if q.judge.calibration is not None:
            cmd += ["--calibration", f"{MOUNT}/{CALIBRATION_KEY}",
                    "--min-agreement", repr(q.judge.calibration.min_agreement)]
    return cmd


def job_provider(q: Any, rollout: str,
                 headers: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``provider.job`` of the quality metric (``q`` is :class:`dgdgen.spec.QualityGate`);
    with ``headers`` (a preview's), sent with every request to the candidate."""
    env: list[dict[str, Any]] = [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}]
    if q.judge is not None and q.judge.api_key is not None:
        env.append({"name": "DGDGEN_JUDGE_API_KEY", "valueFrom": {"secretKeyRef": {
            "name": q.judge.api_key.name, "key": q.judge.api_key.key}}})
    # Each prompt waits for two answers (and two judge verdicts) of at most timeout seconds.
    deadline = 600
    return {
        "job": {
            "spec": {
                "backoffLimit": 0,
                "activeDeadlineSeconds": deadline,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "automountServiceAccountToken": False,
                        "securityContext": dict(RESTRICTED_POD),
                        "containers": [
                            {
                                "name": "quality",
                                "image": q.image,
                                "command": command(q, headers),
                                "env": env,
                                "volumeMounts": [{"name": "prompts", "mountPath": MOUNT,
                                                  "readOnly": True}],
                                "resources": {k: dict(v) for k, v in RESOURCES.items()},
                                "securityContext": dict(RESTRICTED_CONTAINER),
                            }
                        ],
                        "volumes": [{"name": "prompts",
                                     "configMap": {"name": config_map_name(rollout)}}],
                    }
                },
            }
        }
    }


# quality_gate's exit status → the measurement phase Argo Rollouts and `dgdgen analyze` use; a
# bad-input exit (2) is an Error, which aborts like Failed.
PHASES = {0: "Successful", 1: "Failed", 3: "Inconclusive", 2: "Error"}


def run_local(
    prepared: Any, arg_map: dict[str, str], *, stable_url: str | None = None,
    candidate_url: str | None = None, judge_url: str | None = None,
) -> tuple[str, str]:
    """Run the rendered quality gate's command here (``dgdgen analyze``, the rehearsal): the
    same module and arguments as the Job, the prompt set, rubric and calibration set read from
    the repository (``judge_url`` in place of the spec's judge)."""
    import contextlib
    import io

    from dgdgen.analysis import quality_gate

    loaded = prepared.loaded
    q = loaded.spec.spec.analysis.quality
    urls = dict(arg_map)
    if stable_url:
        urls["stable-url"] = stable_url
    if candidate_url:
        urls["candidate-url"] = candidate_url
    load_prompt_set(loaded)
    load_calibration_set(loaded)
    # Run in this process, so nothing is written: the rubric the Job mounts is handed over as
    # text (a temp file for it outlived a SIGKILLed analyze), the prompt and calibration sets
    # are read where they lie.
    local = {f"{MOUNT}/{PROMPTS_KEY}": str(prompt_path(loaded))}
    calibration = calibration_path(loaded)
    if calibration is not None:
        local[f"{MOUNT}/{CALIBRATION_KEY}"] = str(calibration)
    argv: list[str] = []
    for a in command(q, preview.gate_headers(prepared))[3:]:
        if judge_url and argv[-1:] == ["--judge-url"]:
            a = judge_url
        if argv[-1:] == ["--rubric-file"]:
            argv.pop()  # the rubric goes over as text
            continue
        a = local.get(a, a)
        for k in ("stable-url", "candidate-url"):
            a = a.replace("{{args." + k + "}}", urls[k])
        argv.append(a)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = quality_gate.main(argv, rubric=None if q.judge is None else q.judge.rubric)
    detail = (out.getvalue() + err.getvalue()).strip().splitlines()
    return PHASES.get(code, "Error"), detail[-1] if detail else f"exit {code}"
