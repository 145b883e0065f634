"""Time `expjudge calibrate` on the whole CRScore Python+Java claim set with the embedded judge.

Two runs of the real CLI, each in a fresh process (so both include Python start-up, imports and report
rendering): cold, against a fresh temporary SQLite store (every claim and hunk embedded, every figure
bootstrapped), then the rerun against the same store (results and figures served from the store cache; the
embedding model is never loaded). Prints both wall times, the in-process judging time and cache use of
each run from report.json, the agreement figures, and the commands to reproduce them.

    .venv/bin/python bench/calibration_speed.py [--labels ../shared/data/crscore_claims] [--bootstrap 1000]
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
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LABELS = REPO_ROOT.parent / "shared" / "data" / "crscore_claims"


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall time and stdout of one CLI run; exits with its stderr when it fails."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"command failed ({done.returncode}): {shlex.join(command)}\n{done.stderr[-3000:]}")
    return seconds, done.stdout


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


def main() -> None:
    """Parse arguments, run cold and cached, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="Keep the temporary store and reports.")
    args = parser.parse_args()
    expjudge = Path(sys.executable).parent / "expjudge"
    work = Path(tempfile.mkdtemp(prefix="expjudge-calib-bench-"))
    url = f"sqlite+aiosqlite:///{work / 'store.db'}"
    env = {**os.environ, "EXPJUDGE_DATABASE_URL": url, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    results = []
    for name in ("cold", "cached"):
        out = work / name
        command = [str(expjudge), "calibrate", "--labels", str(args.labels), "--judge", "embedded", "--out",
                   str(out), "--bootstrap", str(args.bootstrap), "--no-progress"]
        seconds, _ = run(command, env)
        report = json.loads((out / "report.json").read_text())
        results.append((name, seconds, report, command))
    print(f"expjudge calibrate, embedded judge, {args.labels.name} (Python + Java), {os.cpu_count()} CPUs, "
          f"bootstrap {args.bootstrap}")
    for name, seconds, report, _ in results:
        usage = report["meta"]["usage"]
        print(f"{name:>6}: {seconds:6.1f} s wall (fresh process) | judging {usage['seconds']:.1f} s | "
              f"{usage['items']} items, {usage['result_cache_hits']} from the store cache, "
              f"{usage['embedder_encodings']} texts embedded")
    print(figures(results[0][2]))
    same = results[0][2]["overall"] == results[1][2]["overall"]
    print(f"cached figures identical to cold: {same}")
    print("reproduce:")
    print(f"  .venv/bin/python bench/calibration_speed.py --labels {args.labels} --bootstrap {args.bootstrap}")
    print("  or by hand, twice (cold, then cached):")
    print(f"  EXPJUDGE_DATABASE_URL=sqlite+aiosqlite:////tmp/calib.db .venv/bin/expjudge calibrate --labels "
          f"{args.labels} --judge embedded --out /tmp/calib-out --bootstrap {args.bootstrap}")
    if args.keep:
        print(f"store and reports kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
