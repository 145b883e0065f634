"""One large grade through a real `expjudge serve` (issue 42): memory, time against the embedding floor, progress.

For each size, a fresh `expjudge serve` (SQLite, embedded judge, auth off, an empty vector cache) is sent one
asynchronous grade of the bundled example (examples/grade_request.json) whose task carries requirements of one
shape ("Compute the divergence of collective variable N ...") up to that many leaves: the shape that made every
requirement a sibling of every other (5,000 of them: 16 GB, 8 min 49 s before). A grade of more than 200 leaves
is made in the separate, lower-priority grading process (judge/jobs/isolated_grading.py): the service's warm
spare, started with it (or, with --no-spare, a process started for the grade).

Prints per size:
- wall time from the job's submission to its end;
- the peak RSS of every process of the service (VmHWM of the server, the grading process, the resource tracker;
  sampled every 0.2 s while they live) and the peak of their sampled sum;
- the floor, in the same run: a fresh process that loads the embedding model and embeds the same texts the grade
  embeds (`EvidenceBuilder.texts_to_embed`), nothing else; and the model's encode time alone;
- the idle RSS of the service before the grade (after one small synchronous grade, its spare warm: a warm
  service) and after it (once the grading process that made it is idle again, kept warm, or gone and a fresh
  spare warm: it is recycled when it holds more than EXPJUDGE_ISOLATED_RECYCLE_MB above its warm memory), and
  the spare's own part of it (what EXPJUDGE_ISOLATED_SPARE=false saves while idle);
- the longest wait between two changes of the job's `progress.leaves_done` (polled every 0.25 s), from its
  submission (0 s) to its end (both counted as changes).
Targets at 5,000 leaves: peak RSS <= 2 GB, wall <= 3x the floor, idle after <= before + 200 MB, progress
every <= 5 s. The load average is printed beside each size: the machine may be shared.

    PYTHONPATH=$PWD python bench/service/large_grade_memory.py [--sizes 500,2000,5000] [--no-spare]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from judge.devtools.local_services import ChildProcess, offline_env, start_service  # noqa: E402

EXAMPLE = json.loads((ROOT / "examples" / "grade_request.json").read_text(encoding="utf-8"))
MB = 1024 * 1024
_FLOOR = """
import json, sys, time
started = time.perf_counter()
from judge.settings import configure_offline_environment
configure_offline_environment()
from judge.embeddings.encoder import Embedder
texts = json.load(open(sys.argv[1]))
embedder = Embedder(cache=None)
embedder.encode(["load the model"])
loaded = time.perf_counter()
embedder.encode(texts)
print(json.dumps({"load": loaded - started, "encode": time.perf_counter() - loaded}))
"""


def request(leaves: int) -> dict[str, Any]:
    """The bundled example with requirements of one shape up to `leaves` leaves."""
    extra = leaves - 26  # the example's rubric expands to 26 leaves
    requirements = [*EXAMPLE["task"]["requirements"],
                    *(f"Compute the divergence of collective variable {n} for the bench" for n in range(extra))]
    return {**EXAMPLE, "task": {**EXAMPLE["task"], "requirements": requirements}, "judge": "embedded"}


def embedded_texts(body: dict[str, Any]) -> list[str]:
    """The distinct texts the grade's evidence builder embeds (what the floor embeds)."""
    from judge.grading.grader import Grader
    from judge.judges.registry import build_judge
    from judge.models import Submission, Task
    from judge.rubric_loader import load_rubric

    grader = Grader(load_rubric(body["rubric"]), build_judge("embedded"))
    task, submission = Task.model_validate(body["task"]), Submission.model_validate(body["submission"])
    prepared = grader._parsed(task, submission, [], None)
    return list(dict.fromkeys(grader.builder.texts_to_embed(prepared.pending, prepared.view, task)))


def floor(texts: list[str], folder: Path) -> dict[str, float]:
    """A fresh process loading the model and embedding `texts` (wall, and its load and encode parts)."""
    path = folder / "floor_texts.json"
    path.write_text(json.dumps(texts), encoding="utf-8")
    started = time.perf_counter()
    # The OpenMP wait policy of the grading process (judge/jobs/isolated_grading.py), so the floor is its own.
    out = subprocess.run([sys.executable, "-c", _FLOOR, str(path)],
                         env=offline_env(PYTHONPATH=str(ROOT), OMP_WAIT_POLICY="PASSIVE"),
                         capture_output=True, text=True, check=True)
    parts: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return {"wall": time.perf_counter() - started, **parts}


