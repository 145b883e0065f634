"""Tests of judge.safety.leak_detection: submission text that copies the hidden ground truth."""

from __future__ import annotations

import random
import textwrap
import time
from pathlib import Path

import pytest
from unidiff.patch import PatchSet

from judge.loaders.expbench import load_expbench_tasks
from judge.models import DesignVariable, Submission, Task
from judge.safety.leak_detection import (
    GroundTruthItem,
    LeakDetector,
    LeakFinding,
    copied_share_by_item,
    find_leaks,
    findings_as_facts,
    ground_truth_items,
    leaked_diff_lines,
    redact,
    submission_text,
)

DATA = Path(__file__).resolve().parents[3].parent / "shared/data/expbench"
GT_CODE = DATA / "gt_code"

REQUIREMENTS = [
    "Step 1: Load a pre-trained molecular dynamics generative model from a checkpoint file and move it to "
    "the evaluation device (/workspace/sim_inference.py:129-130)",
    "Step 2: For each protein in the test split, generate multiple trajectory rollouts by repeatedly sampling "
    "from the model, each conditioned on the first frame of the reference trajectory",
    "Step 3: Run `python train.py --lr 0.001 --batch_size 32 --epochs 100 --hyena --wandb` to train",
]
OUTCOME = ("The Hyena variant reproduces torsional autocorrelation functions across timescales from 100 fs "
           "to 100 ps and its dynamical content curves closely track the ground-truth molecular dynamics.")


def _task(**extra: object) -> Task:
    fields: dict[str, object] = {
        "task_id": "p:0", "question": "Does the Hyena operator allow long consistent trajectories?",
        "requirements": REQUIREMENTS, "expected_outcome": OUTCOME,
        "design_variables": [DesignVariable(
            name="trajectory_quality", role="dependent",
            description="agreement of the torsional autocorrelation functions with reference simulations "
                        "measured over all lag times between one hundred femtoseconds and one hundred picoseconds")],
    }
    fields.update(extra)
    return Task.model_validate(fields)


def _new_file(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}")


def _ids(findings: list[LeakFinding]) -> set[str]:
    return {f.item.item_id for f in findings}


def test_readme_pasting_the_requirements_is_found_with_its_location() -> None:
    readme = ["# Plan", ""] + [f"- {r}" for r in REQUIREMENTS[:2]]
    findings = find_leaks(_task(), Submission(submission_id="s", diff=_new_file("README.md", readme)))
    assert _ids(findings) == {"requirement.0", "requirement.1"}
    first = next(f for f in findings if f.item.index == 0)
    assert (first.source, first.file, first.line_start, first.line_end) == ("diff", "README.md", 3, 3)
    assert first.location == "README.md:3"
    assert first.share_copied == 1.0
    assert first.longest_run >= 16
    assert first.span.startswith("Load a pre-trained molecular")


@pytest.mark.parametrize("style", ["hash", "slashes", "block", "upper", "docstring"])
def test_comment_markers_case_punctuation_and_wrapping_do_not_hide_a_copy(style: str) -> None:
    text = REQUIREMENTS[1].removeprefix("Step 2: ")
    wrapped = textwrap.wrap(text, 30)
    lines = {
        "hash": [f"# TODO: {wrapped[0]}", *(f"#   {w}" for w in wrapped[1:])],
        "slashes": [f"// {w}" for w in wrapped],
        "block": ["/*", *(f" * {w}" for w in wrapped), " */"],
        "upper": [w.upper().replace(",", " ;; ") for w in wrapped],
        "docstring": ["def rollouts():", f'    """{wrapped[0]}', *(f"    {w}" for w in wrapped[1:]), '    """'],
    }[style]
    findings = find_leaks(_task(), Submission(submission_id="s", diff=_new_file("src/x.py", lines)))
    assert _ids(findings) == {"requirement.1"}
    assert findings[0].share_copied == 1.0
    assert len(findings) == 1


