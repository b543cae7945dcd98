"""A real Prometheus (Debian's ``prometheus``) scraping the local processes.

The scrape configuration is derived from the rendered PodMonitors, the way prometheus-operator
turns a PodMonitor into a scrape job: the PodMonitor's ``selector.matchLabels`` picks the pods (here:
the processes whose DGD component carries those pod labels), ``podMetricsEndpoints[].port`` picks
the container port (``http`` is the frontend's HTTP port), ``path`` and ``interval`` carry over
(the interval scaled with the rehearsal's clock), the operator's ``namespace`` / ``pod`` /
``container`` labels are attached, and the PodMonitor's ``relabelings`` become the job's
``relabel_configs`` field for field. Nothing about the generation labels is written a second time.
Every worker is also scraped (job ``rehearsal-workers``) for the report.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dgdgen import yamlio
from dgdgen.runtime.procs import Proc, free_port, log_tail
from dgdgen.spec import parse_duration

_RELABEL_FIELDS = {
    "sourceLabels": "source_labels", "separator": "separator", "targetLabel": "target_label",
    "regex": "regex", "modulus": "modulus", "replacement": "replacement", "action": "action",
}


def prometheus_binary() -> str | None:
    return shutil.which("prometheus") or (
        "/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None
    )


def _relabel(r: Mapping[str, Any]) -> dict[str, Any]:
    return {_RELABEL_FIELDS[k]: v for k, v in r.items() if k in _RELABEL_FIELDS}


def scrape_jobs(
    monitors: Iterable[Mapping[str, Any]],
    processes: Iterable[tuple[str, Proc]],
    *,
    time_scale: float,
    min_interval: float = 1.0,
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """(scrape_configs, file_sd targets per job) for the PodMonitors and (k8s namespace, process)
    pairs. The interval is the PodMonitor's scaled by ``time_scale``, at least ``min_interval``."""
    procs = list(processes)
    jobs: list[dict[str, Any]] = []
    targets: dict[str, list[dict[str, Any]]] = {}
    for pm in monitors:
        meta = pm.get("metadata") or {}
        ns = str(meta.get("namespace", "default"))
        spec = pm.get("spec") or {}
        match = {str(k): str(v) for k, v in
                 ((spec.get("selector") or {}).get("matchLabels") or {}).items()}
        for i, ep in enumerate(spec.get("podMetricsEndpoints") or []):
            job = f"podMonitor/{ns}/{meta.get('name')}/{i}"
            interval = max(min_interval, parse_duration(str(ep.get("interval", "30s"))) * time_scale)
            file = f"{len(jobs):03d}.json"
            jobs.append({
                "job_name": job,
                "scrape_interval": f"{math.ceil(interval * 1000)}ms",
                "scrape_timeout": f"{math.ceil(min(interval, 5) * 1000)}ms",
                "metrics_path": str(ep.get("path", "/metrics")),
                "file_sd_configs": [{"files": [file], "refresh_interval": "1s"}],
                "relabel_configs": [_relabel(r) for r in ep.get("relabelings") or []],
            })
            port_name = str(ep.get("port", "http"))
            group = []
            for pod_ns, p in procs:
                if pod_ns != ns or not all(p.labels.get(k) == v for k, v in match.items()):
                    continue
                if port_name != ("http" if p.kind == "frontend" else "system"):
                    continue
                group.append({
                    "targets": [f"127.0.0.1:{p.metrics_port}"],
                    "labels": {"namespace": ns, "pod": p.name, "container": "main",
                               "endpoint": port_name, "job": str(meta.get("name"))},
                })
            targets[file] = group
    return jobs, targets


