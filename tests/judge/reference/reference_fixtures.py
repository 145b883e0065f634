"""A small reference implementation, as a user's repository holds it, for the reference tests."""

from __future__ import annotations

TRAIN_PY = '''import argparse

import torch
from torch import nn


def build_model(hidden_size: int) -> nn.Module:
    """A two-layer perceptron."""
    return nn.Sequential(nn.Linear(32, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 10))


def train(model: nn.Module, loader, epochs: int, learning_rate: float) -> None:
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


def evaluate(model: nn.Module, loader) -> float:
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in loader:
            predictions = model(inputs).argmax(dim=-1)
            correct += (predictions == labels).sum().item()
            total += labels.numel()
    return correct / total


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden_size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    model = build_model(args.hidden_size)
'''

PLOT_PY = '''import json

import matplotlib.pyplot as plt


def plot_accuracy(results_path: str, out_path: str) -> None:
    with open(results_path) as handle:
        results = json.load(handle)
    sizes = sorted(results, key=int)
    plt.plot([int(s) for s in sizes], [results[s]["accuracy"] for s in sizes], marker="o")
    plt.xlabel("hidden size")
    plt.ylabel("test accuracy")
    plt.savefig(out_path)
'''


def all_added_diff(files: dict[str, str]) -> str:
    """An all-added unified diff of `files` (what EXP-Bench's gt_code holds)."""
    parts = []
    for path, text in files.items():
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        parts.append(f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
                     f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines))
    return "".join(parts)


REFERENCE = {"src/train.py": TRAIN_PY, "scripts/plot.py": PLOT_PY}
