"""The `--expbench-out` folder as one regrade's output: stale judge files of ours removed, and a manifest.

A subset rerun into the same folder must not leave it half old, half new. A judge file is ours when it
carries the `expjudge` block in our format; after a run writes its files, every file of ours it did not write
is removed (with the folders that leaves empty), and `expjudge_manifest.json` lists the judge files and tables
the folder now holds. Upstream's own judge files and anybody else's carry no such block and are never touched.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from judge.errors import InputError
from judge.regrade.sources import JUDGE_SUFFIX

EXTRA_KEY = "expjudge"
FORMAT_VERSION = "expjudge-expbench-judge-v1"
MANIFEST_NAME = "expjudge_manifest.json"


def is_ours(path: Path) -> bool:
    """True for a judge file written by `--expbench-out` (it carries our `expjudge` block in our format)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    extra = data.get(EXTRA_KEY) if isinstance(data, dict) else None
    return isinstance(extra, dict) and extra.get("format") == FORMAT_VERSION


def remove_stale(out_dir: Path, written: set[Path]) -> list[Path]:
    """Remove our judge files under `out_dir` that this run did not write, and the folders left empty.

    Raises:
        InputError: naming `--expbench-out` when a stale file cannot be removed.
    """
    tree = out_dir / "outputs" / "evaluation"
    removed: list[Path] = []
    for path in sorted(tree.rglob(f"*{JUDGE_SUFFIX}")) if tree.is_dir() else []:
        if path in written or not is_ours(path):
            continue
        try:
            path.unlink()
        except OSError as exc:
            raise InputError(f"cannot remove the stale judge file {path}: {exc.strerror}",
                             field="--expbench-out") from None
        removed.append(path)
        for folder in path.parents:  # folders it leaves empty go too, up to the tree's root
            if folder == tree or not folder.is_relative_to(tree) or any(folder.iterdir()):
                break
            folder.rmdir()
    return removed


def write_manifest(root: Path, files: Sequence[tuple[Path, str]], tables: dict[str, Path],
                   removed: Sequence[Path]) -> Path:
    """Write `expjudge_manifest.json`: the judge files (with their run ids) and tables the folder holds now.

    Raises:
        InputError: naming `--expbench-out` when it cannot be written.
    """
    manifest = {
        "format": FORMAT_VERSION,
        "judge_files": [{"path": path.relative_to(root).as_posix(), "run_id": run_id} for path, run_id in files],
        "tables": {name: path.relative_to(root).as_posix() for name, path in tables.items()},
        "removed_stale": [path.relative_to(root).as_posix() for path in removed],
    }
    path = root / MANIFEST_NAME
    try:
        path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}", field="--expbench-out") from None
    return path