# Go runtime settings for the local Prometheus, unless the caller's environment sets them: a
# heap grown to 25 % over the live data instead of 100 % (GOGC), and one scheduler thread
# (GOMAXPROCS; it scrapes about ten loopback targets once a second). Measured with 9 scrape jobs
# over a frontend and two workers for 60 s: 58 → 51 MB RSS, 0.65 → 0.69 s CPU. A memory limit
# (GOMEMLIMIT=16-24MiB) took 49-50 MB but its collector then ran all the time (4-6 s CPU).
GO_RUNTIME_ENV = {"GOGC": "25", "GOMAXPROCS": "1"}


def prometheus_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment Prometheus is started with: ``base`` (default: this process's) with
    :data:`GO_RUNTIME_ENV` for the variables it does not set."""
    env = dict(os.environ if base is None else base)
    for key, value in GO_RUNTIME_ENV.items():
        env.setdefault(key, value)
    return env


class Prometheus:
    def __init__(self, workdir: Path, *, time_scale: float) -> None:
        self.dir = workdir / "prometheus"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.time_scale = time_scale
        self.popen: subprocess.Popen[bytes] | None = None
        self.jobs_text = ""
        self._loaded = ""  # the configuration the running Prometheus has read
        self._ready = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def configure(
        self, monitors: Sequence[Mapping[str, Any]], processes: Sequence[tuple[str, Proc]],
        workers: Sequence[tuple[str, Proc]],
    ) -> None:
        jobs, targets = scrape_jobs(monitors, processes, time_scale=self.time_scale)
        interval = f"{math.ceil(max(1.0, 15 * self.time_scale) * 1000)}ms"
        jobs.append({
            "job_name": "rehearsal-workers",
            "scrape_interval": interval,
            "file_sd_configs": [{"files": ["workers.json"], "refresh_interval": "1s"}],
        })
        targets["workers.json"] = [
            {"targets": [f"127.0.0.1:{p.system_port}"],
             "labels": {"namespace": ns, "pod": p.name, "dynamo_namespace_raw": p.namespace or ""}}
            for ns, p in workers
        ]
        for file, group in targets.items():
            tmp = self.dir / (file + ".tmp")
            tmp.write_text(json.dumps(group, indent=1, sort_keys=True))
            os.replace(tmp, self.dir / file)
        config = {"global": {"scrape_interval": interval, "evaluation_interval": interval},
                  "scrape_configs": jobs}
        text = yamlio.dump(config)
        if text != self.jobs_text:
            (self.dir / "prometheus.yml").write_text(text)
            self.jobs_text = text
            if self.popen is None:
                self.start()
            self._wait_ready()
            if self._loaded != text:
                # a Prometheus that has not installed its SIGHUP handler yet would die of it:
                # ready (above) comes after that
                self.popen.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
                self._loaded = text

    def start(self) -> None:
        """Start Prometheus with the configuration written so far (none: no scrape job) and
        return at once: it gets ready while the rehearsal starts the first DGD, and the first
        :meth:`configure` waits for it."""
        if self.popen is not None:
            return
        path = self.dir / "prometheus.yml"
        if not path.exists():
            path.write_text(yamlio.dump({"global": {}, "scrape_configs": []}))
        self._loaded = self.jobs_text
        binary = prometheus_binary() or "prometheus"
        log = open(self.dir / "prometheus.log", "ab")  # noqa: SIM115 - owned by the process
        try:
            self.popen = subprocess.Popen(
                [binary, f"--config.file={path}",
                 f"--storage.tsdb.path={self.dir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=1d", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.dir, env=prometheus_env(),
            )
        finally:
            log.close()

    def _wait_ready(self) -> None:
        if self._ready:
            return
        assert self.popen is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        self._ready = True
                        return
            except OSError:
                pass
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("prometheus did not start: " + self.log_tail())

    def log_tail(self) -> str:
        return log_tail(self.dir / "prometheus.log")

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        qs = urllib.parse.urlencode({"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                     "step": f"{step:g}"})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query_range?{qs}", timeout=10) as r:
                data = json.loads(r.read())
        except (OSError, ValueError):
            return []
        result = (data.get("data") or {}).get("result") or []
        return result if isinstance(result, list) else []

    def stop(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(5)
