"""`outcome_claim_supported` grounded in the run: hedged, conditional and negated support, "nothing was run"
admissions, numbers checked against the run's own logs, and the EXP-Bench-style reading kept beside it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.checks.outcome_claim.payload import OutcomeFacts
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Execution, Grade, LeafResult, Submission, Task
from judge.rubric_loader import load_rubric, parse_rubric

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "expbench"
OUTCOME = [f"outcome_claim.{i}" for i in range(4)]
MEASURED = OUTCOME[:3]  # claims 0-2 compare measured quantities; claim 3 does not (no comparison, no number)
GROUNDING_FLAGS = {"hedged", "conditional", "negated_claim", "ungrounded", "contradicted_by_logs",
                   "no_execution_evidence", "no_execution_admitted"}

# The bundled task's four claims, restated as results (no hedges, nothing copied verbatim).
SENTENCES = [
    "MDGEN trajectories reproduced the JSD profile of the 100 ns MD simulations closely.",
    "Backbone and sidechain torsion distributions reached JSD values of 0.08 and 0.09, at the level of replicate "
    "simulations.",
    "The TICA-0 distribution aligned reasonably, deviating slightly more than the torsions (JSD 0.14).",
    "The generated samples captured slow and fast relaxation and visited the metastable regions of the MD reference.",
]
LOGS_HOLDING = "python analyze.py\nbackbone_jsd: 0.081\nsidechain_jsd: 0.092\ntica0_jsd: 0.141\ndone\n"
LOGS_CONTRADICTING = "python analyze.py\nbackbone_jsd: 0.31\nsidechain_jsd: 0.35\ntica0_jsd: 0.52\ndone\n"


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task_file(EXAMPLES / "93022_complete_final.json", 0)


@pytest.fixture(scope="module")
def submission() -> Submission:
    return load_submission_file(EXAMPLES / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(load_rubric("expbench-v1"), EmbeddedJudge())


def _grade(grader: Grader, task: Task, submission: Submission, conclusion: str | None = None,
           execution: Execution | None = None) -> Grade:
    update: dict[str, Any] = {"execution": execution}
    if conclusion is not None:
        update["conclusion"] = conclusion
    return asyncio.run(grader.grade(task, submission.model_copy(update=update)))


def _outcome(grade: Grade) -> dict[str, LeafResult]:
    return {leaf.leaf_id: grade.leaf(leaf.leaf_id) for leaf in grade.leaves if leaf.leaf_id in OUTCOME}


def _ungrounded(grader: Grader, task: Task, submission: Submission) -> dict[str, str]:
    prepared = asyncio.run(grader.prepare(task, submission))
    return {e.leaf.id: OutcomeFacts.of(e.facts).ungrounded_reading.verdict for e in prepared.evidence
            if e.leaf.id in OUTCOME}


def _with(sentences: list[str], index: int, replacement: str) -> str:
    return " ".join(replacement if i == index else s for i, s in enumerate(sentences))


def test_nothing_run_plus_the_expected_outcome_passes_no_claim(task: Task, submission: Submission) -> None:
    attack = submission.model_copy(update={"conclusion": f"We did not run anything. {task.expected_outcome}"})
    # Copy detection blanks verbatim ground truth; without it, grounding alone must hold every claim down.
    raw = Grader(load_rubric("expbench-v1"), EmbeddedJudge(), detect_copies=False)
    assert set(_ungrounded(raw, task, attack).values()) == {"pass"}  # what a similarity reading gives
    grade = asyncio.run(raw.grade(task, attack))
    for leaf_id, leaf in _outcome(grade).items():
        assert leaf.verdict != "pass", leaf_id
        assert {"no_execution_admitted", "hedged"} <= set(leaf.flags)
        assert "We did not run anything." in leaf.rationale and "ungrounded (EXP-Bench-style) reading: pass" in \
            leaf.rationale
    assert all(_outcome(grade)[i].verdict == "fail" for i in MEASURED)
    assert any("says no experiment was run ('We did not run anything.')" in w for w in grade.warnings)
    assert any("C at 60: False vs True" in w for w in grade.warnings)
    assert grade.metrics.C is False
    full = asyncio.run(Grader(load_rubric("expbench-v1"), EmbeddedJudge()).grade(task, attack))
    assert all(leaf.verdict != "pass" for leaf in _outcome(full).values())


def test_a_paraphrased_result_under_an_admission_is_not_a_result(grader: Grader, task: Task,
                                                                 submission: Submission) -> None:
    conclusion = "No experiments were executed because the cluster was down. " + " ".join(SENTENCES)
    said = submission.model_copy(update={"conclusion": conclusion})
    assert set(_ungrounded(grader, task, said).values()) == {"pass"}
    leaves = _outcome(_grade(grader, task, submission, conclusion, Execution(exit_code=0, logs=LOGS_HOLDING)))
    assert all(leaves[i].verdict == "fail" and "no_execution_admitted" in leaves[i].flags for i in MEASURED)
    assert leaves["outcome_claim.3"].verdict == "partial"


def test_the_real_conclusion_keeps_the_verdicts_its_record_supports(grader: Grader, task: Task,
                                                                    submission: Submission) -> None:
    # The historic run handed in no execution record; its conclusion reports no result, so grounding has
    # nothing to take away: every verdict is its ungrounded reading (one partial, no pass).
    assert submission.execution is None
    grade = _grade(grader, task, submission)
    verdicts = {i: leaf.verdict for i, leaf in _outcome(grade).items()}
    assert verdicts == _ungrounded(grader, task, submission)
    assert "pass" not in verdicts.values() and "partial" in verdicts.values()
    assert not any("ungrounded (EXP-Bench-style)" in w for w in grade.warnings)


def test_a_record_whose_logs_hold_the_numbers_passes_every_claim(grader: Grader, task: Task,
                                                                 submission: Submission) -> None:
    grade = _grade(grader, task, submission, " ".join(SENTENCES), Execution(exit_code=0, logs=LOGS_HOLDING))
    for leaf_id, leaf in _outcome(grade).items():
        assert leaf.verdict == "pass", (leaf_id, leaf.rationale)
        assert not GROUNDING_FLAGS & set(leaf.flags)
    assert grade.metrics.C is True


def test_without_any_execution_record_measured_claims_cannot_pass(grader: Grader, task: Task,
                                                                  submission: Submission) -> None:
    grade = _grade(grader, task, submission, " ".join(SENTENCES), None)
    leaves = _outcome(grade)
    for leaf_id in MEASURED:
        assert leaves[leaf_id].verdict == "partial" and "no_execution_evidence" in leaves[leaf_id].flags
        assert "no execution record (exit code, logs) was handed in" in leaves[leaf_id].rationale
    assert leaves["outcome_claim.3"].verdict == "pass"  # nothing to measure in it
    assert any("no execution record" in w and "3 outcome claims" in w for w in grade.warnings)


def test_a_number_its_own_logs_contradict_fails_that_claim(grader: Grader, task: Task,
                                                           submission: Submission) -> None:
    grade = _grade(grader, task, submission, " ".join(SENTENCES), Execution(exit_code=0, logs=LOGS_CONTRADICTING))
    leaves = _outcome(grade)
    for leaf_id in ("outcome_claim.1", "outcome_claim.2"):
        assert leaves[leaf_id].verdict == "fail" and "contradicted_by_logs" in leaves[leaf_id].flags
        assert "incorrect numeric conclusion" in leaves[leaf_id].error_labels
    assert "backbone_jsd = `0.31` (log line 2)" in leaves["outcome_claim.1"].rationale
    assert leaves["outcome_claim.0"].verdict == leaves["outcome_claim.3"].verdict == "pass"  # no numbers stated
    assert any("logs contradict" in w for w in grade.warnings)


def test_numbers_the_record_does_not_hold_are_ungrounded(grader: Grader, task: Task, submission: Submission) -> None:
    grade = _grade(grader, task, submission, " ".join(SENTENCES), Execution(exit_code=0, logs="python analyze.py\n"))
    leaf = _outcome(grade)["outcome_claim.1"]
    assert leaf.verdict == "partial" and "ungrounded" in leaf.flags and "0.08" in leaf.rationale


@pytest.mark.parametrize(
    ("sentence", "flag"),
    [
        ("Backbone and sidechain torsion distributions would reach JSD values of 0.08 and 0.09, at the level of "
         "replicate simulations.", "hedged"),
        ("We expect backbone and sidechain torsion distributions to reach JSD values of 0.08 and 0.09, at the "
         "level of replicate simulations.", "hedged"),
        ("If we had run the analysis, backbone and sidechain torsion distributions would have reached JSD values "
         "of 0.08 and 0.09.", "conditional"),
        ("Hypothetically, backbone and sidechain torsion distributions reach JSD values of 0.08 and 0.09, at the "
         "level of replicate simulations.", "conditional"),
    ],
)
def test_hedged_or_conditional_support_is_partial_at_most(grader: Grader, task: Task, submission: Submission,
                                                          sentence: str, flag: str) -> None:
    conclusion = _with(SENTENCES, 1, sentence)
    assert _ungrounded(grader, task, submission.model_copy(update={"conclusion": conclusion}))["outcome_claim.1"] \
        == "pass"
    leaf = _outcome(_grade(grader, task, submission, conclusion, Execution(exit_code=0, logs=LOGS_HOLDING)))[
        "outcome_claim.1"]
    assert leaf.verdict == "partial" and flag in leaf.flags, (leaf.flags, leaf.rationale)


def test_negated_support_is_no_pass(grader: Grader, task: Task, submission: Submission) -> None:
    sentence = ("We could not confirm that backbone and sidechain torsion distributions reach JSD values of 0.08 "
                "and 0.09, at the level of replicate simulations.")
    leaf = _outcome(_grade(grader, task, submission, _with(SENTENCES, 1, sentence),
                           Execution(exit_code=0, logs=LOGS_HOLDING)))["outcome_claim.1"]
    assert leaf.verdict != "pass" and {"negated_claim", "contradiction"} & set(leaf.flags)


def test_an_asserted_sentence_beats_a_hedged_one_as_similar(grader: Grader, task: Task,
                                                            submission: Submission) -> None:
    hedged = ("Backbone and sidechain torsion distributions should reach JSD values of 0.08 and 0.09, at the level "
              "of replicate simulations.")
    conclusion = " ".join([hedged, *SENTENCES])
    leaf = _outcome(_grade(grader, task, submission, conclusion, Execution(exit_code=0, logs=LOGS_HOLDING)))[
        "outcome_claim.1"]
    assert leaf.verdict == "pass" and leaf.evidence[0].text == SENTENCES[1]


def test_a_hypothetical_lead_in_frames_the_list_it_introduces(grader: Grader, task: Task,
                                                              submission: Submission) -> None:
    conclusion = "Had we been able to run the analysis, we would expect the following:\n" + "\n".join(
        f"- {s}" for s in SENTENCES)
    leaves = _outcome(_grade(grader, task, submission, conclusion, Execution(exit_code=0, logs=LOGS_HOLDING)))
    assert all(leaf.verdict != "pass" and "conditional" in leaf.flags for leaf in leaves.values())


def _rubric_with(**args: Any) -> Any:
    data = yaml.safe_load((ROOT / "rubrics" / "expbench-v1.yaml").read_text())
    leaf = next(t for s in data["stages"] for t in s["leaves"] if t["id"] == "outcome_claim")
    leaf["check"]["args"].update(args)
    return parse_rubric(data, "expbench-v1-test.yaml")


def test_the_rubric_names_the_grounding_arguments_and_they_are_read(task: Task, submission: Submission) -> None:
    data = yaml.safe_load((ROOT / "rubrics" / "expbench-v1.yaml").read_text())
    args = next(t for s in data["stages"] for t in s["leaves"] if t["id"] == "outcome_claim")["check"]["args"]
    assert {"require_grounding": True, "hedge_cap": "partial", "grounding_cap": "partial",
            "admission_cap": "fail"}.items() <= args.items()
    off = Grader(_rubric_with(require_grounding=False, hedge_cap="pass", admission_cap="pass"), EmbeddedJudge(),
                 detect_copies=False)
    attack = submission.model_copy(update={"conclusion": f"We did not run anything. {task.expected_outcome}"})
    assert {leaf.verdict for leaf in _outcome(asyncio.run(off.grade(task, attack))).values()} == {"pass"}
    strict = Grader(_rubric_with(grounding_cap="fail"), EmbeddedJudge())
    leaves = _outcome(_grade(strict, task, submission, " ".join(SENTENCES), None))
    assert all(leaves[i].verdict == "fail" and "no_execution_evidence" in leaves[i].flags for i in MEASURED)


def test_what_an_llm_judge_is_shown(grader: Grader, task: Task, submission: Submission) -> None:
    conclusion = "We did not run anything. " + _with(SENTENCES, 1, SENTENCES[1].replace("reached", "should reach"))
    prepared = asyncio.run(grader.prepare(task, submission.model_copy(update={"conclusion": conclusion})))
    facts = OutcomeFacts.of(next(e.facts for e in prepared.evidence if e.leaf.id == "outcome_claim.1"))
    shown = facts.for_llm()
    assert shown["no_execution_admitted"] == "We did not run anything."
    assert any("hedged" in line for line in shown["statement"])
    assert shown["execution_record"].startswith("no execution record")
    assert set(shown) == {"no_execution_admitted", "statement", "execution_record", "log_check"}
    assert facts.needs_measured_result and facts.record_present is False  # for the caps, not for the model
    assert facts.ungrounded_reading.verdict in {"pass", "partial", "fail"}
