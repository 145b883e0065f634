"""Builders of FML-bench-layout run folders with known answers (shared by the process tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.process.code_embeddings import EncoderModel

TARGETS = ["algorithms.py", "train.py"]
WORKSPACE = "workspace/Generalization_domainbed__20250101_abcd1234/DomainBed"

BASELINE_CODE = {
    "algorithms.py": (
        "import torch\n\n\nclass ERM(torch.nn.Module):\n    def __init__(self, hparams):\n"
        "        super().__init__()\n        self.lr = hparams['lr']\n\n"
        "    def update(self, minibatches):\n        loss = self.loss(minibatches)\n"
        "        self.optimizer.zero_grad()\n        loss.backward()\n        self.optimizer.step()\n"
        "        return {'loss': loss.item()}\n"
    ),
    "train.py": "from algorithms import ERM\n\nif __name__ == '__main__':\n    ERM({'lr': 1e-3})\n",
}

EDITED_ALGORITHMS = BASELINE_CODE["algorithms.py"].replace(
    "        loss.backward()\n",
    "        penalty = sum(p.pow(2).sum() for p in self.parameters())\n        (loss + 0.1 * penalty).backward()\n",
)
OTHER_ALGORITHMS = (
    "import numpy as np\n\n\ndef mixup(x, y, alpha):\n    lam = np.random.beta(alpha, alpha)\n"
    "    index = np.random.permutation(len(x))\n    return lam * x + (1 - lam) * x[index], y, y[index], lam\n"
)


@dataclass
class RunSpec:
    """What a test says about a run; `write` turns it into FML-bench files."""

    snapshots: list[dict[str, str] | None] = field(default_factory=list)
    metrics: list[float | None] = field(default_factory=list)
    successes: list[bool] | None = None
    total_steps: int | None = 100
    baseline_metric: float | None = 0.5
    best_val_metric: float | None = None
    test_result: dict[str, Any] | None = None
    direction: str | None = "higher"
    task: str = "Generalization_domainbed"
    agent: str = "aide"
    token_usage: dict[str, Any] | None = None
    duration: float | None = None
    with_baseline: bool = True

    def write(self, root: Path, name: str = "run_001") -> Path:
        run_dir = root / self.agent / self.task / name
        snapshot_dir = run_dir / "step_snapshots"
        snapshot_dir.mkdir(parents=True)
        if self.with_baseline:
            for relative, content in BASELINE_CODE.items():
                (run_dir / "baseline" / relative).parent.mkdir(parents=True, exist_ok=True)
                (run_dir / "baseline" / relative).write_text(content)
        successes = self.successes or [m is not None for m in self.metrics]
        steps = []
        for i, (snapshot, metric, success) in enumerate(zip(self.snapshots, self.metrics, successes, strict=True)):
            if snapshot is not None:
                keyed = {f"{WORKSPACE}/{path}": content for path, content in snapshot.items()}
                (snapshot_dir / f"step_{i:04d}_code.json").write_text(json.dumps(keyed))
            steps.append(
                {
                    "step_id": i,
                    "idea_description": f"idea {i}",
                    "action": "improve",
                    "edit_success": True,
                    "val_result": {"success": success, "primary_metric": metric, "error": None},
                    "primary_metric": metric,
                    "token_usage": {"total_tokens": 1000},
                    "step_duration_seconds": 60.0,
                    "metadata": {"code_snapshot_path": f"step_snapshots/step_{i:04d}_code.json"},
                }
            )
        config: dict[str, Any] = {"metric": "in_acc_mean", "target_files": TARGETS}
        if self.direction is not None:
            config["metric_direction"] = self.direction
        summary = {
            "agent": self.agent,
            "model": "gpt-4o",
            "task_config": config,
            "baseline_primary_metric": self.baseline_metric,
            "total_steps": self.total_steps,
            "best_val_metric": self.best_val_metric,
            "test_result": self.test_result,
            "val_steps": steps,
            "token_usage": self.token_usage,
            "total_duration_seconds": self.duration,
        }
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return run_dir


@dataclass
class LoaderSpy:
    """A model loader that counts its calls and hands out the session's real model."""

    model: EncoderModel
    calls: int = 0

    def __call__(self, path: Path) -> EncoderModel:
        self.calls += 1
        return self.model
