"""`--expbench-out` into a folder that already holds a run: a subset rerun leaves only its own runs (ours that
it did not write are removed, anybody else's stay), says so in the manifest, and an unchecked execution is
written as upstream writes a file before its execution check: no `execution_success` key at all."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from judge.grading.grader import fingerprint_for
from judge.judges.embedded import EmbeddedJudge
from judge.models import Grade
from judge.regrade.expbench_folder import MANIFEST_NAME
from judge.regrade.expbench_out import EXTRA_KEY, NOT_EXECUTED, write_expbench_out
from judge.rubric_loader import load_rubric
from tests.judge.store.conftest import make_grade

JUDGE = "_eval_judge.json"


def _grades() -> list[Grade]:
    fingerprint = fingerprint_for(load_rubric("expbench-v1"), EmbeddedJudge())
    return [make_grade(fingerprint, task_id=f"93022:{i}", run_id=f"run-{i}", agent="curie/model-a")
            for i in range(3)]


def _judge_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "outputs" / "evaluation").rglob(f"*{JUDGE}"))


def test_a_subset_rerun_leaves_only_its_runs_and_never_touches_foreign_files(tmp_path: Path) -> None:
    root = tmp_path / "eb"
    grades = _grades()
    first = write_expbench_out(grades, {}, root, {"93022": "neurips2024"})
    assert len(first.files) == 3 and first.removed == []
    folder = first.files[0].parent
    foreign = folder / f"93022_task_index_7_iter_1_duration_0{JUDGE}"  # upstream's own file: no expjudge block
    foreign.write_text(json.dumps({"design_score": 40, "setup_score": 10}))
    other_agent = root / "outputs" / "evaluation" / "neurips2024" / "93022" / "other" / "m" / f"x{JUDGE}"
    other_agent.parent.mkdir(parents=True)
    other_agent.write_text("not json")

    second = write_expbench_out(grades[1:2], {}, root, {"93022": "neurips2024"})
    assert [p.name for p in second.files] == [f"93022_task_index_1_iter_1_duration_0{JUDGE}"]
    assert sorted(p.name for p in second.removed) == [f"93022_task_index_{i}_iter_1_duration_0{JUDGE}" for i in (0, 2)]
    assert _judge_files(root) == sorted([second.files[0].name, foreign.name, other_agent.name])
    assert json.loads(foreign.read_text()) == {"design_score": 40, "setup_score": 10}

    manifest = json.loads((root / MANIFEST_NAME).read_text())
    assert [f["run_id"] for f in manifest["judge_files"]] == ["run-1"]
    assert manifest["judge_files"][0]["path"] == second.files[0].relative_to(root).as_posix()
    assert len(manifest["removed_stale"]) == 2 and set(manifest["tables"]) == {"csv", "markdown"}
    lines = list(csv.DictReader((root / "metrics_by_paper.csv").open()))
    assert [(line["paper"], line["runs"]) for line in lines] == [("93022", "1"), ("overall", "1")]

    # Another subset: the previous one's file goes, the foreign files stay.
    third = write_expbench_out(grades[2:], {}, root.resolve(), {"93022": "neurips2024"})
    assert [p.name for p in third.removed] == [second.files[0].name] and foreign.exists() and other_agent.exists()


def test_unchecked_execution_has_no_execution_keys_and_counts_as_unknown(tmp_path: Path) -> None:
    [grade] = _grades()[:1]
    assert grade.metrics.E is None  # no execution record handed in
    out = write_expbench_out([grade], {}, tmp_path / "eb")
    doc = json.loads(out.files[0].read_text())
    assert "execution_success" not in doc and "execution_message" not in doc
    assert doc[EXTRA_KEY]["execution_checked"] is False and doc[EXTRA_KEY]["execution_message"] == NOT_EXECUTED
    [row] = out.rows
    assert row.E is None and row.IE is None
    line = next(csv.DictReader((tmp_path / "eb" / "metrics_by_paper.csv").open()))
    assert line["n_E"] == "0" and line["E"] == ""
