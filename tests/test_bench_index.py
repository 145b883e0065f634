"""bench/ is readable by a newcomer: every bench is in the index with its command, and what builds shipped
artefacts lives in training/, each artefact naming the command that rebuilds it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def _scripts(folder: Path) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in folder.rglob("*.py")}


def test_every_bench_script_is_in_the_index() -> None:
    index = (BENCH / "README.md").read_text()
    missing = [s for s in sorted(_scripts(BENCH)) if Path(s).name not in index]
    assert not missing, f"bench/README.md does not name {missing}"


def test_every_command_in_the_indexes_names_a_script_that_exists() -> None:
    for index in (BENCH / "README.md", ROOT / "training" / "README.md"):
        named = re.findall(r"\.venv/bin/python ((?:bench|training)/[\w/]+\.py)", index.read_text())
        assert named, f"{index} names no command"
        absent = [path for path in named if not (ROOT / path).is_file()]
        assert not absent, f"{index} names commands of scripts that do not exist: {absent}"


def test_benches_sit_in_groups_and_builders_are_not_benches() -> None:
    assert not list(BENCH.glob("*.py")), "a bench script outside the groups of bench/README.md"
    builders = [p for p in _scripts(BENCH) if re.search(r"/(train_|build_)\w+\.py$", p)]
    assert not builders, f"scripts that build shipped artefacts belong in training/: {builders}"


def test_every_shipped_artefact_names_the_command_that_rebuilds_it() -> None:
    for rubric in sorted((ROOT / "rubrics").glob("*.yaml")):
        for model in _learned_models(yaml.safe_load(rubric.read_text())):
            command = model.get("trained_on", {}).get("command", "")
            assert re.match(r"\.venv/bin/python training/\w+\.py", command), \
                f"{rubric.name}: a learned model names no rebuild command ({command!r})"
            assert (ROOT / command.split()[1]).is_file()
    with np.load(ROOT / "judge" / "checks" / "requirement" / "decoy_bank.npz") as bank:
        assert "command" in bank.files, "decoy_bank.npz names no rebuild command"
        assert str(bank["command"]).startswith(".venv/bin/python training/build_decoy_bank.py")


def _learned_models(node: object) -> list[dict[str, object]]:
    if isinstance(node, dict):
        found = [node] if "coef" in node and "feature_names" in node else []
        return found + [m for value in node.values() for m in _learned_models(value)]
    if isinstance(node, list):
        return [m for value in node for m in _learned_models(value)]
    return []
