"""Benchmark of the checker, side by side with its peers on the same files.

1. The pre-commit path: `dgdgen check` on three changed DGD files in a Git repository (each
   compared with HEAD), against `yamllint` on the same three files.
2. Bulk: 2,000 DGD files (one DGD each, built from the upstream examples with distinct names):
   only parsing them with the libyaml C loader (the floor), `dgdgen check DIR`, and
   `check-jsonschema` with the DGD CRD's v1beta1/v1alpha1 schema.

    python benchmarks/bench_check.py [--files 2000] [--runs 5]

Prints a Markdown table and the machine; wall-clock times are the best of --runs (separate
processes, start-up included).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "check" / "corpus"
BIN = Path(sys.executable).parent
CRD = REPO.parent / "shared" / "upstream" / "dynamo" / "nvidia.com_dynamographdeployments.yaml"

CHANGED = ("sglang-page-size-disagg-v1beta1", "vllm-block-size-disagg-v1alpha1",
           "trtllm-override-engine-args-tp")
SOURCES = ("vllm-disagg-v1alpha1-to-v1beta1", "sglang-page-size-disagg-v1alpha1",
           "trtllm-served-model-name-v1beta1", "vllm-image-bump-v1alpha1")


# Measure installed tools as users run them: with their bytecode caches (some sandboxes set
# PYTHONDONTWRITEBYTECODE, which makes every start compile every module from source).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def best(cmd: list[str], runs: int, cwd: Path | None = None) -> float:
    times = []
    for i in range(runs + 1):  # the first run warms the page and bytecode caches
        t = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False, env=ENV)
        if i:
            times.append(time.perf_counter() - t)
    return min(times)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@e", *args],
                   check=True, capture_output=True)


def machine() -> str:
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")


def crd_schema(out: Path) -> Path:
    import yaml

    crd = yaml.load(CRD.read_text(), Loader=yaml.CSafeLoader)
    versions = {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}
    schema = {"oneOf": [
        {"allOf": [{"properties": {"apiVersion": {"const": f"nvidia.com/{name}"}}}, s]}
        for name, s in versions.items()]}
    out.write_text(json.dumps(schema))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    dgdgen = [str(BIN / "dgdgen")]
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        # --- pre-commit path: three changed files
        repo = t / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        for i, name in enumerate(CHANGED):
            shutil.copy(CORPUS / name / "old.yaml", repo / f"dgd{i}.yaml")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "base")
        for i, name in enumerate(CHANGED):
            shutil.copy(CORPUS / name / "new.yaml", repo / f"dgd{i}.yaml")
        git(repo, "add", ".")
        three = [f"dgd{i}.yaml" for i in range(3)]
        rows.append(("`python -c pass` (interpreter start)",
                     best([sys.executable, "-c", "pass"], args.runs), ""))
        rows.append(("`dgdgen check` 3 changed files vs HEAD (pre-commit path)",
                     best([*dgdgen, "check", *three], args.runs, repo), "target ≤ 0.150 s"))
        rows.append(("`dgdgen check` staged files vs HEAD (no paths)",
                     best([*dgdgen, "check"], args.runs, repo), ""))
        rows.append(("`yamllint -d relaxed` same 3 files",
                     best([str(BIN / "yamllint"), "-d", "relaxed", *three], args.runs, repo),
                     ""))
        # --- bulk: N files
        bulk = t / "bulk"
        bulk.mkdir()
        texts = [(CORPUS / s / "new.yaml").read_text() for s in SOURCES]
        total = 0
        for i in range(args.files):
            text = texts[i % len(texts)]
            for old in ("name: vllm-disagg\n", "name: sglang-disagg\n", "name: trtllm-disagg\n",
                        "name: vllm-agg\n"):
                text = text.replace(old, f"{old[:-1]}-{i:05d}\n")
            (bulk / f"dgd-{i:05d}.yaml").write_text(text)
            total += len(text)
        files = sorted(str(p) for p in bulk.iterdir())
        parse_only = ("import sys, yaml\nfor f in sys.argv[1:]:\n"
                      "    list(yaml.load_all(open(f).read(), Loader=yaml.CSafeLoader))\n")
        floor = best([sys.executable, "-c", parse_only, *files], args.runs)
        rows.append((f"parse only, PyYAML CSafeLoader, {args.files} files "
                     f"({total / 1e6:.1f} MB)", floor, "the floor"))
        ours = best([*dgdgen, "check", str(bulk), "--fail-on", "never"], args.runs)
        rows.append((f"`dgdgen check DIR`, {args.files} files (all rules)", ours,
                     f"{ours / floor:.2f}× the floor; target ≤ 2×"))
        if CRD.exists():
            schema = crd_schema(t / "dgd.schema.json")
            cj = best([str(BIN / "check-jsonschema"), "--schemafile", str(schema), *files],
                      max(1, args.runs // 2))
            rows.append((f"`check-jsonschema` with the DGD CRD schema, {args.files} files", cj,
                         f"{cj / floor:.2f}× the floor"))
    print(f"Machine: {machine()}\n")
    print("| what | best wall time | note |\n| --- | ---: | --- |")
    for what, secs, note in rows:
        print(f"| {what} | {secs:.3f} s | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
