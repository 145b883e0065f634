"""Finding runs as they lie (EXP-Bench trees, judge-only trees, native JSONL) and comparing verdicts."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest

from judge.errors import InputError, SubmissionFormatError
from judge.models import JudgeFingerprint
from judge.regrade.comparison import build_changes
from judge.regrade.export import LeafVerdict, RunRecord
from judge.regrade.report_html import render_changes_html
from judge.regrade.sources import OldVerdict, RunRef, discover, read_old_verdict, run_key
from judge.rubric_loader import load_rubric
from tests.conftest import EXPBENCH_TASKS, SHARED_DATA
from tests.html_injection import PAYLOADS, assert_no_injection
from tests.judge.regrade.conftest import SMALL_TASKS, expbench_task, variations, write_jsonl

HISTORIC = SHARED_DATA / "expbench" / "historic_runs"


def test_judge_only_tree_is_paired_with_the_runs_of_another_tree() -> None:
    found = discover([HISTORIC / "curie_b1f623b", HISTORIC / "curie_6cacefa"], EXPBENCH_TASKS)
    assert len(found.runs) == 20 and not found.problems and not found.unpaired_verdicts
    with_old = [r for r in found.runs if r.old]
    assert len(with_old) == 8
    for ref in with_old:
        sources = {v.source: v for v in ref.old}
        assert set(sources) == {"curie_b1f623b", "curie_6cacefa"}
        assert sources["curie_6cacefa"].judge_failure and not sources["curie_b1f623b"].judge_failure
        assert found.tasks.task(ref.task_key).task_id == ref.run_id.split(":iter")[0]


def test_a_verdict_that_is_not_one_names_its_file(tmp_path: Path) -> None:
    bad = tmp_path / "x_eval_judge.json"
    bad.write_text(json.dumps({"design_score": "lots", "setup_score": 3, "conclusion_score": "correct"}))
    with pytest.raises(SubmissionFormatError, match="design_score"):
        read_old_verdict(bad, "tree")


def test_native_jsonl_runs_and_bad_lines(tmp_path: Path) -> None:
    lines = variations(expbench_task(SMALL_TASKS[0]), limit=3)
    found = discover([write_jsonl(tmp_path / "runs.jsonl", lines)], None)
    assert [r.run_id for r in found.runs] == sorted(line["submission"]["run_id"] for line in lines)
    assert len({r.task_key for r in found.runs}) == 1  # one task, hashed once
    assert found.runs[1].load_submission().submission_id == found.runs[1].run_id
    # A bad field on line 2 and a line torn by a crash at the end: both named, the good lines go on.
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(lines[0]) + "\n" + '{"task": {"task_id": ""}, "submission": {}}\n'
                      + json.dumps(lines[1]) + "\n" + json.dumps(lines[2])[:40])
    found = discover([broken], None)
    assert [r.run_id for r in found.runs] == sorted(line["submission"]["run_id"] for line in lines[:2])
    assert len(found.problems) == 2
    assert "broken.jsonl:2" in found.problems[0] and "task_id" in found.problems[0]
    assert "broken.jsonl:4" in found.problems[1] and "malformed JSON" in found.problems[1]
    # A run id on two lines: which one is the run? Neither is graded, the others are, and both lines are named.
    twice = discover([write_jsonl(tmp_path / "twice.jsonl", lines + lines[:1])], None)
    assert [r.run_id for r in twice.runs] == sorted(line["submission"]["run_id"] for line in lines[1:])
    assert len(twice.problems) == 1 and "appears 2 times" in twice.problems[0]
    assert "twice.jsonl:1" in twice.problems[0] and "twice.jsonl:4" in twice.problems[0]
    with pytest.raises(InputError, match="no runs found"):
        discover([write_jsonl(tmp_path / "none.jsonl", [])], None)


def test_a_run_whose_task_is_missing_is_reported_not_dropped_silently(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(HISTORIC / "curie_b1f623b", tree)
    found = discover([tree], tmp_path / "no-tasks")
    assert found.runs == [] and len(found.problems) == 20 and "93022_complete_final.json" in found.problems[0]


def test_run_keys_change_with_ground_truth_and_fingerprint_only() -> None:
    assert run_key("r", "a" * 64, "f1") == run_key("r", "a" * 64, "f1")
    assert len({run_key("r", "a" * 64, "f1"), run_key("r", "b" * 64, "f1"), run_key("r", "a" * 64, "f2")}) == 3
    assert len(run_key("x" * 2000, "a" * 64, "f1")) <= 512


def _record(run_id: str, verdicts: dict[str, str], d: float) -> RunRecord:
    leaves = {leaf: LeafVerdict("design", v, 1.0 if v == "pass" else 0.0, None, leaf) for leaf, v in verdicts.items()}
    return RunRecord(run_id=run_id, run_key=run_id, status="graded", grade_id=f"g-{run_id}-{d}", D=d, I=50.0,
                     C=d > 50, design_correct=d >= 70, implementation_correct=False, all_correct=False,
                     design_score=d, leaves=leaves)


def test_comparison_with_an_earlier_fingerprint_lists_flipped_leaves() -> None:
    rubric = load_rubric("expbench-v1")
    fingerprint = JudgeFingerprint(rubric_id=rubric.id, rubric_version=rubric.version, rubric_hash="h",
                                   judge="embedded", code_version="test")
    now = [_record("a", {"design_variable.0": "pass", "design_variable.1": "pass"}, 100.0),
           _record("b", {"design_variable.0": "fail"}, 0.0)]
    before = {"a": _record("a", {"design_variable.0": "pass", "design_variable.1": "fail"}, 50.0),
              "b": _record("b", {"design_variable.0": "fail"}, 0.0)}
    report = build_changes(now, {}, rubric, fingerprint, before, "oldprint")
    baseline = report["baselines"]["fingerprint:oldprint"]
    assert baseline["runs"] == 2 and baseline["runs_flipped"] == 1 and baseline["leaf_flips"] == 1
    run_a = next(r for r in report["runs"] if r["run_id"] == "a")["baselines"]["fingerprint:oldprint"]
    assert run_a["leaf_flips"][0]["leaf_id"] == "design_variable.1"
    assert (run_a["leaf_flips"][0]["before"], run_a["leaf_flips"][0]["after"]) == ("fail", "pass")
    assert run_a["deltas"]["design"] == 50.0 and run_a["flips"]["design_correct"] == [False, True]
    assert baseline["aggregates"]["before_as_recorded"]["D"] == 25.0
    assert report["aggregates_after"]["D"] == 50.0


def test_regrade_cli_grades_the_good_lines_of_a_torn_jsonl_and_exits_1(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from judge.cli.main import _register_commands, app
    from tests.judge.regrade.conftest import sqlite_url

    lines = variations(expbench_task(SMALL_TASKS[0]), limit=2)
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps(lines[0]) + "\n" + json.dumps(lines[1])[:-25])  # the writer died mid-line
    out = tmp_path / "out"
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", str(runs), "--out", str(out), "--database-url",
                                      sqlite_url(tmp_path / "store.db")], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "runs.jsonl:2" in result.output and "malformed JSON" in result.output
    grades = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    assert [g["run_id"] for g in grades] == [lines[0]["submission"]["run_id"]]
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["problems"]) == 1 and "runs.jsonl:2" in summary["problems"][0]


def test_regrade_refuses_a_model_litellm_cannot_route_before_any_work(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from judge.cli.main import _register_commands, app

    runs = write_jsonl(tmp_path / "runs.jsonl", variations(expbench_task(SMALL_TASKS[0]), limit=1))
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", str(runs), "--out", str(tmp_path / "out"), "--judge", "no-such-model",
                                      "--database-url", f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"])
    assert result.exit_code == 3, result.output
    assert "--judge" in result.output and "cannot route" in result.output
    assert not (tmp_path / "store.db").exists()
    result = CliRunner().invoke(app, ["regrade", str(runs), "--out", str(tmp_path / "out"), "--judge", "openai/local",
                                      "--api-base", "127.0.0.1:8080", "--database-url",
                                      f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"])
    assert result.exit_code == 3 and "--api-base: expected an http(s) URL" in result.output, result.output


def test_the_library_names_an_output_folder_that_is_a_file(tmp_path: Path) -> None:
    from judge.regrade.export import OutputWriter

    blocker = tmp_path / "taken"
    blocker.write_text("a file")
    for out in (blocker, blocker / "below"):
        with pytest.raises(InputError, match="output folder"):
            OutputWriter(out)


def test_text_from_runs_reaches_changes_html_as_text_only() -> None:
    # Run, task and leaf ids, leaf targets, the old verdicts' sources and judge failures, errors of runs that
    # were not graded and the judge's own names all come from data; none of it may become markup.
    rubric = load_rubric("expbench-v1")
    fingerprint = JudgeFingerprint(rubric_id=rubric.id, rubric_version=rubric.version, rubric_hash="h",
                                   judge=PAYLOADS[0], model=PAYLOADS[1], code_version="test")
    run_id, task_id, leaf = PAYLOADS
    now = _record(run_id, {leaf: "pass"}, 100.0)
    now.task_id, now.process = task_id, {"steps_run": 3, "test_status": PAYLOADS[0]}
    now.leaves[leaf] = LeafVerdict("design", "pass", 1.0, None, PAYLOADS[1])
    before = _record(run_id, {leaf: "fail"}, 50.0)
    before.process = {"steps_run": 2, "test_status": PAYLOADS[2]}
    failed = RunRecord(run_id=PAYLOADS[1], run_key="k", status="failed", error=PAYLOADS[2])
    old = [OldVerdict(source=PAYLOADS[0], path=Path(f"/runs/{PAYLOADS[1]}"), design=10.0, implementation=0.0,
                      conclusion=False, judge_failure=PAYLOADS[2]),
           OldVerdict(source=PAYLOADS[2], path=Path("/runs/x"), design=90.0, implementation=0.0, conclusion=True)]
    refs = {run_id: RunRef(run_id=run_id, kind="native", task_key=task_id, origin=PAYLOADS[1], old=old)}
    report = build_changes([now, failed], refs, rubric, fingerprint, {run_id: before}, PAYLOADS[1])
    report["notes"].append(PAYLOADS[0])
    page = render_changes_html(report)
    assert_no_injection(page, images=0)
    assert html.escape(f"fingerprint:{PAYLOADS[1]}") in page  # the baseline's name, shown as written


PARSE_FAILURE = "Error parsing response"
RUN_DIR = Path("evaluation/neurips2024/93022/curie/azure-gpt-4o")
RUN_STEM = "93022_task_index_0_iter_1_duration_0.67"


def _tree_with_unparsed_scores(root: Path, **override: object) -> Path:
    """One historic run copied under `root`/curie_parsefail, its upstream verdict's scores rewritten."""
    source = HISTORIC / "curie_b1f623b" / RUN_DIR
    target = root / "curie_parsefail" / RUN_DIR
    target.mkdir(parents=True)
    for path in source.glob(f"{RUN_STEM}_*"):
        shutil.copy(path, target / path.name)
    judge_file = target / f"{RUN_STEM}_eval_judge.json"
    verdict = json.loads(judge_file.read_text())
    verdict.update({"design_score": PARSE_FAILURE, "setup_score": PARSE_FAILURE, "conclusion_score": PARSE_FAILURE,
                    "design_evaluation_explanation": PARSE_FAILURE, **override})
    judge_file.write_text(json.dumps(verdict, indent=2))
    return root / "curie_parsefail"


