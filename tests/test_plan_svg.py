"""`dgdgen plan --format svg|png`: the picture carries the plan. Each example is drawn through the
CLI and the SVG is parsed; what it shows is compared with the plan as data (`--format json`) and
with its own axes (bar heights against the surge-budget line), never with pixels."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from gen_support import EXAMPLES, REPO, run_cli
from svg_layout import assert_reads, axes

NS = {"svg": "http://www.w3.org/2000/svg"}

# Every kind of gate sized in something other than requests, next to the latency gates: step 1
# runs `slo` with the quality gate and two custom metrics, step 2 is an A/B experiment.
EVERY_GATE = "every-gate-kind"
_EVERY_GATE_ANALYSIS = """\
    quality:
      prompts: prompts.jsonl
      model: Qwen/Qwen3-0.6B
      effect: 0.25
      image: registry.example/dgdgen:1
    customMetrics:
      - name: thumbs-down
        query: sum(rate(feedback_negative_total{${generation}}[${window}]))
        samples: sum(increase(feedback_total{${generation}}[${window}]))
        minSamples: 200
        threshold: 0.2
        maxRatio: 1.5
      - name: checkout
        query: sum(rate(checkout_total{${generation}}[${window}]))
        samples: sum(increase(checkout_total{${generation}}[${window}]))
        minSamples: 120
        better: higher
        maxDifference: 0.5
    experiment:
      metric: user rating 1-5
      minimumDetectableEffect: 0.1
"""
SPECS = [*(e.name for e in EXAMPLES), EVERY_GATE]


def _spec(name: str, tmp: Path) -> Path:
    """A bundled example's spec, or the every-gate-kind spec written into ``tmp``."""
    if name != EVERY_GATE:
        return REPO / "examples" / name / "rollout.yaml"
    example = REPO / "examples" / "vllm-disagg-image-bump"
    text = (example / "rollout.yaml").read_text()
    head, rest = text.partition("  steps:\n")[0], text[text.index("  traffic:\n"):]
    text = (head + "  steps:\n    - {weight: 10, pause: 15m, gate: slo}\n"
            "    - {weight: 40, gate: experiment}\n    - {weight: 100}\n"
            + rest + _EVERY_GATE_ANALYSIS)
    (tmp / ".git").mkdir(exist_ok=True)  # the repository the prompt set stays inside
    shutil.copy(example / "dgd.yaml", tmp / "dgd.yaml")
    (tmp / "prompts.jsonl").write_text("".join(f'{{"prompt": "p{i}"}}\n' for i in range(40)))
    (tmp / "rollout.yaml").write_text(text)
    return tmp / "rollout.yaml"


