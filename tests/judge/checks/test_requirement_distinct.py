"""With a reference, what sets a requirement apart must be somewhere: a leaf whose cited lines do something the rest
of the reference does not (their own calls, values and lines), none of which the submission holds anywhere, fails
whatever a model says of the code around them (`RequirementArgs.reference_distinct_required`)."""

from __future__ import annotations

import asyncio
import math
import sys
from pathlib import Path

from judge.checks.requirement.arguments import RequirementArgs
from judge.checks.requirement.floors import below_floor, distinct_missing, floor_confidence
from judge.checks.requirement.payload import RequirementFacts
from judge.grading.grader import Grader
from judge.judges.embedded import EmbeddedJudge
from judge.models import Submission, Task
from judge.rubric_loader import load_rubric

sys.path.extend(str(d) for d in sorted((Path(__file__).resolve().parents[3] / "bench").iterdir()) if d.is_dir())
from reference_variants import added_diff

from tests.judge.checks.test_requirement_behaviour import REQUIREMENTS, TRAIN

# train_step without anything only it does (loss, smoothing, clipping, the optimizer's steps): what is left reads
# like its siblings' lines.
HOLLOWED_STEP = TRAIN[: TRAIN.index("def train_step")] + '''def train_step(model, optimizer, images, labels):
    logits = model(images)
    predictions = logits.argmax(dim=1)
    return predictions
'''


def _features(distinct: int, held: float, match: float = 0.6) -> dict[str, float]:
    return {"ref_core_empty": 0.0, "ref_match": match, "ref_distinct_size": math.log1p(distinct),
            "ref_distinct_sub": held}


def test_the_rule_fails_a_leaf_only_when_none_of_its_own_behaviour_is_anywhere() -> None:
    on, off = RequirementArgs(reference_distinct_required=True), RequirementArgs()
    assert distinct_missing(_features(4, 0.0), on)
    assert "none of what only this requirement's reference lines do (4 of" in below_floor(_features(4, 0.0), True, on)
    assert floor_confidence(_features(4, 0.0), True, on) == 0.9
    assert below_floor(_features(4, 0.0), True, off) == ""  # a rubric that does not ask for it
    assert below_floor(_features(4, 0.05), True, on) == ""  # some of it is there: the model decides
    assert below_floor(_features(0, 0.0), True, on) == ""  # the lines do nothing the rest does not
    # The reference floor says it first when the closest code shares next to nothing with the span.
    assert "floor" in below_floor(_features(4, 0.0, match=0.01), True, on)


def _task() -> Task:
    return Task(task_id="toy:0", question="Train and evaluate an image classifier.", requirements=REQUIREMENTS,
                ground_truth_diff=added_diff({"train.py": TRAIN}))


def test_a_requirement_whose_own_lines_are_gone_fails_with_the_reason_and_own_code_passes() -> None:
    grader = Grader(load_rubric("expbench-v2"), EmbeddedJudge())
    task = _task()

    def grade(code: str) -> dict[int, tuple[str, str, dict[str, float]]]:
        submission = Submission(submission_id="s", task_id=task.task_id, diff=added_diff({"train.py": code}))
        features = {e.leaf.id: RequirementFacts.of(e.facts).features
                    for e in asyncio.run(grader.prepare(task, submission)).evidence
                    if e.leaf.stage == "implementation"}
        graded = asyncio.run(grader.grade(task, submission))
        return {int(leaf.leaf_id.rsplit(".", 1)[-1]): (leaf.verdict, leaf.rationale, features[leaf.leaf_id])
                for leaf in graded.leaves if leaf.stage == "implementation"}

    args = RequirementArgs(reference_distinct_required=True)
    own = grade(TRAIN)
    assert [verdict for verdict, _, _ in own.values()] == ["pass"] * 3
    assert not any(distinct_missing(features, args) for _, _, features in own.values())
    hollowed = grade(HOLLOWED_STEP)
    verdict, rationale, features = hollowed[2]
    assert features["ref_match"] >= args.reference_floor  # the code around it still matches the span
    assert distinct_missing(features, args)
    assert verdict == "fail" and "none of what only this requirement's reference lines do" in rationale
    assert hollowed[0][0] == hollowed[1][0] == "pass"  # the other requirements' code is untouched