def test_scores_that_did_not_parse_upstream_are_a_judge_failure_not_an_error(tmp_path: Path) -> None:
    tree = _tree_with_unparsed_scores(tmp_path / "all")
    verdict = read_old_verdict(next(tree.rglob("*_eval_judge.json")), "t")
    assert (verdict.design, verdict.implementation, verdict.conclusion) == (None, None, None)
    assert verdict.judge_failure is not None and verdict.monitor_flag is None
    assert "design_score, setup_score, conclusion_score" in verdict.judge_failure
    assert "did not parse" in verdict.judge_failure and PARSE_FAILURE in verdict.judge_failure
    assert "monitor" not in verdict.judge_failure  # the explanation repeating the mark is not a monitor finding
    # Only one score unparsed: the others stay as recorded, and it is still a failed judging.
    one = _tree_with_unparsed_scores(tmp_path / "one", setup_score=30, conclusion_score="incorrect")
    verdict = read_old_verdict(next(one.rglob("*_eval_judge.json")), "t")
    assert (verdict.design, verdict.implementation, verdict.conclusion) == (None, 30.0, False)
    assert verdict.judge_failure is not None and "design_score holds 'Error" in verdict.judge_failure
    # Both the scores and the monitor failed: the reason says both.
    both = _tree_with_unparsed_scores(tmp_path / "both", setup_monitor_comprehensive_reason=f"git: {PARSE_FAILURE}")
    reason = read_old_verdict(next(both.rglob("*_eval_judge.json")), "t").judge_failure
    assert reason is not None and reason.startswith("upstream judge's response did not parse: design_score")
    assert "; upstream monitor output did not parse (setup_monitor_comprehensive_reason: git: Error" in reason
    # Any other text where a score belongs is still bad input, named by file and field.
    bad = _tree_with_unparsed_scores(tmp_path / "bad", setup_score="n/a")
    with pytest.raises(SubmissionFormatError, match="setup_score"):
        read_old_verdict(next(bad.rglob("*_eval_judge.json")), "t")