def _plan(spec: Path) -> dict:  # type: ignore[type-arg]
    done = run_cli("plan", str(spec), "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _svg(spec: Path) -> tuple[str, ET.Element]:
    done = run_cli("plan", str(spec), "--format", "svg")
    assert done.returncode == 0, done.stderr
    return done.stdout, ET.fromstring(done.stdout.encode("utf-8"))


def _expected_checks(spec: Path, plan: dict) -> dict[int, dict[str, str]]:  # type: ignore[type-arg]
    """Per forward step, what the quality, custom and A/B rows must say, from the spec and the
    statistics (not from the picture's own code): the pairs the sign test needs where a gate
    holds the quality metric, the smallest to largest ``minSamples`` of the custom metrics a
    gate holds, and the Mann-Whitney sample at an experiment step's split."""
    from dgdgen.analysis.experiment import experiment_samples
    from dgdgen.analysis.paired import sign_test_samples

    analysis = yaml.safe_load(spec.read_text())["spec"].get("analysis") or {}
    out: dict[int, dict[str, str]] = {}
    for g in plan.get("gates", []):
        row = out.setdefault(g["step"], {})
        if "quality" in g["metrics"]:
            q = analysis["quality"]
            pairs = sign_test_samples(q.get("maxLossShare", 0.5), q.get("effect", 0.2))
            row["quality"] = f"{pairs} pairs"
        mins = sorted({cm["minSamples"] for cm in analysis.get("customMetrics", [])
                       if {f"custom-{cm['name']}", f"custom-{cm['name']}-vs-stable"}
                       & set(g["metrics"])})
        if mins:
            span = f"{mins[0]}" if len(mins) == 1 else f"{mins[0]}-{mins[-1]}"
            row["custom"] = f"{span} events"
    for st in plan["steps"]:
        if st["gate"] == "experiment":
            e = analysis["experiment"]
            n_s, n_c = experiment_samples(e["minimumDetectableEffect"],
                                          st["candidate"]["weight"] / 100)
            out.setdefault(st["index"], {})["experiment"] = f"{n_s}/{n_c} samples"
    return {i: row for i, row in out.items() if row}


def _cls(el: ET.Element) -> set[str]:
    return set(el.get("class", "").split())


def _one(parent: ET.Element, *classes: str, tag: str = "*") -> ET.Element:
    found = [e for e in parent.iterfind(f"svg:{tag}" if tag != "*" else "*", NS)
             if set(classes) <= _cls(e)]
    assert len(found) == 1, (classes, [e.attrib for e in found])
    return found[0]


def _text(parent: ET.Element, cls: str) -> str:
    return _one(parent, cls, tag="text").text or ""


def _panel(root: ET.Element, name: str) -> ET.Element:
    (panel,) = [g for g in root.iterfind("svg:g", NS) if g.get("id") == name]
    return panel


@pytest.mark.parametrize("name", SPECS)
def test_svg_shows_the_plan(name: str, tmp_path: Path) -> None:
    spec = _spec(name, tmp_path)
    plan = _plan(spec)
    _, root = _svg(spec)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert not list(root.iter("{http://www.w3.org/2000/svg}script"))
    # every state the plan has, in its order (Plan.all_states)
    states = (plan["steps"] + plan.get("rollback_steps", [])
              + [plan["rollback"], plan["cleanup"]])
    groups = [g for g in root.iterfind("svg:g", NS) if "state" in _cls(g)]
    assert [g.get("data-state") for g in groups] == [s["label"] for s in states]

    budget_line = _one(_panel(root, "gpus"), "surge-budget", tag="line")
    budget = int(budget_line.get("data-gpus", "-1"))
    forward = [s["peak_gpus"] for s in plan["steps"]]
    assert max(forward) <= budget  # the forward steps stay within the surge budget
    axis = max(float(r.get("y", 0)) + float(r.get("height", 0))
               for g in groups for r in g.iterfind("svg:rect", NS) if "gpus" in _cls(r))
    per_gpu = (axis - float(budget_line.get("y1", 0))) / budget
    gates = {g["step"]: g for g in plan.get("gates", [])}
    checks = _expected_checks(spec, plan)
    kinds = {kind for row in checks.values() for kind in row}
    if name == EVERY_GATE:  # the spec has each kind: a picture without one of them fails here
        assert kinds == {"quality", "custom", "experiment"}, checks

    for g, st in zip(groups, states, strict=True):
        traffic = {gen: _one(g, "traffic", gen, tag="rect") for gen in ("stable", "candidate")}
        heights = {gen: float(r.get("height", 0)) for gen, r in traffic.items()}
        full = sum(heights.values())
        for gen in ("stable", "candidate"):
            assert int(traffic[gen].get("data-weight", -1)) == st[gen]["weight"]
            assert heights[gen] == pytest.approx(full * st[gen]["weight"] / 100, abs=0.02)
            bar = _one(g, "gpus", gen, tag="rect")
            assert int(bar.get("data-gpus", -1)) == st[gen]["gpus"]
            assert float(bar.get("height", 0)) == pytest.approx(per_gpu * st[gen]["gpus"], abs=0.02)
            counts = [int(n) for n in re.findall(r":(\d+)", _text(g, f"replicas-{gen}"))]
            assert counts == (list(st[gen]["replicas"].values()) if st[gen]["present"] else [])
        assert _text(g, "traffic-label") == f"{st['stable']['weight']}/{st['candidate']['weight']}"
        peak = _one(g, "peak", tag="rect")
        assert int(peak.get("data-gpus", -1)) == st["peak_gpus"]
        assert axis - float(peak.get("y", 0)) == pytest.approx(per_gpu * st["peak_gpus"], abs=0.02)
        assert float(peak.get("height", 0)) == pytest.approx(per_gpu * st["peak_gpus"], abs=0.02)
        assert _text(g, "peak-gpus") == f"{st['peak_gpus']} (+{st['extra_gpus_peak']})"
        assert _text(g, "gate") == (st["gate"] or "-")
        assert (_text(g, "pause") == "-") == (not st["pause_seconds"])
        gate = gates.get(st["index"]) if st["kind"] == "step" else None
        if gate is not None and gate["minBakeSeconds"]:
            seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u]
                          for n, u in re.findall(r"(\d+)([hms])", _text(g, "min-bake")))
            assert seconds == gate["minBakeSeconds"]
        else:
            assert _text(g, "min-bake") == "-"
        # the quality gate, the custom metrics and the experiment: a row each where the plan
        # has one, the step's minimum sample in it, "-" where the step has none
        want = checks.get(st["index"], {}) if st["kind"] == "step" else {}
        for kind in kinds:
            assert _text(g, kind) == want.get(kind, "-"), (st["label"], kind)
    labels = {e.text for e in root.iterfind("svg:text", NS)}
    assert {"quality": "quality", "custom": "custom", "experiment": "A/B s/c"}.keys() >= kinds
    assert all({"quality": "quality", "custom": "custom", "experiment": "A/B s/c"}[k] in labels
               for k in kinds)
    # what each of them decides, under the rows: the threshold and the minimum sample
    details = " ".join(" ".join((e.text or "").split()) for e in root.iterfind("svg:text", NS)
                       if "gate-detail" in _cls(e))
    analysis = yaml.safe_load(spec.read_text())["spec"].get("analysis") or {}
    if "quality" in kinds:
        q = analysis["quality"]
        assert (f"Failed when the candidate loses significantly more than "
                f"{q.get('maxLossShare', 0.5):g} of the decided pairs") in details, details
        assert f"Inconclusive below {checks_pairs(checks)} scored pairs" in details
    for cm in analysis.get("customMetrics", []) if "custom" in kinds else []:
        assert f"custom metric {cm['name']} " in details
        for key, words in (("threshold", "candidate {} {:g}"),
                           ("maxRatio", "{}/{} ≤ {:g}"), ("maxDifference", "{} − {} ≤ {:g}")):
            if key not in cm:
                continue
            lower = cm.get("better", "lower") == "lower"
            pair = ("candidate", "stable") if lower else ("stable", "candidate")
            bound = (words.format("≤" if lower else "≥", cm[key]) if key == "threshold"
                     else words.format(*pair, cm[key]))
            assert bound in details, (bound, details)
        assert f"Inconclusive below {cm['minSamples']} events per generation" in details
    if "experiment" in kinds:
        assert "A/B experiment on " + analysis["experiment"]["metric"] in details


