"""Time `expjudge process` on a synthetic 100-step FML-bench run over a ~5,000-line code base, on 2 cores.

Prints the cold figure (empty embedding cache: model import and load, chunking, embedding, metrics),
the warm figure (same run again from the on-disk cache, in-process), and a warm run of the CLI in a
fresh process. Targets (issue 6): under 30 s cold, under 1 s from the embedding cache.

    .venv/bin/python bench/speed/process_metrics.py [--steps 100] [--lines 5000] [--files 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT))

from judge.settings import configure_offline_environment  # noqa: E402

configure_offline_environment()

from judge.process.code_embeddings import (  # noqa: E402
    CodeEmbedder,
    EmbeddingConfig,
    EncoderModel,
    load_encoder,
)
from judge.process.metrics import compute_process_metrics, load_run  # noqa: E402
from judge.process.models import ProcessMetrics  # noqa: E402

WORKSPACE = "workspace/Generalization_domainbed__20250101_bench/DomainBed"
NAMES = ["loss", "logits", "features", "batch", "weights", "grad", "penalty", "lr", "mask", "targets", "env"]
CALLS = [
    "torch.mean",
    "torch.cat",
    "F.cross_entropy",
    "self.network",
    "self.featurizer",
    "torch.clamp",
    "np.log",
]


def _function(rng: random.Random, name: str, length: int) -> list[str]:
    """A made-up function: what a step writes into the code."""
    args = ", ".join(rng.sample(NAMES, 3))
    lines = [
        f"def {name}({args}, scale={rng.randint(1, 9)}e-{rng.randint(1, 4)}):",
        f'    """Compute {name}."""',
    ]
    for _ in range(length - 3):
        target, source = rng.sample(NAMES, 2)
        call = rng.choice(CALLS)
        comment = f"  # step {rng.randint(0, 999)}" if rng.random() < 0.3 else ""
        lines.append(f"    {target}_{rng.randint(0, 99)} = {call}({source}, dim={rng.randint(0, 3)}) * scale{comment}")
    lines.append(f"    return {rng.choice(NAMES)}")
    return lines


# Real Python sources from the installed stack make the code base: their token density (~11 MiniLM
# tokens per line) is that of real research code, which a generator does not reproduce.
SOURCE_FILES = [
    ("sklearn", "cluster/_agglomerative.py"),
    ("scipy", "cluster/hierarchy.py"),
    ("torch", "nn/modules/conv.py"),
    ("torch", "optim/adam.py"),
    ("sentence_transformers", "sentence_transformer/model.py"),
]


def code_base(total_lines: int, files: int) -> dict[str, list[str]]:
    """`files` files of total_lines / files lines each, cut from the SOURCE_FILES in order.

    The files are located without importing their packages, so the cold timing pays every import.
    """
    import importlib.util

    lines: list[str] = []
    for package, relative in SOURCE_FILES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        folder = Path(next(iter(spec.submodule_search_locations)))
        lines.extend((folder / relative).read_text(encoding="utf-8").splitlines())
    per_file = total_lines // files
    if len(lines) < per_file * files:
        raise SystemExit(f"the source files hold only {len(lines)} lines")
    return {f"domainbed/algorithm_{i}.py": lines[i * per_file : (i + 1) * per_file] for i in range(files)}


def build_run(root: Path, steps: int, total_lines: int, files: int, seed: int) -> Path:
    """An FML-bench run folder: baseline/, steps that each edit one region of a parent's code."""
    rng = random.Random(seed)
    baseline = code_base(total_lines, files)
    names = sorted(baseline)
    run_dir = root / "aide" / "Generalization_domainbed" / "run_bench"
    (run_dir / "step_snapshots").mkdir(parents=True)
    for name, lines in baseline.items():
        (run_dir / "baseline" / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / "baseline" / name).write_text("\n".join(lines) + "\n")
    history = [baseline]
    val_steps = []
    metric = best = 0.60
    for step in range(steps):
        parent = history[0] if rng.random() < 0.2 else rng.choice(history)  # tree search: any earlier node
        code = {name: list(lines) for name, lines in parent.items()}
        target = rng.choice(names)
        start = rng.randrange(0, len(code[target]) - 20)
        code[target][start : start + rng.randint(3, 15)] = _function(rng, f"idea_{step}", rng.randint(6, 14))
        history.append(code)
        snapshot = {f"{WORKSPACE}/{name}": "\n".join(lines) + "\n" for name, lines in code.items()}
        (run_dir / "step_snapshots" / f"step_{step:04d}_code.json").write_text(json.dumps(snapshot))
        success = rng.random() < 0.8
        metric = min(0.95, max(0.3, metric + rng.gauss(0.002, 0.02))) if success else metric
        best = max(best, metric) if success else best
        val_steps.append(
            {
                "step_id": step,
                "action": "improve",
                "val_result": {"success": success, "primary_metric": metric if success else None},
                "primary_metric": metric if success else None,
                "token_usage": {"total_tokens": rng.randint(2000, 9000)},
                "step_duration_seconds": rng.uniform(60, 600),
            }
        )
    summary = {
        "agent": "aide",
        "model": "bench",
        "task_config": {"metric": "in_acc_mean", "metric_direction": "higher", "target_files": names},
        "baseline_primary_metric": 0.60,
        "total_steps": steps,
        "best_val_metric": best,
        "test_result": {"success": True, "primary_metric": best - 0.01},
        "val_steps": val_steps,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def _pin_two_cores() -> int:
    """Run on two cores whatever the machine has (before torch starts its threads)."""
    os.environ["OMP_NUM_THREADS"] = "2"
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 2:
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:2]))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def _timed(label: str, work: Callable[[], ProcessMetrics]) -> tuple[ProcessMetrics, str]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return result, f"{label:<22}{wall:7.2f} s wall, {cpu:7.2f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cores = _pin_two_cores()
    load_before = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="expjudge-bench-") as tmp:
        root = Path(tmp)
        run_dir = build_run(root / "runs", args.steps, args.lines, args.files, args.seed)
        lines = sum(len(p.read_text().splitlines()) for p in (run_dir / "baseline").rglob("*.py"))
        cache = root / "cache"
        load_seconds: list[float] = []

        def timed_loader(path: Path) -> EncoderModel:
            started = time.perf_counter()
            model = load_encoder(path)  # imports torch and sentence-transformers first
            load_seconds.append(time.perf_counter() - started)
            return model

        cold_embedder = CodeEmbedder(EmbeddingConfig(cache_dir=cache), loader=timed_loader)
        warm_embedder = CodeEmbedder(EmbeddingConfig(cache_dir=cache))
        cold, cold_line = _timed(
            "cold (empty cache):", lambda: compute_process_metrics(load_run(run_dir), embedder=cold_embedder)
        )
        warm, warm_line = _timed(
            "warm (from cache):", lambda: compute_process_metrics(load_run(run_dir), embedder=warm_embedder)
        )
        assert warm.model_dump(exclude={"embedding"}) == cold.model_dump(exclude={"embedding"})

        command = [sys.executable, "-c", "from judge.cli.main import main; main()"]
        cli_args = ["process", str(run_dir), "--json", "--cache-dir", str(cache)]
        started = time.perf_counter()
        cli = subprocess.run([*command, *cli_args], capture_output=True, text=True, cwd=REPO_ROOT, check=False)
        cli_seconds = time.perf_counter() - started

    info, warm_info = cold.embedding, warm.embedding
    assert info is not None and warm_info is not None
    import torch

    print(f"synthetic run: {args.steps} steps, {args.files} target files, {lines} baseline lines")
    print(
        f"machine: {cores} cores, torch threads {torch.get_num_threads()}; "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(f"embedding: {info.model_name}, {info.dimension}-d, pooling {info.pooling}, chunking {info.chunking}")
    print(
        f"{cold_line}  (of which torch/sentence-transformers import + model load {sum(load_seconds):.2f} s; "
        f"{info.documents_embedded} documents, {info.chunks_embedded} pieces embedded)"
    )
    print(
        f"{warm_line}  (model loads {warm_embedder.model_loads}; {warm_info.documents_from_cache} documents from cache)"
    )
    status = "ok" if cli.returncode == 0 else f"exit {cli.returncode}: {cli.stderr.strip()[-200:]}"
    print(f"warm CLI, fresh process (start + imports + run): {cli_seconds:.2f} s wall ({status})")
    print(
        f"metrics: spread {cold.exploration_spread:.4f}, uniqueness {cold.exploration_uniqueness:.2f}, "
        f"reach {cold.exploration_reach:.4f}, effective dim {cold.effective_dimension:.2f}, "
        f"AUC {cold.auc_over_steps:.4f}"
    )
    print("targets: cold < 30 s, warm < 1 s")
    print(f"reproduce: .venv/bin/python bench/speed/process_metrics.py --steps {args.steps} --lines {args.lines}")


if __name__ == "__main__":
    main()
