"""The bundled example's reference ships with it: the README's `--reference-repo` command names a folder that
exists, holds the files task 93022/0 masks under their licence, and is read as the task's reference."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from judge.loaders.expbench import load_expbench_tasks, with_reference_repo_path

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "examples" / "expbench" / "93022_reference"


def readme_reference_command() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [line.strip() for line in readme.splitlines()
             if line.strip().startswith("expjudge grade ") and "--reference-repo examples/" in line]
    assert lines, "the README shows no grade command with the bundled example's --reference-repo"
    return shlex.split(lines[0])


def test_readme_command_names_files_that_exist() -> None:
    command = readme_reference_command()
    for option in ("--task", "--submission", "--reference-repo"):
        assert (REPO / command[command.index(option) + 1]).exists(), option
    assert command[command.index("--reference-repo") + 1] == "examples/expbench/93022_reference"


def test_reference_holds_the_masked_files_with_its_licence_and_source() -> None:
    question = json.loads((REPO / "examples" / "expbench" / "93022_complete_final.json").read_text())["questions"][0]
    masked = [path.removeprefix("/workspace/") for path in question["masked_source"]]
    assert masked and all((REFERENCE / path).is_file() for path in masked)
    assert "MIT License" in (REFERENCE / "LICENSE").read_text()
    source = (REFERENCE / "SOURCE.md").read_text()
    assert re.search(r"bjing2016/mdgen", source) and "1b82cc13f18ea6a4a2f680d5c086bd07715b89c5" in source
    assert "git clone https://github.com/bjing2016/mdgen" in source  # the command that rebuilds it


def test_reference_is_read_as_the_tasks_reference() -> None:
    task = load_expbench_tasks(REPO / "examples" / "expbench" / "93022_complete_final.json")[0]
    warnings: list[str] = []
    [with_reference] = with_reference_repo_path([task], REFERENCE, warnings)
    assert not warnings, warnings
    assert sorted(f.path for f in with_reference.reference_files) == ["scripts/analyze_peptide_sim.py",
                                                                      "sim_inference.py"]
