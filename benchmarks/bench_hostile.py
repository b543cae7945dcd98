"""Time and peak memory of `dgdgen` on the worst inputs of docs/robustness.md: alias bombs (in a
spec, a stable DGD, a checked file and a sibling of one), deep nesting, /dev/zero, a FIFO,
oversized specs, DGDs padded with comments (1–4 MB, to show the cost is linear in size); the
inputs that crashed (exit 70) before; well-formed and malformed DGDs of 1, 4 and 8 MB through
`validate`, `plan`, `verify` and `check`; specs of 100, 1,000 (the maximum) and more steps.

    python benchmarks/bench_hostile.py [--large] [--only TEXT]

Each case is a separate `python -m dgdgen` process; wall-clock time and the child's peak RSS
(``wait4``) are printed as a Markdown table with the machine. ``--large`` adds the 50 MB spec read
with the cap raised (slow: it measures the parser, not a refusal).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "vllm-disagg-block-size"


def alias_bomb(levels: int, width: int = 9) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def env_entries(mb: float) -> str:
    """About ``mb`` MB of a worker's env list: the bulk of a large, real DGD."""
    return "".join(f"        - name: X_{i:07d}\n          value: 'v{i:08d}xxxxxxxx'\n"
                   for i in range(int(mb * 1_000_000 / 64)))


def gated_steps(n: int) -> str:
    return "  steps:\n" + "".join(
        f"    - weight: {max(1, i * 99 // n)}\n      pause: 1m\n      gate: slo\n"
        for i in range(1, n)) + "    - weight: 100\n"


def indented(text: str) -> str:
    return "".join("  " + ln + "\n" for ln in text.splitlines())


def measured(args: list[str], cwd: Path, timeout: float = 600
             ) -> tuple[float, float, float, int, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, exit code, last stderr line) of one dgdgen
    process, from ``wait4``. The inputs are made in another process (:func:`main`), so this
    one stays small: Linux carries a parent's peak RSS into a forked child's figure."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errf:
        proc = subprocess.Popen([sys.executable, "-m", "dgdgen", *args], cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=errf)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
        errf.seek(0)
        last = (errf.read().strip().splitlines() or [""])[-1]
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, cpu, usage.ru_maxrss / 1024, proc.returncode, last