def checks_pairs(checks: dict[int, dict[str, str]]) -> int:
    (pairs,) = {int(row["quality"].split()[0]) for row in checks.values() if "quality" in row}
    return pairs


def test_some_example_uses_its_whole_surge_budget() -> None:
    """The budget line is where the planner's limit is: some step of some example reaches it."""
    reached = []
    for example in EXAMPLES:
        _, root = _svg(example / "rollout.yaml")
        budget = int(_one(_panel(root, "gpus"), "surge-budget", tag="line").get("data-gpus", -1))
        reached += [max(s["peak_gpus"] for s in _plan(example / "rollout.yaml")["steps"])
                    == budget]
    assert any(reached)


@pytest.mark.parametrize("example", ["vllm-disagg-block-size", "trtllm-disagg-v1beta1"])
def test_svg_is_deterministic_and_the_docs_picture_is_current(example: str) -> None:
    """The README's picture and docs/analysis.md's (the quality gate's rows) are current."""
    spec = REPO / "examples" / example / "rollout.yaml"
    image = REPO / "docs" / "images" / f"plan-{example}.svg"
    first, _ = _svg(spec)
    second, _ = _svg(spec)
    assert first == second
    assert image.read_text(encoding="utf-8") == first, (
        f"regenerate: dgdgen plan {spec} --format svg -o {image}")


