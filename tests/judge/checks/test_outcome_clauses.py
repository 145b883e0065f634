"""A conclusion stating every expected result in one sentence is read clause by clause: it grades as the same
results written as several sentences, and a comparative word about one subject does not contradict another claim."""

from __future__ import annotations

import asyncio
from pathlib import Path

from judge.checks.outcome_claim.claim_clauses import split_clauses
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.loaders.native import load_submission_file, load_task_file
from judge.models import Grade
from judge.rubric_loader import load_rubric

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "expbench"
# The bundled task 0's four expected results, each as a clause of one sentence ("more" is TICA-0's deviation).
CLAUSES = [
    "Our runs showed that the generated trajectories' JSD values closely matched the 100 ns MD simulations",
    "backbone and sidechain torsion JSD was about 0.1, comparable to replicate simulations",
    "the TICA-0 distribution aligned reasonably but deviated slightly more than the torsions",
    "the samples captured slow and fast relaxation dynamics in the same metastable regions as the MD",
]
ONE_SENTENCE = f"{CLAUSES[0]}: {CLAUSES[1]}, {CLAUSES[2]}, and {CLAUSES[3]}."
FOUR_SENTENCES = " ".join(f"{c[0].upper()}{c[1:]}." for c in CLAUSES)


def _grade(conclusion: str) -> Grade:
    task = load_task_file(EXAMPLES / "93022_complete_final.json", 0)
    submission = load_submission_file(EXAMPLES / "93022_task_index_0_iter_1_duration_0.67_eval_gen.json")
    grader = Grader(load_rubric("expbench-v1"), EmbeddedJudge())
    return asyncio.run(grader.grade(task, submission.model_copy(update={"conclusion": conclusion})))


def test_one_sentence_of_the_expected_results_grades_as_the_same_results_in_four() -> None:
    one, four = _grade(ONE_SENTENCE), _grade(FOUR_SENTENCES)
    claims = [leaf for leaf in one.leaves if leaf.template_id == "outcome_claim"]
    assert len(claims) == 4
    assert not [leaf.leaf_id for leaf in claims if "contradiction" in leaf.flags], [c.rationale for c in claims]
    # Each claim is quoted from its own clause of the one sentence, verbatim.
    quoted = [leaf.evidence[0] for leaf in claims if leaf.evidence]
    assert len({q.location for q in quoted}) == len(quoted) == 4 and all(q.verified for q in quoted)
    assert all((q.location or "").startswith("sentence 1, clause ") for q in quoted)
    stage = {s.stage: s.score for s in one.stages}["conclusion"]
    assert stage == {s.stage: s.score for s in four.stages}["conclusion"]
    assert one.metrics.C == four.metrics.C is True


def test_an_ordinary_sentence_is_not_cut() -> None:
    for sentence in ("The model improved accuracy by 3 points, and the baseline stayed flat.",
                     "JSD fell to 0.08, lower than the 0.12 of the baseline."):
        assert split_clauses(sentence) == [sentence]
    assert split_clauses(ONE_SENTENCE) == [*CLAUSES[:3], f"and {CLAUSES[3]}."]