def _kib(pid: int, field_name: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _role(process: psutil.Process) -> str:
    try:
        line = " ".join(process.cmdline())
    except psutil.Error:
        return "gone"
    if "resource_tracker" in line:
        return "resource tracker"
    if "multiprocessing" in line or "spawn_main" in line:
        return "grading process"
    return "other child"


@dataclass
class Sampler:
    """Samples RSS of the server and all its descendants every 0.2 s; keeps each process's VmHWM."""

    root: int
    peaks: dict[int, tuple[str, int]] = field(default_factory=dict)
    peak_sum: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def tree(self) -> list[psutil.Process]:
        try:
            parent = psutil.Process(self.root)
            return [parent, *parent.children(recursive=True)]
        except psutil.Error:
            return []

    def rss(self) -> int:
        """Current RSS of the whole service, bytes."""
        return sum(_kib(p.pid, "VmRSS") for p in self.tree()) * 1024

    def run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for process in self.tree():
                total += _kib(process.pid, "VmRSS") * 1024
                role = "server" if process.pid == self.root else self.peaks.get(process.pid, (None,))[0] or \
                    _role(process)
                self.peaks[process.pid] = (role, max(self.peaks.get(process.pid, ("", 0))[1],
                                                     _kib(process.pid, "VmHWM") * 1024))
            self.peak_sum = max(self.peak_sum, total)
            time.sleep(0.2)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def idle_rss(sampler: Sampler, seconds: float = 2.0) -> int:
    """The service's RSS after `seconds` of nothing (median of samples)."""
    samples = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        samples.append(sampler.rss())
        time.sleep(0.2)
    return sorted(samples)[len(samples) // 2]


def grading_processes(sampler: Sampler) -> list[psutil.Process]:
    """The service's grading processes running now (the warm spare among them)."""
    return [p for p in sampler.tree() if _role(p) == "grading process"]


def _idle_and_loaded(process: psutil.Process) -> bool:
    """Whether a grading process used under 0.05 s of CPU over the next second with more than 200 MB resident
    (its model loaded, no grade running)."""
    try:
        cpu = sum(process.cpu_times()[:2])
        time.sleep(1.0)
        return sum(process.cpu_times()[:2]) - cpu < 0.05 and _kib(process.pid, "VmRSS") > 200 * 1024
    except psutil.Error:
        return False


def warm_spare(sampler: Sampler, timeout: float = 300) -> psutil.Process:
    """The service's warm spare once it is warm, alone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = grading_processes(sampler)
        if len(found) == 1 and _idle_and_loaded(found[0]):
            return found[0]
        time.sleep(0.2)
    raise TimeoutError("no warm spare grading process")


def spare_after(sampler: Sampler, graded_by: int) -> tuple[psutil.Process, bool]:
    """The warm spare once a large grade made by `graded_by` has ended, and whether it is that process (kept
    warm: it held no more than EXPJUDGE_ISOLATED_RECYCLE_MB above its warm memory) rather than a fresh one (that
    one recycled: it is stopped before the job is marked done)."""
    spare = warm_spare(sampler)
    return spare, spare.pid == graded_by


def gaps(changes: list[tuple[float, int, int | None]], wall: float) -> tuple[float, float]:
    """The longest wait between two changes of leaves_done, from submission (0 s) to the job's end (`wall`)."""
    marks, last = [0.0], 0
    for at, done, _ in changes:
        if done != last:
            marks.append(at)
            last = done
    marks.append(wall)
    return max(itertools.pairwise(marks), key=lambda p: p[1] - p[0])


def one_size(leaves: int, folder: Path, spare: bool) -> dict[str, Any]:
    body = request(leaves)
    load_before = os.getloadavg()
    env = offline_env(EXPJUDGE_DATABASE_URL=f"sqlite+aiosqlite:///{folder / 'expjudge.db'}",
                      EXPJUDGE_AUTH_ENABLED="false", EXPJUDGE_EMBEDDING_CACHE_PATH=str(folder / "vectors"),
                      EXPJUDGE_ISOLATED_SPARE=str(spare).lower(), PYTHONPATH=str(ROOT))
    child: ChildProcess
    child, base = start_service(folder, env)
    spare_rss: dict[str, int] = {}
    try:
        # A service that grades has graded before: one small synchronous grade (the bundled example, in the
        # server's own process, with its model) so that "before" is the warm idle service, not a fresh one.
        httpx.post(f"{base}/v1/grade", json={**EXAMPLE, "judge": "embedded"}, timeout=600).raise_for_status()
        with Sampler(child.pid) as sampler:
            graded_by = None
            if spare:  # "before" is the service with its spare warm; the grade is made by that spare
                graded_by = warm_spare(sampler).pid
                spare_rss["before"] = _kib(graded_by, "VmRSS") * 1024
            time.sleep(1.0)
            before = idle_rss(sampler)
            changes: list[tuple[float, int, int | None]] = []
            started = time.perf_counter()
            accepted = httpx.post(f"{base}/v1/grade", params={"mode": "async"}, json=body, timeout=120)
            accepted.raise_for_status()
            job_id = accepted.json()["job_id"]
            last = None
            while True:
                job = httpx.get(f"{base}/v1/jobs/{job_id}", timeout=60).json()
                now = time.perf_counter() - started
                seen = (job["progress"]["leaves_done"], job["progress"]["leaves_total"])
                if seen != last:
                    changes.append((now, *seen))
                    last = seen
                if job["state"] in ("succeeded", "failed", "partial"):
                    break
                time.sleep(0.25)
            wall = time.perf_counter() - started
            if spare:  # the process that graded is kept warm, or recycled and a fresh spare started in its place
                assert graded_by is not None
                settled, kept = spare_after(sampler, graded_by)
                spare_rss["after"] = _kib(settled.pid, "VmRSS") * 1024
                spare_rss["kept"] = int(kept)
            else:
                deadline = time.monotonic() + 30  # the grading process stops once no grade is in flight
                while grading_processes(sampler) and time.monotonic() < deadline:
                    time.sleep(0.2)
            after = idle_rss(sampler)
    finally:
        child.stop()
    texts = embedded_texts(body)
    measured = floor(texts, folder)
    return {"leaves": leaves, "state": job["state"], "changes": changes,
            "wall": wall, "floor": measured, "texts": len(texts),
            "peaks": sorted(sampler.peaks.values(), key=lambda p: -p[1]), "peak_sum": sampler.peak_sum,
            "before": before, "after": after, "progress_gap": gaps(changes, wall), "spare": spare_rss,
            "updates": len({done for _, done, _ in changes}) - 1, "load": (load_before, os.getloadavg()),
            "final": (job["progress"]["leaves_done"], job["progress"]["leaves_total"])}


def report(row: dict[str, Any]) -> None:
    leaves, f = row["leaves"], row["floor"]
    spare = "warm spare" if row["spare"] else "no spare (EXPJUDGE_ISOLATED_SPARE=false)"
    print(f"\n== {leaves} leaves, {spare}: job {row['state']}, progress {row['final'][0]}/{row['final'][1]} leaves, "
          f"load average {row['load'][0][0]:.1f} -> {row['load'][1][0]:.1f} (2 cores, shared)")
    print(f"wall {row['wall']:.1f} s | floor: a fresh process embedding the same {row['texts']} texts "
          f"{f['wall']:.1f} s (model load {f['load']:.1f} s, encode {f['encode']:.1f} s) | "
          f"wall/floor {row['wall'] / f['wall']:.2f}x (target <= 3x), wall/encode {row['wall'] / f['encode']:.2f}x")
    for role, peak in row["peaks"]:
        print(f"  peak RSS (VmHWM) {role:<16} {peak / MB:8.0f} MB")
    print(f"peak RSS of the service (sampled sum) {row['peak_sum'] / MB:.0f} MB (target <= 2048 MB at 5,000 leaves)")
    grown = (row["after"] - row["before"]) / MB
    print(f"idle RSS before {row['before'] / MB:.0f} MB, after {row['after'] / MB:.0f} MB ({grown:+.0f} MB; "
          f"target <= +200 MB)")
    if row["spare"]:
        print(f"  of which the warm spare grading process: {row['spare']['before'] / MB:.0f} MB before, "
              f"{row['spare']['after'] / MB:.0f} MB after ("
              + ("the one that graded, kept warm: within EXPJUDGE_ISOLATED_RECYCLE_MB of its warm memory)"
                 if row["spare"]["kept"] else "a fresh one: the one that graded held too much and was recycled)"))
    start, end = row["progress_gap"]
    print(f"progress: {row['updates']} changes of leaves_done, longest wait between two {end - start:.1f} s "
          f"(from {start:.1f} s to {end:.1f} s after submission, the job's end included; target <= 5 s)")
    shown = row["changes"][:: max(1, len(row["changes"]) // 15)]
    print("  seconds: leaves done  " + ", ".join(f"{t:.0f}: {done}" for t, done, _ in shown))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="500,2000,5000", help="Leaves per grade, comma-separated.")
    parser.add_argument("--no-spare", action="store_true", help="EXPJUDGE_ISOLATED_SPARE=false: the grading process "
                        "starts on first use (the start-up gap, and no idle spare)")
    args = parser.parse_args()
    print(f"command: .venv/bin/python bench/service/large_grade_memory.py --sizes {args.sizes}"
          + (" --no-spare" if args.no_spare else ""))
    for leaves in (int(size) for size in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="expjudge-large-grade-") as folder:
            report(one_size(leaves, Path(folder), spare=not args.no_spare))


if __name__ == "__main__":
    main()
