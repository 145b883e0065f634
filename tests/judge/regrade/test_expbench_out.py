"""`expjudge regrade --expbench-out`: the 8 historic Curie runs (plus two native runs, one caught by the integrity
check) written as EXP-Bench judge files with upstream's keys and types, and the per-paper metric tables."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from statistics import fmean
from typing import Any

from typer.testing import CliRunner

from judge.cli.main import _register_commands, app
from judge.models import Grade
from judge.regrade.expbench_out import EXTRA_KEY, MONITOR_KEY, NOT_EXECUTED
from judge.submission.from_ground_truth import submission_from_ground_truth
from tests.conftest import CURIE_RUNS, EXPBENCH_TASKS, SHARED_DATA
from tests.judge.regrade.conftest import expbench_task, sqlite_url, write_jsonl

ADDED = {"execution_success", "execution_message", EXTRA_KEY}
MONITOR_RUNS = SHARED_DATA / "expbench" / "historic_runs" / "curie_6cacefa"
JUDGE = "_eval_judge.json"


def _regrade(*args: str) -> str:
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _curie_copy(root: Path) -> Path:
    """The 8 Curie runs in an EXP-Bench tree of their own; task 3's old verdict records an execution check."""
    folder = root / "curie_b1f623b" / "evaluation" / "neurips2024" / "93022" / "curie" / "azure-gpt-4o"
    folder.mkdir(parents=True)
    for path in CURIE_RUNS.iterdir():
        if path.name.endswith(("_eval_gen.json", "_eval_gen.patch", JUDGE)):
            shutil.copy(path, folder / path.name)
    verdict = folder / f"93022_task_index_3_iter_1_duration_0.67{JUDGE}"
    data = json.loads(verdict.read_text())
    verdict.write_text(json.dumps({**data, "execution_success": True, "execution_message": "exit code 0"}))
    return folder


def _native_runs(path: Path) -> Path:
    """Two native runs of task 93022:2: one recovered masked files through git, one ran to completion."""
    task = expbench_task("93022:2")
    lines = []
    for run_id, agent, log in (("native-git", "curie/native-model", "$ git show HEAD:scripts/analyze.py\n"),
                               ("native-clean", "other/model-x", "$ python run.py\nall done\n")):
        submission = submission_from_ground_truth(task).model_copy(
            update={"submission_id": run_id, "run_id": run_id, "agent": agent, "agent_log": log})
        if run_id == "native-clean":  # text of its own: a copy of the hidden ground truth is an integrity finding
            submission = submission.model_copy(update={"design": "We vary the sampling temperature.",
                                                       "conclusion": "The run finished.", "diff": ""})
        lines.append({"task": task.model_dump(mode="json"), "submission": submission.model_dump(mode="json")})
    return write_jsonl(path, lines)


def _types(doc: dict[str, Any]) -> dict[str, type]:
    return {key: type(value) for key, value in doc.items()}