def test_regrade_lists_a_run_whose_old_scores_did_not_parse_as_an_upstream_judge_failure(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from judge.cli.main import _register_commands, app
    from tests.judge.regrade.conftest import sqlite_url

    tree = _tree_with_unparsed_scores(tmp_path)
    out = tmp_path / "out"
    _register_commands()
    result = CliRunner().invoke(app, ["regrade", str(tree), "--out", str(out), "--database-url",
                                      sqlite_url(tmp_path / "store.db"), "--tasks-dir", str(EXPBENCH_TASKS)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "summary.json").read_text())["problems"] == []
    changes = json.loads((out / "changes.json").read_text())
    (run,) = changes["runs"]
    old = run["baselines"]["curie_parsefail"]
    assert old["before"] == {"D": None, "I": None, "C": None, "all_correct": None}
    assert "did not parse" in old["judge_failure"] and old["counted"] is False
    assert old["deltas"] == {} and old["flips"] == {}
    assert changes["judge_failures"] == changes["baselines"]["curie_parsefail"]["judge_failures"] == 1
    assert changes["judge_failure_runs"] == [{"run_id": run["run_id"], "baseline": "curie_parsefail",
                                              "file": old["file"], "reason": old["judge_failure"]}]
    assert changes["baselines"]["curie_parsefail"]["aggregates"]["before_valid_only"]["runs"] == 0
    page = (out / "changes.html").read_text()
    assert page.count("upstream judge failure, not an agent failure") == 1
    failures = page.split("<h2>Old verdicts that are upstream judge failures</h2>", 1)[1].split("<h2>", 1)[0]
    assert html.escape(run["run_id"]) in failures and html.escape(old["judge_failure"]) in failures