def test_png_is_the_svg_rasterised() -> None:
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert (librsvg2-bin) is not installed")
    example = REPO / "examples" / "vllm-disagg-block-size"
    _, root = _svg(example / "rollout.yaml")
    done = subprocess.run([sys.executable, "-m", "dgdgen", "plan", str(example / "rollout.yaml"),
                           "--format", "png"], capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    raw = done.stdout
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    assert (width, height) == (int(root.get("width", 0)), int(root.get("height", 0)))


def test_output_option_writes_the_picture_atomically(tmp_path: Path) -> None:
    """`plan --format svg -o FILE` writes the same bytes as standard output; an unwritable FILE
    is one error, exit 2, and leaves nothing behind."""
    example = REPO / "examples" / "vllm-disagg-block-size"
    out = tmp_path / "plan.svg"
    done = run_cli("plan", str(example / "rollout.yaml"), "--format", "svg", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert out.read_text(encoding="utf-8") == _svg(example / "rollout.yaml")[0]
    bad = tmp_path / "missing" / "plan.svg"
    done = run_cli("plan", str(example / "rollout.yaml"), "--format", "svg", "-o", str(bad))
    assert done.returncode == 2
    assert f"{bad}: cannot write the plan output" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("name", SPECS)
def test_svg_reads_at_a_glance(name: str, tmp_path: Path) -> None:
    """No two texts overlap, no line strikes through one (the surge-budget line, the gridlines,
    the separator of the ends), every text is inside the picture; both panels have their axes
    (the traffic in percent, the GPUs on a scale reaching the budget, the states along x); the
    legend explains the peak outline and the budget line; the ends (rollback, cleanup) are set
    apart from the forward steps, and the budget line is drawn over the peak outlines."""
    _, root = _svg(_spec(name, tmp_path))
    assert_reads(root)
    traffic = axes(_panel(root, "traffic"))
    assert traffic["y"] == ("traffic", ["0 %", "50 %", "100 %"])
    gpus = _panel(root, "gpus")
    found = axes(gpus)
    assert found["y"][0] == "GPUs"
    values = [int(v) for v in found["y"][1]]
    line = _one(gpus, "surge-budget", tag="line")
    budget = int(line.get("data-gpus", -1))
    assert values[0] == 0 and values == sorted(values)
    assert values[-1] + (values[1] - values[0]) > budget  # the scale reaches the budget
    ticks = [e for e in gpus.iter("{http://www.w3.org/2000/svg}text") if "gpu-tick" in _cls(e)]
    slope = (float(line.get("y1", 0)) - (float(ticks[0].get("y", 0)) - 4)) / budget
    for e in ticks:  # each value sits at its height on the GPU axis
        assert float(e.get("y", 0)) - 4 == pytest.approx(
            float(ticks[0].get("y", 0)) - 4 + slope * int(e.text or 0), abs=0.05)
    groups = [g for g in root.iterfind("svg:g", NS) if "state" in _cls(g)]
    assert found["x"] == ("state", [_title_of(g) for g in groups])
    # drawn after every column: nothing is painted over the budget line
    order = list(root.iter())
    assert all(order.index(line) > order.index(r) for g in groups
               for r in g.iterfind("svg:rect", NS))
    legend = " | ".join(e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}text")
                        if "legend-label" in _cls(e))
    assert "peak: most GPUs at once during the move into the state" in legend
    assert f"surge budget: {budget} GPUs" in legend
    sep = _one(root, "ends-separator", tag="line")
    for g in groups:
        x = float(_one(g, "gpus", "stable", tag="rect").get("x", 0))
        forward = g.get("data-kind") in ("baseline", "step")
        assert (x < float(sep.get("x1", 0))) == forward, g.get("data-state")


def _title_of(g: ET.Element) -> str:
    """The state's title as the text plan's first column has it."""
    label = g.get("data-state", "")
    return {"step-00": "0 baseline"}.get(label, label.removeprefix("step-").lstrip("0")
                                         if label.startswith("step-") else label)


def _table(spec: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The text plan's header lines and its table, a dict per row by column name (the columns
    are aligned: a cell runs from its header's start to the next header's)."""
    done = run_cli("plan", str(spec))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, t in enumerate(lines) if t.startswith("step "))
    header = lines[at]
    names = re.split(r"  +", header.strip())
    starts = [header.index(n) for n in names]
    rows = [{n: t[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None],
                                                    strict=True)}
            for t in lines[at + 2:] if t.strip()]
    return lines[:at], rows


@pytest.mark.parametrize("name", SPECS)
def test_svg_has_the_text_plans_notes_order_and_traffic_words(name: str, tmp_path: Path) -> None:
    """The picture carries what the text plan says besides its numbers: every note (the served
    name's 404, the grace periods, the capability a mode needs), the order of each transition's
    moves with its drain bound, and which share of the split is whose."""
    spec = _spec(name, tmp_path)
    head, rows = _table(spec)
    _, root = _svg(spec)
    shown = " ".join((e.text or "") for e in root.iter("{http://www.w3.org/2000/svg}text")
                     if _cls(e) & {"plan-note", "gate-detail"})
    for line in head[2:]:
        if line.strip():
            assert line.removeprefix("note: ") in shown, line
    groups = [g for g in root.iterfind("svg:g", NS) if "state" in _cls(g)]
    assert [_title_of(g) for g in groups] == [r["step"] for r in rows]
    for g, row in zip(groups, rows, strict=True):
        moves = "".join(e.text or "" for e in g.iterfind("svg:text", NS) if "order" in _cls(e))
        assert moves == row["order"], (row["step"], moves)
    labels = [e.text for e in root.iter("{http://www.w3.org/2000/svg}text")
              if "row-label" in _cls(e)]
    assert "stable/candidate %" in labels and "order of moves" in labels


def test_legend_names_and_colours_follow_the_spec(tmp_path: Path) -> None:
    """Generations are named as the spec names them, in the colour their name says: blue/green
    draws "blue" blue and "green" green; a revision dgdgen made is said to be generated; other
    revisions take the stable and candidate colours, never the same for both."""
    from dgdgen.picture import NAMED_COLOURS, ROLE_COLOURS

    def fills(root: ET.Element) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {"stable": set(), "candidate": set()}
        for r in root.iter("{http://www.w3.org/2000/svg}rect"):
            gen = (_cls(r) & {"stable", "candidate"}) or {r.get("data-generation")}
            for g in gen & out.keys():
                out[g].add(r.get("fill", ""))
        return out

    def legend(root: ET.Element) -> list[str]:
        return [e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}text")
                if "legend-label" in _cls(e)]

    _, bg = _svg(REPO / "examples" / "vllm-agg-blue-green" / "rollout.yaml")
    assert fills(bg) == {"stable": {NAMED_COLOURS["blue"]}, "candidate": {NAMED_COLOURS["green"]}}
    assert legend(bg)[:2] == ["stable blue", "candidate green"]
    _, bs = _svg(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml")
    assert fills(bs) == {"stable": {ROLE_COLOURS["stable"]},
                         "candidate": {ROLE_COLOURS["candidate"]}}
    assert legend(bs)[:2] == ["stable bs16", "candidate bs32"]
    # a spec that names neither revision: both are generated, and the legend says so
    import shutil
    shutil.copytree(REPO / "examples" / "trtllm-disagg-v1beta1", tmp_path / "trt",
                    ignore=shutil.ignore_patterns("rendered"))
    spec = tmp_path / "trt" / "rollout.yaml"
    text = spec.read_text()
    unnamed = "\n".join(line for line in text.splitlines()
                        if not line.strip().startswith("revision:")) + "\n"
    assert unnamed != text
    spec.write_text(unnamed)
    _, trt = _svg(spec)
    plan = _plan(spec)
    names = legend(trt)
    assert names[:2] == [f"stable ({plan['stable_revision']}, generated)",
                         f"candidate ({plan['candidate_revision']}, generated)"]
    assert any("generated: the spec sets no revision" in n for n in names)
    # a candidate named after the stable's role colour: the stable gives way
    spec = (REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml").read_text()
    shutil.copy(REPO / "examples" / "vllm-disagg-block-size" / "dgd.yaml", tmp_path / "dgd.yaml")
    (tmp_path / "other.yaml").write_text(spec.replace("revision: bs32", "revision: blue"))
    _, clash = _svg(tmp_path / "other.yaml")
    got = fills(clash)
    assert got["candidate"] == {NAMED_COLOURS["blue"]} and got["stable"] != got["candidate"]


def test_table_and_json_show_every_gate_kind(tmp_path: Path) -> None:
    """The text plan has the minimum sample of the quality gate, the custom metrics and the
    experiment per step (a column only such plans have), and `--format json` lists them."""
    spec = _spec(EVERY_GATE, tmp_path)
    plan = _plan(spec)
    want = _expected_checks(spec, plan)
    done = run_cli("plan", str(spec))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(t for t in lines if t.startswith("step "))
    assert header.endswith("min sample (quality, custom, A/B)"), header
    col = header.index("min sample")
    names = {"quality": "quality", "custom": "custom", "experiment": "A/B"}
    for st in plan["steps"][1:]:
        row = next(t for t in lines if t.split()[:1] == [str(st["index"])])
        cell = "; ".join(f"{names[k]} {v}" for k, v in want.get(st["index"], {}).items())
        assert row[col:] == (cell or "-"), row
    assert [(c["kind"], c["steps"]) for c in plan["checks"]] == [
        ("quality", [1]), ("custom", [1]), ("custom", [1]), ("experiment", [2])]
    assert plan["checks"][0]["minimum"] == want[1]["quality"]
    # a plan with latency gates only keeps its columns (the README table)
    plain = run_cli("plan", str(REPO / "examples" / "vllm-disagg-block-size" / "rollout.yaml"))
    assert "min sample" not in plain.stdout
    # docs/analysis.md shows this table and the trtllm example's as they are
    docs = (REPO / "docs" / "analysis.md").read_text()
    assert "\n".join(lines[lines.index(header):]) in docs
    trt = run_cli("plan", str(REPO / "examples" / "trtllm-disagg-v1beta1" / "rollout.yaml"))
    shown = trt.stdout.splitlines()
    quality = next(t for t in shown if t.startswith("quality gate"))
    table = "\n".join(shown[next(i for i, t in enumerate(shown) if t.startswith("step ")):])
    assert f"{quality}\n\n{table}" in docs
    assert table in (REPO / "docs" / "planning.md").read_text()


def test_gate_summary_says_what_each_step_decides(tmp_path: Path) -> None:
    """What the rehearsal report puts above a gate's measurement: the gate's metrics, request
    minimum and bounds, and the quality gate, custom metrics or experiment at that step."""
    from dgdgen.pipeline.prepare import prepare
    from dgdgen.pipeline.report import gate_summary

    spec = _spec(EVERY_GATE, tmp_path)
    plan = _plan(spec)
    want = _expected_checks(spec, plan)
    p = prepare(str(spec))
    first = gate_summary(p, 1)
    assert first[0].startswith("gate slo: requests, ttft-p95,") and "quality" in first[0]
    assert first[1].startswith(f"Inconclusive below {plan['gates'][0]['minRequests']} requests")
    assert "ttft-p95-max 2, max-regression 1.2" in first[2]
    text = " ".join(first)
    assert f"Inconclusive below {want[1]['quality'].split()[0]} scored pairs" in text
    assert "custom metric thumbs-down" in text and "custom metric checkout" in text
    (second,) = gate_summary(p, 2)
    n_s, n_c = want[2]["experiment"].split()[0].split("/")
    assert f"until {n_s} stable and {n_c} candidate samples" in second
    assert gate_summary(p, 3) == []