def test_expbench_out_matches_upstream_judge_files_and_tables(tmp_path: Path, curie_runs: list[Path]) -> None:
    runs = _curie_copy(tmp_path / "runs")
    native = _native_runs(tmp_path / "native.jsonl")
    out, eb = tmp_path / "out", tmp_path / "eb"
    output = _regrade(str(runs.parents[4]), str(native), "--out", str(out), "--expbench-out", str(eb),
                      "--database-url", sqlite_url(tmp_path / "store.db"), "--tasks-dir", str(EXPBENCH_TASKS))
    assert "EXP-Bench judge files: 10" in output, output
    grades = {g.run_id: g for g in map(Grade.model_validate_json, (out / "grades.jsonl").read_text().splitlines())}
    assert len(grades) == 10

    placed = eb / "outputs" / "evaluation" / "neurips2024" / "93022"
    for gen in curie_runs:
        upstream = json.loads((CURIE_RUNS / gen.name.replace("_eval_gen.json", JUDGE)).read_text())
        doc = json.loads((placed / "curie" / "azure-gpt-4o" / gen.name.replace("_eval_gen.json", JUDGE)).read_text())
        checked = "task_index_3_" in gen.name  # only task 3's old verdict records an execution check
        # upstream's keys, plus execution when it was checked, and our one extra key
        assert set(doc) == set(upstream) | (ADDED if checked else {EXTRA_KEY})
        assert {k: t for k, t in _types(doc).items() if k in upstream} == _types(upstream)
        run_id = f"93022:{gen.name.split('_')[3]}:iter1:curie/azure-gpt-4o"
        grade = grades[run_id]
        extra = doc[EXTRA_KEY]
        assert extra["grade_id"] == grade.grade_id and extra["fingerprint"] == grade.fingerprint.digest
        assert extra["metrics"] == grade.metrics.model_dump(mode="json")
        assert doc["design_score"] == round(grade.metrics.D or 0) and 0 <= doc["setup_score"] <= 100
        assert doc["conclusion_score"] == ("correct" if grade.metrics.C else "incorrect")
        assert sum(extra["unscored"].values()) == sum(leaf.verdict == "unscored" for leaf in grade.leaves)
        if checked:  # no execution record of ours: upstream's check is taken, and said so
            assert doc["execution_success"] is True and extra["execution_source"] == "upstream:curie_b1f623b"
            assert isinstance(doc["execution_message"], str) and extra["execution_checked"] is True
        else:  # unknown, as upstream's own file before its execution check: no key a reader could count as failed
            assert "execution_success" not in doc and "execution_message" not in doc
            assert extra["execution_checked"] is False and extra["execution_message"] == NOT_EXECUTED
            assert extra["execution_source"] == "none"
        failed = [leaf for leaf in grade.leaves if leaf.stage == "design" and leaf.verdict == "fail"]
        assert all(leaf.target[:40] in doc["design_evaluation_explanation"] for leaf in failed)

    # The run the integrity check caught is written as upstream's monitor writes one: every score 0.
    monitor = json.loads(next(MONITOR_RUNS.rglob(f"*{JUDGE}")).read_text())
    flagged = json.loads((placed / "curie" / "native-model" / f"93022_task_index_2_iter_1_duration_0{JUDGE}")
                         .read_text())
    assert set(flagged) == set(monitor) | ADDED
    assert {k: t for k, t in _types(flagged).items() if k in monitor} == _types(monitor)
    assert flagged["design_score"] == flagged["setup_score"] == flagged["conclusion_score"] == 0
    assert "git_operations" in flagged[MONITOR_KEY] and flagged[EXTRA_KEY]["zeroed_by_integrity"] is True
    clean = json.loads((placed / "other" / "model-x" / f"93022_task_index_2_iter_1_duration_0{JUDGE}").read_text())
    assert MONITOR_KEY not in clean and clean["execution_success"] is True
    assert clean[EXTRA_KEY]["execution_source"] == "expjudge"

    # The per-paper table: one paper line and the overall line, figures over the runs they are known for.
    lines = list(csv.DictReader((eb / "metrics_by_paper.csv").open()))
    assert [line["paper"] for line in lines] == ["93022", "overall"]
    paper = lines[0]
    assert paper["conf"] == "neurips2024" and int(paper["runs"]) == 10 and int(paper["integrity_flagged"]) == 1
    expected_d = fmean(0.0 if g.integrity_flags else g.metrics.D for g in grades.values() if g.metrics.D is not None)
    assert float(paper["D"]) == round(expected_d, 2)
    assert int(paper["n_E"]) == 3 and float(paper["E"]) == 1.0  # the native runs (ours) and task 3 (upstream's)
    # False and unknown is false: every run has All·E✓ known, only the 3 executed ones can be true.
    assert int(paper["n_all_correct_executed"]) == 10
    # I·E is known where either side is false or both are known (a run judged implemented but never executed
    # leaves it unknown); the table counts exactly those runs.
    known_ie = sum(1 for g in grades.values() if g.metrics.implementation_correct is False or g.metrics.E is False
                   or (g.metrics.implementation_correct is not None and g.metrics.E is not None))
    assert float(paper["all_correct_executed"]) <= 3 / 10 and int(paper["n_IE"]) == known_ie >= 9
    assert paper["design_correct_at"] == "70" and {k: v for k, v in lines[1].items() if k != "paper"} == {
        k: ("" if k == "conf" else v) for k, v in paper.items() if k != "paper"}
    markdown = (eb / "metrics_by_paper.md").read_text()
    assert "design_correct_at 70" in markdown and "| **overall** |" in markdown and "All·E✓" in markdown

    # --only flipped: the runs whose verdict flipped in the changes.json this regrade left in --out.
    changes = json.loads((out / "changes.json").read_text())
    flipped = sorted(run["run_id"] for run in changes["runs"] if any(b["flips"] for b in run["baselines"].values()))
    assert flipped  # the old judge and ours disagree on some of these runs
    store = ["--database-url", sqlite_url(tmp_path / "store.db"), "--tasks-dir", str(EXPBENCH_TASKS)]
    output = _regrade(str(runs.parents[4]), str(native), "--out", str(out), "--only", "flipped", *store)
    assert f"{len(flipped)} of 10 runs" in output, output
    assert sorted(json.loads(line)["run_id"] for line in (out / "grades.jsonl").read_text().splitlines()) == flipped

    # Globs of one key are alternatives, different keys must all match.
    output = _regrade(str(runs.parents[4]), str(native), "--out", str(out), "--only", "run=93022:1:*",
                      "--only", "run=native-*", "--only", "agent=curie/*", "--only", "task=93022:*",
                      "--only", "paper=930??", *store)
    assert "2 of 10 runs" in output, output
    kept = [json.loads(line)["run_id"] for line in (out / "grades.jsonl").read_text().splitlines()]
    assert sorted(kept) == ["93022:1:iter1:curie/azure-gpt-4o", "native-git"]
    _register_commands()
    bad = CliRunner().invoke(app, ["regrade", str(native), "--out", str(out), "--only", "color=red"])
    assert bad.exit_code == 2 and "--only" in bad.output and "color" in bad.output