def cases(work: Path, large: bool) -> list[tuple[str, Callable[[], list[str]]]]:
    rollout = (EXAMPLE / "rollout.yaml").read_text()
    dgd = (EXAMPLE / "dgd.yaml").read_text()

    def fresh(name: str) -> Path:
        d = work / name
        d.mkdir()
        (d / "rollout.yaml").write_text(rollout)
        (d / "dgd.yaml").write_text(dgd)
        return d

    def spec_bomb() -> list[str]:
        d = fresh("spec-bomb")
        (d / "rollout.yaml").write_text(rollout + "x-bomb:\n" + indented(alias_bomb(7)))
        return ["validate", str(d / "rollout.yaml")]

    def deep_spec_bomb() -> list[str]:
        d = fresh("deep-bomb")
        (d / "rollout.yaml").write_text(rollout + "x-bomb:\n" + indented(alias_bomb(12)))
        return ["validate", str(d / "rollout.yaml")]

    def dgd_bomb() -> list[str]:
        d = fresh("dgd-bomb")
        (d / "dgd.yaml").write_text(dgd + "x-bomb:\n" + indented(alias_bomb(9)))
        return ["validate", str(d / "rollout.yaml")]

    def sibling_bomb() -> list[str]:
        d = fresh("sibling-bomb")
        (d / "bomb.yaml").write_text(alias_bomb(12))
        return ["check", str(d / "dgd.yaml")]

    def checked_bomb() -> list[str]:
        d = fresh("checked-bomb")
        (d / "bomb.yaml").write_text(alias_bomb(12))
        return ["check", str(d / "bomb.yaml")]

    def deep_flow() -> list[str]:
        d = fresh("deep-flow")
        n = 1_000_000
        (d / "deep.yaml").write_text("x: " + "[" * n + "]" * n + "\n")
        return ["check", str(d / "deep.yaml")]

    def deep_spec() -> list[str]:
        d = fresh("deep-spec")
        n = 1_000_000
        (d / "rollout.yaml").write_text(rollout + "x-deep: " + "[" * n + "]" * n + "\n")
        return ["validate", str(d / "rollout.yaml")]

    def dev_zero() -> list[str]:
        d = fresh("dev-zero")
        (d / "rollout.yaml").write_text(rollout.replace("dgd: dgd.yaml", "dgd: /dev/zero"))
        return ["validate", "--allow-outside-paths", str(d / "rollout.yaml")]

    def fifo() -> list[str]:
        d = fresh("fifo")
        os.mkfifo(d / "spec.yaml")
        return ["validate", str(d / "spec.yaml")]

    def big_spec() -> list[str]:
        d = fresh("big-spec")
        (d / "rollout.yaml").write_text(rollout + ("# " + "x" * 77 + "\n") * 650_000)
        return ["validate", str(d / "rollout.yaml")]

    def padded(mb: float, command: str) -> Callable[[], list[str]]:
        def make() -> list[str]:
            d = fresh(f"padded-{command}-{mb}")
            pad = ("# " + "c" * 77 + "\n") * int(mb * 1_000_000 / 80)
            (d / "dgd.yaml").write_text(dgd.replace("spec:\n", "spec:\n" + pad, 1))
            target = "rollout.yaml" if command == "validate" else "dgd.yaml"
            return [command, str(d / target)]
        return make

    steps = rollout[rollout.index("  steps:\n"):rollout.index("  traffic:\n")]
    model = "            - --model\n            - Qwen/Qwen3-0.6B\n"

    def sized(mb: float, kind: str, command: str) -> Callable[[], list[str]]:
        """A DGD of ``mb`` MB: its env list (``kind`` well-formed), then a flow list left open
        at its end (``malformed``: libyaml reads all of it before it finds the error), or as
        many small mappings (``dense``), or of empty flow lists in one flow list (``flow-lists``:
        the most events per byte)."""
        def make() -> list[str]:
            d = fresh(f"{kind}-{mb}-{command}")
            if kind == "dense":
                text = dgd.replace("spec:\n", "spec:\n  x-dense:\n"
                                   + "  - {a: 1}\n" * int(mb * 1_000_000 / 11), 1)
            elif kind == "flow-lists":  # the most events per byte: `[]` after `[]`
                text = dgd.replace("spec:\n", "spec:\n  x-flow: ["
                                   + ", ".join(["[]"] * int(mb * 1_000_000 / 4)) + "]\n", 1)
            else:
                text = dgd.replace("      envs:\n", "      envs:\n" + env_entries(mb), 1)
            if kind == "malformed":
                text += "  x-open: [unclosed\n"
            (d / "dgd.yaml").write_text(text)
            target = "rollout.yaml" if command in ("validate", "plan") else "dgd.yaml"
            return [command, str(d / target)]
        return make

    def many_steps(n: int, command: str) -> Callable[[], list[str]]:
        def make() -> list[str]:
            d = fresh(f"steps-{n}-{command}")
            (d / "rollout.yaml").write_text(rollout.replace(steps, gated_steps(n)))
            return [command, str(d / "rollout.yaml"),
                    *(["-o", str(d / "out")] if command == "render" else [])]
        return make

    def edited(name: str, file: str, old: str, new: str, *args: str) -> Callable[[], list[str]]:
        """A copy of the example with one edit in ``file``; the command line, ``{}`` standing
        for the folder."""
        def make() -> list[str]:
            d = fresh(name)
            text = (d / file).read_text()
            assert old in text, old
            (d / file).write_text(text.replace(old, new, 1))
            return [a.replace("{}", str(d)) for a in args]
        return make

    def policy_wide() -> list[str]:
        d = fresh("policy-wide")
        (d / "new.yaml").write_text(dgd.replace("      replicas: 1\n", "      replicas: 1\n"
                                                "      x-count: 99999999999999999999\n", 1))
        return ["policy", "test", str(d / "dgd.yaml"), str(d / "new.yaml")]

    def ruamel_near_cap() -> list[str]:
        # an alias sends the spec to ruamel.yaml; 60 KB of the flow list it reads slowest
        d = fresh("ruamel-near-cap")
        (d / "rollout.yaml").write_text(rollout + "x-a: &a 1\nx-b: *a\nx-l: ["
                                        + "1," * 30_000 + "1]\n")
        return ["validate", str(d / "rollout.yaml")]

    out: list[tuple[str, Callable[[], list[str]]]] = [
        ("alias bomb 9^7 in a spec (`validate`)", spec_bomb),
        ("alias bomb 9^12 in a spec (`validate`)", deep_spec_bomb),
        ("alias bomb 9^9 in the stable DGD (`validate`)", dgd_bomb),
        ("alias bomb 9^12 beside a checked DGD (`check`)", sibling_bomb),
        ("alias bomb 9^12 as the checked file (`check`)", checked_bomb),
        ("1,000,000 nested `[` checked (`check`)", deep_flow),
        ("1,000,000 nested `[` in a spec (`validate`)", deep_spec),
        ("`dgd: /dev/zero` (`validate`)", dev_zero),
        ("a FIFO as the spec (`validate`)", fifo),
        ("52 MB spec, default cap (`validate`)", big_spec),
    ]
    for mb in (1, 2, 4):
        out.append((f"stable DGD padded with comments to {mb} MB (`validate`)",
                    padded(mb, "validate")))
        out.append((f"DGD padded with comments to {mb} MB (`verify`)", padded(mb, "verify")))
        out.append((f"DGD padded with comments to {mb} MB (`check`)", padded(mb, "check")))
    wide = "9" * 5000
    out += [
        ("5,000-digit integer in the stable DGD (`validate`)",
         edited("wide-validate", "dgd.yaml", "      replicas: 1\n", f"      replicas: {wide}\n",
                "validate", "{}/rollout.yaml")),
        ("5,000-digit integer in a DGD (`check`)",
         edited("wide-check", "dgd.yaml", "      replicas: 1\n", f"      replicas: {wide}\n",
                "check", "{}/dgd.yaml")),
        ("`%YAML 1.3` DGD (`verify`)",
         edited("yaml13", "dgd.yaml", "apiVersion:", "%YAML 1.3\n---\napiVersion:",
                "verify", "{}/dgd.yaml")),
        ("`%YAML 1.0` spec (`validate`)",
         edited("yaml10", "rollout.yaml", "apiVersion:", "%YAML 1.0\n---\napiVersion:",
                "validate", "{}/rollout.yaml")),
        ("`--model '   '` in the stable DGD (`validate`)",
         edited("blank-model", "dgd.yaml", model, model.replace("Qwen/Qwen3-0.6B", "'   '"),
                "validate", "{}/rollout.yaml")),
        ('`--served-model-name "\\uD800"` (`verify`)',
         edited("surrogate", "dgd.yaml", model,
                '            - --served-model-name\n            - "\\uD800"\n' + model,
                "verify", "{}/dgd.yaml")),
        ("integer 10^20 under a service (`policy test`)", policy_wide),
    ]
    for mb in (1, 4, 8):
        for kind in ("well-formed", "malformed"):
            for command in ("validate", "plan", "verify", "check"):
                what = "stable DGD" if command in ("validate", "plan") else "DGD"
                out.append((f"{kind} {what} of {mb} MB (`{command}`)",
                            sized(mb, kind, command)))
    for command in ("verify", "check"):
        out.append((f"8 MB of `- {{a: 1}}` in a DGD (`{command}`)", sized(8, "dense", command)))
        out.append((f"8 MB of `[[], [], …]` in a DGD (`{command}`)",
                    sized(8, "flow-lists", command)))
    out += [
        ("8 MB stable DGD with an alias (`validate`)",
         edited("alias-8", "dgd.yaml", "      envs:\n",
                "      x-a: &a 1\n      x-b: *a\n      envs:\n" + env_entries(8),
                "validate", "{}/rollout.yaml")),
        ("60 KB spec with an alias: ruamel.yaml near its cap (`validate`)", ruamel_near_cap),
        ("10,000 wrong items in one list of a spec (`validate`)",
         edited("many-errors", "rollout.yaml", "            --block-size: 32\n",
                "            --block-size: 32\n          remove:\n"
                + "            - {a: 1}\n" * 10_000, "validate", "{}/rollout.yaml")),
        ("200,000 wrong items in one list of a spec (`validate`)",
         edited("too-many-items", "rollout.yaml", "            --block-size: 32\n",
                "            --block-size: 32\n          remove:\n"
                + "            - {a: 1}\n" * 200_000, "validate", "{}/rollout.yaml")),
    ]
    for n in (100, 1000, 1001):
        for command in ("validate", "plan"):
            out.append((f"{n:,} gated steps (`{command}`)", many_steps(n, command)))
    out.append(("1,000 gated steps (`render`)", many_steps(1000, "render")))
    if large:
        def big_raised() -> list[str]:
            return [*big_spec(), "--max-input-size", "64M"]
        out.append(("52 MB spec, cap raised to 64M (`validate`)", big_raised))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="also read a 52 MB spec in full")
    ap.add_argument("--only", metavar="TEXT", help="only the inputs whose label holds TEXT")
    ap.add_argument("--make", nargs=2, metavar=("INDEX", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:  # child: write one case's files, print its command line
        label_make = cases(Path(args.make[1]), args.large)[int(args.make[0])]
        print("\0".join(label_make[1]()))
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
    try:
        print(f"machine: {platform.machine()}, {os.cpu_count()} CPU(s), Python "
              f"{platform.python_version()}, {platform.system()} {platform.release()}; load "
              f"average at start {os.getloadavg()[0]:.1f}\n")
        print("| input | exit | wall (s) | CPU (s) | peak RSS (MB) | message |")
        print("| --- | --- | --- | --- | --- | --- |")
        labels = [label for label, _ in cases(Path(tempfile.gettempdir()), args.large)]
        for i, label in enumerate(labels):
            if args.only and args.only not in label:
                continue
            made = subprocess.run(
                [sys.executable, __file__, "--make", str(i), str(work),
                 *(["--large"] if args.large else [])],
                capture_output=True, text=True, check=True)
            argv = made.stdout.rstrip("\n").split("\0")
            wall, cpu, rss, code, last = measured(argv, work)
            msg = re.split(r": (?:error|warning): ", last)[-1]
            msg = re.sub(r"^\S*?([\w-]+/[\w.-]+\.yaml)", r"\1", msg)[:80].replace("|", "\\|")
            print(f"| {label} | {code} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {msg} |",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
