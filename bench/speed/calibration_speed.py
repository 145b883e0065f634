"""Time `expjudge calibrate` with the embedded judge: on the CRScore claims, and on a JudgeEval tree beside one grade.

Every run is the real CLI in a fresh process against a fresh temporary SQLite store (so each pays Python
start-up, imports, the model load, report rendering, and embeds everything: the vector cache lives beside
the store), timed by wall clock and by the CPU time the process used (on a shared machine the CPU time is
the steadier figure), with its peak memory (max RSS).

--set crscore: cold, then the rerun against the same store (results and figures served from the store
cache; the embedding model is never loaded); the agreement figures.

--set judgeeval: `expjudge calibrate --rubric judgeeval-v1` on a JudgeEval tree (default: the one
bench/cases/judgeeval_tree.py builds from the shared EXP-Bench data, a 2.4 MB repository and 180 leaves; or
--tree DIR), beside its floor: one `expjudge grade` of the same leaves as one task (per repository of the
tree, `calibration.judgeeval.submission_task`: the task and repository calibration grades), run first.
Prints calibrate / grade (target <= 1.5x), and whether every item's verdict equals the grade's leaf.

    .venv/bin/python bench/speed/calibration_speed.py [--set crscore|judgeeval] [--labels DIR] [--tree DIR]
                                                [--leaves 180] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))
DEFAULT_LABELS = REPO_ROOT.parent / "shared" / "data" / "crscore_claims"


@dataclass
class Run:
    """One CLI run: wall seconds, CPU seconds (user + system), peak memory, stdout, the command."""

    wall: float
    cpu: float
    peak_mb: float
    stdout: str
    command: list[str]

    def line(self) -> str:
        return f"{self.wall:7.1f} s wall, {self.cpu:7.1f} s CPU, peak RSS {self.peak_mb:6.0f} MB"


def run(command: list[str], env: dict[str, str], work: Path) -> Run:
    """Run `command`, waiting on it with wait4 for its own CPU time and peak RSS; exits with its stderr when
    it fails."""
    out, err = work / "stdout.txt", work / "stderr.txt"
    started = time.perf_counter()
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(command, env=env, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"command failed ({process.returncode}): {shlex.join(command)}\n{err.read_text()[-3000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read_text(), command)


def environment(store: Path) -> dict[str, str]:
    """The CLI's environment with a fresh store (and so a fresh vector cache beside it)."""
    store.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "EXPJUDGE_DATABASE_URL": f"sqlite+aiosqlite:///{store / 'store.db'}",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def figures(report: dict[str, Any]) -> str:
    """macro-F1 and kappa of the judge and of the human ceiling, with intervals."""

    def est(part: dict[str, Any] | None, name: str) -> str:
        if part is None:
            return "-"
        value = part[name]
        if value["value"] is None:
            return f"n/a ({value['reason']})"
        return f"{value['value']:.3f} [{value['ci_low']:.3f}, {value['ci_high']:.3f}]"

    judge, human = report["overall"], report["ceiling"]
    lines = [f"judge: n={judge['n_paired']}  macro-F1 {est(judge, 'macro_f1')}  kappa {est(judge, 'cohen_kappa')}",
             f"human: n={human['n_paired'] if human else 0}  macro-F1 {est(human, 'macro_f1')}  "
             f"kappa {est(human, 'cohen_kappa')}"]
    for cat in report["categories"]:
        h = cat["ceiling"]
        lines.append(f"  {cat['category']}: judge n={cat['judge']['n_paired']} macro-F1 {est(cat['judge'], 'macro_f1')}"
                     f" kappa {est(cat['judge'], 'cohen_kappa')} | human n={h['n_paired'] if h else 0} "
                     f"macro-F1 {est(h, 'macro_f1')} kappa {est(h, 'cohen_kappa')}")
    return "\n".join(lines)


def calibrate_command(expjudge: Path, labels: Path, out: Path, bootstrap: int, *extra: str) -> list[str]:
    return [str(expjudge), "calibrate", "--labels", str(labels), "--judge", "embedded", "--out", str(out),
            "--bootstrap", str(bootstrap), "--no-progress", *extra]


def crscore(args: argparse.Namespace, expjudge: Path, work: Path) -> None:
    """Cold, then cached, on the CRScore claims."""
    env = environment(work / "store")
    results = []
    for name in ("cold", "cached"):
        done = run(calibrate_command(expjudge, args.labels, work / name, args.bootstrap), env, work)
        results.append((name, done, json.loads((work / name / "report.json").read_text())))
    print(f"expjudge calibrate, embedded judge, {args.labels.name} (Python + Java), {os.cpu_count()} CPUs, "
          f"bootstrap {args.bootstrap}")
    for name, done, report in results:
        usage = report["meta"]["usage"]
        print(f"{name:>6}: {done.line()} (fresh process) | judging {usage['seconds']:.1f} s | "
              f"{usage['items']} items, {usage['result_cache_hits']} from the store cache, "
              f"{usage['embedder_encodings']} texts embedded")
    print(figures(results[0][2]))
    print(f"fingerprint {results[0][2]['fingerprint']}")
    print(f"cached figures identical to cold: {results[0][2]['overall'] == results[1][2]['overall']}")
    print("reproduce:")
    print(f"  .venv/bin/python bench/speed/calibration_speed.py --set crscore --labels {args.labels} "
          f"--bootstrap {args.bootstrap}")
    print(f"  one run by hand: {shlex.join(results[0][1].command)}  (with EXPJUDGE_DATABASE_URL a fresh store)")