def test_a_near_verbatim_copy_is_one_finding_with_its_share() -> None:
    words = REQUIREMENTS[1].removeprefix("Step 2: ").split()
    words[len(words) // 2] = "several"  # one word changed in the middle
    findings = find_leaks(_task(), Submission(submission_id="s", conclusion=" ".join(words)))
    assert len(findings) == 1
    assert 0.5 <= findings[0].share_copied < 1.0
    assert findings[0].source == "conclusion"


def test_normal_code_sharing_words_and_identifiers_is_not_a_copy() -> None:
    code = [
        "import torch",
        "from mdgen.wrapper import NewMDGenWrapper",
        "",
        "def load_model(checkpoint, device='cuda'):",
        "    # load the pre-trained model from a checkpoint",
        "    model = NewMDGenWrapper.load_from_checkpoint(checkpoint)",
        "    return model.eval().to(device)",
        "",
        "def generate_rollouts(model, protein, num_rollouts, first_frame):",
        "    # sample trajectory rollouts conditioned on the first frame",
        "    return [model.sample(first_frame) for _ in range(num_rollouts)]",
    ]
    findings = find_leaks(_task(), Submission(submission_id="s", diff=_new_file("sim_inference.py", code)))
    assert findings == []


def test_a_command_the_requirement_quotes_is_not_prose_and_not_a_copy() -> None:
    script = ["#!/bin/bash", "python train.py --lr 0.001 --batch_size 32 --epochs 100 --hyena --wandb"]
    assert find_leaks(_task(), Submission(submission_id="s", diff=_new_file("run.sh", script))) == []


def test_text_the_agent_was_shown_is_not_hidden() -> None:
    method = "Generate multiple trajectory rollouts by repeatedly sampling from the model for each protein."
    task = _task(requirements=[method], method=f"#### Setup\n- {method}")
    assert find_leaks(task, Submission(submission_id="s", design=f"1. {method}")) == []
    # without the public text the same sentence is a copy
    detector = LeakDetector(ground_truth_items(task))
    assert _ids(detector.scan_text(method, "design")) == {"requirement.0"}


def test_conclusion_and_structured_design_copies_are_found() -> None:
    task = _task()
    variable = task.design_variables[0]  # type: ignore[index]
    design = {"dependent_variables": {"trajectory_quality": variable.description}}
    sub = Submission(submission_id="s", conclusion=f"In short:\n{OUTCOME.upper()}", design=design)
    findings = find_leaks(task, sub)
    by_source = {f.source: f for f in findings}
    assert by_source["conclusion"].item.kind == "expected_outcome"
    assert by_source["conclusion"].line_start == 2
    assert by_source["design"].item.item_id == "design_variable.0"
    text = submission_text(sub, "design")
    copied = [text[lo:hi] for lo, hi in by_source["design"].char_ranges]
    assert copied == ["trajectory_quality", variable.description]
    assert "agreement of the torsional" in by_source["design"].span


def test_only_added_lines_are_scanned() -> None:
    copied = REQUIREMENTS[1]
    diff = ("--- a/notes.txt\n+++ b/notes.txt\n@@ -1,3 +1,3 @@\n"
            f" {copied}\n-{copied}\n+a line the agent wrote\n ending\n")
    assert find_leaks(_task(), Submission(submission_id="s", diff=diff)) == []


def test_line_numbers_follow_the_new_file_across_hunks() -> None:
    diff = ("--- a/a.py\n+++ b/a.py\n@@ -10,2 +10,3 @@\n x = 1\n+y = 2\n z = 3\n"
            f"@@ -40,1 +41,2 @@\n w = 4\n+# {REQUIREMENTS[0]}\n")
    [finding] = find_leaks(_task(), Submission(submission_id="s", diff=diff))
    assert (finding.file, finding.line_start) == ("a.py", 42)
    assert leaked_diff_lines([finding]) == {"a.py": {42}}


def test_redact_blanks_the_copy_and_keeps_the_diff_valid() -> None:
    lines = ["def f():", f"    # {REQUIREMENTS[0]}", "    return 1"]
    diff = _new_file("src/f.py", lines)
    findings = find_leaks(_task(), Submission(submission_id="s", diff=diff))
    assert findings
    cleaned = redact(diff, findings, "diff")
    assert len(cleaned) == len(diff)
    [patched] = PatchSet(cleaned)
    assert len(patched) == 1 and patched.added == 3  # same hunk counts: still a valid diff
    assert "return 1" in cleaned and "molecular" not in cleaned
    assert find_leaks(_task(), Submission(submission_id="s", diff=cleaned)) == []
    facts = findings_as_facts(findings)
    assert facts[0]["item"] == "requirement.0" and facts[0]["location"] == "src/f.py:2"


def test_text_without_hunks_is_read_as_plain_text() -> None:
    findings = find_leaks(_task(), Submission(submission_id="s", diff=f"notes\n{REQUIREMENTS[1]}\n"))
    assert [(f.file, f.line_start) for f in findings] == [(None, 2)]


def test_items_with_too_little_prose_are_not_indexed() -> None:
    detector = LeakDetector([GroundTruthItem("design_variable", 0, "batch size: 32"),
                             GroundTruthItem("requirement", 0, "Run `python main.py --model llama-2-7b`")])
    assert detector.items == []
    assert detector.scan_text("batch size: 32. Run python main.py --model llama-2-7b", "design") == []


def test_bad_settings_fail_fast() -> None:
    with pytest.raises(ValueError, match="shingle"):
        LeakDetector([], shingle=1)
    with pytest.raises(ValueError, match="min_share"):
        LeakDetector([], min_share=0)
    assert LeakDetector([]).spec()["name"] == "shingle_leak_detector"


def test_one_megabyte_diff_against_200_requirements_is_fast() -> None:
    rng = random.Random(7)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(3000)]
    items = [GroundTruthItem("requirement", i, " ".join(rng.choice(vocab) for _ in range(30))) for i in range(200)]
    code_lines = [f"    {rng.choice(vocab)}_{k} = {rng.choice(vocab)}({rng.choice(vocab)}, {k})  # {rng.choice(vocab)}"
                  for k in range(24_000)]
    code_lines[12_000] = "# " + items[123].text
    diff = _new_file("big.py", code_lines)
    assert len(diff) > 1_000_000
    started = time.perf_counter()
    detector = LeakDetector(items)
    findings = detector.scan_diff(diff)
    elapsed = time.perf_counter() - started
    assert _ids(findings) == {"requirement.123"}
    assert elapsed < 2.0, elapsed