def judgeeval(args: argparse.Namespace, expjudge: Path, work: Path) -> None:
    """One grade per repository of the tree (the floor), then calibrate on the tree; the ratio and verdicts."""
    from judgeeval_tree import build_tree

    from calibration.judgeeval import JudgeEvalItem, load_judgeeval, submission_task

    tree = args.tree
    if tree is None:
        tree = work / "judgeeval"
        built = build_tree(tree, leaves=args.leaves)
        print(f"tree built by bench/cases/judgeeval_tree.py: a repository of {built['files']} files, "
              f"{built['bytes'] / 1e6:.2f} MB ({built['papers_with_code']} gt_code papers' code, Curie's runs, "
              f"paper records), {built['leaves']} Code Development leaves ({built['present']} whose code it holds)")
    items, _ = load_judgeeval(tree)
    groups: dict[str, JudgeEvalItem] = {}
    for item in items:
        groups.setdefault(item.group_id, item)
    grades: dict[str, dict[str, str]] = {}
    grade_runs = []
    for number, item in enumerate(groups.values()):
        task, submission = submission_task(item)
        task_file, submission_file = work / f"task-{number}.json", work / f"submission-{number}.json"
        task_file.write_text(task.model_dump_json())
        submission_file.write_text(submission.model_dump_json())
        done = run([str(expjudge), "grade", "--task", str(task_file), "--submission", str(submission_file),
                    "--rubric", "judgeeval-v1", "--json"], environment(work / f"grade-store-{number}"), work)
        grades[item.group_id] = {leaf["leaf_id"]: leaf["verdict"] for leaf in json.loads(done.stdout)["leaves"]}
        grade_runs.append(done)
        print(f"grade of {item.group_id} ({len(task.requirements)} requirements, "
              f"{len(grades[item.group_id])} leaves, {len(submission.diff or '') / 1e6:.2f} MB diff): {done.line()}")
    out = work / "calibrate"
    calibrated = run(calibrate_command(expjudge, tree, out, args.bootstrap, "--rubric", "judgeeval-v1"),
                     environment(work / "calibrate-store"), work)
    report = json.loads((out / "report.json").read_text())
    usage = report["meta"]["usage"]
    print(f"calibrate on {len(items)} leaves: {calibrated.line()} | judging {usage['seconds']:.1f} s, "
          f"{usage['embedder_encodings']} texts embedded")
    wall, cpu = sum(r.wall for r in grade_runs), sum(r.cpu for r in grade_runs)
    print(f"calibrate / grade = {calibrated.wall / wall:.2f}x wall, {calibrated.cpu / cpu:.2f}x CPU  (target <= 1.5x)")
    templates = {"Code Development": "code_development", "Code Execution": "code_execution",
                 "Result Analysis": "result_analysis"}
    by_id = {item.item_id: item for item in items}
    differ = [p["item_id"] for p in report["meta"]["predictions"]
              if p["verdict"] != grades[p["group_id"]].get(
                  f"{templates[by_id[p['item_id']].category or '']}.{by_id[p['item_id']].position}")]
    print(f"items whose verdict equals the grade's leaf: {len(items) - len(differ)} of {len(items)}"
          + (f" (differ: {', '.join(differ[:5])})" if differ else ""))
    print("reproduce:")
    print(f"  .venv/bin/python bench/speed/calibration_speed.py --set judgeeval --leaves {args.leaves} "
          f"--bootstrap {args.bootstrap}" + (f" --tree {args.tree}" if args.tree else ""))
    print(f"  by hand, each with EXPJUDGE_DATABASE_URL a fresh store: {shlex.join(grade_runs[0].command)}")
    print(f"  then: {shlex.join(calibrated.command)}")


def main() -> None:
    """Parse arguments, run the set, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=("crscore", "judgeeval"), default="crscore")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS, help="CRScore claims folder (--set crscore)")
    parser.add_argument("--tree", type=Path, default=None, help="a JudgeEval folder (default: build one)")
    parser.add_argument("--leaves", type=int, default=180, help="leaves of the built JudgeEval tree")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="Keep the temporary stores, inputs and reports.")
    args = parser.parse_args()
    expjudge = Path(sys.executable).parent / "expjudge"
    work = Path(tempfile.mkdtemp(prefix="expjudge-calib-bench-"))
    print(f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at start")
    (crscore if args.set == "crscore" else judgeeval)(args, expjudge, work)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if args.keep:
        print(f"stores and reports kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