def _gt_code_cases() -> list[tuple[Task, str]]:
    tasks: dict[str, Task] = {}
    for path in sorted((DATA / "tasks").glob("*/*_complete_final.json")):
        if (GT_CODE / path.name.split("_", 1)[0]).is_dir():
            tasks.update({t.task_id: t for t in load_expbench_tasks(path)})
    return [(tasks[f"{d.parent.name}:{d.name}"], (d / "gt.diff").read_text(encoding="utf-8"))
            for d in sorted(GT_CODE.glob("*/*")) if (d / "gt.diff").is_file()]


needs_gt_code = pytest.mark.skipif(not GT_CODE.is_dir(), reason="shared gt_code data not present")


@needs_gt_code
def test_papers_own_code_is_not_a_copy_of_its_requirements() -> None:
    """False-positive rate over every gt_code task: the paper's code vs its own task's ground truth."""
    cases = _gt_code_cases()
    flagged = [task.task_id for task, diff in cases
               if find_leaks(task, Submission(submission_id="s", diff=diff))]
    print(f"\nleak detector on the papers' own code: {len(flagged)}/{len(cases)} tasks with a finding")
    assert len(cases) >= 100
    assert len(flagged) / len(cases) <= 0.02, flagged


@needs_gt_code
def test_readme_pasting_requirements_into_real_code_is_found() -> None:
    """Recall over every gt_code task: the paper's code plus a README that pastes the requirements."""
    found = total = 0
    for task, diff in _gt_code_cases():
        detector = LeakDetector.for_task(task)
        wanted = {i.item.item_id for i in detector.items if i.item.kind == "requirement"}
        readme = [line for r in task.requirements for line in textwrap.wrap(f"* {r}", 80, break_long_words=False)]
        shares = copied_share_by_item(detector.scan_diff(diff + _new_file("README.md", readme)))
        found += len(wanted & shares.keys())
        total += len(wanted)
    print(f"\nleak detector recall on pasted READMEs: {found}/{total}")
    assert total > 500
    assert found / total >= 0.98
